// Package replay holds the one simulation type, Sim, and its Options: a
// Sim takes the records of a history one at a time (as a reader decodes
// them or as a program produces them), collects the step reports and
// writes the trace. File, Reader and Typed drive one replay end to end.
// The CLI, the layout search, the prediction, the public API and the
// tests all simulate through it, so all replay the same way.
package replay

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/memlimit"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/trace"
)

// StepRange names the steps First to Last, both included, counted from 0 in
// the order of the history's step marks: step i is the commands after step
// mark i-1 (or from the start, for step 0) up to step mark i; commands after
// the last mark form one more step.
type StepRange struct{ First, Last int }

// commandWindow turns a StepRange into engine command numbers (inclusive),
// given the command count at each step mark and at the end. New refuses a
// negative or reversed range; should one come here anyway, a negative
// Last names no step (an empty window, first > last) rather than an index
// before the first mark, and a negative First counts from the start.
func (r StepRange) commandWindow(atMark []int64, total int64) (first, last int64) {
	if r.Last < 0 {
		return 1, 0
	}
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

// LimitError reports a replay that outgrew its memory budget. Its text
// speaks of what a program can change (the budget, grouping); a command
// line names its own flags with Advise.
type LimitError struct {
	File    string
	Line    int64 // the record being replayed (1: refused before the first)
	Msg     string
	Grouped bool // the replay grouped its ranks (so grouping is no advice)
}

func (l *LimitError) Error() string {
	return l.Advise("the memory budget", "grouping ranks")
}

// Advise is the error's text with its advice naming budget (how the
// budget is raised, such as a flag) and grouping (how ranks are grouped).
func (l *LimitError) Advise(budget, grouping string) string {
	hint := "raise " + budget + " if the machine has more"
	if !l.Grouped {
		hint = "with " + grouping + " the ranks that receive the same commands are simulated once; or raise " + budget
	}
	return fmt.Sprintf("%s:%d: %v: %s; %s", l.File, l.Line, memlimit.ErrLimit, l.Msg, hint)
}

func (l *LimitError) Unwrap() error { return memlimit.ErrLimit }

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
	// PassSteps counts the producer's passes applied as one step
	// (Sim.BeginPass), PassesRecorded those whose effect was recorded.
	PassSteps, PassesRecorded int64
	Wall                      time.Duration
}

// ErrUnknownType is returned in strict mode for a message type the spec
// does not know.
var ErrUnknownType = errors.New("unknown message type")

// File replays the history at path. As with Sim.End, a replay whose
// output (trace, Inspect) failed returns its result with the error. A
// replay that outgrew Options.Memory returns the result of the records
// replayed until then, marked Partial, with its *LimitError (joined with
// an output's error, if one failed): its outputs are those of a stop.
func File(path string, opt Options) (*Result, error) {
	r, err := history.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return run(r, path, opt)
}

// Reader replays a history read from src; name labels errors. As with
// Sim.End, a replay whose output (trace, Inspect) failed returns its
// result with the error, and one that outgrew Options.Memory its partial
// result with the *LimitError (File).
func Reader(src io.Reader, name string, opt Options) (*Result, error) {
	r, err := history.NewReader(src, name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return run(r, name, opt)
}

// run replays every record of r with a new Sim and ends it.
func run(r *history.Reader, name string, opt Options) (*Result, error) {
	s, err := New(r.Header(), name, opt)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if err := s.Run(r); err != nil {
		var le *LimitError
		if !errors.As(err, &le) {
			return nil, err
		}
		// What was replayed before the budget passed is reported as
		// after a stop: a long replay's progress is not thrown away.
		s.res.Partial = true
		res, outErr := s.End()
		if outErr != nil {
			return res, errors.Join(err, outErr)
		}
		return res, err
	}
	return s.End()
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
