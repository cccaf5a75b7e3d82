package replay

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/golden"
	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/synth"
)

func hardwareModel(t *testing.T, name string) *costs.Model {
	t.Helper()
	s, err := hardware.Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := costs.NewWithHardware(costs.Config{}, s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// On a hardware model, where a collective's price depends on the hosts
// its ranks occupy, grouped and ungrouped replays still agree on every
// device: placement comes from the command's slices, not from the groups.
func TestHardwareGroupedEqualsUngrouped(t *testing.T) {
	m := hardwareModel(t, "h100-sxm")
	var hists [][]byte
	for _, world := range []int{8, 12, 32} {
		var h bytes.Buffer
		if err := synth.Random(&h, uint64(world), world, 300); err != nil {
			t.Fatal(err)
		}
		hists = append(hists, h.Bytes())
	}
	for _, c := range []synth.Train{
		{PP: 2, DP: 8, TP: 2, Layers: 4, Hidden: 256, Seq: 128, Batch: 16, Micro: 2, Steps: 2},
		{PP: 1, DP: 4, TP: 4, Layers: 2, Hidden: 512, Seq: 256, Batch: 8, Micro: 1, Steps: 2},
	} {
		var h bytes.Buffer
		if err := synth.WriteTrain(&h, c); err != nil {
			t.Fatal(err)
		}
		hists = append(hists, h.Bytes())
	}
	for i, hist := range hists {
		ur, un, _ := replayBytes(t, hist, Options{Model: m})
		gr, gn, _ := replayBytes(t, hist, Options{Model: m, Grouped: true, Jobs: 2})
		if diffs := golden.Compare(un, gn); len(diffs) > 0 {
			t.Fatalf("history %d: grouped differs from ungrouped:\n  %s", i, strings.Join(diffs, "\n  "))
		}
		if ur.Final != gr.Final {
			t.Fatalf("history %d: ungrouped %+v, grouped %+v", i, ur.Final, gr.Final)
		}
		// The hardware prices differ from the reference's fixed ones
		// (compared without the controller, whose recorded clock can
		// hide the streams' times).
		ref, err := Reader(bytes.NewReader(hist), "h", Options{Controller: sched.ControllerNone})
		if err != nil {
			t.Fatal(err)
		}
		hw, err := Reader(bytes.NewReader(hist), "h", Options{Model: m, Controller: sched.ControllerNone})
		if err != nil {
			t.Fatal(err)
		}
		if ref.Final.ExecNs == hw.Final.ExecNs {
			t.Errorf("history %d: the hardware model priced exactly like the reference", i)
		}
	}
}

// With no controller cost (SPMD) the clock stays 0: the reports equal
// those of stream-only mode, where the controller is not simulated, and
// are never later than Monarch's.
func TestControllerNone(t *testing.T) {
	for _, world := range []int{4, 16} {
		var h bytes.Buffer
		if err := synth.Random(&h, uint64(world)*7, world, 300); err != nil {
			t.Fatal(err)
		}
		run := func(opt Options) *Result {
			r, err := Reader(bytes.NewReader(h.Bytes()), "h", opt)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		none := run(Options{Controller: sched.ControllerNone})
		streams := run(Options{Mode: sched.StreamOnly})
		monarch := run(Options{})
		if none.Final != streams.Final || fmt.Sprint(none.Steps) != fmt.Sprint(streams.Steps) {
			t.Errorf("world %d: controller none %+v, stream-only %+v", world, none.Final, streams.Final)
		}
		if none.Final.ExecNs > monarch.Final.ExecNs {
			t.Errorf("world %d: SPMD %d ns later than Monarch %d ns", world, none.Final.ExecNs, monarch.Final.ExecNs)
		}
	}
	if _, err := sched.ParseController("mpi"); err == nil {
		t.Error("ParseController accepted mpi")
	}
}

// recordComm is the reference's fixed costs, recording what the engine
// tells the model about each collective.
type recordComm struct {
	sched.Costs
	got []sched.Comm
}

func (r *recordComm) ReduceRuntimeNs(m *gen.Reduce, c sched.Comm) int64 {
	r.got = append(r.got, c)
	return r.Costs.ReduceRuntimeNs(m, c)
}

// The engine places a collective's ranks on hosts by gpus_per_host: the
// hosts they occupy and the most ranks on one, the same grouped or not.
func TestCollectivePlacement(t *testing.T) {
	all := `[{"offset":0,"sizes":[16],"strides":[1]}]`
	lines := []string{
		`{"fastsim":"history","version":1,"world_size":16,"gpus_per_host":8}`,
		`{"ts":0,"ranks":` + all + `,"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`,
		`{"ts":1,"ranks":` + all + `,"msg":{"type":"CallFunction","ident":1,"function":"torch.ops.aten.ones.default","args":[],"kwargs":{},"result":[{"tensor":1,"storage":1,"nbytes":4096,"dtype":"float32","shape":[1024]}],"mutates":[],"stream":{"ref":1}}}`,
	}
	reduce := func(ts, out int, ranks string) string {
		return fmt.Sprintf(`{"ts":%d,"ranks":%s,"msg":{"type":"Reduce","result":{"tensor":%d,"storage":%d,"nbytes":4096,"dtype":"float32","shape":[1024]},"local_tensor":{"tensor":1},"stream":{"ref":1},"dims":["x"],"reduction":"sum","scatter":false,"inplace":false,"out":null}}`, ts, ranks, out, out)
	}
	lines = append(lines,
		// Ranks 0-3 and 8-11: two hosts, four on each.
		reduce(2, 10, `[{"offset":0,"sizes":[2,4],"strides":[8,1]}]`),
		// Ranks 0, 8 (two slices): two hosts, one on each.
		reduce(3, 11, `[{"offset":0,"sizes":[],"strides":[]},{"offset":8,"sizes":[],"strides":[]}]`),
		// Ranks 4-7: one host.
		reduce(4, 12, `[{"offset":4,"sizes":[4],"strides":[1]}]`),
		// Every rank, twice (the second from the cache).
		reduce(5, 13, all), reduce(6, 14, all),
	)
	want := []sched.Comm{
		{Ranks: 8, GPUsPerHost: 8, Hosts: 2, MaxPerHost: 4},
		{Ranks: 2, GPUsPerHost: 8, Hosts: 2, MaxPerHost: 1},
		{Ranks: 4, GPUsPerHost: 8, SameHost: true, Hosts: 1, MaxPerHost: 4},
		{Ranks: 16, GPUsPerHost: 8, Hosts: 2, MaxPerHost: 8},
		{Ranks: 16, GPUsPerHost: 8, Hosts: 2, MaxPerHost: 8},
	}
	for _, grouped := range []bool{false, true} {
		rec := &recordComm{Costs: sched.DefaultCosts()}
		if _, err := Reader(strings.NewReader(strings.Join(lines, "\n")), "place.hist", Options{Model: rec, Grouped: grouped}); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(rec.got) != fmt.Sprint(want) {
			t.Errorf("grouped %v: %+v, want %+v", grouped, rec.got, want)
		}
	}
}
