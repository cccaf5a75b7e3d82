package replay

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/golden"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/synth"
)

// traceEvent is one event as a trace viewer reads it.
type traceEvent struct {
	Name string  `json:"name"`
	Ph   string  `json:"ph"`
	S    string  `json:"s"`
	Ts   float64 `json:"ts"`
	Dur  float64 `json:"dur"`
	Pid  int64   `json:"pid"`
	Tid  int64   `json:"tid"`
	Args struct {
		Command   *int64   `json:"command"`
		Allocated *float64 `json:"allocated"`
	} `json:"args"`
}

func readTraceEvents(t *testing.T, path string) []traceEvent {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []traceEvent `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc.TraceEvents
}

// nestingErrors checks the complete events of every thread against the
// trace format's nesting rule, the way viewers apply it: each X event
// becomes a begin at ts and an end at ts+dur; at equal times ends come
// before begins, and of several begins the longer event first (it is the
// parent). Every end must then close the event on top of the stack. A
// zero-length X event has its begin and end at one instant, where other
// events end and begin too, so which of them it sits inside is ambiguous
// (speedscope leaves it open for the rest of the thread): zero-length
// spans must be instant events instead.
func nestingErrors(events []traceEvent) []string {
	type mark struct {
		ts    float64
		end   bool
		dur   float64
		index int
	}
	byThread := map[[2]int64][]mark{}
	var errs []string
	for i, ev := range events {
		if ev.Ph != "X" {
			continue
		}
		if ev.Dur <= 0 {
			errs = append(errs, fmt.Sprintf("event %d (%s at %v): complete event of duration %v", i, ev.Name, ev.Ts, ev.Dur))
			continue
		}
		k := [2]int64{ev.Pid, ev.Tid}
		byThread[k] = append(byThread[k], mark{ev.Ts, false, ev.Dur, i}, mark{ev.Ts + ev.Dur, true, ev.Dur, i})
	}
	for k, marks := range byThread {
		slices.SortStableFunc(marks, func(a, b mark) int {
			if c := cmp.Compare(a.ts, b.ts); c != 0 {
				return c
			}
			if a.end != b.end {
				if a.end {
					return -1
				}
				return 1
			}
			if !a.end {
				return -cmp.Compare(a.dur, b.dur) // parent first
			}
			return cmp.Compare(a.dur, b.dur) // the child closes first
		})
		var stack []int
		for _, m := range marks {
			if !m.end {
				stack = append(stack, m.index)
				continue
			}
			if len(stack) == 0 || stack[len(stack)-1] != m.index {
				errs = append(errs, fmt.Sprintf("thread %v: event %d (%s) ends at %v while another event is open inside it", k, m.index, events[m.index].Name, m.ts))
				break
			}
			stack = stack[:len(stack)-1]
		}
	}
	return errs
}

// TestNestingRuleCatchesZeroLength shows the check fails on the layout a
// controller track used to have: a zero-length event on the boundary between
// two others, and on overlapping events.
func TestNestingRuleCatchesZeroLength(t *testing.T) {
	zero := []traceEvent{
		{Name: "a", Ph: "X", Ts: 0, Dur: 2},
		{Name: "b", Ph: "X", Ts: 2, Dur: 0},
		{Name: "c", Ph: "X", Ts: 2, Dur: 3},
	}
	if errs := nestingErrors(zero); len(errs) == 0 {
		t.Error("a zero-length complete event passed")
	}
	overlap := []traceEvent{
		{Name: "a", Ph: "X", Ts: 0, Dur: 2},
		{Name: "b", Ph: "X", Ts: 1, Dur: 2},
	}
	if errs := nestingErrors(overlap); len(errs) == 0 {
		t.Error("overlapping events passed")
	}
	nested := []traceEvent{
		{Name: "child", Ph: "X", Ts: 0, Dur: 1},
		{Name: "parent", Ph: "X", Ts: 0, Dur: 4},
		{Name: "next", Ph: "X", Ts: 4, Dur: 1},
		{Name: "now", Ph: "i", S: "t", Ts: 4},
	}
	if errs := nestingErrors(nested); len(errs) > 0 {
		t.Errorf("properly nested events failed: %v", errs)
	}
}

// TestTraceNesting replays every golden history, grouped and not (whose controller tracks are
// full of zero-length events: command groups, commands sharing a ts) and
// checks every thread of the trace against the nesting rule; the zero-length
// spans must be there as instant events, as many as the reference's trace
// has zero-length controller events.
func TestTraceNesting(t *testing.T) {
	cases, err := golden.Cases(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		for _, grouped := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/grouped=%v", c.Name, grouped), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "trace.json")
				if _, err := File(c.Hist, Options{TracePath: path, Grouped: grouped}); err != nil {
					t.Fatal(err)
				}
				events := readTraceEvents(t, path)
				if errs := nestingErrors(events); len(errs) > 0 {
					t.Errorf("%s", strings.Join(errs, "\n"))
				}
				if c.Want.TraceMode != "everything" {
					return
				}
				wantZero := 0
				for _, ev := range c.Want.Controller {
					if ev.End == ev.Ts {
						wantZero++
					}
				}
				instants := 0
				for _, ev := range events {
					if ev.Ph == "i" {
						if ev.S != "t" {
							t.Errorf("instant event %s is not thread-scoped (s=%q)", ev.Name, ev.S)
						}
						instants++
					}
				}
				if instants != wantZero {
					t.Errorf("%d instant events, want the reference's %d zero-length controller events", instants, wantZero)
				}
			})
		}
	}
}

// TestTraceNestingAsDoubles: the events of a thread nest when a viewer
// adds ts and dur as doubles, not only as decimals: in a random history
// of 1,500 commands at world 16 (fastsim synth --random 1), events
// written with the exact decimal duration ended, so added, after the next
// one began (13976.074 + 2.415 is 13978.489000000001), and speedscope
// closed the wrong frames.
func TestTraceNestingAsDoubles(t *testing.T) {
	var hist bytes.Buffer
	if err := synth.Random(&hist, 1, 16, 1500); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "r1.hist")
	if err := os.WriteFile(src, hist.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, grouped := range []bool{false, true} {
		path := filepath.Join(dir, fmt.Sprintf("trace-%v.json", grouped))
		if _, err := File(src, Options{TracePath: path, Grouped: grouped, Mode: sched.Everything}); err != nil {
			t.Fatal(err)
		}
		if errs := nestingErrors(readTraceEvents(t, path)); len(errs) > 0 {
			t.Errorf("grouped=%v: %d errors, the first: %s", grouped, len(errs), errs[0])
		}
	}
}

// TestTraceSteps traces one step of a three-step history.
//
// Commands (the engine's counter): 1 CreateStream at ts 1,000; 2, 3, 4 one
// CallFunction each at ts 2,000, 3,000, 4,000, each followed by a step
// mark, each creating a new 1,000,000-byte storage. By docs/SEMANTICS.md:
// call 2 runs [2,000, 12,000]; call 3 starts at max(3,000, 12,000) and runs
// [12,000, 22,000]; call 4 runs [22,000, 32,000]. Controller events: call 2
// [1,000, 2,000], call 3 [2,000, 3,000], call 4 [3,000, 4,000].
// Step 1 is command 3: the controller event [2, 3] us and the stream event
// [12, 22] us. The window is [2,000, 22,000] ns, so the memory counter
// shows the allocations at 2 us (1 MB), 12 us (2 MB) and 22 us (3 MB).
func TestTraceSteps(t *testing.T) {
	all := `{"offset":0,"sizes":[1],"strides":[1]}`
	call := func(ts, id int) string {
		return fmt.Sprintf(`{"ts":%d,"ranks":[%s],"msg":{"type":"CallFunction","function":"torch.ops.aten.ones.default","args":[],"result":[{"tensor":%d,"storage":%d,"nbytes":1000000,"dtype":"float32","shape":[250000],"device":"cuda"}],"stream":{"ref":1}}}`, ts, all, id, id)
	}
	hist := strings.Join([]string{
		`{"fastsim":"history","version":1,"world_size":1}`,
		fmt.Sprintf(`{"ts":1000,"ranks":[%s],"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`, all),
		call(2000, 1), `{"step":0}`,
		call(3000, 2), `{"step":1}`,
		call(4000, 3), `{"step":2}`,
	}, "\n") + "\n"
	path := filepath.Join(t.TempDir(), "trace.json")
	res, err := Reader(strings.NewReader(hist), "steps.hist", Options{TracePath: path, TraceSteps: &StepRange{First: 1, Last: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Final.ExecNs; got != 32000 {
		t.Errorf("exec %d ns, want 32,000: the report covers every step", got)
	}
	type span struct {
		name    string
		ts, end float64
	}
	var spans []span
	var mem [][2]float64
	for _, ev := range readTraceEvents(t, path) {
		switch ev.Ph {
		case "X":
			if ev.Args.Command == nil || *ev.Args.Command != 3 {
				t.Errorf("%s at %v: command %v, want 3", ev.Name, ev.Ts, ev.Args.Command)
			}
			spans = append(spans, span{ev.Name, ev.Ts, ev.Ts + ev.Dur})
		case "C":
			mem = append(mem, [2]float64{ev.Ts, *ev.Args.Allocated})
		}
	}
	if want := []span{{"aten.ones", 2, 3}, {"aten.ones", 12, 22}}; !slices.Equal(spans, want) {
		t.Errorf("spans %v, want %v", spans, want)
	}
	if want := [][2]float64{{2, 1}, {12, 2}, {22, 3}}; !slices.Equal(mem, want) {
		t.Errorf("memory %v, want %v", mem, want)
	}
}

// TestStepRangeWindow checks the step-to-command arithmetic on marks after
// commands 2, 3 and 4 of 6: step 0 is commands 1-2, step 1 command 3,
// step 2 command 4, step 3 commands 5-6.
func TestStepRangeWindow(t *testing.T) {
	marks := []int64{2, 3, 4}
	for _, tc := range []struct {
		r           StepRange
		first, last int64
	}{
		{StepRange{0, 0}, 1, 2},
		{StepRange{1, 2}, 3, 4},
		{StepRange{3, 3}, 5, 6},           // after the last mark
		{StepRange{2, math.MaxInt}, 4, 6}, // to the end
		{StepRange{4, 4}, 7, 6},           // no such step: empty
		// Ranges New refuses, should one get here: no index before the
		// first mark, and an empty window where Last < First.
		{StepRange{-3, -1}, 1, 0},
		{StepRange{0, -1}, 1, 0},
		{StepRange{2, 1}, 4, 3},
		{StepRange{-1, 0}, 1, 2}, // from the start
	} {
		if f, l := tc.r.commandWindow(marks, 6); f != tc.first || l != tc.last {
			t.Errorf("%v: commands %d..%d, want %d..%d", tc.r, f, l, tc.first, tc.last)
		}
	}
}
