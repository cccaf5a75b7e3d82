package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/synth"
)

// toBinary converts a JSON-lines history to the binary form.
func toBinary(t *testing.T, hist []byte) []byte {
	t.Helper()
	out, err := history.ConvertBytes(hist, "in.hist", history.FormBinary)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// replayOutputs replays hist and returns everything a replay writes: the
// report text of every step and the end, the record counts, every
// device's peak, and the trace bytes (with trace set; without it the
// engine holds Reduces back to apply them together, batch.go); or the
// error's text, which names the line.
func replayOutputs(t *testing.T, hist []byte, opt Options, trace bool) (string, []byte) {
	t.Helper()
	if trace {
		opt.TracePath = filepath.Join(t.TempDir(), "trace.json")
	}
	var peaks strings.Builder
	opt.Inspect = func(eng *sched.Engine, _ *Result) error {
		eng.DevicePeaks(func(lowest, ranks, peak int64) { fmt.Fprintf(&peaks, "%d:%d:%d ", lowest, ranks, peak) })
		return nil
	}
	res, err := Reader(bytes.NewReader(hist), "p.hist", opt)
	if err != nil {
		return "error: " + err.Error(), nil
	}
	var tr []byte
	if trace {
		if tr, err = os.ReadFile(opt.TracePath); err != nil {
			t.Fatal(err)
		}
	}
	return fmt.Sprintf("%+v\n%+v\n%d %d %d %v %d %d %v %d\n%s", res.Final, res.Steps, res.Records, res.LastLine, res.Commands, res.Kinds, res.Groups, res.WorkerTasks, res.Partial, res.PeakDeviceFinalBytes, peaks.String()), tr
}

// withBatches runs fn with pipeline batches of n records in a ring of two
// (see pipe.go), so that the goroutines wait for each other often.
func withBatches(n int, fn func()) {
	oldB, oldR := batchRecords, ringBatches
	batchRecords, ringBatches = n, 2
	defer func() { batchRecords, ringBatches = oldB, oldR }()
	fn()
}

// pipeHistories are the histories the pipelined replay is checked on:
// the golden files, random histories and training histories long enough
// that tensor rows, storages and borrows are reused across many batches.
func pipeHistories(t *testing.T) map[string][]byte {
	t.Helper()
	hs := map[string][]byte{}
	paths, err := filepath.Glob(filepath.Join(goldenDir, "*.hist"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden histories: %v", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		hs[filepath.Base(p)] = b
	}
	seeds := 2
	if testing.Short() {
		seeds = 1
	}
	for seed := 1; seed <= seeds; seed++ {
		for _, world := range []int{8, 13, 64} {
			var b bytes.Buffer
			if err := synth.Random(&b, uint64(seed*7919+world), world, 1500); err != nil {
				t.Fatal(err)
			}
			hs[fmt.Sprintf("random-%d-w%d", seed, world)] = b.Bytes()
			b = bytes.Buffer{}
			if err := synth.RandomMesh(&b, uint64(seed*104729+world), world, 1500); err != nil {
				t.Fatal(err)
			}
			hs[fmt.Sprintf("mesh-%d-w%d", seed, world)] = b.Bytes()
		}
	}
	for _, c := range []synth.Train{
		{PP: 2, DP: 2, TP: 1, Layers: 4, Hidden: 32, Seq: 8, Batch: 4, Micro: 2, Steps: 12},
		{PP: 4, DP: 2, TP: 2, Layers: 8, Hidden: 64, Seq: 16, Batch: 8, Micro: 4, Steps: 4},
	} {
		var b bytes.Buffer
		if err := synth.WriteTrain(&b, c); err != nil {
			t.Fatal(err)
		}
		hs[fmt.Sprintf("train-pp%d-dp%d-tp%d", c.PP, c.DP, c.TP)] = b.Bytes()
	}
	return hs
}

// TestPipelinedEqualsSerial replays every history, grouped and ungrouped,
// in JSON lines and in the binary form, traced and report-only (where
// Reduces are held back, batch.go), serially (Jobs 1) and with the
// decoding pipelined (Jobs 2, in batches of the default size and of one
// record, so that the decoder runs ahead of the engine by a little and by
// much; and Jobs 3, with parallel engine sections too): reports, per-device
// peaks, counts, errors and traces must be byte for byte the same.
func TestPipelinedEqualsSerial(t *testing.T) {
	hs := pipeHistories(t)
	for seed := 1; seed <= 4; seed++ {
		hs[fmt.Sprintf("heldmesh-%d", seed)] = meshHistory(uint64(seed), 16, 4, 300)
	}
	for name, hist := range hs {
		forms := map[string][]byte{"json": hist, "binary": toBinary(t, hist)}
		for form, h := range forms {
			for _, grouped := range []bool{false, true} {
				for _, trace := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/%s/grouped=%v/trace=%v", name, form, grouped, trace), func(t *testing.T) {
						want, wantTrace := replayOutputs(t, h, Options{Grouped: grouped, Jobs: 1}, trace)
						check := func(what string, jobs int) {
							got, gotTrace := replayOutputs(t, h, Options{Grouped: grouped, Jobs: jobs}, trace)
							if got != want {
								t.Fatalf("%s: outputs differ from jobs 1:\n%s\nwant\n%s", what, got, want)
							}
							if !bytes.Equal(gotTrace, wantTrace) {
								t.Fatalf("%s: traces differ from jobs 1 (%d and %d bytes)", what, len(gotTrace), len(wantTrace))
							}
						}
						check("jobs 2", 2)
						withBatches(1, func() { check("jobs 2, batches of 1", 2) })
						if grouped && !trace {
							check("jobs 3", 3)
						}
					})
				}
			}
		}
	}
}

// TestPipelinedErrors checks that a failing history fails the same way
// pipelined: a decode error after many good records (every record before
// it runs first), and an engine error, at their lines with their messages.
func TestPipelinedErrors(t *testing.T) {
	var b bytes.Buffer
	c := synth.Train{PP: 2, DP: 2, TP: 1, Layers: 4, Hidden: 32, Seq: 8, Batch: 4, Micro: 2, Steps: 6}
	if err := synth.WriteTrain(&b, c); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(b.String(), "\n")
	if len(lines) < 1200 {
		t.Fatalf("history of %d lines, want many batches", len(lines))
	}
	cases := map[string]string{
		// Line 1001 is not JSON: a decode error.
		"decode": strings.Join(lines[:1000], "") + "{\"ts\": oops}\n" + strings.Join(lines[1000:], ""),
		// A record naming a stream nobody created: an engine error.
		"engine": strings.Join(lines[:1000], "") + `{"ts":999999999999,"ranks":[{"start":0,"stop":1,"step":1}],"msg":{"type":"CallFunction","ident":1,"function":"f","args":[],"kwargs":{},"result":[],"stream":{"ref":987654}}}` + "\n",
		// The history ends inside a record.
		"truncated": strings.Join(lines[:1500], "") + lines[1500][:len(lines[1500])/2],
	}
	for name, h := range cases {
		for _, grouped := range []bool{false, true} {
			want, _ := replayOutputs(t, []byte(h), Options{Grouped: grouped, Jobs: 1}, false)
			if !strings.HasPrefix(want, "error: ") {
				t.Fatalf("%s: the serial replay did not fail: %s", name, want)
			}
			got, _ := replayOutputs(t, []byte(h), Options{Grouped: grouped, Jobs: 2}, false)
			if got != want {
				t.Errorf("%s grouped %v: pipelined %q, serial %q", name, grouped, got, want)
			}
		}
	}
}

// TestPipelinedStop checks that a stop request ends a pipelined replay as
// a serial one: a partial result after the same records, no error.
func TestPipelinedStop(t *testing.T) {
	var b bytes.Buffer
	c := synth.Train{PP: 2, DP: 2, TP: 1, Layers: 4, Hidden: 32, Seq: 8, Batch: 4, Micro: 2, Steps: 4}
	if err := synth.WriteTrain(&b, c); err != nil {
		t.Fatal(err)
	}
	for _, jobs := range []int{1, 2} {
		r, err := history.NewReader(bytes.NewReader(b.Bytes()), "p.hist")
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		close(stop)
		sim, err := New(r.Header(), "p.hist", Options{Grouped: true, Jobs: jobs, Stop: stop})
		if err != nil {
			t.Fatal(err)
		}
		for !sim.stop.Load() { // the stop watcher has seen the request
			runtime.Gosched()
		}
		if err := sim.Run(r); err != nil {
			t.Fatalf("jobs %d: %v", jobs, err)
		}
		res := sim.Result()
		sim.Close()
		// The first record counts as replayed in part (Feed).
		if !res.Partial || res.Records != 1 {
			t.Errorf("jobs %d: stopped before the first record: partial %v after %d records, want partial after 1", jobs, res.Partial, res.Records)
		}
	}
}

// TestPipelinedBorrowIDAgain replays a history that names a borrow's id
// again right after the borrow is dropped, then creates another borrow
// many records later while the second one with that id is alive. Serially
// the drop releases the borrow's index before the id comes back; pipelined,
// the record naming it again is decoded before the release reaches the
// decoder, so the release must be dropped (pipe.go): applied, it would
// unmap the live borrow's id and hand its index to the other borrow.
func TestPipelinedBorrowIDAgain(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"fastsim":"history","version":1,"world_size":2,"gpus_per_host":2}` + "\n")
	ts := 0
	rec := func(msg string) {
		ts += 1000
		fmt.Fprintf(&b, `{"ts":%d,"ranks":[{"offset":0,"sizes":[2],"strides":[1]}],"msg":%s}`+"\n", ts, msg)
	}
	rec(`{"type":"CreateDeviceMesh","names":["host","gpu"],"ranks":{"offset":0,"sizes":[2],"strides":[1]}}`)
	rec(`{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}`)
	rec(`{"type":"CreateStream","result":{"ref":2,"name":"other"},"default":false}`)
	rec(`{"type":"CallFunction","ident":4,"function":"torch.ops.aten.randn.default","args":[[100,100]],"kwargs":{},"result":[{"tensor":1,"storage":1,"nbytes":40000,"dtype":"float32","shape":[100,100],"device":"cuda"}],"mutates":[],"stream":{"ref":1}}`)
	create := func(borrow, tensor int) {
		rec(fmt.Sprintf(`{"type":"BorrowCreate","result":{"tensor":%d,"storage":%d,"nbytes":40000,"dtype":"float32","shape":[100,100],"device":"cuda"},"borrow":%d,"tensor":{"tensor":1},"from_stream":{"ref":1},"to_stream":{"ref":2}}`, tensor, tensor, borrow))
	}
	end := func(borrow, tensor int) {
		rec(fmt.Sprintf(`{"type":"BorrowLastUse","borrow":%d}`, borrow))
		rec(fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d]}`, tensor))
		rec(fmt.Sprintf(`{"type":"BorrowDrop","borrow":%d}`, borrow))
	}
	// Borrow 1, whole; borrow 1 again at once.
	create(1, 10)
	rec(`{"type":"BorrowFirstUse","borrow":1}`)
	end(1, 10)
	create(1, 11)
	// Many records: the first borrow's release reaches the decoder.
	for i := 0; i < 40*batchRecords; i++ {
		rec(fmt.Sprintf(`{"type":"RequestStatus","ident":%d,"controller":false}`, 100+i))
	}
	create(2, 12)
	rec(`{"type":"BorrowFirstUse","borrow":2}`)
	rec(`{"type":"BorrowFirstUse","borrow":1}`)
	end(2, 12)
	end(1, 11)
	rec(`{"type":"Exit","destroy_pg":true,"error":null}`)
	h := []byte(b.String())
	for _, grouped := range []bool{false, true} {
		want, wantTrace := replayOutputs(t, h, Options{Grouped: grouped, Jobs: 1}, true)
		if strings.HasPrefix(want, "error: ") {
			t.Fatalf("the serial replay failed: %s", want)
		}
		got, gotTrace := replayOutputs(t, h, Options{Grouped: grouped, Jobs: 2}, true)
		if got != want || !bytes.Equal(gotTrace, wantTrace) {
			t.Errorf("grouped %v: pipelined\n%s\nserial\n%s", grouped, got, want)
		}
	}
}

// TestPipelinedStopMidway stops a replay at its second step record, on the
// engine's goroutine (OnStep), so that serially and pipelined it stops at
// the same record while the decoder has run ahead: the partial results
// must be the same, reports and per-device peaks included.
func TestPipelinedStopMidway(t *testing.T) {
	var b bytes.Buffer
	c := synth.Train{PP: 2, DP: 2, TP: 1, Layers: 4, Hidden: 32, Seq: 8, Batch: 4, Micro: 2, Steps: 4}
	if err := synth.WriteTrain(&b, c); err != nil {
		t.Fatal(err)
	}
	run := func(hist []byte, jobs int) string {
		r, err := history.NewReader(bytes.NewReader(hist), "p.hist")
		if err != nil {
			t.Fatal(err)
		}
		sim, err := New(r.Header(), "p.hist", Options{Grouped: true, Jobs: jobs, PartialTrace: true,
			Inspect: func(eng *sched.Engine, _ *Result) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		defer sim.Close()
		sim.OnStep(func(sched.Report) {
			if len(sim.res.Steps) == 2 {
				sim.stop.Store(true)
			}
		})
		if err := sim.Run(r); err != nil {
			t.Fatalf("jobs %d: %v", jobs, err)
		}
		res, err := sim.End()
		if err != nil {
			t.Fatalf("jobs %d: %v", jobs, err)
		}
		var peaks strings.Builder
		sim.Engine().DevicePeaks(func(lowest, ranks, peak int64) { fmt.Fprintf(&peaks, "%d:%d:%d ", lowest, ranks, peak) })
		if !res.Partial || len(res.Steps) != 2 {
			t.Fatalf("jobs %d: partial %v after %d steps, want partial after 2", jobs, res.Partial, len(res.Steps))
		}
		return fmt.Sprintf("%+v\n%+v\n%d %d %d\n%s", res.Final, res.Steps, res.Records, res.LastLine, res.Commands, peaks.String())
	}
	for form, h := range map[string][]byte{"json": b.Bytes(), "binary": toBinary(t, b.Bytes())} {
		want := run(h, 1)
		if got := run(h, 2); got != want {
			t.Errorf("%s: pipelined\n%s\nserial\n%s", form, got, want)
		}
		withBatches(3, func() {
			if got := run(h, 2); got != want {
				t.Errorf("%s, batches of 3: pipelined\n%s\nserial\n%s", form, got, want)
			}
		})
	}
}

// TestPipelinedLiveStream feeds a history through a pipe a step at a
// time and writes the next step only once the engine has reported the
// last one: the records of a stream that has paused must reach the
// engine, not wait in a batch for more input. (Were they held, the step
// would never be reported and the writer would give up.)
func TestPipelinedLiveStream(t *testing.T) {
	var b bytes.Buffer
	c := synth.Train{PP: 2, DP: 2, TP: 1, Layers: 2, Hidden: 32, Seq: 8, Batch: 4, Micro: 2, Steps: 3}
	if err := synth.WriteTrain(&b, c); err != nil {
		t.Fatal(err)
	}
	// The history in pieces, each ending with a step record.
	var pieces [][]byte
	rest := b.Bytes()
	for {
		i := bytes.Index(rest, []byte(`{"step":`))
		if i < 0 {
			pieces = append(pieces, rest)
			break
		}
		end := i + bytes.IndexByte(rest[i:], '\n') + 1
		pieces = append(pieces, rest[:end])
		rest = rest[end:]
	}
	if len(pieces) < 3 {
		t.Fatalf("%d pieces, want a step in each of several", len(pieces))
	}
	pr, pw := io.Pipe()
	steps := make(chan int, len(pieces))
	writeErr := make(chan error, 1)
	go func() {
		defer pw.Close()
		for k, p := range pieces {
			if _, err := pw.Write(p); err != nil {
				writeErr <- err
				return
			}
			if k == len(pieces)-1 {
				break
			}
			select {
			case <-steps:
			case <-time.After(30 * time.Second):
				writeErr <- fmt.Errorf("piece %d written, its step not reported in 30 s", k)
				return
			}
		}
		writeErr <- nil
	}()
	r, err := history.NewReader(pr, "live.hist")
	if err != nil {
		t.Fatal(err)
	}
	sim, err := New(r.Header(), "live.hist", Options{Grouped: true, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	sim.OnStep(func(sched.Report) { steps <- 1 })
	if err := sim.Run(r); err != nil {
		t.Fatal(err)
	}
	if err := <-writeErr; err != nil {
		t.Fatal(err)
	}
}

// panicSource gives its text in chunks of 256 bytes and panics once more
// than after bytes are read: a broken source, met by the decoder's
// goroutine.
type panicSource struct {
	text  []byte
	after int
	read  int
}

func (p *panicSource) Read(b []byte) (int, error) {
	if p.read > p.after {
		panic("broken source")
	}
	if p.read == len(p.text) {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), 256)], p.text[p.read:])
	p.read += n
	return n, nil
}

// TestPipelinedDecoderPanic: a panic on the decoder's goroutine reaches
// the engine as an internal error, as a panic on the search's evaluation
// goroutines does, instead of ending the process with a stack dump.
func TestPipelinedDecoderPanic(t *testing.T) {
	hist, err := os.ReadFile(filepath.Join(goldenDir, "random_101.hist"))
	if err != nil {
		t.Fatal(err)
	}
	withBatches(1, func() {
		_, err = Reader(&panicSource{text: hist, after: len(hist) / 2}, "p.hist", Options{Jobs: 2})
	})
	if !errors.Is(err, sched.ErrInternal) || !strings.Contains(err.Error(), "broken source") {
		t.Fatalf("Reader = %v, want ErrInternal with the panic's value", err)
	}
}
