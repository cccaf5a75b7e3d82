// Package replay drives one replay end to end: it reads a history file,
// feeds every record to the engine, collects the step reports and writes the
// trace. The CLI and the tests share it, so both replay the same way.
package replay

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sync/atomic"
	"time"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/memlimit"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/trace"
)

// Options say how to replay.
type Options struct {
	Mode      sched.Mode
	Costs     sched.Costs     // fixed runtimes (zero: the reference's defaults)
	Model     sched.CostModel // prices tasks instead of Costs when set
	TracePath string          // where to write the trace; empty: no trace
	Strict    bool            // unknown message types are errors, not warnings
	Grouped   bool            // simulate identical ranks once, as a group
	Jobs      int             // goroutines running groups in parallel (<= 1: serial)
	// Progress, when set, is called about once a second with the records
	// read so far.
	Progress func(records int64)
	// MaxWorld refuses histories of more ranks (0: the engine's limit), so
	// an embedding program or a fuzzer bounds what an input can ask for.
	MaxWorld int64
	// Stop, when closed, ends the replay early: the result covers the
	// commands replayed so far and is marked Partial.
	Stop <-chan struct{}
	// PartialTrace writes the trace of a stopped replay too (by default a
	// stopped replay writes none).
	PartialTrace bool
	// Controller prices the controller's part of each command (default:
	// Monarch's, the record's ts).
	Controller sched.Controller
	// KeepEvents keeps the whole timeline even without a trace, for
	// Inspect.
	KeepEvents bool
	// Inspect, when set, is called with the engine once the history is
	// replayed (not after a stop, unless PartialTrace), before the trace is
	// written: outputs other than the trace read the kept timeline there.
	Inspect func(eng *sched.Engine, res *Result) error
	// Header, when set, is called with the history's header before the
	// first record is replayed.
	Header func(history.Header)
	// TraceSteps, when set, limits the trace to the commands of steps
	// First to Last (see StepRange).
	TraceSteps *StepRange
	// Memory, when set, is the memory budget: a world whose ranks cannot
	// fit is refused before the replay starts, and a replay whose memory
	// passes the budget ends with a *LimitError.
	Memory *memlimit.Watcher
}

// StepRange names the steps First to Last, both included, counted from 0 in
// the order of the history's step marks: step i is the commands after step
// mark i-1 (or from the start, for step 0) up to step mark i; commands after
// the last mark form one more step.
type StepRange struct{ First, Last int }

// commandWindow turns a StepRange into engine command numbers (inclusive),
// given the command count at each step mark and at the end.
func (r StepRange) commandWindow(atMark []int64, total int64) (first, last int64) {
	first, last = 1, total
	if r.First > 0 {
		if r.First-1 < len(atMark) {
			first = atMark[r.First-1] + 1
		} else {
			first = total + 1 // no such step: nothing traced
		}
	}
	if r.Last < len(atMark) {
		last = atMark[r.Last]
	}
	return first, last

}

// LimitError reports a replay that outgrew its memory budget.
type LimitError struct {
	File string
	Line int64 // the record being replayed (1: refused before the first)
	Msg  string
}

func (l *LimitError) Error() string {
	return fmt.Sprintf("%s:%d: %v: %s", l.File, l.Line, memlimit.ErrLimit, l.Msg)
}

func (l *LimitError) Unwrap() error { return memlimit.ErrLimit }

// limitHint is what a LimitError suggests.
func limitHint(grouped bool) string {
	if grouped {
		return "raise --max-memory if the machine has more"
	}
	return "with --group-workers ranks that receive the same commands are simulated once; or raise --max-memory"
}

// Result is what a replay found.
type Result struct {
	Header       history.Header
	Final        sched.Report   // at the end of the file
	Steps        []sched.Report // at each step line
	Commands     int64          // commands processed, sub-commands included
	Records      int64          // command records read
	Warnings     int64
	FirstWarning string
	Groups       int   // groups simulated at the end (the world size, ungrouped)
	WorkerTasks  int64 // tasks rank by rank (a group's count once per rank)
	// Kinds counts the command records by message kind (a CommandGroup
	// once, as the record it is).
	Kinds   [gen.MsgUnknown + 1]int64
	Partial bool // stopped before the end of the history
	// PeakDeviceFinalBytes is what the device that peaks (Final.PeakDevice)
	// holds at the end of the history, once every transient tensor is
	// freed: a training job's model state.
	PeakDeviceFinalBytes int64
	LastLine             int64 // the last line replayed
	Wall                 time.Duration
}

// ErrUnknownType is returned in strict mode for a message type the spec
// does not know.
var ErrUnknownType = errors.New("unknown message type")

// File replays the history at path.
func File(path string, opt Options) (*Result, error) {
	r, err := history.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return run(r, path, opt)
}

// Reader replays a history read from src; name labels errors.
func Reader(src io.Reader, name string, opt Options) (*Result, error) {
	r, err := history.NewReader(src, name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return run(r, name, opt)
}

func run(r *history.Reader, name string, opt Options) (*Result, error) {
	began := time.Now()
	h := r.Header()
	if opt.MaxWorld > 0 && h.WorldSize > opt.MaxWorld {
		return nil, &history.Error{File: name, Line: 1, Err: fmt.Errorf("%w: world size %d is over the limit of %d", sched.ErrOptions, h.WorldSize, opt.MaxWorld)}
	}
	if lim := opt.Memory.Limit(); lim > 0 && !opt.Grouped && h.WorldSize > lim/sched.RankBytes {
		return nil, &LimitError{File: name, Line: 1, Msg: fmt.Sprintf("%d ranks need at least %s of simulation state (%d bytes each), more than --max-memory %s; %s",
			h.WorldSize, memlimit.Format(h.WorldSize*sched.RankBytes), sched.RankBytes, memlimit.Format(lim), limitHint(false))}
	}
	// A stop request or the memory budget interrupts the engine even
	// inside one record.
	var stop atomic.Bool
	if opt.Stop != nil {
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-opt.Stop:
				stop.Store(true)
			case <-done:
			}
		}()
	}
	interrupt := func() bool { return stop.Load() || opt.Memory.Over() }
	eng, err := sched.New(sched.Options{
		Interrupt:   interrupt,
		WorldSize:   h.WorldSize,
		Mode:        opt.Mode,
		Costs:       opt.Costs,
		Model:       opt.Model,
		GPUsPerHost: h.GPUsPerHost,
		KeepEvents:  opt.TracePath != "" || opt.KeepEvents,
		Grouped:     opt.Grouped,
		Jobs:        opt.Jobs,
		Controller:  opt.Controller,
	})
	if err != nil {
		return nil, &history.Error{File: name, Line: 1, Err: err}
	}
	defer eng.Close()
	if opt.Header != nil {
		opt.Header(h)
	}
	res := &Result{Header: h}
	var atMark []int64           // commands processed at each step mark
	r.Registry().DeferFree(true) // rows are released by the engine
	var rec history.Record
	lastTick := began
	for {
		err := r.Next(&rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if rec.IsStep {
			// A task still queued after a command can never run: whatever
			// it waits for (a collective peer, an event's task) already
			// exists, and later commands only queue behind. So the check at
			// the end is exact at a step too, and names the same task.
			if err := Finish(eng, name); err != nil {
				return nil, err
			}
			res.Steps = append(res.Steps, eng.Step())
			atMark = append(atMark, eng.Commands())
			continue
		}
		res.Records++
		if interrupt() {
			if opt.Memory.Over() {
				return nil, overLimit(name, rec.Line, opt)
			}
			res.Partial = true
			break
		}
		res.Kinds[rec.Msg.Kind]++
		res.LastLine = rec.Line
		if err := Apply(eng, r, &rec, opt.Strict, name); err != nil {
			if errors.Is(err, sched.ErrStopped) {
				if opt.Memory.Over() {
					return nil, overLimit(name, rec.Line, opt)
				}
				res.Partial = true // within the record: it counts as replayed in part
				break
			}
			return nil, err
		}
		if opt.Progress != nil && res.Records&1023 == 0 {
			if now := time.Now(); now.Sub(lastTick) >= time.Second {
				lastTick = now
				opt.Progress(res.Records)
			}
		}
	}
	if !res.Partial {
		if err := Finish(eng, name); err != nil {
			return nil, err
		}
	}
	fillResult(eng, res)
	if opt.Inspect != nil && (!res.Partial || opt.PartialTrace) {
		if err := opt.Inspect(eng, res); err != nil {
			return nil, err
		}
	}
	if opt.TracePath != "" && (!res.Partial || opt.PartialTrace) {
		first, last := int64(0), int64(math.MaxInt64)
		if opt.TraceSteps != nil {
			first, last = opt.TraceSteps.commandWindow(atMark, res.Commands)
		}
		if err := writeTrace(eng, opt.TracePath, first, last); err != nil {
			return nil, err
		}
	}
	res.Wall = time.Since(began)
	return res, nil
}

// Apply feeds one command record of r to the engine (in strict mode an
// unknown message type is an error). The engine owns r's registry's
// lifecycle from the first record: it releases the rows of deleted tensors
// that no worker holds any more, so the registry holds the tensors alive
// rather than every tensor the history ever named. Call it for every
// command record r returns.
func Apply(eng *sched.Engine, r *history.Reader, rec *history.Record, strict bool, name string) error {
	if strict && rec.Msg.Kind == gen.MsgUnknown {
		return &history.Error{File: name, Line: rec.Line, Err: fmt.Errorf("%w %q (--strict)", ErrUnknownType, rec.Msg.TypeName)}
	}
	if err := eng.Command(rec.Line, rec.Ts, rec.Ranks, &rec.Msg, r.Registry()); err != nil {
		return &history.Error{File: name, Line: rec.Line, Err: err}
	}
	return nil
}

// Finish ends a history: a task still queued can never run, which is an
// error at the line of the command that created it.
func Finish(eng *sched.Engine, name string) error {
	err := eng.Finish()
	if d, ok := err.(*sched.DeadlockError); ok {
		return &history.Error{File: name, Line: d.Line, Err: d}
	}
	return err
}

func overLimit(name string, line int64, opt Options) error {
	return &LimitError{File: name, Line: line, Msg: fmt.Sprintf("the replay's memory passed --max-memory %s; %s", memlimit.Format(opt.Memory.Limit()), limitHint(opt.Grouped))}
}

// writeTrace writes to a temp file beside path and renames it at the end, so
// path is either the whole trace or untouched.
func writeTrace(eng *sched.Engine, path string, firstCmd, lastCmd int64) error {
	f, err := trace.Create(path)
	if err != nil {
		return err
	}
	if err := eng.WriteTraceWindow(f.W, firstCmd, lastCmd); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}
