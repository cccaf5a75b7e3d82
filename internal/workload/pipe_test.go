package workload

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/values"
)

// passDumpSink is a dumpSink that is also a PassSink: it notes every pass
// it is told of (key, ranks, inputs, ids, latest ts) and applies some of
// them (by a rule on the pass's first id, so the same ones in every run):
// their records must then not come. It fails, from its failAt-th call on
// (0: never), with errSinkFull, and notes nothing after its failure.
type passDumpSink struct {
	dumpSink
	calls  int
	failAt int
	open   bool // a pass it did not apply is being written
	failed bool // a Write has returned errSinkFull
	late   int  // records and passes given after that
}

var errSinkFull = errors.New("sink full")

func (d *passDumpSink) fail() bool {
	d.calls++
	return d.failAt > 0 && d.calls >= d.failAt
}

func (d *passDumpSink) Write(rec *history.Record, reg *values.Registry) error {
	if d.fail() {
		if d.failed {
			d.late++
		}
		d.failed = true
		return errSinkFull
	}
	return d.dumpSink.Write(rec, reg)
}

func (d *passDumpSink) BeginPass(p *sched.Pass) bool {
	if d.fail() {
		if d.failed {
			d.late++
		}
		return false
	}
	ids := make([]int64, len(p.Ins))
	for i, t := range p.Ins {
		ids[i] = t.ID
	}
	apply := p.Base%3 != 0
	d.recs = append(d.recs, fmt.Sprintf("pass %+v rank %d ins %v base %d made %d maxts %d applied %v", p.Key, p.Rank, ids, p.Base, p.Made, p.MaxTs, apply))
	d.open = !apply
	return apply
}

func (d *passDumpSink) EndPass() {
	if d.fail() {
		return
	}
	if !d.open {
		d.recs = append(d.recs, "end of a pass never begun")
	}
	d.open = false
	d.recs = append(d.recs, "end")
}

// pipeSizes sets the pipe's batch and ring sizes for one test.
func pipeSizes(t *testing.T, items, ring int) {
	t.Helper()
	oi, or := pipeItems, pipeRing
	pipeItems, pipeRing = items, ring
	t.Cleanup(func() { pipeItems, pipeRing = oi, or })
}

// TestPipedWritesTheSameRecords: a piped emission gives its sink the calls
// an inline one gives, in order, field for field: to a plain sink (every
// pass's records, written on the sink's goroutine from the recording) and
// to a PassSink that applies some passes; with the stats. Batches of one
// item in a ring of two as well as the default sizes.
func TestPipedWritesTheSameRecords(t *testing.T) {
	all := FeatureLayouts()
	if testing.Short() { // the race detector's run: every third layout
		for i := 0; 3*i < len(all); i++ {
			all[i] = all[3*i]
		}
		all = all[:(len(all)+2)/3]
	}
	tested := 0
	for _, size := range [][2]int{{pipeItems, pipeRing}, {1, 2}} {
		for _, j := range all {
			name := fmt.Sprintf("tp%d pp%d dp%d %v zero%d recompute%d, batches of %d", j.TP, j.PP, j.DP, j.Schedule, j.Zero, j.Recompute, size[0])
			t.Run(name, func(t *testing.T) {
				pipeSizes(t, size[0], size[1])
				var inline, piped dumpSink
				st0, err := EmitStats(j, &inline)
				if err != nil {
					t.Fatal(err)
				}
				st1, err := EmitStatsPiped(j, &piped)
				if err != nil {
					t.Fatal(err)
				}
				sameCalls(t, "plain sink", inline.recs, piped.recs)
				if fmt.Sprint(st0) != fmt.Sprint(st1) {
					t.Errorf("stats %v inline, %v piped", st0, st1)
				}
				var pinline, ppiped passDumpSink
				if _, err := EmitStats(j, &pinline); err != nil {
					t.Fatal(err)
				}
				if _, err := EmitStatsPiped(j, &ppiped); err != nil {
					t.Fatal(err)
				}
				sameCalls(t, "pass sink", pinline.recs, ppiped.recs)
				applied := 0
				for _, r := range ppiped.recs {
					if len(r) > 4 && r[:4] == "pass" && r[len(r)-4:] == "true" {
						applied++
					}
				}
				if applied > 0 {
					tested++
				}
			})
		}
	}
	// Passes are offered and applied (ZeRO 3's layers lend, and their
	// passes are always written).
	if tested < len(all) {
		t.Errorf("passes applied in %d runs of %d", tested, 2*len(all))
	}
}

func sameCalls(t *testing.T, what string, a, b []string) {
	t.Helper()
	if len(a) != len(b) {
		t.Errorf("%s: %d calls inline, %d piped", what, len(a), len(b))
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			t.Errorf("%s: call %d differs:\ninline %s\npiped  %s", what, i, a[i], b[i])
			return
		}
	}
}

// TestPipedFailsAlike: a sink that fails mid-way (at a record, inside a
// replayed pass, at a pass's start or end) makes a piped emission return
// the error an inline one returns, after the same calls; the generator
// stops soon after (it hands over far fewer items than the whole history
// holds) and its goroutine is gone when the call returns.
func TestPipedFailsAlike(t *testing.T) {
	j := FeatureLayouts()[0]
	j.Steps = 4
	pipeSizes(t, 4, 2)
	var whole passDumpSink
	if _, err := EmitStats(j, &whole); err != nil {
		t.Fatal(err)
	}
	total := len(whole.recs)
	// Every call fails from its failAt-th on: one early, one in each step,
	// and the ones around the first replayed pass that was not applied.
	fails := []int{1, 2, 100, total / 8, total / 3, total / 2, 3 * total / 4}
	firstPass := 0
	for i, r := range whole.recs {
		if len(r) > 4 && r[:4] == "pass" && r[len(r)-5:] == "false" {
			fails = append(fails, i, i+1, i+2, i+3)
			firstPass = i
			break
		}
	}
	before := runtime.NumGoroutine()
	for _, at := range fails {
		inline := passDumpSink{failAt: at}
		_, err0 := EmitStats(j, &inline)
		piped := passDumpSink{failAt: at}
		_, refused, err1 := emitPiped(j, &piped)
		if !errors.Is(err0, errSinkFull) || err1 != err0 {
			t.Errorf("failing at call %d: inline %v, piped %v", at, err0, err1)
		}
		sameCalls(t, fmt.Sprintf("failing at call %d", at), inline.recs, piped.recs)
		// Written inline, the sink is given no record and no pass after
		// a Write failed (only the end of a pass it had begun; BeginPass
		// and EndPass cannot fail): at a world of a million ranks the
		// rest of a stage action is millions of records.
		if inline.late != 0 {
			t.Errorf("failing at call %d: the inline sink was given %d records and passes after it", at, inline.late)
		}
		// In a step (after the setup, which writes the parameters and
		// the optimizer's state at once) the generator stops within a
		// stage action of the failure (a layer's forward or backward on
		// one stage, tens of commands), not at the end of the step (a
		// quarter of the history; 250 to 400 records and passes at these
		// failures).
		if at >= firstPass && refused > 200 {
			t.Errorf("failing at call %d of %d: the generator wrote %d records and passes after it", at, total, refused)
		}
	}
	// The generator's goroutine has ended (it may take a moment to be
	// counted out).
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the runs, %d before", n, before)
	}
}

// panicSink panics at its at-th call.
type panicSink struct{ calls, at int }

func (p *panicSink) Write(*history.Record, *values.Registry) error {
	if p.calls++; p.calls == p.at {
		panic("sink bug")
	}
	return nil
}

// TestPipedSinkPanics: a sink that panics makes a piped emission return
// an error wrapping sched.ErrInternal, and the generator's goroutine has
// ended when it returns (it waited for a free batch forever before).
func TestPipedSinkPanics(t *testing.T) {
	j := FeatureLayouts()[0]
	pipeSizes(t, 4, 2)
	before := runtime.NumGoroutine()
	for _, at := range []int{1, 50, 500} {
		_, err := EmitStatsPiped(j, &panicSink{at: at})
		if !errors.Is(err, sched.ErrInternal) {
			t.Errorf("a sink panicking at call %d: %v, want sched.ErrInternal", at, err)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the runs, %d before", n, before)
	}
}

// TestPipedCopiesEveryField is a tripwire: the pipe copies a record's
// fields and, by kind, its message's (pipeBatch's add and record). These
// are the fields it knows; a field added to history.Record or to a
// message the generator writes must be copied there too, and added here.
func TestPipedCopiesEveryField(t *testing.T) {
	fields := func(v any) string {
		ty := reflect.TypeOf(v)
		var names []string
		for i := range ty.NumField() {
			names = append(names, ty.Field(i).Name)
		}
		return strings.Join(names, " ")
	}
	for _, c := range []struct {
		v    any
		want string
	}{
		{history.Record{}, "Line IsStep Step Ts Ranks Msg Extra"},
		{gen.Msg{}, "Kind TypeName CreateStream CallFunction SendTensor Reduce BorrowCreate BorrowFirstUse BorrowLastUse BorrowDrop DeleteRefs PipeRecv CommandGroup Extra"},
		{gen.CallFunction{}, "Ident Function FunctionIdx Args Kwargs Result Mutates Stream"},
		{gen.SendTensor{}, "Result Tensor FromRanks ToRanks FromStream ToStream"},
		{gen.Reduce{}, "Result LocalTensor Stream Dims Reduction Scatter Inplace Out HasOut"},
		{gen.BorrowCreate{}, "Result Borrow BorrowIdx Tensor FromStream ToStream"},
		{gen.BorrowFirstUse{}, "Borrow BorrowIdx"},
		{gen.BorrowLastUse{}, "Borrow BorrowIdx"},
		{gen.BorrowDrop{}, "Borrow BorrowIdx"},
		{gen.DeleteRefs{}, "Refs RefsIdx"},
		{gen.PipeRecv{}, "Ident Result Pipe Stream"},
	} {
		if got := fields(c.v); got != c.want {
			t.Errorf("%T has fields %q; the pipe knows %q: copy the new ones in pipe.go", c.v, got, c.want)
		}
	}
}
