package replay

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sync/atomic"
	"time"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/memlimit"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/trace"
	"github.com/fastsim/fastsim/internal/values"
)

// Options configure a simulation. They are declared once, here: the CLI,
// the layout search, the prediction and the public API (fastsim.Options
// is this type) all fill them in. The zero value replays as the
// reference does: every part of the timeline, the reference's fixed
// runtimes, Monarch's controller, ungrouped, serial.
type Options struct {
	// Mode says which parts of the timeline are simulated and traced.
	Mode sched.Mode
	// Controller says what the controller's sending of commands costs.
	Controller sched.Controller
	// Grouped simulates ranks that receive exactly the same commands once,
	// as a group; results are the same, and very large worlds become
	// affordable.
	Grouped bool
	// Jobs bounds the goroutines of a replay (<= 1: serial). With more,
	// Run decodes on a goroutine of its own, pipelined with the engine,
	// and the engine runs the groups touched by a command on the other
	// Jobs-1 goroutines (serially with Jobs 2); with a pricing that reads
	// a command's raw arguments (Hardware, Model, a Costs with a roofline)
	// or EachCommand, decoding stays on the engine's goroutine and the
	// engine has all Jobs. Results do not depend on it.
	Jobs int
	// Strict makes unknown message types errors instead of warnings.
	Strict bool
	// KeepTrace keeps every event, so that the timeline can be written
	// (WriteTrace) or inspected (Inspect); TracePath implies it.
	KeepTrace bool

	// Costs prices commands; nil: the reference's fixed runtimes.
	Costs *costs.Model
	// Hardware prices commands on that hardware: a roofline per ATen op
	// and collectives from the ranks' placement on hosts, with Costs (or
	// the fixed runtimes) as the base whose runtime table and "comm"
	// section still win. nil: no hardware model.
	Hardware *hardware.Spec
	// Model, when set, prices commands instead of Costs and Hardware (a
	// Monarch timing file, a cost model the caller built).
	Model sched.CostModel

	// MaxWorld refuses histories of more ranks (0: the engine's limit), so
	// an embedding program or a fuzzer bounds what an input can ask for.
	MaxWorld int64
	// Memory, when set, is the memory budget: a world whose ranks cannot
	// fit is refused before the replay starts, and a replay whose memory
	// passes the budget ends with a *LimitError (File and Reader also
	// return what was replayed until then, as after a Stop).
	Memory *memlimit.Watcher
	// Stop, when closed, ends the simulation early, even inside one
	// record: the result covers the commands replayed so far and is
	// marked Partial. A history that fails to read once Stop is closed
	// ends the replay the same way (Run), so a reader that a stop aborts
	// (one waiting on a pipe, made to fail) yields a Partial result; a
	// step record notices a stop as a command does, so a stop asked for
	// while the last records were read is not lost. A history that
	// reaches its end with every record applied is complete, whenever a
	// stop came.
	Stop <-chan struct{}
	// Progress, when set, is called about once a second with the records
	// fed so far.
	Progress func(records int64)
	// Header, when set, is called with the history's header before the
	// first record is replayed.
	Header func(history.Header)
	// EachCommand, when set, is called with every command record before it
	// is applied (a catalogue of the commands, say).
	EachCommand func(rec *history.Record)
	// ManyGroups, when set, is called once in a Grouped simulation, at the
	// first record after which the history's rank sets have cut the world
	// into so many groups that grouping gains little (GroupsGainLittle
	// gives the rule), with that record's line, the groups and the world's
	// ranks. Results do not depend on it.
	ManyGroups func(line int64, groups int, world int64)
	// FixedStreams promises that the history creates every stream before
	// its first task (as fastsim's own transformer workloads do): memory
	// events are then let go of as a replay goes, even without a
	// controller cost, where otherwise nothing is final before the end.
	// Results do not depend on it; a CreateStream after the first task is
	// an error (ErrStreamsFixed).
	FixedStreams bool
	// PerCommand applies every record of a producer's recorded passes
	// (Sim.BeginPass) one by one, never a pass as one step: slower, with
	// the same results (the tests compare the two).
	PerCommand bool

	// The end of a whole replay (File, Reader, Typed, Sim.End):

	// TracePath is where End writes the trace; empty: no trace.
	TracePath string
	// TraceSteps, when set, limits that trace to the commands of steps
	// First to Last (see StepRange).
	TraceSteps *StepRange
	// PartialTrace writes the trace of a stopped replay too (by default a
	// stopped replay writes none).
	PartialTrace bool
	// Inspect, when set, is called by End with the engine once the history
	// is replayed (not after a stop, unless PartialTrace), before the trace
	// is written: outputs other than the trace read the kept timeline
	// there.
	Inspect func(eng *sched.Engine, res *Result) error
}

// ErrStopped is returned by Feed once the simulation has stopped: a stop
// request or the memory budget ended it (Result().Partial), or an earlier
// record failed. A producer should stop.
var ErrStopped = errors.New("the replay stopped at an earlier record")

// ErrNilRecord is returned by Feed given a nil record; the Sim is left as
// it was.
var ErrNilRecord = errors.New("replay: Feed was given a nil record")

// Sim is one simulation: the engine, the history's header and what the
// replay has found so far. Records go in one at a time with Feed, as a
// reader decodes them (Run) or as a program produces them (a workload
// writing to the Sim as to a history writer); step records close steps;
// End finishes a whole replay and writes its outputs. It is not safe for
// concurrent use.
type Sim struct {
	opt    Options
	name   string
	eng    *sched.Engine
	hw     *costs.Model // the hardware model, when Options.Hardware is set
	res    Result
	atMark []int64 // commands processed at each step mark
	onStep func(sched.Report)
	rec    history.Record // Run's record, reused

	stop    atomic.Bool
	done    chan struct{}    // closes the stop watcher
	line    int64            // the position of the last typed record
	treg    *values.Registry // typed records: the registry giving their dense indexes
	indexFn func(*values.Tensor)
	err     error // sticky: the first failure
	began   time.Time
	tick    time.Time
	// The clock is read every checkEvery records (adapted so that it is
	// read about ten times a second: a record may take a microsecond or,
	// on a history that splits the workers apart, seconds).
	checkEvery, sinceCheck int64
	checked                time.Time
	pass                   passState // passes applied as steps (pass.go)
	manyNoted              bool      // Options.ManyGroups was called
}

// New opens a simulation of the history whose header is h; name labels
// errors ("name:LINE: ...").
func New(h history.Header, name string, opt Options) (*Sim, error) {
	if opt.MaxWorld > 0 && h.WorldSize > opt.MaxWorld {
		return nil, &history.Error{File: name, Line: 1, Err: fmt.Errorf("%w: world size %d is over the limit of %d", sched.ErrOptions, h.WorldSize, opt.MaxWorld)}
	}
	if lim := opt.Memory.Limit(); lim > 0 && !opt.Grouped && h.WorldSize > lim/sched.RankBytes {
		return nil, &LimitError{File: name, Line: 1, Msg: fmt.Sprintf("%d ranks need at least %s of simulation state (%d bytes each), more than the budget of %s",
			h.WorldSize, memlimit.Format(h.WorldSize*sched.RankBytes), sched.RankBytes, memlimit.Format(lim))}
	}
	switch {
	case opt.Mode > sched.ControllerOnly:
		return nil, &history.Error{File: name, Line: 1, Err: fmt.Errorf("%w: trace mode %d", sched.ErrOptions, opt.Mode)}
	case opt.Controller > sched.ControllerNone:
		return nil, &history.Error{File: name, Line: 1, Err: fmt.Errorf("%w: controller %d", sched.ErrOptions, opt.Controller)}
	case opt.TraceSteps != nil && (opt.TraceSteps.First < 0 || opt.TraceSteps.Last < opt.TraceSteps.First):
		return nil, &history.Error{File: name, Line: 1, Err: fmt.Errorf("%w: TraceSteps %d:%d: steps are counted from 0 and the last may not come before the first",
			sched.ErrOptions, opt.TraceSteps.First, opt.TraceSteps.Last)}
	}
	if opt.Costs != nil {
		if err := opt.Costs.Check(); err != nil {
			return nil, &history.Error{File: name, Line: 1, Err: fmt.Errorf("%w: Costs: %w", sched.ErrOptions, err)}
		}
	}
	// A cost model given as the Model interface is checked as Costs is: a
	// zero-value *costs.Model would price every command at 0 ns, and a nil
	// one in the interface is not the absence of a model.
	if m, ok := opt.Model.(*costs.Model); ok {
		if m == nil {
			return nil, &history.Error{File: name, Line: 1, Err: fmt.Errorf("%w: Model: a nil cost model (leave Model unset for the reference's fixed runtimes)", sched.ErrOptions)}
		}
		if err := m.Check(); err != nil {
			return nil, &history.Error{File: name, Line: 1, Err: fmt.Errorf("%w: Model: %w", sched.ErrOptions, err)}
		}
	}
	s := &Sim{opt: opt, name: name, began: time.Now(), line: 1}
	s.tick, s.checked = s.began, s.began
	model := opt.Model
	if model == nil && opt.Costs != nil {
		model = opt.Costs
	}
	if opt.Model == nil && opt.Hardware != nil {
		base := opt.Costs
		if base == nil {
			base = costs.Default()
		}
		m, err := base.WithHardware(opt.Hardware)
		if err != nil {
			return nil, err
		}
		s.hw, model = m, m
	}
	eng, err := sched.New(sched.Options{
		Interrupt:    s.interrupted,
		WorldSize:    h.WorldSize,
		Mode:         opt.Mode,
		Model:        model,
		GPUsPerHost:  h.GPUsPerHost,
		KeepEvents:   opt.KeepTrace || opt.TracePath != "",
		Grouped:      opt.Grouped,
		Jobs:         engineJobs(&opt),
		Controller:   opt.Controller,
		FixedStreams: opt.FixedStreams,
	})
	if err != nil {
		return nil, &history.Error{File: name, Line: 1, Err: err}
	}
	s.eng = eng
	s.res.Header = h
	// The header's hook runs first, so that a stop it asks for stops the
	// first record.
	if opt.Header != nil {
		opt.Header(h)
	}
	// A stop request interrupts the engine even inside one record. One
	// asked for already stops the first record, whenever the watcher
	// comes to run.
	if s.stopAsked() {
		s.stop.Store(true)
	}
	if opt.Stop != nil {
		s.done = make(chan struct{})
		go func(stop <-chan struct{}, done <-chan struct{}) {
			select {
			case <-stop:
				s.stop.Store(true)
			case <-done:
			}
		}(opt.Stop, s.done)
	}
	return s, nil
}

// interrupted reports whether a stop was asked for or the memory budget
// is exceeded.
func (s *Sim) interrupted() bool { return s.stop.Load() || s.opt.Memory.Over() }

// Feed applies one record. reg is the tensor registry of the reader that
// decoded rec (its rows index the record's tensors; the reader's registry
// must keep deleted rows, Registry.DeferFree, as Run sets it), or nil for
// a record a program produced: its tensors carry their fields in every
// mention, the Sim gives them, their storages, streams and borrows dense
// indexes with its own registry, as a history reader does, and its line is
// its position. A step record checks that every queued task can still run and
// records a step report. After a failure or a stop Feed returns the same
// error, or ErrStopped. A nil rec is refused with ErrNilRecord, which
// changes nothing.
func (s *Sim) Feed(rec *history.Record, reg *values.Registry) error {
	if s.err != nil {
		return s.err
	}
	if rec == nil {
		return ErrNilRecord
	}
	line := rec.Line
	if reg == nil {
		s.line++
		line = s.line
	}
	if rec.IsStep {
		// A stop is noticed at a step as at a command, so that the end of
		// the input, reached after every record was applied, can be taken
		// for a complete replay whenever the stop came (Run).
		if err := s.noticeStop(line); err != nil {
			return err
		}
		// A task still queued after a command can never run: whatever it
		// waits for (a collective peer, an event's task) already exists,
		// and later commands only queue behind. So the check at the end is
		// exact at a step too, and names the same task.
		if err := s.Finish(); err != nil {
			s.err = err
			return err
		}
		s.Step()
		return nil
	}
	s.res.Records++
	if s.interrupted() {
		return s.stopped(line)
	}
	if s.opt.EachCommand != nil {
		s.opt.EachCommand(rec)
	}
	s.res.Kinds[rec.Msg.Kind]++
	s.res.LastLine = line
	if s.opt.Strict && rec.Msg.Kind == gen.MsgUnknown {
		s.err = &history.Error{File: s.name, Line: line, Err: fmt.Errorf("%w %q (strict: a message type this replay does not know is an error)", ErrUnknownType, rec.Msg.TypeName)}
		return s.err
	}
	if reg == nil {
		if err := s.indexTyped(rec); err != nil {
			return err
		}
		reg = s.treg
	}
	// The engine owns the registry's lifecycle: after the command it
	// releases the indexes of tensors, storages and borrows no worker holds.
	if err := s.eng.Command(line, rec.Ts, rec.Ranks, &rec.Msg, reg); err != nil {
		if errors.Is(err, sched.ErrStopped) {
			return s.stopped(line) // within the record: it counts as replayed in part
		}
		s.err = &history.Error{File: s.name, Line: heldLine(err, line), Err: err}
		return s.err
	}
	if s.opt.ManyGroups != nil {
		s.noteGroups(line)
	}
	if s.opt.Progress != nil {
		s.progress()
	}
	return nil
}

// manyGroupsFloor is the fewest groups GroupsGainLittle calls many. (A variable
// so that a test can lower it.)
var manyGroupsFloor = 1 << 16

// GroupsGainLittle reports whether groups groups of a world of world ranks are
// so many that grouping gains little: when they average 16 ranks or fewer
// and number 65,536 or more. A grouped replay's work for a command grows
// with the groups it touches, as an ungrouped one's grows with the ranks,
// and each group carries its own state and rank set: at 16 ranks a group
// grouping saves at most 16 times the work, not the thousands of times of
// a training job whose ranks fall into a few groups, and it saves less
// the fewer the ranks a group (bench/RESULTS.md, "Irregular rank sets":
// 2^20 ranks cut into 262,144 groups of 4 replayed in 0.30 times the CPU
// time of the ungrouped replay, 2^16 ranks cut into groups of one in
// 0.89 times). Fewer than 65,536 groups cost little whatever the world
// (65,536 of them took about 3 CPU seconds for 17 commands), and a note
// would be noise.
func GroupsGainLittle(groups int, world int64) bool {
	return groups >= manyGroupsFloor && int64(groups)*16 >= world
}

// noteGroups calls Options.ManyGroups the first time the groups are many
// (GroupsGainLittle), after the record at line.
func (s *Sim) noteGroups(line int64) {
	if s.manyNoted || !s.opt.Grouped {
		return
	}
	if g := s.eng.Groups(); GroupsGainLittle(g, s.res.Header.WorldSize) {
		s.manyNoted = true
		s.opt.ManyGroups(line, g, s.res.Header.WorldSize)
	}
}

// progress calls opt.Progress once a second or so.
func (s *Sim) progress() {
	if s.sinceCheck++; s.sinceCheck < s.checkEvery {
		return
	}
	s.sinceCheck = 0
	now := time.Now()
	switch d := now.Sub(s.checked); {
	case d > 200*time.Millisecond:
		s.checkEvery = max(s.checkEvery/2, 1)
	case d < 50*time.Millisecond && s.checkEvery < 1<<20:
		s.checkEvery = max(2*s.checkEvery, 1)
	}
	s.checked = now
	if now.Sub(s.tick) >= time.Second {
		s.tick = now
		s.opt.Progress(s.res.Records)
	}
}

// Write is Feed: it gives a Sim the method of a history.Writer, so a
// program producing typed records (a workload) writes them to a replay as
// it would to a file.
func (s *Sim) Write(rec *history.Record, reg *values.Registry) error { return s.Feed(rec, reg) }

// producedIDSpan is how many ids per live tensor the Sim's registry keeps
// in its windows: at batch 512 a 1T model on 64 stages has some 10^5
// tensors alive and a first stage's saved tensors live across some 3x10^6
// ids (64 microbatches of every stage's ids), a span of about 25.
const producedIDSpan = 32

// indexTyped gives a produced record's tensors, storages, streams and
// borrows their dense indexes with the Sim's own registry, as a history
// reader's decoding does.
func (s *Sim) indexTyped(rec *history.Record) error {
	if s.treg == nil {
		s.treg = values.NewRegistry()
		s.treg.DeferFree(true) // rows are released by the engine
		// A produced pipeline keeps a stage's saved tensors alive while
		// the other stages make millions of ids: keep them in the
		// windows, not the hash tables (values.Registry.WidenWindows).
		s.treg.WidenWindows(producedIDSpan)
		s.indexFn = s.index
	}
	s.treg.ClearFresh()
	rec.Msg.EachTensor(s.indexFn)
	if s.err != nil {
		return s.err
	}
	// The engine deletes the tensors it carries undefined itself
	// (internal/sched's carry.go): a DeleteRefs does not define them.
	del := rec.Msg.Kind == gen.MsgDeleteRefs
	s.treg.PauseMiss(del)
	rec.Msg.Index(s.treg)
	history.DeleteRefs(s.treg, &rec.Msg)
	if del {
		s.treg.PauseMiss(false)
	}
	return nil
}

// index gives tensor t its dense indexes: those of its id's first mention,
// which defines it.
func (s *Sim) index(t *values.Tensor) {
	if s.err != nil {
		return
	}
	idx, st, err := s.treg.Ensure(t.ID, t.Storage, t.NBytes, t.Dtype, t.Shape, t.CPU)
	if err != nil {
		s.err = &history.Error{File: s.name, Line: s.line, Err: err}
		return
	}
	t.Idx, t.StorageIdx = idx, st
}

// stopped ends the simulation at line: past the memory budget it is a
// *LimitError, otherwise the result is Partial.
func (s *Sim) stopped(line int64) error {
	if s.opt.Memory.Over() {
		s.err = &LimitError{File: s.name, Line: line, Msg: fmt.Sprintf("the replay's memory passed its budget of %s", memlimit.Format(s.opt.Memory.Limit())), Grouped: s.opt.Grouped}
		return s.err
	}
	s.res.Partial = true
	s.err = ErrStopped
	return s.err
}

// Run feeds every record r has left, up to its end. A stop ends it early
// without an error (Result().Partial).
func (s *Sim) Run(r *history.Reader) error {
	// A stop asked for before this call stops its first record, whenever
	// the watcher comes to run (a program feeding lines calls Run for
	// each batch).
	if s.stopAsked() {
		s.stop.Store(true)
	}
	reg := r.Registry()
	reg.DeferFree(true) // rows are released by the engine
	if s.pipelined() {
		return s.runPipelined(r)
	}
	for {
		err := r.Next(&s.rec)
		if err == io.EOF {
			// Every record was applied: a stop asked for since then (a
			// Ctrl-C as the replay ends) leaves nothing out.
			return nil
		}
		if err != nil && s.stopAsked() {
			return s.stopAtInput()
		}
		if err != nil {
			// A held command's own error comes first.
			if ferr := s.eng.Flush(); ferr != nil {
				s.err = &history.Error{File: s.name, Line: heldLine(ferr, s.res.LastLine), Err: ferr}
				return s.err
			}
			return err
		}
		if err := s.Feed(&s.rec, reg); err != nil {
			if err == ErrStopped && s.res.Partial {
				return nil
			}
			return err
		}
	}
}

// NoticeStop does what a step record does before its check: when a stop
// was asked for (Options.Stop closed, even after the last record fed) or
// the memory budget is passed, it ends the simulation at the last record
// fed (line 1 before the first), Partial (ErrStopped) or with the
// *LimitError, and returns that error; otherwise nil. After an earlier
// failure or stop it returns that error. A program feeding records calls
// it where it closes a step or declares the end without a step record,
// so that it notices a stop as a step record would.
func (s *Sim) NoticeStop() error {
	if s.err != nil {
		return s.err
	}
	return s.noticeStop(max(s.res.LastLine, 1))
}

// noticeStop ends the simulation at line if a stop was asked for or the
// memory budget is passed. The channel is read as well as the flag its
// watcher sets, which may not be set yet.
func (s *Sim) noticeStop(line int64) error {
	if s.interrupted() || s.stopAsked() {
		return s.stopped(line)
	}
	return nil
}

// stopAsked reports whether Options.Stop is closed. It reads the channel
// itself, not the flag its watcher sets, so that a reader which fails
// because of the stop always finds it asked for.
func (s *Sim) stopAsked() bool {
	if s.opt.Stop == nil {
		return false
	}
	select {
	case <-s.opt.Stop:
		return true
	default:
		return false
	}
}

// stopAtInput ends a replay whose input ended or failed after a stop was
// asked for: the result is Partial (or, past the memory budget, the
// *LimitError), with the last record fed.
func (s *Sim) stopAtInput() error {
	if err := s.stopped(s.res.LastLine); !s.res.Partial {
		return err
	}
	return nil
}

// Step closes an iteration, as a step record does (without its check
// that every queued task can run: Finish): it records and returns the
// report so far.
func (s *Sim) Step() sched.Report {
	r := s.eng.Step()
	s.res.Steps = append(s.res.Steps, r)
	s.atMark = append(s.atMark, s.eng.Commands())
	if s.onStep != nil {
		s.onStep(r)
	}
	return r
}

// OnStep sets a function called with each step report as it is recorded.
func (s *Sim) OnStep(fn func(sched.Report)) { s.onStep = fn }

// Finish checks that the history may end here: a task still queued can
// never run, which is an error at the line of the command that created it
// (a deadlock in the program, such as two sends that wait for each other).
func (s *Sim) Finish() error {
	err := s.eng.Finish()
	if errors.Is(err, sched.ErrStopped) {
		// Stopped while applying held Reduces (a run over 65,536 groups
		// or more asks between them): what was applied is a partial
		// replay up to the last record, as a stop within a command is.
		return s.stopped(max(s.res.LastLine, 1))
	}
	if d, ok := err.(*sched.DeadlockError); ok {
		return &history.Error{File: s.name, Line: d.Line, Err: d}
	}
	if ce, ok := err.(*sched.CommandError); ok {
		return &history.Error{File: s.name, Line: heldLine(ce, s.res.LastLine), Err: ce}
	}
	return err
}

// heldLine is the line an engine error belongs to: its command's own when
// the engine applied that command after reading later records (a held
// Reduce), else line.
func heldLine(err error, line int64) int64 {
	var ce *sched.CommandError
	if errors.As(err, &ce) && ce.Line != 0 {
		return ce.Line
	}
	return line
}

// Report returns the report so far without closing a step.
func (s *Sim) Report() sched.Report { return s.eng.Report() }

// Engine is the simulation's engine, for outputs that read its state.
func (s *Sim) Engine() *sched.Engine { return s.eng }

// Header is the header of the history simulated.
func (s *Sim) Header() history.Header { return s.res.Header }

// UnknownOps returns how many calls had an op the hardware model's op
// table does not know (priced as memory-bound on their tensors), and
// those ops' names; zero without Options.Hardware.
func (s *Sim) UnknownOps() (int64, []string) {
	if s.hw == nil {
		return 0, nil
	}
	return s.hw.Roofline().Unknown()
}

// Partial reports whether a stop request (Options.Stop) ended the
// simulation before the end of its history: the reports cover the
// records replayed until then.
func (s *Sim) Partial() bool { return s.res.Partial }

// Result fills in and returns what the simulation has found so far.
func (s *Sim) Result() *Result {
	fillResult(s.eng, &s.res)
	s.res.Wall = time.Since(s.began)
	return &s.res
}

// End finishes a whole replay: unless it was stopped, it checks that
// every task ran (Finish), then calls Options.Inspect and writes the trace
// to Options.TracePath (after a stop only with Options.PartialTrace), and
// returns the result. When the simulation succeeded but an output failed
// (Inspect's error, or the trace's, a *TraceError, or both joined; after
// an Inspect error wrapping ErrOutputsRefused no trace is written), the
// result is returned with the error: it is whole, and a caller may still
// report it. The Sim stays readable.
func (s *Sim) End() (*Result, error) {
	res := &s.res
	if !res.Partial {
		if err := s.Finish(); err != nil && !(err == ErrStopped && res.Partial) {
			return nil, err
		}
	}
	if s.opt.ManyGroups != nil && !res.Partial {
		// The commands held back are applied at the end too.
		s.noteGroups(max(res.LastLine, 1))
	}
	fillResult(s.eng, res)
	// One output failing does not keep the next from being written: the
	// trace is written after a failed Inspect too, and both errors come
	// back (errors.Join).
	var inspectErr error
	if s.opt.Inspect != nil && (!res.Partial || s.opt.PartialTrace) {
		inspectErr = s.opt.Inspect(s.eng, res)
		if errors.Is(inspectErr, ErrOutputsRefused) {
			// A usage error: nothing more is written.
			res.Wall = time.Since(s.began)
			return res, inspectErr
		}
	}
	if s.opt.TracePath != "" && (!res.Partial || s.opt.PartialTrace) {
		first, last := int64(0), int64(math.MaxInt64)
		if s.opt.TraceSteps != nil {
			first, last = s.opt.TraceSteps.commandWindow(s.atMark, res.Commands)
		}
		if err := writeTrace(s.eng, s.opt.TracePath, first, last); err != nil {
			res.Wall = time.Since(s.began)
			te := &TraceError{Path: s.opt.TracePath, Err: err}
			if inspectErr != nil {
				return res, errors.Join(inspectErr, te)
			}
			return res, te
		}
	}
	res.Wall = time.Since(s.began)
	return res, inspectErr
}

// ErrOutputsRefused, wrapped by an error of Options.Inspect, says that the
// outputs were asked for with settings the history shows to be wrong (a
// rank outside its world): a usage error, after which End writes nothing
// more, the trace included.
var ErrOutputsRefused = errors.New("outputs refused for this history")

// TraceError reports a trace that could not be written (Options.TracePath)
// after a simulation that succeeded. Its text is the trace writer's.
type TraceError struct {
	Path string
	Err  error
}

func (e *TraceError) Error() string { return e.Err.Error() }

// Unwrap returns the trace writer's error.
func (e *TraceError) Unwrap() error { return e.Err }

// ErrNoTrace is returned by WriteTrace when the events were not kept
// (Options.KeepTrace).
var ErrNoTrace = errors.New("the simulation was not asked to keep the trace (KeepTrace)")

// WriteTrace writes the timeline so far to w as Chrome trace JSON (open
// it in ui.perfetto.dev): the whole of it, or with Options.TraceSteps the
// commands of those steps, as End writes it to Options.TracePath. It
// needs Options.KeepTrace.
func (s *Sim) WriteTrace(w io.Writer) error {
	if !s.opt.KeepTrace && s.opt.TracePath == "" {
		return ErrNoTrace
	}
	first, last := int64(0), int64(math.MaxInt64)
	if s.opt.TraceSteps != nil {
		first, last = s.opt.TraceSteps.commandWindow(s.atMark, s.eng.Commands())
	}
	tw := trace.NewWriter(w)
	if err := s.eng.WriteTraceWindow(tw, first, last); err != nil {
		tw.Close()
		return err
	}
	return tw.Close()
}

// Close releases the goroutines a Sim keeps: the stop watcher and, with
// Jobs > 1, the engine's helpers. Its reports stay readable.
func (s *Sim) Close() {
	if s.done != nil {
		close(s.done)
		s.done = nil
	}
	s.eng.Close()
}
