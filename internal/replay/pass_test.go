package replay

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/values"
)

// lastPassUnits is what the engine of feedSegments' last replay says of
// carried tensors (Engine.PassUnits): passes that consumed some whole, and
// definitions.
var lastPassUnits [3]int64

// passSegment is a run of records, a pass's when pass is set.
type passSegment struct {
	pass  *sched.Pass
	lines []string
}

// feedSegments replays the segments with typed records (decoded from
// the JSON lines, then fed as a producer feeds them), telling the Sim
// where each pass begins and ends, and returns the result and every
// device's peak and final memory.
func feedSegments(t *testing.T, world int, segs []passSegment, perCommand bool) (*Result, string) {
	t.Helper()
	var text strings.Builder
	fmt.Fprintf(&text, `{"fastsim":"history","version":1,"world_size":%d}`+"\n", world)
	for _, s := range segs {
		for _, l := range s.lines {
			text.WriteString(l + "\n")
		}
	}
	r, err := history.NewReader(strings.NewReader(text.String()), "pass.hist")
	if err != nil {
		t.Fatal(err)
	}
	var devices strings.Builder
	sim, err := New(r.Header(), "pass", Options{Controller: sched.ControllerNone, Grouped: true, PerCommand: perCommand,
		Inspect: func(eng *sched.Engine, _ *Result) error {
			lastPassUnits[0], lastPassUnits[1], lastPassUnits[2] = eng.PassUnits()
			eng.DevicePeaks(func(low, ranks, peak int64) {
				_, final := eng.DeviceBytes(low)
				fmt.Fprintf(&devices, "device %d (%d ranks): peak %d, final %d; ", low, ranks, peak, final)
			})
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	var rec history.Record
	next := func() {
		if err := r.Next(&rec); err != nil {
			t.Fatalf("decode: %v", err)
		}
		if err := sim.Feed(&rec, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range segs {
		if s.pass == nil {
			for range s.lines {
				next()
			}
			continue
		}
		if sim.BeginPass(s.pass) {
			for range s.lines { // applied: its records are not fed
				if err := r.Next(&rec); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		for range s.lines {
			next()
		}
		sim.EndPass()
	}
	if err := r.Next(&rec); err != io.EOF {
		t.Fatalf("records left: %v", err)
	}
	res, err := sim.End()
	if err != nil {
		t.Fatal(err)
	}
	return res, devices.String()
}

func jsonTensor(id, storage, nbytes int) string {
	return fmt.Sprintf(`{"tensor":%d,"storage":%d,"nbytes":%d,"dtype":"float32","shape":[%d],"device":"cuda"}`, id, storage, nbytes, nbytes/4)
}

func jsonRef(id int) string { return fmt.Sprintf(`{"tensor":%d}`, id) }

func jsonCall(ts int, fn, args, result string) string {
	return fmt.Sprintf(`{"ts":%d,"ranks":[{"offset":0,"sizes":[1],"strides":[1]}],"msg":{"type":"CallFunction","ident":0,"function":%q,"args":[%s],"kwargs":{},"result":[%s],"mutates":[],"stream":{"ref":1}}}`, ts, fn, args, result)
}

func jsonDelete(ts int, ids ...int) string {
	s := fmt.Sprint(ids)
	s = strings.ReplaceAll(s[1:len(s)-1], " ", ",")
	return fmt.Sprintf(`{"ts":%d,"ranks":[{"offset":0,"sizes":[1],"strides":[1]}],"msg":{"type":"DeleteRefs","refs":[%s]}}`, ts, s)
}

// layerPass is the records of a pass given tensor x (400 bytes) that
// makes y = relu(x) and z = y*y (ids base and base+1, 400 bytes each) and
// deletes y and x.
func layerPass(ts, x, base int) passSegment {
	p := &sched.Pass{Key: sched.PassKey{Tpl: 1}, Rank: 0, Ins: []values.Tensor{{ID: int64(x), Storage: int64(x), NBytes: 400}}, Base: int64(base), Made: 2}
	return passSegment{pass: p, lines: []string{
		jsonCall(ts, "torch.ops.aten.relu.default", jsonRef(x), jsonTensor(base, base, 400)),
		jsonCall(ts+1, "torch.ops.aten.mul.Tensor", jsonRef(base)+","+jsonRef(base), jsonTensor(base+1, base+1, 400)),
		jsonDelete(ts+2, base, x),
	}}
}

// TestPassFallsBackWhenItsInputDiffers: a pass whose input shares its
// storage with a tensor outside it, where the recording's input did not,
// is applied command by command (the recorded effect would release the
// input's storage, which the view keeps), and the replay reports what a
// replay of every command reports; the same pass with an input like the
// recorded one is applied as one step.
func TestPassFallsBackWhenItsInputDiffers(t *testing.T) {
	stream := `{"ts":0,"ranks":[{"offset":0,"sizes":[1],"strides":[1]}],"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`
	segs := []passSegment{
		{lines: []string{stream, jsonCall(1, "torch.ops.aten.ones.default", "", jsonTensor(10, 10, 400))}},
		layerPass(2, 10, 20), // recorded
		{lines: []string{
			jsonCall(5, "torch.ops.aten.ones.default", "", jsonTensor(30, 30, 400)),
			jsonCall(6, "torch.ops.aten.view.default", jsonRef(30), jsonTensor(31, 30, 400)), // keeps storage 30
		}},
		layerPass(7, 30, 40), // its input's storage has two tensors: command by command
		{lines: []string{jsonCall(10, "torch.ops.aten.ones.default", "", jsonTensor(50, 50, 400))}},
		layerPass(11, 50, 60), // as recorded: one step
	}
	one, oneDev := feedSegments(t, 1, segs, true)
	fast, fastDev := feedSegments(t, 1, segs, false)
	if fast.PassSteps != 1 || fast.PassesRecorded != 1 || one.PassSteps != 0 {
		t.Fatalf("passes applied as steps: %d (recorded %d), command by command %d; want 1 (1), 0", fast.PassSteps, fast.PassesRecorded, one.PassSteps)
	}
	// What stays: the three z (21, 41, 61) and storage 30, held by the
	// view 31: 4 x 400 = 1,600 bytes.
	if fast.PeakDeviceFinalBytes != 1600 || one.PeakDeviceFinalBytes != 1600 {
		t.Errorf("final bytes %d (steps) and %d (commands), want 1600", fast.PeakDeviceFinalBytes, one.PeakDeviceFinalBytes)
	}
	sameResults(t, one, oneDev, fast, fastDev)
}

// sameResults fails t unless a replay command by command (one, with its
// devices oneDev) and one with passes applied as steps (fast, fastDev)
// give the same results, but for the wall time and the pass counts.
func sameResults(t *testing.T, one *Result, oneDev string, fast *Result, fastDev string) {
	t.Helper()
	a, b := *one, *fast
	a.Wall, b.Wall = 0, 0
	a.PassSteps, a.PassesRecorded, b.PassSteps, b.PassesRecorded = 0, 0, 0, 0
	if fmt.Sprint(a) != fmt.Sprint(b) || oneDev != fastDev {
		t.Errorf("results differ:\ncommand by command %+v %s\npasses as steps    %+v %s", a, oneDev, b, fastDev)
	}
}
