package sched

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/history"
)

// Expected values in these tests are worked out by hand from docs/SEMANTICS.md;
// the comments show the arithmetic.

// h builds a history: a header for world ranks, then the records.
func h(world int, records ...string) string {
	return fmt.Sprintf(`{"fastsim":"history","version":1,"world_size":%d}`, world) + "\n" + strings.Join(records, "\n") + "\n"
}

// on is a record at ts for the ranks offset..offset+n-1.
func on(ts, offset, n int, msg string) string {
	return fmt.Sprintf(`{"ts":%d,"ranks":[{"offset":%d,"sizes":[%d],"strides":[1]}],"msg":%s}`, ts, offset, n, msg)
}

func mkStream(ref int, name string) string {
	return fmt.Sprintf(`{"type":"CreateStream","result":{"ref":%d,"name":%q},"default":%v}`, ref, name, ref == 1)
}

// tensor is a first mention of tensor id on storage sid of nbytes.
func tensor(id, sid, nbytes int) string {
	return fmt.Sprintf(`{"tensor":%d,"storage":%d,"nbytes":%d,"dtype":"float32","shape":[%d],"device":"cuda"}`, id, sid, nbytes, nbytes/4)
}

func ref(id int) string { return fmt.Sprintf(`{"tensor":%d}`, id) }

func call(fn string, streamRef int, args, result string) string {
	return fmt.Sprintf(`{"type":"CallFunction","ident":0,"function":%q,"args":[%s],"kwargs":{},"result":[%s],"mutates":[],"stream":{"ref":%d}}`, fn, args, result, streamRef)
}

// replayText replays a history held in a string and returns the engine.
func replayText(t *testing.T, mode Mode, text string) (*Engine, error) {
	t.Helper()
	return replayWith(t, Options{Mode: mode, KeepEvents: true}, text)
}

// replayWith replays a history held in a string with opt (its world from
// the history's header) and returns the engine.
func replayWith(t *testing.T, opt Options, text string) (*Engine, error) {
	t.Helper()
	r, err := history.NewReader(strings.NewReader(text), "test.hist")
	if err != nil {
		t.Fatalf("header: %v", err)
	}
	opt.WorldSize = r.Header().WorldSize
	e, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	var rec history.Record
	for {
		err := r.Next(&rec)
		if err == io.EOF {
			return e, nil
		}
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if rec.IsStep {
			e.Step()
			continue
		}
		if err := e.Command(rec.Line, rec.Ts, rec.Ranks, &rec.Msg, r.Registry()); err != nil {
			return e, err
		}
	}
}

// timeline lists a worker's stream events as "name start-end" in ns.
func timeline(e *Engine, w int, name string) string {
	var b strings.Builder
	g := e.gs[e.part.GroupOf(int64(w))]
	for s := range g.streams {
		st := &g.streams[s]
		if e.names.Name(st.name) != name {
			continue
		}
		for i := range st.evStart {
			fmt.Fprintf(&b, "%s %d-%d; ", e.names.Name(st.evName[i]), st.evStart[i], st.evEnd[i])
		}
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// memory lists a worker's merged memory series as "ns:bytes".
func memory(e *Engine, w int) string {
	var parts []string
	e.mergeAll(e.gs[e.part.GroupOf(int64(w))], func(ns, running int64) { parts = append(parts, fmt.Sprintf("%d:%d", ns, running)) })
	return strings.Join(parts, " ")
}

func mustReplay(t *testing.T, mode Mode, text string) *Engine {
	t.Helper()
	e, err := replayText(t, mode, text)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	return e
}

func TestCleanName(t *testing.T) {
	for in, want := range map[string]string{
		"torch.ops.aten.mm.default":  "aten.mm",
		"torch.ops.aten.add_.Tensor": "aten.add_.Tensor",
		"torch.ops.c10d.send":        "torch.ops.c10d.send", // only aten loses its prefix
		"foo.default":                "foo",
		"aten.default":               "aten",
		".default":                   "",
		"torch.ops.aten.":            "aten.",
		"":                           "",
	} {
		if got := CleanName(in); got != want {
			t.Errorf("CleanName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCallFunctionChainAndDelete(t *testing.T) {
	e := mustReplay(t, Everything, h(1,
		on(1000, 0, 1, mkStream(1, "main")),
		on(2000, 0, 1, call("torch.ops.aten.randn.default", 1, "", tensor(1, 1, 100))),
		on(3000, 0, 1, call("torch.ops.aten.mm.default", 1, ref(1)+","+ref(1), tensor(2, 2, 200))),
		on(4000, 0, 1, `{"type":"DeleteRefs","refs":[1]}`),
	))
	// randn: starts at its ts 2000, runs 10000. mm: queued at 3000 behind
	// randn (stream now 12000): 12000-22000.
	if got, want := timeline(e, 0, "main"), "aten.randn 2000-12000; aten.mm 12000-22000"; got != want {
		t.Errorf("timeline %q, want %q", got, want)
	}
	// T1 allocated at 2000, T2 at 12000; T1 deleted at 4000 after mm
	// finished, so released at max(stream now 22000, 4000).
	if got, want := memory(e, 0), "2000:100 12000:300 22000:200"; got != want {
		t.Errorf("memory %q, want %q", got, want)
	}
	r := e.Report()
	// Controller events end at 4000; the stream's last ends at 22000.
	if r.ExecNs != 22000 || r.PeakBytes != 300 || r.PeakDevice != 0 {
		t.Errorf("report %+v, want exec 22000 peak 300 on 0", r)
	}
}

func TestViewEndsAtStart(t *testing.T) {
	e := mustReplay(t, StreamOnly, h(1,
		on(1, 0, 1, mkStream(1, "main")),
		on(2, 0, 1, call("torch.ops.aten.randn.default", 1, "", tensor(1, 1, 8))),
		on(3, 0, 1, call("torch.ops.aten.view.default", 1, ref(1), tensor(2, 1, 8))),
		on(4, 0, 1, call("torch.ops.aten.relu.default", 1, ref(2), tensor(3, 3, 8))),
	))
	// Stream-only: the controller clock stays 0. The view takes no time and
	// leaves no event; it shares storage 1 so it allocates nothing.
	if got, want := timeline(e, 0, "main"), "aten.randn 0-10000; aten.relu 10000-20000"; got != want {
		t.Errorf("timeline %q, want %q", got, want)
	}
	if got, want := memory(e, 0), "0:8 10000:16"; got != want {
		t.Errorf("memory %q, want %q", got, want)
	}
}

func TestReduceWaitsForStraggler(t *testing.T) {
	e := mustReplay(t, Everything, h(2,
		on(1000, 0, 2, mkStream(1, "main")),
		on(2000, 0, 1, call("torch.ops.aten.randn.default", 1, "", tensor(1, 1, 4))),
		on(3000, 1, 1, call("torch.ops.aten.randn.default", 1, "", tensor(1, 1, 4))),
		on(4000, 0, 2, `{"type":"Reduce","result":`+tensor(2, 2, 4)+`,"local_tensor":{"tensor":1},"stream":{"ref":1},"dims":["gpu"],"reduction":"sum","scatter":false,"inplace":false,"out":null}`),
	))
	// Worker 0's reduce starts at 12000 (after its randn), worker 1's at
	// 13000: both end at the straggler's start + 100000 = 113000.
	if got, want := timeline(e, 0, "main"), "aten.randn 2000-12000; reduce_scatter 12000-113000"; got != want {
		t.Errorf("worker 0: %q, want %q", got, want)
	}
	if got, want := timeline(e, 1, "main"), "aten.randn 3000-13000; reduce_scatter 13000-113000"; got != want {
		t.Errorf("worker 1: %q, want %q", got, want)
	}
}

func TestReduceNames(t *testing.T) {
	for _, c := range []struct {
		reduction string
		scatter   bool
		want      string
	}{{"stack", true, "all_to_all"}, {"stack", false, "all_gather"}, {"sum", true, "all_reduce"}, {"avg", false, "reduce_scatter"}} {
		e := mustReplay(t, StreamOnly, h(1,
			on(1, 0, 1, mkStream(1, "main")),
			on(2, 0, 1, call("f", 1, "", tensor(1, 1, 4))),
			on(3, 0, 1, fmt.Sprintf(`{"type":"Reduce","result":%s,"local_tensor":{"tensor":1},"stream":{"ref":1},"reduction":%q,"scatter":%v}`, tensor(2, 2, 4), c.reduction, c.scatter)),
		))
		if got := timeline(e, 0, "main"); !strings.HasSuffix(got, c.want+" 10000-110000") {
			t.Errorf("%s scatter=%v: %q, want a %s event", c.reduction, c.scatter, got, c.want)
		}
	}
}

func TestSendTensorPairsByPosition(t *testing.T) {
	e := mustReplay(t, StreamOnly, h(4,
		on(1, 0, 4, mkStream(1, "main")),
		on(2, 0, 1, call("f", 1, "", tensor(1, 1, 4))),
		on(3, 1, 1, call("f", 1, "", tensor(1, 1, 4))),
		on(4, 0, 1, call("g", 1, "", tensor(9, 9, 4))),
		// from [0,1] to [3,2]: 0 pairs with 3, 1 with 2.
		`{"ts":5,"ranks":[{"offset":0,"sizes":[4],"strides":[1]}],"msg":{"type":"SendTensor","result":`+tensor(2, 2, 4)+`,"tensor":{"tensor":1},"from_ranks":{"offset":0,"sizes":[2],"strides":[1]},"to_ranks":{"offset":3,"sizes":[2],"strides":[-1]},"from_stream":{"ref":1},"to_stream":{"ref":1}}}`,
	))
	// Worker 0's send starts at 20000 (two tasks before it), worker 1's at
	// 10000; each receive ends at its sender's start + 100000.
	for w, want := range map[int]string{
		0: "f 0-10000; g 10000-20000; SendTensor 20000-120000",
		1: "f 0-10000; SendTensor 10000-110000",
		2: "RecvTensor 0-110000",
		3: "RecvTensor 0-120000",
	} {
		if got := timeline(e, w, "main"); got != want {
			t.Errorf("worker %d: %q, want %q", w, got, want)
		}
	}
	if got, want := memory(e, 3), "0:4"; got != want {
		t.Errorf("receiver memory %q, want %q", got, want)
	}
}

func TestLocalSendUsesFromRanks(t *testing.T) {
	e := mustReplay(t, StreamOnly, h(2,
		on(1, 0, 2, mkStream(1, "main")),
		on(2, 0, 2, call("f", 1, "", tensor(1, 1, 4))),
		`{"ts":3,"ranks":[{"offset":0,"sizes":[1],"strides":[1]}],"msg":{"type":"SendTensor","result":`+tensor(2, 2, 4)+`,"tensor":{"tensor":1},"from_ranks":{"offset":0,"sizes":[2],"strides":[1]},"to_ranks":{"offset":0,"sizes":[2],"strides":[1]},"from_stream":{"ref":1},"to_stream":{"ref":1}}}`,
	))
	// Equal slices: a 1000 ns local copy on every rank of from_ranks, even
	// rank 1, which the record's own ranks leave out.
	for w := 0; w < 2; w++ {
		if got, want := timeline(e, w, "main"), "f 0-10000; SendTensor 10000-11000"; got != want {
			t.Errorf("worker %d: %q, want %q", w, got, want)
		}
	}
}

const borrowSetup = `{"ts":1,"ranks":[{"offset":0,"sizes":[1],"strides":[1]}],"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}
{"ts":2,"ranks":[{"offset":0,"sizes":[1],"strides":[1]}],"msg":{"type":"CreateStream","result":{"ref":2,"name":"other"},"default":false}}
{"ts":3,"ranks":[{"offset":0,"sizes":[1],"strides":[1]}],"msg":{"type":"CallFunction","function":"f","args":[],"result":[{"tensor":1,"storage":1,"nbytes":40,"dtype":"float32","shape":[10],"device":"cuda"}],"stream":{"ref":1}}}`

func borrowMsg(ts int, body string) string {
	return fmt.Sprintf(`{"ts":%d,"ranks":[{"offset":0,"sizes":[1],"strides":[1]}],"msg":%s}`, ts, body)
}

func TestBorrowProtocol(t *testing.T) {
	e := mustReplay(t, StreamOnly, h(1, borrowSetup,
		borrowMsg(4, `{"type":"BorrowCreate","result":`+tensor(2, 2, 40)+`,"borrow":7,"tensor":{"tensor":1},"from_stream":{"ref":1},"to_stream":{"ref":2}}`),
		borrowMsg(5, `{"type":"BorrowFirstUse","borrow":7}`),
		borrowMsg(6, call("g", 2, ref(2), tensor(3, 3, 8))),
		borrowMsg(7, `{"type":"BorrowLastUse","borrow":7}`),
		borrowMsg(8, `{"type":"DeleteRefs","refs":[2]}`),
		borrowMsg(9, `{"type":"BorrowDrop","borrow":7}`),
		borrowMsg(10, `{"type":"DeleteRefs","refs":[1]}`),
	))
	// f: 0-10000. "other" waits for f: the event starts at 0 and ends with
	// f at 10000; g follows, 10000-20000. At the drop "main" waits for g:
	// 10000 (main's now) to 20000. Tensor 1 is freed at main's now once the
	// borrow returns it and it is deleted: 20000.
	if got, want := timeline(e, 0, "main"), "f 0-10000; waiting for other 10000-20000"; got != want {
		t.Errorf("main %q, want %q", got, want)
	}
	if got, want := timeline(e, 0, "other"), "waiting for main 0-10000; g 10000-20000"; got != want {
		t.Errorf("other %q, want %q", got, want)
	}
	// The borrowed tensor 2 never counts: only tensors 1 (40) and 3 (8).
	if got, want := memory(e, 0), "0:40 10000:48 20000:8"; got != want {
		t.Errorf("memory %q, want %q", got, want)
	}
}

func TestBorrowErrors(t *testing.T) {
	create := borrowMsg(4, `{"type":"BorrowCreate","result":`+tensor(2, 2, 40)+`,"borrow":7,"tensor":{"tensor":1},"from_stream":{"ref":1},"to_stream":{"ref":2}}`)
	first := borrowMsg(5, `{"type":"BorrowFirstUse","borrow":7}`)
	last := borrowMsg(6, `{"type":"BorrowLastUse","borrow":7}`)
	drop := borrowMsg(7, `{"type":"BorrowDrop","borrow":7}`)
	for name, c := range map[string]struct {
		records []string
		want    string
	}{
		"first use before create": {[]string{first}, "unknown borrow 7"},
		"drop twice":              {[]string{create, first, last, drop, drop}, "unknown borrow 7"},
		"unknown borrow":          {[]string{borrowMsg(4, `{"type":"BorrowLastUse","borrow":3}`)}, "unknown borrow 3"},
		"created twice":           {[]string{create, create}, "borrow 7 created twice"},
		"first use twice":         {[]string{create, first, first}, "first used twice"},
		"drop before last use":    {[]string{create, first, drop}, "dropped before its last use"},
		"lends a missing tensor":  {[]string{borrowMsg(4, `{"type":"BorrowCreate","result":`+tensor(2, 2, 40)+`,"borrow":7,"tensor":`+tensor(5, 5, 4)+`,"from_stream":{"ref":1},"to_stream":{"ref":2}}`)}, "lends tensor 5"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := replayText(t, StreamOnly, h(1, append([]string{borrowSetup}, c.records...)...))
			if err == nil || !errors.Is(err, ErrBorrow) && !errors.Is(err, ErrMissingTensor) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestMemoryModelErrors(t *testing.T) {
	two := []string{on(1, 0, 1, mkStream(1, "main")), on(2, 0, 1, mkStream(2, "side"))}
	cases := map[string]struct {
		records []string
		want    string
	}{
		// Tensor 2 shares tensor 1's storage from stream "side", which
		// allocated nothing: the release there frees more than it holds.
		"more than the stream holds": {append(two,
			on(3, 0, 1, call("f", 1, "", tensor(1, 1, 100))),
			on(4, 0, 1, call("g", 2, "", tensor(2, 1, 100))),
			on(5, 0, 1, `{"type":"DeleteRefs","refs":[1,2]}`)), "which holds only 0"},
		// Same, but "side" holds 500 bytes of its own: now the release is
		// on another stream than the allocation.
		"another stream": {append(two,
			on(3, 0, 1, call("f", 1, "", tensor(1, 1, 100))),
			on(4, 0, 1, call("h", 2, "", tensor(3, 3, 500))),
			on(5, 0, 1, call("g", 2, "", tensor(2, 1, 100))),
			on(6, 0, 1, `{"type":"DeleteRefs","refs":[1,2]}`)), `allocated on stream "main"`},
		// A view's output is allocated at its start, which is also its
		// end: deleting it at once releases it at its allocation time.
		"at the allocation time": {append(two,
			on(3, 0, 1, call("torch.ops.aten.view.default", 1, "", tensor(4, 4, 100))),
			on(4, 0, 1, `{"type":"DeleteRefs","refs":[4]}`)), "not after its allocation at 0 ns (the same instant: the task that made it took no time"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := replayText(t, StreamOnly, h(1, c.records...))
			if !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrMemory containing %q", err, c.want)
			}
		})
	}
}

func TestHandlerErrors(t *testing.T) {
	s := on(1, 0, 2, mkStream(1, "main"))
	for name, c := range map[string]struct {
		records []string
		want    error
	}{
		"unknown stream":       {[]string{s, on(2, 0, 1, call("f", 9, "", tensor(1, 1, 4)))}, ErrUnknownStream},
		"stream created twice": {[]string{s, s}, ErrStreamExists},
		"input not on stream":  {[]string{s, on(2, 0, 1, call("f", 1, tensor(1, 1, 4), tensor(2, 2, 4)))}, ErrMissingTensor},
		"send rank counts":     {[]string{s, on(2, 0, 2, call("f", 1, "", tensor(1, 1, 4))), on(3, 0, 2, `{"type":"SendTensor","result":`+tensor(2, 2, 4)+`,"tensor":{"tensor":1},"from_ranks":{"offset":0,"sizes":[1],"strides":[1]},"to_ranks":{"offset":0,"sizes":[2],"strides":[1]},"from_stream":{"ref":1},"to_stream":{"ref":1}}`)}, ErrRankCount},
		"send across streams":  {[]string{s, on(3, 0, 2, `{"type":"SendTensor","result":`+tensor(2, 2, 4)+`,"tensor":`+tensor(1, 1, 4)+`,"from_ranks":{"offset":0,"sizes":[1],"strides":[1]},"to_ranks":{"offset":1,"sizes":[1],"strides":[1]},"from_stream":{"ref":1},"to_stream":{"ref":2}}`)}, ErrStreams},
		"pipe recv on the GPU": {[]string{s, on(2, 0, 1, `{"type":"PipeRecv","result":[`+tensor(1, 1, 4)+`],"stream":{"ref":1}}`)}, ErrNotCPU},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := replayText(t, StreamOnly, h(2, c.records...))
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			var ce *CommandError
			if !errors.As(err, &ce) || ce.Command < 1 {
				t.Fatalf("error %v does not name its command", err)
			}
		})
	}
}

func TestCPUTensorsAndCommandGroup(t *testing.T) {
	e := mustReplay(t, Everything, h(1,
		on(1000, 0, 1, mkStream(1, "main")),
		on(2000, 0, 1, `{"type":"PipeRecv","result":[{"tensor":1,"storage":1,"nbytes":64,"dtype":"float32","shape":[16],"device":"cpu"}],"stream":{"ref":1}}`),
		on(3000, 0, 1, `{"type":"CommandGroup","commands":[`+call("torch.ops.aten.copy.default", 1, ref(1), tensor(2, 2, 64))+`,`+call("torch.ops.aten.relu.default", 1, ref(2), tensor(3, 3, 64))+`]}`),
		on(4000, 0, 1, `{"type":"DeleteRefs","refs":[1]}`),
	))
	// The group's sub-commands run at the group's ts 3000: copy 3000-13000,
	// relu 13000-23000. The CPU tensor costs no memory.
	if got, want := timeline(e, 0, "main"), "aten.copy 3000-13000; aten.relu 13000-23000"; got != want {
		t.Errorf("timeline %q, want %q", got, want)
	}
	if got, want := memory(e, 0), "3000:64 13000:128"; got != want {
		t.Errorf("memory %q, want %q", got, want)
	}
	// Controller: PipeRecv 1000-2000, CommandGroup 2000-3000, then each
	// sub-command 3000-3000, DeleteRefs 3000-4000 (CreateStream is not
	// traced). Commands counted: 1 + 1 + 1 + 2 + 1.
	var ctrl []string
	for i := range e.ctrlName {
		ctrl = append(ctrl, fmt.Sprintf("%s %d-%d", e.names.Name(e.ctrlName[i]), e.ctrlStart[i], e.ctrlEnd[i]))
	}
	if got, want := strings.Join(ctrl, "; "), "PipeRecv 1000-2000; CommandGroup 2000-3000; aten.copy 3000-3000; aten.relu 3000-3000; DeleteRefs 3000-4000"; got != want {
		t.Errorf("controller %q, want %q", got, want)
	}
	if e.Commands() != 6 {
		t.Errorf("commands %d, want 6", e.Commands())
	}
}

func TestControllerOnly(t *testing.T) {
	e := mustReplay(t, ControllerOnly, h(1,
		on(1000, 0, 1, mkStream(1, "main")),
		on(5000, 0, 1, call("f", 1, "", tensor(1, 1, 4))),
	))
	r := e.Report()
	// Only the controller: f from 1000 to 5000; no device was given a task.
	if r.ExecNs != 5000 || r.PeakBytes != 0 || e.gs[0].active {
		t.Errorf("report %+v active %v, want exec 5000, no memory, no device", r, e.gs[0].active)
	}
}

func TestUnknownTypeWarns(t *testing.T) {
	e := mustReplay(t, Everything, h(1, on(10, 0, 1, `{"type":"Frobnicate","x":1}`), on(20, 0, 1, `{"type":"Frobnicate"}`)))
	n, first := e.Warnings()
	if n != 2 || !strings.Contains(first, `"Frobnicate"`) || !strings.Contains(first, "line 2") {
		t.Errorf("warnings %d %q, want 2 naming Frobnicate on line 2", n, first)
	}
}

// twoSteps is a world of one: f makes 4 bytes at 2000 ns, a step, f
// makes 6 more at 3000 ns, a step.
func twoSteps() []string {
	return []string{
		on(1000, 0, 1, mkStream(1, "main")),
		on(2000, 0, 1, call("f", 1, "", tensor(1, 1, 4))),
		`{"step":0}`,
		on(3000, 0, 1, call("f", 1, "", tensor(2, 2, 6))),
		`{"step":1}`,
	}
}

func TestStepReports(t *testing.T) {
	e := mustReplay(t, Everything, h(1, twoSteps()...))
	st := e.Steps()
	// Step 0: f 2000-12000, 4 bytes. Step 1: second f 12000-22000, 10 bytes.
	if len(st) != 2 || st[0].ExecNs != 12000 || st[0].PeakBytes != 4 || st[1].ExecNs != 22000 || st[1].PeakBytes != 10 {
		t.Errorf("steps %+v", st)
	}
	if got := st[0].ExecSeconds(); got != 1.2e-05 {
		t.Errorf("exec seconds %v, want 1.2e-05", got)
	}
}

// TestFnNameByIndex checks the engine's name cache indexed by
// CallFunction.FunctionIdx: a path given an index at decode is named by its
// clean name, and a message whose index is stale (another path's slot) or
// out of range is still named by its own path.
func TestFnNameByIndex(t *testing.T) {
	e, err := New(Options{WorldSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		idx  int32
		want string
	}{
		{"torch.ops.aten.mm.default", 0, "aten.mm"},   // fills slot 0
		{"torch.ops.aten.mm.default", 0, "aten.mm"},   // hits slot 0
		{"my.op.default", 0, "my.op"},                 // stale slot 0: its own name
		{"torch.ops.aten.add.default", 3, "aten.add"}, // grows to slot 3
		{"torch.ops.aten.add.default", -1, "aten.add"},
		{"torch.ops.aten.add.default", 1 << 30, "aten.add"}, // not a registry's: no slot
	}
	for _, c := range cases {
		m := gen.CallFunction{Function: c.path, FunctionIdx: c.idx}
		if got := e.names.Name(e.fnName(&m)); got != c.want {
			t.Errorf("fnName(%q, idx %d) = %q, want %q", c.path, c.idx, got, c.want)
		}
	}
	if len(e.fnNames) != 4 {
		t.Errorf("cache has %d slots, want 4 (indexes 0..3)", len(e.fnNames))
	}
}

// TestDeviceMemoryAfterSteps: a kept timeline walked after steps have
// settled its first events still starts from nothing. Worked by hand: 4
// bytes at 2000 ns, a step, 6 more at 12000 ns (f runs after the first
// f), then tensor 1's 4 freed when its deletion's task ends: running
// 4, 10, 6; the peak 10 is the report's.
func TestDeviceMemoryAfterSteps(t *testing.T) {
	e := mustReplay(t, Everything, h(1, append(twoSteps(),
		on(4000, 0, 1, `{"type":"DeleteRefs","refs":[1]}`))...))
	var got []int64
	if err := e.DeviceMemory(0, func(_ int, _ string, _, _, running int64) { got = append(got, running) }); err != nil {
		t.Fatal(err)
	}
	if want := []int64{4, 10, 6}; !slices.Equal(got, want) {
		t.Errorf("running totals %v, want %v", got, want)
	}
	if p := e.Report().PeakBytes; p != 10 {
		t.Errorf("report peak %d, want 10", p)
	}
}

// TestStreamCreatedAfterSettlement: a stream created late starts at the
// controller clock, so its first allocation can come before events an
// earlier settlement would have folded. Worked by hand (CallFunction runs
// 10,000 ns): tensor 1's 1,000 bytes live from 2,000 to 12,000 ns on A,
// tensor 2's 4 from 12,000 to 22,000; the step settles; stream B, made at
// 5,000, runs h at 6,000 (B's now is 0, the clock 6,000), allocating
// tensor 3's 1,000 bytes while tensor 1 still holds its 1,000: the peak
// is 2,000. Settling past the clock (to A's now, 22,000) gave 1,004.
func TestStreamCreatedAfterSettlement(t *testing.T) {
	e := mustReplay(t, Everything, h(1,
		on(1000, 0, 1, mkStream(1, "A")),
		on(2000, 0, 1, call("f", 1, "", tensor(1, 1, 1000))),
		on(3000, 0, 1, `{"type":"DeleteRefs","refs":[1]}`),
		on(4000, 0, 1, call("g", 1, "", tensor(2, 2, 4))),
		on(4500, 0, 1, `{"type":"DeleteRefs","refs":[2]}`),
		`{"step":0}`,
		on(5000, 0, 1, mkStream(2, "B")),
		on(6000, 0, 1, call("h", 2, "", tensor(3, 3, 1000))),
		`{"step":1}`,
	))
	if p := e.Report().PeakBytes; p != 2000 {
		t.Errorf("peak %d bytes, want 2000", p)
	}
}

// TestLoanFromIdleStreamAfterSettlement: a loan made after a settlement
// from a stream idle since before it returns the lent tensor at that
// stream's now, which can be before events the settlement folded. Worked
// by hand (CallFunction runs 10,000 ns): A allocates tensor 1's 4,000,000
// bytes at 1,000 (f runs 1,000-11,000); B allocates tensor 2's 1,000 at
// 20,000 (g runs 20,000-30,000), deleted at 50,000. At the step the
// events are 4,000,000 at 1,000, 4,001,000 at 20,000, 4,000,000 at
// 50,000: peak 4,001,000. Then tensor 1 is lent to B, deleted (the loan
// holds it) and the loan dropped: the drop returns it at A's now, 11,000,
// the last reference, so its storage is released at 11,000. The events
// are now 4,000,000 at 1,000, 0 at 11,000, 1,000 at 20,000, 0 at
// 50,000: the peak of everything is 4,000,000. Settling at the step to
// the clock (50,000), past A's now, kept 4,001,000.
func TestLoanFromIdleStreamAfterSettlement(t *testing.T) {
	text := h(1,
		on(1000, 0, 1, mkStream(1, "A")),
		on(1000, 0, 1, mkStream(2, "B")),
		on(1000, 0, 1, call("f", 1, "", tensor(1, 1, 4_000_000))),
		on(20000, 0, 1, call("g", 2, "", tensor(2, 2, 1000))),
		on(50000, 0, 1, `{"type":"DeleteRefs","refs":[2]}`),
		`{"step":0}`,
		on(60000, 0, 1, `{"type":"BorrowCreate","result":`+tensor(3, 3, 4_000_000)+`,"borrow":1,"tensor":{"tensor":1},"from_stream":{"ref":1},"to_stream":{"ref":2}}`),
		on(60000, 0, 1, `{"type":"DeleteRefs","refs":[1]}`),
		on(60000, 0, 1, `{"type":"BorrowLastUse","borrow":1}`),
		on(60000, 0, 1, `{"type":"BorrowDrop","borrow":1}`),
	)
	for _, keep := range []bool{false, true} {
		o := xreplay(t, text, xrun{settle: true, keep: keep, jobs: 1}, []int64{0})
		if o.err != "" {
			t.Fatal(o.err)
		}
		if len(o.steps) != 1 || o.steps[0].PeakBytes != 4_001_000 {
			t.Errorf("keep events %v: steps %+v, want one with a peak of 4,001,000 bytes", keep, o.steps)
		}
		if o.final.PeakBytes != 4_000_000 {
			t.Errorf("keep events %v: final peak %d bytes, want 4,000,000", keep, o.final.PeakBytes)
		}
	}
	e := mustReplay(t, Everything, text)
	if m, want := memory(e, 0), "1000:4000000 11000:0 20000:1000 50000:0"; m != want {
		t.Errorf("memory %s, want %s", m, want)
	}
}
