package fastsim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/fastsim/fastsim/internal/predict"
	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/workload"
)

// twoRanks is a two-rank history's body: a stream, then a function
// making a 4 MB tensor, a step, and a second function. By
// docs/SEMANTICS.md the first function starts at its ts, 2,000 ns, and
// runs the reference's fixed 10,000 ns: it ends at 12,000 ns.
var twoRanks = []string{
	`{"ts":1000,"ranks":[{"offset":0,"sizes":[2],"strides":[1]}],"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`,
	`{"ts":2000,"ranks":[{"offset":0,"sizes":[2],"strides":[1]}],"msg":{"type":"CallFunction","ident":1,"function":"torch.ops.aten.ones.default","args":[],"kwargs":{},"result":[{"tensor":1,"storage":1,"nbytes":4000000,"dtype":"float32","shape":[1000000],"device":"cuda"}],"mutates":[],"stream":{"ref":1}}}`,
	`{"step":0}`,
	`{"ts":30000,"ranks":[{"offset":0,"sizes":[2],"strides":[1]}],"msg":{"type":"CallFunction","ident":2,"function":"torch.ops.aten.ones.default","args":[],"kwargs":{},"result":[{"tensor":2,"storage":2,"nbytes":4000000,"dtype":"float32","shape":[1000000],"device":"cuda"}],"mutates":[],"stream":{"ref":1}}}`,
}

const twoRanksHeader = `{"fastsim":"history","version":1,"world_size":2}`

func trainHistory(t *testing.T, steps int) []byte {
	t.Helper()
	hist, err := Train{PP: 2, DP: 2, TP: 2, Layers: 2, Hidden: 64, Seq: 32, Batch: 4, Micro: 2, Steps: steps}.History()
	if err != nil {
		t.Fatal(err)
	}
	return hist
}

// stopAfter reads r at most chunk bytes at a time and closes stop at the
// read numbered at (counted from 1), before reading; read counts the
// bytes read before the stop.
type stopAfter struct {
	r     io.Reader
	chunk int
	at    int
	reads int
	read  int
	stop  chan struct{}
}

func (s *stopAfter) Read(p []byte) (int, error) {
	s.reads++
	if s.reads == s.at && s.stop != nil {
		close(s.stop)
		s.stop = nil
	}
	if len(p) > s.chunk {
		p = p[:s.chunk]
	}
	k, err := s.r.Read(p)
	if s.stop != nil {
		s.read += k
	}
	return k, err
}

// TestStopIsVisible: a stopped simulation says so. Replay returns the
// partial Sim with ErrStopped; Feed, Step and Finish after a stop return
// ErrStopped; Partial reports it; an unstopped replay is not partial.
func TestStopIsVisible(t *testing.T) {
	hist := trainHistory(t, 4)
	full, err := Replay(bytes.NewReader(hist), Options{Grouped: true})
	if err != nil || full.Partial() || len(full.Steps()) != 4 {
		t.Fatalf("whole replay: err %v, partial %v, %d steps (want nil, false, 4)", err, full.Partial(), len(full.Steps()))
	}
	closed := make(chan struct{})
	close(closed)
	// Stopped before the first record, and part way through the input:
	// read 16 KiB at a time, the stop closes as the fourth read begins,
	// after 48 KiB of the history were read (and, at Jobs 1, every whole
	// record in them replayed).
	const chunk, at = 16 << 10, 4
	if len(hist) < 2*chunk*(at-1) {
		t.Fatalf("the history is %d bytes, too short to stop part way at %d", len(hist), chunk*(at-1))
	}
	for name, src := range map[string]func() (io.Reader, <-chan struct{}){
		"closed": func() (io.Reader, <-chan struct{}) { return bytes.NewReader(hist), closed },
		"midway": func() (io.Reader, <-chan struct{}) {
			stop := make(chan struct{})
			return &stopAfter{r: bytes.NewReader(hist), chunk: chunk, at: at, stop: stop}, stop
		},
	} {
		for _, jobs := range []int{1, 2} {
			r, stop := src()
			sim, err := Replay(r, Options{Grouped: true, Stop: stop, Jobs: jobs})
			if sa, ok := r.(*stopAfter); ok && sa.read != chunk*(at-1) {
				t.Fatalf("%s jobs %d: the stop came after %d bytes, want %d", name, jobs, sa.read, chunk*(at-1))
			}
			if !errors.Is(err, ErrStopped) || sim == nil {
				t.Fatalf("%s jobs %d: Replay = %v, %v; want the partial Sim and ErrStopped", name, jobs, sim, err)
			}
			if !sim.Partial() {
				t.Errorf("%s jobs %d: not partial", name, jobs)
			}
			// A stop asked for before the replay stops its first
			// record. (Half way, how much more is replayed depends on
			// when the stop's watcher runs: a stop seen only at the end
			// of the input still makes the replay partial.)
			if name == "closed" && (len(sim.Steps()) != 0 || sim.Commands() != 0) {
				t.Errorf("stopped before the start: %d steps, %d commands", len(sim.Steps()), sim.Commands())
			}
			// At Jobs 1 the records of the first 48 KiB were replayed
			// before the stop, and the stop ended the replay at the
			// next record: some of the history, not all. (At Jobs 2 the
			// decoder runs ahead of the engine, and the engine may not
			// have begun.)
			if name == "midway" && jobs == 1 && (sim.Commands() == 0 || sim.Commands() >= full.Commands()) {
				t.Errorf("stopped part way: %d commands of %d", sim.Commands(), full.Commands())
			}
			if name == "midway" && sim.Commands() >= full.Commands() {
				t.Errorf("stopped part way, jobs %d: all %d commands replayed", jobs, sim.Commands())
			}
			if err := sim.Finish(); !errors.Is(err, ErrStopped) {
				t.Errorf("%s jobs %d: Finish after a stop: %v", name, jobs, err)
			}
		}
	}

	sim, err := New(Header{WorldSize: 2}, Options{Stop: closed})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	if err := sim.Feed([]byte(twoRanks[0])); !errors.Is(err, ErrStopped) {
		t.Errorf("Feed after a stop: %v, want ErrStopped", err)
	}
	if err := sim.Feed([]byte(twoRanks[1])); !errors.Is(err, ErrStopped) {
		t.Errorf("second Feed after a stop: %v, want ErrStopped", err)
	}
	if _, err := sim.Step(); !errors.Is(err, ErrStopped) {
		t.Errorf("Step after a stop: %v, want ErrStopped", err)
	}
	if err := sim.Finish(); !errors.Is(err, ErrStopped) {
		t.Errorf("Finish after a stop: %v, want ErrStopped", err)
	}
	if !sim.Partial() || len(sim.Steps()) != 0 {
		t.Errorf("partial %v, %d steps; want true, 0", sim.Partial(), len(sim.Steps()))
	}
	// A Feed of no records after a stop returns ErrStopped too.
	for _, empty := range [][]byte{nil, {}} {
		s, err := New(Header{WorldSize: 2}, Options{Stop: closed})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Feed(empty); !errors.Is(err, ErrStopped) || !s.Partial() {
			t.Errorf("Feed(%q) after a stop: %v, partial %v; want ErrStopped, true", empty, err, s.Partial())
		}
		s.Close()
	}

	// A stop between two Feeds stops the next one, at once.
	for range 20 {
		stop := make(chan struct{})
		s, err := New(Header{WorldSize: 2}, Options{Stop: stop})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Feed([]byte(twoRanks[0])); err != nil {
			t.Fatal(err)
		}
		close(stop)
		if err := s.Feed([]byte(twoRanks[1])); !errors.Is(err, ErrStopped) || s.Commands() != 1 {
			t.Fatalf("Feed after a stop between Feeds: %v, %d commands; want ErrStopped, 1", err, s.Commands())
		}
		s.Close()
	}
}

// TestStopAfterLastFeed: a stop closed after the last Feed is noticed by
// Step and by Finish as a {"step":N} line notices it: ErrStopped, no step
// recorded, Partial; the records fed before it stay replayed (2 commands).
func TestStopAfterLastFeed(t *testing.T) {
	for _, jobs := range []int{1, 2} {
		for _, end := range []string{"Step", "Finish", "step line"} {
			stop := make(chan struct{})
			s, err := New(Header{WorldSize: 2}, Options{Stop: stop, Jobs: jobs})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Feed([]byte(strings.Join(twoRanks[:2], "\n"))); err != nil {
				t.Fatal(err)
			}
			close(stop)
			switch end {
			case "Step":
				_, err = s.Step()
			case "Finish":
				err = s.Finish()
			default:
				err = s.Feed([]byte(`{"step":0}`))
			}
			if !errors.Is(err, ErrStopped) || !s.Partial() || len(s.Steps()) != 0 || s.Commands() != 2 {
				t.Errorf("jobs %d, %s after a stop that followed the last Feed: %v, partial %v, %d steps, %d commands; want ErrStopped, true, 0, 2",
					jobs, end, err, s.Partial(), len(s.Steps()), s.Commands())
			}
			// And from then on.
			if _, err := s.Step(); !errors.Is(err, ErrStopped) {
				t.Errorf("jobs %d, %s: a second Step: %v", jobs, end, err)
			}
			if err := s.Finish(); !errors.Is(err, ErrStopped) {
				t.Errorf("jobs %d, %s: a second Finish: %v", jobs, end, err)
			}
			s.Close()
		}
	}
}

// TestReplayedSimEnded: a Sim from Replay has ended: Step adds no step and
// returns ErrFinished, as Feed does; Finish returns Replay's nil, also
// after a Stop closed once Replay returned.
func TestReplayedSimEnded(t *testing.T) {
	hist := trainHistory(t, 2)
	for _, jobs := range []int{1, 2} {
		stop := make(chan struct{})
		s, err := Replay(bytes.NewReader(hist), Options{Grouped: true, Jobs: jobs, Stop: stop})
		if err != nil {
			t.Fatal(err)
		}
		close(stop)
		if _, err := s.Step(); !errors.Is(err, ErrFinished) || len(s.Steps()) != 2 {
			t.Errorf("jobs %d: Step on a replayed Sim: %v, %d steps; want ErrFinished, 2", jobs, err, len(s.Steps()))
		}
		if err := s.Feed([]byte(`{"step":2}`)); !errors.Is(err, ErrFinished) {
			t.Errorf("jobs %d: Feed on a replayed Sim: %v", jobs, err)
		}
		if err := s.Finish(); err != nil || s.Partial() {
			t.Errorf("jobs %d: Finish on a replayed Sim: %v, partial %v", jobs, err, s.Partial())
		}
	}
}

// TestTraceStepsRefused: a StepRange with a negative step or its last
// step before its first is refused by New and Replay at line 1, never a
// panic in WriteTrace or at the end of Replay (TracePath).
func TestTraceStepsRefused(t *testing.T) {
	hist := trainHistory(t, 3)
	path := filepath.Join(t.TempDir(), "t.json")
	for _, r := range []StepRange{{First: -3, Last: -1}, {First: 0, Last: -1}, {First: -1, Last: 1}, {First: 2, Last: 1}} {
		if _, err := New(Header{WorldSize: 2}, Options{KeepTrace: true, TraceSteps: &r}); err == nil || !strings.HasPrefix(err.Error(), "sim:1: ") {
			t.Errorf("New with TraceSteps %v: %v, want an error at sim:1", r, err)
		}
		for _, opt := range []Options{{KeepTrace: true, TraceSteps: &r}, {TracePath: path, TraceSteps: &r}} {
			if _, err := Replay(bytes.NewReader(hist), opt); err == nil || !strings.HasPrefix(err.Error(), "history:1: ") {
				t.Errorf("Replay with TraceSteps %v: %v, want an error at history:1", r, err)
			}
		}
	}
	// The last step may be the first, or past the history's end.
	for _, r := range []StepRange{{First: 1, Last: 1}, {First: 0, Last: 9}} {
		if _, err := Replay(bytes.NewReader(hist), Options{KeepTrace: true, TraceSteps: &r}); err != nil {
			t.Errorf("TraceSteps %v: %v", r, err)
		}
	}
}

// TestReplayReleasesStopWatcher: Replay with a Stop channel that is never
// closed (a long-lived context's Done) leaves no goroutine behind, nor
// does New with Close.
func TestReplayReleasesStopWatcher(t *testing.T) {
	hist := trainHistory(t, 1)
	never := make(chan struct{})
	settle := func(before int) int {
		var n int
		for range 200 { // goroutines that were told to end leave within a few ms
			if n = runtime.NumGoroutine(); n <= before {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		return n
	}
	before := runtime.NumGoroutine()
	for i := range 50 {
		if _, err := Replay(bytes.NewReader(hist), Options{Stop: never, Jobs: 1 + i%2}); err != nil {
			t.Fatal(err)
		}
	}
	if after := settle(before); after > before {
		t.Errorf("50 Replays with an open Stop: %d goroutines before, %d after", before, after)
	}
	for range 50 {
		s, err := New(Header{WorldSize: 2}, Options{Stop: never})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Feed([]byte(strings.Join(twoRanks, "\n"))); err != nil {
			t.Fatal(err)
		}
		s.Close()
		s.Close() // twice is fine
	}
	if after := settle(before); after > before {
		t.Errorf("50 New+Close with an open Stop: %d goroutines before, %d after", before, after)
	}
}

// TestTraceStepsWindow: Options.TraceSteps, set with the exported
// StepRange, limits WriteTrace to those steps, for a replayed and a fed
// Sim, to the bytes `fastsim replay --trace-steps 1:1 --trace F.json`
// writes (replay.Reader with TracePath).
func TestTraceStepsWindow(t *testing.T) {
	hist := trainHistory(t, 3)
	window := &StepRange{First: 1, Last: 1}
	path := filepath.Join(t.TempDir(), "w.json")
	if _, err := replay.Reader(bytes.NewReader(hist), "history", Options{Grouped: true, TracePath: path, TraceSteps: window}); err != nil {
		t.Fatal(err)
	}
	cli, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := Replay(bytes.NewReader(hist), Options{Grouped: true, KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	if err := whole.WriteTrace(&all); err != nil {
		t.Fatal(err)
	}
	replayed, err := Replay(bytes.NewReader(hist), Options{Grouped: true, KeepTrace: true, TraceSteps: window})
	if err != nil {
		t.Fatal(err)
	}
	fed := feedAll(t, hist, replayed.Header(), Options{Grouped: true, KeepTrace: true, TraceSteps: window})
	for name, s := range map[string]*Sim{"replayed": replayed, "fed": fed} {
		var b bytes.Buffer
		if err := s.WriteTrace(&b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), cli) {
			t.Errorf("%s: the step window's trace (%d bytes) is not the command line's (%d bytes)", name, b.Len(), len(cli))
		}
	}
	if len(cli) >= all.Len() {
		t.Errorf("the window of step 1 of 3 is %d bytes, the whole trace %d", len(cli), all.Len())
	}
}

// TestMemoryBudget: a budget from WatchMemory refuses an ungrouped world
// whose ranks' state alone passes it, with an error that errors.Is
// ErrMemoryLimit, lets a grouped one through, and leaves the Go runtime's
// soft memory limit as it was. 2^20 ranks of sched.RankBytes (over 1,024
// bytes each) need more than 1 GiB.
func TestMemoryBudget(t *testing.T) {
	soft := debug.SetMemoryLimit(-1)
	w := WatchMemory(1 << 30)
	defer w.Stop()
	if got := debug.SetMemoryLimit(-1); got != soft {
		t.Errorf("WatchMemory changed the soft memory limit from %d to %d", soft, got)
	}
	if _, err := New(Header{WorldSize: 1 << 20}, Options{Memory: w}); !errors.Is(err, ErrMemoryLimit) {
		t.Errorf("2^20 ungrouped ranks within 1 GiB: %v, want ErrMemoryLimit", err)
	} else if strings.Contains(err.Error(), "--") || !strings.Contains(err.Error(), "grouping") {
		// A program has no flags: the advice names what it can change.
		t.Errorf("2^20 ungrouped ranks within 1 GiB: %q names a flag or gives no advice", err)
	}
	s, err := New(Header{WorldSize: 1 << 20}, Options{Memory: w, Grouped: true})
	if err != nil {
		t.Fatalf("2^20 grouped ranks within 1 GiB: %v", err)
	}
	s.Close()
}

// TestMemoryBudgetPassedLine: a budget passed before the first record
// ends the simulation with an error wrapping ErrMemoryLimit that names a
// line of the history: the first record a Feed holds (line 2, after the
// header's line 1), or line 1 at a Step before any record.
func TestMemoryBudgetPassedLine(t *testing.T) {
	w := WatchMemory(1) // any process holds more than a byte
	defer w.Stop()
	for end := 0; end < 200 && !w.Over(); end++ { // it polls every 20 ms
		time.Sleep(10 * time.Millisecond)
	}
	if !w.Over() {
		t.Fatal("a 1-byte budget is not passed after 2 s")
	}
	for _, tc := range []struct {
		name, prefix string
		end          func(s *Sim) error
	}{
		{"Feed", "sim:2: ", func(s *Sim) error { return s.Feed([]byte(twoRanks[0])) }},
		{"Step", "sim:1: ", func(s *Sim) error { _, err := s.Step(); return err }},
	} {
		s, err := New(Header{WorldSize: 2}, Options{Memory: w, Grouped: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := tc.end(s); !errors.Is(err, ErrMemoryLimit) || !strings.HasPrefix(err.Error(), tc.prefix) || strings.Contains(err.Error(), "--") {
			t.Errorf("%s past the budget: %v, want ErrMemoryLimit at %q, naming no flag", tc.name, err, tc.prefix)
		}
		s.Close()
	}
}

// TestZeroCosts: a zero-value Costs is refused with ErrZeroCosts (it
// would price every command at 0 ns), by New and Replay, with hardware
// too, given as Costs or as Model; ParseCosts("{}") is the reference's fixed runtimes: the function
// ends at 2,000 + 10,000 = 12,000 ns.
func TestZeroCosts(t *testing.T) {
	h100, err := LoadHardware("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range []Options{{Costs: &Costs{}}, {Costs: new(Costs), Hardware: h100}, {Model: &Costs{}}, {Model: new(Costs), Hardware: h100}} {
		if _, err := New(Header{WorldSize: 2}, opt); !errors.Is(err, ErrZeroCosts) {
			t.Errorf("New with a zero Costs (as Model %v, hardware %v): %v", opt.Model != nil, opt.Hardware != nil, err)
		}
		src := twoRanksHeader + "\n" + strings.Join(twoRanks[:2], "\n")
		if _, err := Replay(strings.NewReader(src), opt); !errors.Is(err, ErrZeroCosts) {
			t.Errorf("Replay with a zero Costs (as Model %v, hardware %v): %v", opt.Model != nil, opt.Hardware != nil, err)
		}
	}
	empty, err := ParseCosts([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Header{WorldSize: 2}, Options{Costs: empty})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Feed([]byte(strings.Join(twoRanks[:2], "\n"))); err != nil {
		t.Fatal(err)
	}
	if got := s.Report().ExecNs; got != 12000 {
		t.Errorf("ParseCosts({}): %d ns, want 12000", got)
	}
}

// TestErrorsSticky: after a failed Feed, Finish, Step and Feed return
// that error and no step is recorded.
func TestErrorsSticky(t *testing.T) {
	s, err := New(Header{WorldSize: 2}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Feed([]byte(twoRanks[0])); err != nil {
		t.Fatal(err)
	}
	// Rank 5 is outside a world of 2: line 3 (the header is line 1).
	bad := s.Feed([]byte(`{"ts":1,"ranks":[{"offset":5,"sizes":[1],"strides":[1]}],"msg":{"type":"CreateStream","result":{"ref":2,"name":"x"},"default":false}}`))
	if bad == nil || !strings.Contains(bad.Error(), "sim:3") {
		t.Fatalf("bad rank: %v, want an error naming sim:3", bad)
	}
	if err := s.Finish(); err != bad {
		t.Errorf("Finish after a failed Feed: %v, want %v", err, bad)
	}
	if _, err := s.Step(); err != bad {
		t.Errorf("Step after a failed Feed: %v, want %v", err, bad)
	}
	if err := s.Feed([]byte(twoRanks[1])); err != bad {
		t.Errorf("Feed after a failed Feed: %v, want %v", err, bad)
	}
	if n := len(s.Steps()); n != 0 {
		t.Errorf("%d steps recorded after a failure", n)
	}
}

// TestFeedNoLines: Feed of nil or of an empty slice returns ErrNoLines
// and changes nothing: no command, no line counted (a bad record fed next
// is named at line 2, the header being line 1) and no sticky error (a
// good record then applies). A nil record given to the replay's own Feed
// is refused alike (internal/replay's TestFeedNilRecord).
func TestFeedNoLines(t *testing.T) {
	s, err := New(Header{WorldSize: 2}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, lines := range [][]byte{nil, {}} {
		if err := s.Feed(lines); !errors.Is(err, ErrNoLines) {
			t.Errorf("Feed(%#v): %v, want ErrNoLines", lines, err)
		}
	}
	if n := s.Commands(); n != 0 {
		t.Errorf("%d commands after feeding no lines", n)
	}
	if err := s.Feed([]byte(twoRanks[0])); err != nil {
		t.Fatalf("a record after Feed(nil): %v", err)
	}
	if err := s.Feed(nil); !errors.Is(err, ErrNoLines) {
		t.Errorf("Feed(nil) after a record: %v, want ErrNoLines", err)
	}
	bad := s.Feed([]byte(`{"ts":1,"ranks":[{"offset":5,"sizes":[1],"strides":[1]}],"msg":{"type":"CreateStream","result":{"ref":2,"name":"x"},"default":false}}`))
	if bad == nil || !strings.HasPrefix(bad.Error(), "sim:3: ") {
		t.Errorf("the second record fed: %v, want an error at sim:3", bad)
	}
}

// TestStepChecksLikeAStepLine: Step finds a deadlock as a {"step":N}
// line does, with the same error, and records no step after it.
func TestStepChecksLikeAStepLine(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "bad", "deadlock-send-both-ways.hist"))
	if err != nil {
		t.Fatal(err)
	}
	body := data[bytes.IndexByte(data, '\n')+1:]
	var errs [2]error
	for i := range errs {
		s, err := New(Header{WorldSize: 2}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Feed(body); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			_, errs[i] = s.Step()
		} else {
			errs[i] = s.Feed([]byte(`{"step":0}`))
		}
		if errs[i] == nil || len(s.Steps()) != 0 {
			t.Fatalf("deadlock at a step: %v, %d steps", errs[i], len(s.Steps()))
		}
		if err := s.Finish(); err != errs[i] {
			t.Errorf("Finish after the deadlock: %v", err)
		}
	}
	if errs[0].Error() != errs[1].Error() {
		t.Errorf("Step: %v\nstep line: %v", errs[0], errs[1])
	}
}

// TestNilAndZeroValues: nil arguments and a Sim that New or Replay did
// not open give errors (or zero values), never a panic.
func TestNilAndZeroValues(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("panic: %v", r)
		}
	}()
	if _, err := Replay(nil, Options{}); err == nil {
		t.Error("Replay(nil) accepted")
	}
	for name, s := range map[string]*Sim{"nil": nil, "zero": {}} {
		if err := s.Feed([]byte(`{"step":0}`)); !errors.Is(err, ErrNoSim) {
			t.Errorf("%s Sim: Feed: %v", name, err)
		}
		if _, err := s.Step(); !errors.Is(err, ErrNoSim) {
			t.Errorf("%s Sim: Step: %v", name, err)
		}
		if err := s.Finish(); !errors.Is(err, ErrNoSim) {
			t.Errorf("%s Sim: Finish: %v", name, err)
		}
		if err := s.WriteTrace(io.Discard); !errors.Is(err, ErrNoSim) {
			t.Errorf("%s Sim: WriteTrace: %v", name, err)
		}
		r := s.Report()
		n, _ := s.UnknownOps()
		if r.PeakDevice != -1 || r.ExecNs != 0 || s.Commands() != 0 || s.WorldSize() != 0 || s.Steps() != nil || s.Partial() || n != 0 || s.Header() != (Header{}) {
			t.Errorf("%s Sim: report %+v, %d commands", name, r, s.Commands())
		}
		s.Close()
	}
	s, err := New(Header{WorldSize: 1}, Options{KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteTrace(nil); err == nil {
		t.Error("WriteTrace(nil) accepted")
	}
	m, err := LoadModel("llama2-7b")
	if err != nil {
		t.Fatal(err)
	}
	if err := (Transformer{Model: m, TP: 1, PP: 1, DP: 1, MicroBatch: 1, GlobalBatch: 1}).WriteHistory(nil); err == nil {
		t.Error("Transformer.WriteHistory(nil) accepted")
	}
	if err := (Train{PP: 1, DP: 1, TP: 1, Layers: 1, Hidden: 8, Seq: 1, Batch: 1, Micro: 1, Steps: 1}).WriteHistory(nil); err == nil {
		t.Error("Train.WriteHistory(nil) accepted")
	}
	if _, err := Predict(context.Background(), Transformer{Model: m, TP: 1, PP: 1, DP: 1, MicroBatch: 1, GlobalBatch: 1}, nil); err == nil {
		t.Error("Predict without hardware accepted")
	}
	if _, err := Predict(context.Background(), Transformer{Model: m, TP: 1, PP: 1, DP: 1, MicroBatch: 1, GlobalBatch: 1}, &Hardware{}); err == nil {
		t.Error("Predict on a zero Hardware accepted")
	}
}

// TestTransformerCoversJob: every switch of the workload's job (the
// mechanisms `fastsim predict` and `synth` take as flags; predict's
// TestMechanismsCoverJob ties them to predict.Mechanisms) is a field of
// Transformer of the same name, and setting it there sets it in the job.
func TestTransformerCoversJob(t *testing.T) {
	m, err := LoadModel("llama2-7b")
	if err != nil {
		t.Fatal(err)
	}
	base := Transformer{Model: m, TP: 2, PP: 2, DP: 2, MicroBatch: 1, GlobalBatch: 8}
	jt := reflect.TypeFor[workload.Job]()
	for i := range jt.NumField() {
		f := jt.Field(i)
		if f.Type.Kind() != reflect.Bool {
			continue
		}
		tf, ok := reflect.TypeFor[Transformer]().FieldByName(f.Name)
		if !ok || tf.Type.Kind() != reflect.Bool {
			t.Errorf("workload.Job's %s has no Transformer field", f.Name)
			continue
		}
		tr := base
		reflect.ValueOf(&tr).Elem().FieldByIndex(tf.Index).SetBool(true)
		j, _ := tr.job() // some combinations do not check; the field is set either way
		if !reflect.ValueOf(j).FieldByIndex(f.Index).Bool() {
			t.Errorf("Transformer.%s does not reach the job", f.Name)
		}
	}
	tr := base
	tr.GradReduce = "after-backward"
	if j, err := tr.job(); err != nil || j.GradReduce != workload.GradAfterBackward {
		t.Errorf("GradReduce after-backward: %v, %v", j.GradReduce, err)
	}
	tr.GradReduce = "sometimes"
	if _, err := tr.job(); err == nil {
		t.Error("GradReduce \"sometimes\" accepted")
	}
	// Every mechanism predict names is one the Transformer can set.
	tr = base
	tr.GradReduce, tr.HalfGradReduce, tr.FuseGradAccumulation, tr.BlockingP2P = "after-backward", true, true, true
	tr.FP32CrossEntropy, tr.ApexLayerNorm, tr.FP16Grads, tr.NoScatterGather = true, true, true, true
	tr.FlashAttention, tr.StageCollectives = true, true
	j, _ := tr.job()
	if got := predict.MechanismsOf(&j); len(got) != len(predict.Mechanisms) {
		t.Errorf("a Transformer with every mechanism on sets %v of %d", got, len(predict.Mechanisms))
	}
}

// presets loads hardware preset hw and model preset model.
func presets(t *testing.T, hw, model string) (*Hardware, Model) {
	t.Helper()
	h, err := LoadHardware(hw)
	if err != nil {
		t.Fatal(err)
	}
	m, err := LoadModel(model)
	if err != nil {
		t.Fatal(err)
	}
	return h, m
}

// TestPredictCanceled: a canceled context ends the prediction with its
// error. (cmd/fastsim's TestPredictJSONEqualsAPI checks that Predict
// answers as the command line does.)
func TestPredictCanceled(t *testing.T) {
	hw, model := presets(t, "a100-80gb", "korthikanti-175b")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Predict(ctx, Transformer{Model: model, TP: 8, PP: 8, DP: 1, MicroBatch: 1, GlobalBatch: 64}, hw); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled Predict: %v", err)
	}
}

// TestFinishedSimTakesNoMore: once Finish has declared the history
// complete, Feed and Step return ErrFinished and change nothing; the
// report stays the one Finish saw.
func TestFinishedSimTakesNoMore(t *testing.T) {
	s, err := New(Header{Version: 1, WorldSize: 2}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := `"ranks":[{"offset":0,"sizes":[2],"strides":[1]}]`
	if err := s.Feed([]byte(`{"ts":1,` + r + `,"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}` + "\n" +
		`{"ts":2,` + r + `,"msg":{"type":"CallFunction","function":"f","args":[],"kwargs":{},"result":[{"tensor":1,"storage":1,"nbytes":4,"dtype":"float32","shape":[1],"device":"cuda"}],"mutates":[],"stream":{"ref":1}}}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(); err != nil {
		t.Fatal(err)
	}
	before := s.Report()
	if err := s.Feed([]byte(`{"ts":3,` + r + `,"msg":{"type":"CallFunction","function":"f","args":[],"kwargs":{},"result":[{"tensor":2,"storage":2,"nbytes":4,"dtype":"float32","shape":[1],"device":"cuda"}],"mutates":[],"stream":{"ref":1}}}`)); !errors.Is(err, ErrFinished) {
		t.Errorf("Feed after Finish: %v, want ErrFinished", err)
	}
	if _, err := s.Step(); !errors.Is(err, ErrFinished) {
		t.Errorf("Step after Finish: %v, want ErrFinished", err)
	}
	if after := s.Report(); !reflect.DeepEqual(after, before) || len(s.Steps()) != 0 {
		t.Errorf("after Finish the report moved: %+v, then %+v, %d steps", before, after, len(s.Steps()))
	}
	if err := s.Finish(); err != nil {
		t.Errorf("a second Finish: %v", err)
	}
}

// TestPredictRefusesWhatCheckAccepts: Check accepts ZeRO above 0 with DP
// 1 and sequence parallelism with TP 1, as History does; Predict refuses
// both, naming the field, as its doc says, so a program that filters a
// search's layouts with Check still meets these errors from Predict.
func TestPredictRefusesWhatCheckAccepts(t *testing.T) {
	hw, m := presets(t, "a100-80gb", "llama2-7b")
	for _, c := range []struct {
		t    Transformer
		want string
	}{
		{Transformer{Model: m, TP: 2, PP: 1, DP: 1, MicroBatch: 1, GlobalBatch: 2, Zero: 2}, "cannot predict: ZeRO 2 shards over the data-parallel replicas and DP is 1"},
		{Transformer{Model: m, TP: 1, PP: 2, DP: 1, MicroBatch: 1, GlobalBatch: 2, SequenceParallel: true}, "cannot predict: sequence parallelism splits over the tensor-parallel shards and TP is 1"},
	} {
		if err := c.t.Check(); err != nil {
			t.Errorf("%+v: Check: %v, want nil", c.t, err)
		}
		if _, err := c.t.History(); err != nil {
			t.Errorf("History: %v, want a history", err)
		}
		if _, err := Predict(context.Background(), c.t, hw); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Predict: %v, want %q", err, c.want)
		}
	}
}

// TestErrorLinesCountFromTheHeader: errors name lines as in a file whose
// line 1 is the header: the first line fed is sim:2, the third (over two
// Feeds) sim:4, and the first record Replay reads history:2.
func TestErrorLinesCountFromTheHeader(t *testing.T) {
	bad := `{"ts":1,"ranks":[{"offset":0,"sizes":[3],"strides":[1]}],"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`
	sim, err := New(Header{WorldSize: 2}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Feed([]byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "sim:2: ") {
		t.Errorf("first line fed: %v, want sim:2", err)
	}
	sim, err = New(Header{WorldSize: 2}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Feed([]byte(twoRanks[0] + "\n" + twoRanks[2])); err != nil {
		t.Fatal(err)
	}
	if err := sim.Feed([]byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "sim:4: ") {
		t.Errorf("third line fed: %v, want sim:4", err)
	}
	h := `{"fastsim":"history","version":1,"world_size":2}` + "\n" + bad + "\n"
	if _, err := Replay(strings.NewReader(h), Options{}); err == nil || !strings.HasPrefix(err.Error(), "history:2: ") {
		t.Errorf("Replay: %v, want history:2", err)
	}
}

// TestLoadersRefuseEndlessFiles: the files the API loads by name (cost
// models, hardware specs, models) are read no further than their first
// bytes when those cannot begin a JSON object, so a device that never
// ends is refused at once, with the file and the line named; they were
// read with os.ReadFile, which read /dev/zero until memory ran out. A bad
// costs file is named with its line, as the CLI names it.
func TestLoadersRefuseEndlessFiles(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/dev/zero")
	}
	for _, c := range []struct {
		name string
		load func(string) error
		want string
	}{
		{"LoadCosts", func(p string) error { _, err := LoadCosts(p); return err }, `/dev/zero:1: bad costs file: invalid character '\x00' looking for beginning of value`},
		{"LoadHardware", func(p string) error { _, err := LoadHardware(p); return err }, `/dev/zero:1: bad hardware spec: invalid character '\x00' looking for beginning of value`},
		{"LoadModel", func(p string) error { _, err := LoadModel(p); return err }, `/dev/zero:1: bad model: invalid character '\x00' looking for beginning of value`},
	} {
		if err := c.load("/dev/zero"); err == nil || err.Error() != c.want {
			t.Errorf("%s(/dev/zero) = %v, want %q", c.name, err, c.want)
		}
	}
	// A file that begins an object but passes the bound is refused at
	// the bound.
	big := filepath.Join(t.TempDir(), "model.json")
	if err := os.WriteFile(big, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 2<<20); err != nil { // "{" and zero bytes
		t.Fatal(err)
	}
	if _, err := LoadModel(big); err == nil || err.Error() != big+": bad model: more than 1048576 bytes, the most a model description may hold" {
		t.Errorf("LoadModel of 2 MiB: %v", err)
	}
	path := filepath.Join(t.TempDir(), "costs.json")
	if err := os.WriteFile(path, []byte("{\n  \"fixd\": {}\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCosts(path); err == nil || !strings.HasPrefix(err.Error(), path+":2: bad costs file: ") {
		t.Errorf("LoadCosts of a bad file: %v, want it to start %q", err, path+":2: bad costs file: ")
	}
}

// TestStepReportsShareDevices: a step's report whose devices' peaks are
// the previous step's shares its Devices slice, so that many steps of many
// devices hold one list (1,000 steps at world 65,536 held 2.0 GB of
// copies); a step that changes a peak gets its own, with the new values.
func TestStepReportsShareDevices(t *testing.T) {
	const world = 4096
	sim, err := New(Header{WorldSize: world}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	all := fmt.Sprintf(`"ranks":[{"offset":0,"sizes":[%d],"strides":[1]}]`, world)
	feed := func(line string) {
		t.Helper()
		if err := sim.Feed([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	feed(`{"ts":1000,` + all + `,"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`)
	for i := 0; i < 50; i++ {
		feed(fmt.Sprintf(`{"step":%d}`, i))
	}
	// Rank 0 alone allocates 100 bytes: its peak changes once.
	feed(`{"ts":2000,"ranks":[{"offset":0,"sizes":[1],"strides":[1]}],"msg":{"type":"CallFunction","ident":1,"function":"f","args":[],"kwargs":{},"result":[{"tensor":1,"storage":1,"nbytes":100,"dtype":"u8","shape":[100],"device":"cuda"}],"mutates":[],"stream":{"ref":1}}}`)
	for i := 50; i < 100; i++ {
		feed(fmt.Sprintf(`{"step":%d}`, i))
	}
	steps := sim.Steps()
	if len(steps) != 100 {
		t.Fatalf("%d steps, want 100", len(steps))
	}
	for i, r := range steps {
		if len(r.Devices) != world || r.Devices[0].LowestRank != 0 || r.Devices[world-1].LowestRank != world-1 {
			t.Fatalf("step %d: %d devices", i, len(r.Devices))
		}
		want := int64(0)
		if i >= 50 {
			want = 100
		}
		if r.Devices[0].PeakBytes != want || r.Devices[1].PeakBytes != 0 || r.PeakBytes != want {
			t.Errorf("step %d: rank 0 peaks at %d, rank 1 at %d, the report at %d; want %d, 0, %d", i, r.Devices[0].PeakBytes, r.Devices[1].PeakBytes, r.PeakBytes, want, want)
		}
		first := 0
		if i >= 50 {
			first = 50
		}
		if &r.Devices[0] != &steps[first].Devices[0] {
			t.Errorf("step %d does not share step %d's Devices", i, first)
		}
	}
	if &steps[50].Devices[0] == &steps[0].Devices[0] {
		t.Error("the step whose peak changed shares the earlier steps' Devices")
	}
}

// TestTransformerDefaultsAndHosts: a Transformer of Steps 0 writes two
// steps, as its doc, fastsim synth and Predict say; a negative GPUsPerHost
// is refused by both kinds of job, as the command line refuses it.
func TestTransformerDefaultsAndHosts(t *testing.T) {
	m, err := LoadModel("megatron-1.7b")
	if err != nil {
		t.Fatal(err)
	}
	m.Layers = 2
	tr := Transformer{Model: m, TP: 1, PP: 1, DP: 2, MicroBatch: 1, GlobalBatch: 2}
	h, err := tr.History()
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(h, []byte(`{"step":`)); n != 2 {
		t.Errorf("Steps 0 wrote %d step lines, want 2", n)
	}
	tr.GPUsPerHost = -1
	if err := tr.Check(); !errors.Is(err, ErrJob) || !strings.Contains(err.Error(), "gpus per host -1") {
		t.Errorf("Transformer with GPUsPerHost -1: %v, want ErrJob", err)
	}
	train := Train{PP: 1, DP: 2, TP: 1, Layers: 2, Hidden: 64, Seq: 16, Batch: 2, Micro: 1, Steps: 1, GPUsPerHost: -1}
	if err := train.Check(); !errors.Is(err, ErrTrain) || !strings.Contains(err.Error(), "gpus per host -1") {
		t.Errorf("Train with GPUsPerHost -1: %v, want ErrTrain", err)
	}
}
