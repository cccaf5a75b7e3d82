// Package fastsim embeds the simulator in a Go program: open a Sim, feed
// it the records of a command history (JSON lines, the interchange format
// the CLI reads) one at a time, and take reports of the simulated time and
// memory; or replay a whole history from an io.Reader; write the timeline
// as a Chrome trace; price commands with a cost model; and build synthetic
// training histories in memory: a transformer trained as Megatron-LM trains
// it (Transformer), or the toy micro-benchmark (Train); and predict a
// training layout's step time, throughput and memory as `fastsim predict`
// does (Predict).
//
// Results are those of `fastsim replay`: docs/SEMANTICS.md defines them, and with
// the default costs they match the reference simulator number for number.
package fastsim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/memlimit"
	"github.com/fastsim/fastsim/internal/predict"
	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/search"
	"github.com/fastsim/fastsim/internal/synth"
	"github.com/fastsim/fastsim/internal/workload"
)

// Errors of the API. Errors in a history are returned as they come from the
// reader and the engine, naming the line as in a file whose line 1 is the
// header: "sim:2: ..." is the first line given to Feed, "history:2: ..."
// the first record Replay read.
var (
	// ErrNoTrace is returned by WriteTrace when Options.KeepTrace was off.
	ErrNoTrace = replay.ErrNoTrace
	// ErrFinished is returned by Feed and Step on a Sim made by Replay,
	// or after Finish: its history has ended, so it takes no more records
	// and closes no more steps.
	ErrFinished = errors.New("fastsim: a finished simulation takes no more records")
	// ErrUnknownType is returned in strict mode for a message type the
	// format does not know.
	ErrUnknownType = replay.ErrUnknownType
	// ErrStopped is returned by Replay, Feed, Step and Finish once
	// Options.Stop has ended the simulation before the end of its
	// history. For a Sim from New that end is Finish: a stop closed at
	// any time before a call to Feed, Step or Finish (after the last
	// Feed too) makes that call and every later one return ErrStopped,
	// as a {"step":N} line would. The Sim stays readable: its reports
	// cover the records replayed until the stop, and Partial reports
	// true.
	ErrStopped = errors.New("fastsim: the simulation was stopped (Options.Stop) before the end of its history")
	// ErrNoLines is returned by Feed given no lines (nil or empty): it
	// applies nothing and leaves the Sim as it was (lines are counted
	// from the ones fed; "\n" is a blank line, counted as a file's is).
	ErrNoLines = errors.New("fastsim: Feed was given no lines (nil or empty); give it one JSON line or more")
	// ErrNoSim is returned by the methods of a Sim that neither New nor
	// Replay opened (a nil *Sim, or a zero Sim).
	ErrNoSim = errors.New("fastsim: the Sim was not opened by New or Replay")
	// ErrMemoryLimit is wrapped by the error of a simulation refused or
	// ended by its memory budget (Options.Memory, WatchMemory).
	ErrMemoryLimit = memlimit.ErrLimit
	// ErrZeroCosts is wrapped by the error of New and Replay given a
	// zero-value Costs (&Costs{}), as Options.Costs or as Options.Model
	// (which a *Costs also satisfies), which would price every command at
	// 0 ns: a Costs comes from ParseCosts or LoadCosts, and a nil Costs
	// is the reference's fixed runtimes.
	ErrZeroCosts = costs.ErrZero
	// ErrStreamsFixed is wrapped by the error of a CreateStream after the
	// first task in a simulation with Options.FixedStreams.
	ErrStreamsFixed = sched.ErrStreamsFixed
	// ErrJob is wrapped by the error of a Transformer that does not lay
	// out (Check, History, WriteHistory, Predict): sizes that do not
	// divide, values out of range, mechanisms that do not go together.
	ErrJob = workload.ErrJob
	// ErrTrain is wrapped by the error of a Train that does not divide.
	ErrTrain = synth.ErrTrain
	// ErrPredict is wrapped by the error of a layout Predict refuses
	// beyond Check: one that would train as another under its name.
	ErrPredict = predict.ErrPredict
	// ErrSpace is wrapped by the error of a SearchSpace that cannot be
	// searched (no layout, an empty or repeated list value, ...).
	ErrSpace = search.ErrSpace
)

// Options configure a simulation. It is the simulator's one options type
// (internal/replay's), the one `fastsim replay` fills in from its flags.
// Its zero value replays as the reference does. The fields a program
// outside this module sets:
//
//   - Mode (a TraceMode), Controller, Grouped, Jobs, Strict, KeepTrace;
//   - Costs (a *Costs from ParseCosts or LoadCosts; nil: the reference's
//     fixed runtimes) and Hardware (a *Hardware);
//   - MaxWorld (refuse histories of more ranks), Memory (a memory budget,
//     from WatchMemory), Stop (closed, it ends the simulation early with
//     ErrStopped; Replay releases its watcher, a Sim from New needs Close),
//     Progress (called about once a second with the records fed),
//     Header (called with the history's header) and ManyGroups (called
//     once, with Grouped, when the history's rank sets have cut the world
//     into so many groups that grouping gains little);
//   - TraceSteps (a *StepRange): WriteTrace and TracePath write only the
//     commands of those steps (New and Replay refuse a negative First or
//     a Last before First);
//   - FixedStreams (a promise that the history creates every stream
//     before its first task: memory events are let go of as the replay
//     goes, even without a controller cost; results do not depend on it,
//     and a later CreateStream is an error wrapping ErrStreamsFixed);
//   - for Replay, TracePath (the trace file written at the end: .json,
//     .json.gz or .zst; "-" writes it to standard output, as the command
//     line's --trace - does) and PartialTrace (write it after a stop too).
//
// Model, EachCommand and Inspect take types of the module's internal
// packages, and PerCommand (a bool: apply a producer's recorded passes
// record by record, with the same results) only concerns the module's own
// drivers and tests: they are for the command line and those drivers, and
// an embedding program leaves them unset.
type Options = replay.Options

// StepRange names the steps First to Last, both included, counted from 0
// in the order of the history's step records, for Options.TraceSteps:
// step i is the commands after step record i-1 (or from the start, for
// step 0) up to step record i; the commands after the last step record
// form one more step. It is the `--trace-steps A:B` of `fastsim replay`.
type StepRange = replay.StepRange

// MemoryWatcher is a memory budget for Options.Memory (WatchMemory).
type MemoryWatcher = memlimit.Watcher

// WatchMemory returns a memory budget of limit bytes for Options.Memory
// (limit <= 0: none), as `fastsim replay --max-memory` sets one: New and
// Replay refuse an ungrouped world whose per-rank state alone cannot fit,
// and a simulation ends with an error wrapping ErrMemoryLimit once the
// memory the Go runtime holds passes the limit. It polls the process's
// memory, not one simulation's, every 20 ms on a timer; unlike the
// command line it leaves the Go runtime's soft memory limit
// (runtime/debug.SetMemoryLimit) as it is. A budget once passed stays
// passed: use a new one for the next simulation, and Stop it when done.
func WatchMemory(limit int64) *MemoryWatcher { return memlimit.Poll(limit) }

// Header describes the history simulated: WorldSize ranks, GPUsPerHost
// of them to a host (0: all of them), format Version (0: the current
// one, 1).
type Header = history.Header

// TraceMode says which parts of the timeline are simulated and traced.
type TraceMode = sched.Mode

// Trace modes.
const (
	TraceEverything     = sched.Everything     // controller and streams (the default)
	TraceStreamOnly     = sched.StreamOnly     // streams; the controller clock stays 0
	TraceControllerOnly = sched.ControllerOnly // the controller alone
)

// Controller says what the controller's part of a command costs.
type Controller = sched.Controller

// Controllers.
const (
	// ControllerMonarch: a task starts no earlier than its command's ts,
	// as recorded by a Monarch controller (the default).
	ControllerMonarch = sched.ControllerMonarch
	// ControllerNone: the controller costs nothing and its clock stays 0
	// (an SPMD program).
	ControllerNone = sched.ControllerNone
)

// Hardware is a hardware spec: GPU peaks and bandwidths, hosts and
// network (see `fastsim hardware`). It is immutable and may be shared by
// many Sims.
type Hardware = hardware.Spec

// LoadHardware returns a built-in preset by name (HardwarePresets) or
// reads a spec file.
func LoadHardware(nameOrPath string) (*Hardware, error) { return hardware.Load(nameOrPath) }

// ParseHardware reads a spec from its JSON document.
func ParseHardware(data []byte) (*Hardware, error) { return hardware.Parse(data) }

// HardwarePresets lists the built-in hardware specs' names.
func HardwarePresets() []string { return hardware.Presets() }

// Costs is a cost model (see internal/costs for the JSON schema, and
// examples/costs.json). It is immutable and may be shared by many Sims.
type Costs = costs.Model

// ParseCosts builds a cost model from its JSON document; {} is the
// reference's fixed runtimes.
func ParseCosts(data []byte) (*Costs, error) { return costs.Parse(data) }

// LoadCosts reads a cost model from a JSON file.
func LoadCosts(path string) (*Costs, error) { return costs.Load(path) }

// Report is the simulation's state at some point.
type Report struct {
	ExecNs     int64 // simulated time: the latest end of any event, in ns
	PeakBytes  int64 // the highest memory of any device
	PeakDevice int64 // the lowest rank that reached PeakBytes, or -1
	// Devices lists every device in order of lowest rank; grouped, an
	// entry stands for Ranks identical ranks.
	Devices []DevicePeak
}

// DevicePeak is one device's (or group of identical ranks') memory peak.
type DevicePeak struct {
	LowestRank int64 // the device's rank, or the lowest of its group's
	Ranks      int64 // how many ranks the entry stands for (1 ungrouped)
	PeakBytes  int64 // the highest memory the device held, in bytes
}

// ExecSeconds is the simulated time in seconds.
func (r Report) ExecSeconds() float64 { return float64(r.ExecNs) / 1000 / 1e6 }

// PeakMB is the peak memory in MB (bytes / 1e6).
func (r Report) PeakMB() float64 { return float64(r.PeakBytes) / 1e6 }

// Sim is one simulation, fed with JSON lines: a thin layer over the
// simulator's one simulation type (the CLI's), which a history reader
// feeds with the lines given. It is not safe for concurrent use. Only
// New and Replay open one: the methods of a nil or zero Sim return
// ErrNoSim, or zero values.
type Sim struct {
	sim      *replay.Sim
	r        *history.Reader
	src      lineSource
	pending  []byte // the lines being fed
	steps    []Report
	stop     <-chan struct{} // Options.Stop
	finished bool
	err      error // sticky: the first failure or stop, returned from then on
}

// lineSource hands the history reader the lines given to Feed.
type lineSource struct{ buf []byte }

func (l *lineSource) Read(p []byte) (int, error) {
	if len(l.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, l.buf)
	l.buf = l.buf[n:]
	return n, nil
}

// New opens a simulation of the history h describes, to be fed with Feed.
// With Options.Stop or Jobs > 1 the Sim keeps goroutines until Close:
// defer sim.Close().
func New(h Header, opt Options) (*Sim, error) {
	s := &Sim{}
	r, err := history.NewBodyReader(&s.src, "sim", h)
	if err != nil {
		return nil, err
	}
	s.r = r
	if err := s.open("sim", opt); err != nil {
		return nil, err
	}
	return s, nil
}

// Replay simulates the whole history read from src (plain, zstd or S2) and
// returns the finished simulation; the world comes from the history's
// header. Options.TracePath, when set, is written at the end as by
// `fastsim replay --trace`. It releases every goroutine it started before
// it returns (no Close needed).
//
// When Options.Stop ends the replay early, Replay returns the Sim so far
// together with ErrStopped: its reports cover the records replayed until
// the stop, and Partial reports true. On any other error the Sim is nil.
func Replay(src io.Reader, opt Options) (*Sim, error) {
	if src == nil {
		return nil, errors.New("fastsim: Replay: nil reader")
	}
	r, err := history.NewReader(src, "history")
	if err != nil {
		return nil, err
	}
	defer r.Close()
	s := &Sim{r: r, finished: true}
	if err := s.open("history", opt); err != nil {
		return nil, err
	}
	// The stop watcher and the engine's helpers end here; the reports
	// and the trace stay readable.
	defer s.sim.Close()
	if err := s.sim.Run(r); err != nil {
		return nil, err
	}
	if _, err := s.sim.End(); err != nil {
		return nil, err
	}
	if s.sim.Partial() {
		s.err = ErrStopped
		return s, ErrStopped
	}
	return s, nil
}

// ok returns ErrNoSim for a Sim neither New nor Replay opened, else the
// sticky error of an earlier failure or stop.
func (s *Sim) ok() error {
	if s == nil || s.sim == nil {
		return ErrNoSim
	}
	return s.err
}

// opened reports whether New or Replay opened s.
func (s *Sim) opened() bool { return s != nil && s.sim != nil }

func (s *Sim) open(name string, opt Options) error {
	sim, err := replay.New(s.r.Header(), name, opt)
	if err != nil {
		return err
	}
	sim.OnStep(func(r sched.Report) { s.steps = append(s.steps, s.stepReport(r)) })
	s.sim = sim
	s.stop = opt.Stop
	return nil
}

// UnknownOps returns how many calls had an op the hardware model's op
// table does not know (priced as memory-bound on their tensors), and
// those ops' names; zero without Options.Hardware.
func (s *Sim) UnknownOps() (int64, []string) {
	if !s.opened() {
		return 0, nil
	}
	return s.sim.UnknownOps()
}

// Feed applies one or more records: JSON lines, each a command
// ({"ts":...,"ranks":[...],"msg":{...}}) or a step line ({"step":N}, which
// records a step report). The final newline is optional. After an error
// the Sim takes no more records: Feed, Step and Finish return that error
// from then on. Once Options.Stop is closed, the next Feed, even of no
// records, applies none and returns ErrStopped (a stop that comes while
// Feed runs ends it within a record, which is then applied in part, or
// dropped); Partial reports true. Given no lines (nil or empty) it
// returns ErrNoLines and changes nothing, after the checks above. An
// error names its line counted over every Feed, after the header's line
// 1: the first line fed is "sim:2".
func (s *Sim) Feed(lines []byte) error {
	if err := s.ok(); err != nil {
		return err
	}
	if s.finished {
		return ErrFinished
	}
	// A stop already asked for ends the simulation here, whether or not
	// lines holds a record. (A memory budget passed is found at the first
	// record, which the error then names.)
	if s.stopAsked() {
		return s.noticeStop()
	}
	if len(lines) == 0 {
		// Not sticky: the caller's mistake leaves the simulation, its
		// line count included, as it was.
		return ErrNoLines
	}
	s.pending = append(s.pending[:0], lines...)
	if !bytes.HasSuffix(s.pending, []byte("\n")) {
		s.pending = append(s.pending, '\n')
	}
	s.src.buf = s.pending
	return s.keep(s.sim.Run(s.r))
}

// Step closes an iteration, as a {"step":N} line does: it checks that
// every task queued so far can still run (as Finish does), then records
// and returns the report so far. After a failed Feed, a stop (closed
// before Step, after the last Feed too) or a failed check it records
// nothing and returns the error; on a Sim from Replay, whose history has
// ended, or after Finish, it returns ErrFinished.
func (s *Sim) Step() (Report, error) {
	if err := s.ok(); err != nil {
		return Report{PeakDevice: -1}, err
	}
	if s.finished {
		return Report{PeakDevice: -1}, ErrFinished
	}
	if err := s.check(); err != nil {
		return Report{PeakDevice: -1}, err
	}
	s.sim.Step()
	return s.steps[len(s.steps)-1], nil
}

// Report returns the report so far without closing a step (after a stop,
// the report of the records replayed until then).
func (s *Sim) Report() Report {
	if !s.opened() {
		return Report{PeakDevice: -1}
	}
	return s.report(s.sim.Report())
}

func (s *Sim) report(r sched.Report) Report {
	out := Report{ExecNs: r.ExecNs, PeakBytes: r.PeakBytes, PeakDevice: r.PeakDevice}
	s.sim.Engine().DevicePeaks(func(low, ranks, peak int64) {
		out.Devices = append(out.Devices, DevicePeak{LowestRank: low, Ranks: ranks, PeakBytes: peak})
	})
	return out
}

// stepReport is report for a step: its Devices are the previous step's
// slice when no device's peak changed (peaks so far only grow, and a
// training job's stop growing after its first steps), so that a history
// of many steps and devices keeps one list of them, not one a step (1,000
// steps of a world of 65,536 held 2.0 GB of copies).
func (s *Sim) stepReport(r sched.Report) Report {
	out := Report{ExecNs: r.ExecNs, PeakBytes: r.PeakBytes, PeakDevice: r.PeakDevice}
	if n := len(s.steps); n > 0 {
		prev, i, same := s.steps[n-1].Devices, 0, true
		s.sim.Engine().DevicePeaks(func(low, ranks, peak int64) {
			same = same && i < len(prev) && prev[i] == DevicePeak{LowestRank: low, Ranks: ranks, PeakBytes: peak}
			i++
		})
		if same && i == len(prev) {
			out.Devices = prev
			return out
		}
	}
	return s.report(r)
}

// Steps returns the reports recorded at each step. Consecutive reports
// whose devices' peaks are the same share one Devices slice: read it, do
// not write it.
func (s *Sim) Steps() []Report {
	if !s.opened() {
		return nil
	}
	return s.steps
}

// Commands is the number of commands applied, sub-commands included.
func (s *Sim) Commands() int64 {
	if !s.opened() {
		return 0
	}
	return s.sim.Engine().Commands()
}

// WorldSize is the number of ranks simulated.
func (s *Sim) WorldSize() int64 {
	if !s.opened() {
		return 0
	}
	return s.sim.Header().WorldSize
}

// Header is the header of the history simulated.
func (s *Sim) Header() Header {
	if !s.opened() {
		return Header{}
	}
	return s.sim.Header()
}

// Partial reports whether Options.Stop ended the simulation before the
// end of its history (Replay, Feed, Step and Finish then return
// ErrStopped).
func (s *Sim) Partial() bool { return s.opened() && s.sim.Partial() }

// Close releases the goroutines a Sim made by New keeps: the watcher of
// Options.Stop, which only Close ends, and with Jobs > 1 the engine's
// helpers (which also leave by themselves shortly after the last
// command). Call it once done with such a Sim (defer sim.Close()); Replay
// needs none. The Sim's reports and trace stay readable, and Close may be
// called more than once.
func (s *Sim) Close() {
	if s.opened() {
		s.sim.Close()
	}
}

// Finish declares the history complete: every task queued so far must
// have run, else the error names the first task that never can (a
// deadlock in the program, such as two sends that wait for each other).
// After a failed Feed, or a stop (closed before Finish, after the last
// Feed too), it returns that error (ErrStopped for a stop); its own
// failure is returned from then on too. Once it has succeeded, Feed and
// Step return ErrFinished (Report and the outputs still answer). On a Sim
// from Replay, which Replay finished, it returns what Replay returned:
// nil or ErrStopped.
func (s *Sim) Finish() error {
	err := s.check()
	if err == nil {
		s.finished = true // the history is complete: no more records
	}
	return err
}

// check is Finish's check that every task queued so far can run, which
// Step makes too without ending the history.
func (s *Sim) check() error {
	if err := s.ok(); err != nil {
		return err
	}
	if s.finished {
		return nil
	}
	if err := s.noticeStop(); err != nil {
		return err
	}
	// A stop can also come while the held Reduces are applied.
	return s.keep(s.sim.Finish())
}

// keep records the outcome of a call that fed or finished the
// simulation: a simulation that a stop ended is ErrStopped, whatever the
// replay returned (nothing, from a stop between records; its own
// ErrStopped, from one inside the end's flush), and every later call
// returns it.
func (s *Sim) keep(err error) error {
	if s.sim.Partial() {
		err = ErrStopped
	}
	s.err = err
	return err
}

// stopAsked reports whether Options.Stop is closed.
func (s *Sim) stopAsked() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// noticeStop ends the simulation if a stop was asked for (or the memory
// budget passed) since the last record fed, as a {"step":N} line would,
// and keeps the error: ErrStopped for a stop.
func (s *Sim) noticeStop() error {
	if err := s.sim.NoticeStop(); err != nil {
		return s.keep(err)
	}
	return nil
}

// WriteTrace writes the timeline so far to w as Chrome trace JSON (open it
// in ui.perfetto.dev): all of it, or with Options.TraceSteps the commands
// of those steps. It needs Options.KeepTrace. After a stop it writes what
// was replayed.
func (s *Sim) WriteTrace(w io.Writer) error {
	if !s.opened() {
		return ErrNoSim
	}
	if w == nil {
		return errors.New("fastsim: WriteTrace: nil writer")
	}
	return s.sim.WriteTrace(w)
}

// Model describes a decoder-only transformer: layers, hidden size, heads
// and KV heads, FFN width, vocabulary, sequence length, gated MLP, biases,
// tied embeddings, dtype and the source of its figures.
type Model = workload.Model

// LoadModel returns the preset called nameOrFile (see ModelPresets), or
// reads the JSON model description in that file.
func LoadModel(nameOrFile string) (Model, error) { return workload.LoadModel(nameOrFile) }

// ModelPresets lists the names of the published models LoadModel knows.
func ModelPresets() []string { return workload.PresetNames() }

// Transformer describes a transformer training job laid out as Megatron-LM
// lays it out: TP tensor shards, PP pipeline stages and DP data replicas
// (rank = (stage*DP + replica)*TP + shard), MicroBatch sequences per
// microbatch, GlobalBatch sequences per step; Schedule is "1f1b" (the
// default), "gpipe" or "interleaved:V"; Recompute "none" (the default),
// "selective" or "full"; Zero the ZeRO stage 0-3. The history is the one
// `fastsim synth --model` writes.
//
// The mechanism fields choose which implementation of a step the job
// runs, as the flags of the same names do for `fastsim synth` and
// `fastsim predict` (`fastsim predict --help` says what each models):
// the zero value is PyTorch's (gradients reduced during the backward,
// pipeline sends that do not block, the loss in 16 bits); the README's
// "Choose a layout" gives the set each published Megatron-LM run used.
type Transformer struct {
	Model                   Model
	TP, PP, DP              int
	MicroBatch, GlobalBatch int
	Schedule, Recompute     string
	SequenceParallel        bool
	Zero                    int
	FlashAttention          bool
	// StageCollectives sends each collective to a whole stage at once, at
	// the price of collectives that join the whole stage (see synth
	// --help). A grouped replay simulates a stage once either way, traced
	// or not, so it is rarely needed.
	StageCollectives bool
	Steps            int   // training steps in the history; 0: 2 (Predict reads off the last)
	GPUsPerHost      int   // 0: 8 (Predict: the hardware's)
	CommandNs        int64 // controller time between commands; 0: 20 µs; negative: 0

	// GradReduce is when the data-parallel gradient all-reduce runs
	// (--grad-reduce): "overlap" (or ""), during the backward as each
	// gradient is complete, or "after-backward", all of them after the
	// last backward pass.
	GradReduce string
	// HalfGradReduce all-reduces the gradients in 16 bits (--half-grad-reduce).
	HalfGradReduce bool
	// FuseGradAccumulation accumulates weight gradients straight into the
	// fp32 main gradient (--fuse-grad-accumulation).
	FuseGradAccumulation bool
	// BlockingP2P makes a pipeline send block the sender until the
	// receiver takes it (--blocking-p2p).
	BlockingP2P bool
	// FP32CrossEntropy computes the loss in fp32 (--fp32-cross-entropy).
	FP32CrossEntropy bool
	// ApexLayerNorm runs the layer norms as Megatron-LM's kernels of 2021
	// (--apex-layer-norm).
	ApexLayerNorm bool
	// FP16Grads keeps the gradients as the 16-bit param.grad until the
	// optimizer step (--fp16-grads).
	FP16Grads bool
	// NoScatterGather sends pipeline transfers whole from every
	// tensor-parallel shard (--no-scatter-gather).
	NoScatterGather bool
}

func (t Transformer) job() (workload.Job, error) {
	// The batches are bounded before the job multiplies them with the
	// layout: a product past int64 would wrap into a batch that splits.
	if t.MicroBatch < 1 || t.MicroBatch > synth.MaxBatch || t.GlobalBatch < 1 || t.GlobalBatch > synth.MaxBatch {
		return workload.Job{}, fmt.Errorf("%w: micro batch %d and global batch %d must be 1..%d sequences", workload.ErrJob, t.MicroBatch, t.GlobalBatch, synth.MaxBatch)
	}
	j := workload.Job{Model: t.Model, TP: t.TP, PP: t.PP, DP: t.DP, MicroBatch: t.MicroBatch, GlobalBatch: t.GlobalBatch,
		SequenceParallel: t.SequenceParallel, Zero: t.Zero, FlashAttention: t.FlashAttention,
		StageCollectives: t.StageCollectives, Steps: t.Steps, GPUsPerHost: t.GPUsPerHost, CommandNs: t.CommandNs,
		HalfGradReduce: t.HalfGradReduce, FuseGradAccumulation: t.FuseGradAccumulation, BlockingP2P: t.BlockingP2P,
		FP32CrossEntropy: t.FP32CrossEntropy, ApexLayerNorm: t.ApexLayerNorm, FP16Grads: t.FP16Grads,
		NoScatterGather: t.NoScatterGather}
	if j.Steps == 0 {
		j.Steps = 2 // as documented, and as fastsim synth and Predict take it
	}
	switch t.GradReduce {
	case "", "overlap":
	case "after-backward":
		j.GradReduce = workload.GradAfterBackward
	default:
		return j, fmt.Errorf("%w: grad reduce %q: want overlap or after-backward", workload.ErrJob, t.GradReduce)
	}
	sched, rec := t.Schedule, t.Recompute
	if sched == "" {
		sched = "1f1b"
	}
	if rec == "" {
		rec = "none"
	}
	var err error
	if j.Schedule, j.Chunks, err = workload.ParseSchedule(sched); err != nil {
		return j, fmt.Errorf("%w: schedule %v", workload.ErrJob, err)
	}
	if j.Recompute, err = workload.ParseRecompute(rec); err != nil {
		return j, fmt.Errorf("%w: recompute %v", workload.ErrJob, err)
	}
	return j, j.Check()
}

// Check reports the first thing about t that does not fit: what History
// and WriteHistory refuse. Predict refuses two layouts more, which train
// as another under a name that says otherwise: a Zero stage above 0 with
// DP 1, and SequenceParallel with TP 1.
func (t Transformer) Check() error {
	_, err := t.job()
	return err
}

// WriteHistory streams t's history to w.
func (t Transformer) WriteHistory(w io.Writer) error {
	if w == nil {
		return errors.New("fastsim: WriteHistory: nil writer")
	}
	j, err := t.job()
	if err != nil {
		return err
	}
	return workload.Write(w, j)
}

// History returns t's history in memory.
func (t Transformer) History() ([]byte, error) {
	var b bytes.Buffer
	if err := t.WriteHistory(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Prediction is what `fastsim predict` reports for one layout
// (internal/predict's Result; `go doc` on it documents each field). Its
// --json has these figures: World, StepTimeS (the last step's time),
// TokensPerS, ModelFLOPs (per step), TFLOPsPerGPU, MFU,
// NarayananTFLOPsPerGPU (as SC'21's tables count it), PeakGiB and
// PeakDevice (the worst device), ModelStateGiB and ActivationGiB (its
// peak split into what it keeps at the end of a step and the rest),
// LayerStateGiB (the transformer layers' part of ModelStateGiB, what
// Korthikanti et al. count as parameters and optimizer state),
// StoredActivationGiB (what the layers store for the backward), HBMGiB,
// Fits, Groups, Commands, PassSteps, Wall, UnknownOps, and Mechanisms
// (the mechanism flags the job ran with, as the command line spells
// them: [] for none).
type Prediction = predict.Result

// Predict answers for one training layout as `fastsim predict` does: it
// replays t's training history grouped, priced on hw's hardware model
// with no controller cost (an SPMD job: t.CommandNs is not read), and
// reads off the step time (the last of t.Steps steps, 0: 2), throughput,
// MFU and the worst device's memory. t.GPUsPerHost 0 takes hw's. The
// command line's flags map to t's fields of the same names (--tp is TP,
// --grad-reduce GradReduce, ...; its --world is TP*PP*DP), and every
// figure `fastsim predict --json` writes is the same, Wall aside. As the
// command line does, it refuses a layout that would train as another,
// which Check accepts: a Zero stage above 0 with DP 1 (nothing to shard
// over), SequenceParallel with TP 1 (nothing to split over); a search
// leaves such layouts out. Canceling ctx ends the prediction with ctx's
// error.
func Predict(ctx context.Context, t Transformer, hw *Hardware) (Prediction, error) {
	if hw == nil {
		return Prediction{}, errors.New("fastsim: Predict: no hardware (LoadHardware gives one)")
	}
	if ctx == nil {
		return Prediction{}, errors.New("fastsim: Predict: nil context")
	}
	// As the command line refuses them: these would train as the layout
	// without them, under a name that says otherwise.
	switch {
	case t.Zero > 0 && t.Zero <= 3 && t.DP == 1:
		return Prediction{}, fmt.Errorf("%w: ZeRO %d shards over the data-parallel replicas and DP is 1; it would train as ZeRO 0", predict.ErrPredict, t.Zero)
	case t.SequenceParallel && t.TP == 1:
		return Prediction{}, fmt.Errorf("%w: sequence parallelism splits over the tensor-parallel shards and TP is 1; it would train as without it", predict.ErrPredict)
	}
	j, err := t.job()
	if err != nil {
		return Prediction{}, err
	}
	return predict.Run(ctx, j, hw)
}

// SearchSpace is a space of parallel layouts of one transformer on one
// machine: the fields `fastsim search` fills from its flags (World, Batch,
// Model, the lists of schedules, recomputations, sequence parallelism and
// ZeRO stages to try, MaxTP, MaxMicro, Steps, Prune, and the mechanisms
// every layout trains with, Transformer's fields of the same names, GradReduce
// spelled "after-backward" or "overlap"; see its --help).
type SearchSpace = search.Space

// SearchResult is one layout's outcome: its layout, step time, tokens per
// second, peak memory, whether it fits, MFU and its bounds.
type SearchResult = search.Result

// SearchStats counts what a search did: layouts enumerated, pruned by
// memory, pruned by the step-time bound, and simulated.
type SearchStats = search.Stats

// Search simulates the transformer layouts of space on hw's hardware
// model with no controller cost (an SPMD job), as `fastsim search
// --hardware NAME --controller none` does, jobs layouts at a time (< 1:
// 1), and returns the results ranked: layouts that fit first, then by
// step time (so by tokens per second), then by peak memory. With
// space.Prune, layouts whose memory bound exceeds a GPU or whose
// step-time bound exceeds the best step so far are not simulated, and
// the results hold the layouts every pruned search simulates: the first
// is the best of the space. space.Model is required (LoadModel gives
// one), and so are World and Batch; Layers, Hidden and Seq are the
// Model's (whatever the space says), and fields left zero are filled as
// the command line fills them: GPUsPerHost, MemoryBytes and PeakTFLOPS
// from hw, MaxTP the GPUs of a host, Steps 2. A value given twice in a
// list is refused, as the command line refuses it, and so is a space
// with no layout (ErrSpace, naming the sizes that allow none). An empty list (Schedules, Recomputes, SequenceParallels,
// Zeros) searches the one value of its single field (Schedule, ...; 1f1b,
// no recomputation, no sequence parallelism, ZeRO 0 when zero), where
// the command line searches every value unless a flag pins it ("1f1b,
// interleaved:2,interleaved:4", "none,selective,full", "false,true",
// "0,1,2,3"). Canceling ctx ends the search with ctx's error.
func Search(ctx context.Context, space SearchSpace, hw *Hardware, jobs int) ([]SearchResult, SearchStats, error) {
	var stats SearchStats
	switch {
	case hw == nil:
		return nil, stats, errors.New("fastsim: Search: no hardware (LoadHardware gives one)")
	case ctx == nil:
		return nil, stats, errors.New("fastsim: Search: nil context")
	case space.Workload != "" && space.Workload != search.WorkloadTransformer:
		return nil, stats, fmt.Errorf("%w: Search runs transformer spaces (Workload %q)", search.ErrSpace, space.Workload)
	case space.Model.Layers == 0:
		return nil, stats, fmt.Errorf("%w: no model (LoadModel gives one)", search.ErrSpace)
	case space.PeakTFLOPS < 0 || math.IsNaN(space.PeakTFLOPS) || math.IsInf(space.PeakTFLOPS, 0):
		return nil, stats, fmt.Errorf("%w: PeakTFLOPS %g (want a positive peak, or 0 for the hardware's)", search.ErrSpace, space.PeakTFLOPS)
	}
	for _, l := range []struct{ name, v string }{{"Schedules", space.Schedules}, {"Recomputes", space.Recomputes}, {"SequenceParallels", space.SequenceParallels}, {"Zeros", space.Zeros}} {
		seen := map[string]bool{}
		for _, x := range strings.Split(l.v, ",") {
			if x = strings.TrimSpace(x); x != "" && seen[x] {
				return nil, stats, fmt.Errorf("%w: %s %q: %q given twice", search.ErrSpace, l.name, l.v, x)
			}
			seen[x] = true
		}
	}
	model, err := costs.NewWithHardware(costs.Config{}, hw)
	if err != nil {
		return nil, stats, err
	}
	s := space
	s.Layers, s.Hidden, s.Seq = s.Model.Layers, s.Model.Hidden, s.Model.Seq
	if s.GPUsPerHost == 0 {
		s.GPUsPerHost = hw.Host.GPUsPerHost
	}
	if s.MemoryBytes == 0 {
		s.MemoryBytes = int64(hw.GPU.HBMGB * 1e9)
	}
	if s.PeakTFLOPS == 0 {
		s.PeakTFLOPS, _ = hw.GPU.PeakTFLOPS(s.Model.Dtype)
	}
	if s.MaxTP == 0 {
		s.MaxTP = s.GPUsPerHost
	}
	if s.Steps == 0 {
		s.Steps = 2
	}
	if err := s.Check(); err != nil {
		return nil, stats, err
	}
	rs, layouts, err := search.Run(ctx, s, search.Options{Model: model, Controller: sched.ControllerNone, Jobs: max(jobs, 1), Stats: &stats})
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err == nil && layouts == 0 {
		err = fmt.Errorf("%w: no layout of %d GPUs trains %d layers of hidden %d (%d heads) on a batch of %d within these lists and MaxTP %d", search.ErrSpace, s.World, s.Layers, s.Hidden, s.Model.Heads, s.Batch, s.MaxTP)
	}
	return rs, stats, err
}

// Train describes the toy micro-benchmark: a mesh of PP pipeline stages,
// DP data-parallel replicas and TP tensor-parallel shards (rank =
// (stage*DP + replica)*TP + shard) training Layers blocks of width Hidden
// on Batch sequences of Seq tokens per step, in Micro microbatches, for
// Steps steps; each block is one Hidden x 4*Hidden/TP weight used twice.
// The history is the one `fastsim synth` writes without --model.
type Train struct {
	PP, DP, TP  int
	Layers      int
	Hidden      int
	Seq         int
	Batch       int // sequences per step, across all replicas
	Micro       int // microbatches per step
	Steps       int // training steps written (0: the setup alone)
	GPUsPerHost int // 0: 8
}

func (t Train) synth() synth.Train {
	return synth.Train{PP: t.PP, DP: t.DP, TP: t.TP, Layers: t.Layers, Hidden: t.Hidden, Seq: t.Seq,
		Batch: t.Batch, Micro: t.Micro, Steps: t.Steps, GPUsPerHost: t.GPUsPerHost}
}

// Check reports the first thing about t that does not divide.
func (t Train) Check() error {
	st := t.synth()
	return st.Check()
}

// WriteHistory streams t's history to w.
func (t Train) WriteHistory(w io.Writer) error {
	if w == nil {
		return errors.New("fastsim: WriteHistory: nil writer")
	}
	return synth.WriteTrain(w, t.synth())
}

// History returns t's history in memory.
func (t Train) History() ([]byte, error) {
	var b bytes.Buffer
	if err := t.WriteHistory(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
