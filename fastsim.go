// Package fastsim embeds the simulator in a Go program: open a Sim, feed
// it the records of a command history (JSON lines, the interchange format
// the CLI reads) one at a time, and take reports of the simulated time and
// memory; or replay a whole history from an io.Reader; write the timeline
// as a Chrome trace; price commands with a cost model; and build synthetic
// training histories in memory: a transformer trained as Megatron-LM trains
// it (Transformer), or the toy micro-benchmark (Train).
//
// Results are those of `fastsim replay`: docs/SEMANTICS.md defines them, and with
// the default costs they match the reference simulator number for number.
package fastsim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/synth"
	"github.com/fastsim/fastsim/internal/workload"
)

// Errors of the API. Errors in a history are returned as they come from the
// reader and the engine, naming the line ("sim:3: ...").
var (
	// ErrNoTrace is returned by WriteTrace when Options.KeepTrace was off.
	ErrNoTrace = replay.ErrNoTrace
	// ErrFinished is returned by Feed on a Sim made by Replay.
	ErrFinished = errors.New("fastsim: a replayed simulation takes no more records")
	// ErrUnknownType is returned in strict mode for a message type the
	// format does not know.
	ErrUnknownType = replay.ErrUnknownType
)

// Options configure a simulation. It is the simulator's one options type
// (internal/replay's; `go doc ./internal/replay Options` documents every
// field), the one `fastsim replay` fills in from its flags. An embedding
// program sets Mode (a TraceMode), Controller, Grouped, Jobs, Strict,
// KeepTrace, Costs (a *Costs), Hardware (a *Hardware), and when it needs
// them MaxWorld, Stop and Progress; Replay also honours TracePath,
// TraceSteps, PartialTrace and Inspect at the end of the history.
type Options = replay.Options

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
func LoadCosts(path string) (*Costs, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := ParseCosts(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

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
	LowestRank int64
	Ranks      int64
	PeakBytes  int64
}

// ExecSeconds is the simulated time in seconds.
func (r Report) ExecSeconds() float64 { return float64(r.ExecNs) / 1000 / 1e6 }

// PeakMB is the peak memory in MB (bytes / 1e6).
func (r Report) PeakMB() float64 { return float64(r.PeakBytes) / 1e6 }

// Sim is one simulation, fed with JSON lines: a thin layer over the
// simulator's one simulation type (the CLI's), which a history reader
// feeds with the lines given. It is not safe for concurrent use.
type Sim struct {
	sim      *replay.Sim
	r        *history.Reader
	src      lineSource
	pending  []byte // the lines being fed
	steps    []Report
	finished bool
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

// Replay simulates the whole history read from src (plain or zstd) and
// returns the finished simulation; the world comes from the history's
// header. Options.TracePath and Options.Inspect, when set, are honoured
// at the end as by `fastsim replay`.
func Replay(src io.Reader, opt Options) (*Sim, error) {
	r, err := history.NewReader(src, "history")
	if err != nil {
		return nil, err
	}
	defer r.Close()
	s := &Sim{r: r}
	if err := s.open("history", opt); err != nil {
		return nil, err
	}
	if err := s.sim.Run(r); err != nil {
		return nil, err
	}
	if _, err := s.sim.End(); err != nil {
		return nil, err
	}
	s.finished = true
	return s, nil
}

func (s *Sim) open(name string, opt Options) error {
	sim, err := replay.New(s.r.Header(), name, opt)
	if err != nil {
		return err
	}
	sim.OnStep(func(r sched.Report) { s.steps = append(s.steps, s.report(r)) })
	s.sim = sim
	return nil
}

// UnknownOps returns how many calls had an op the hardware model's op
// table does not know (priced as memory-bound on their tensors), and
// those ops' names; zero without Options.Hardware.
func (s *Sim) UnknownOps() (int64, []string) { return s.sim.UnknownOps() }

// Feed applies one or more records: JSON lines, each a command
// ({"ts":...,"ranks":[...],"msg":{...}}) or a step line ({"step":N}, which
// records a step report). The final newline is optional. After an error
// the Sim is unusable.
func (s *Sim) Feed(lines []byte) error {
	if s.finished {
		return ErrFinished
	}
	s.pending = append(s.pending[:0], lines...)
	if !bytes.HasSuffix(s.pending, []byte("\n")) {
		s.pending = append(s.pending, '\n')
	}
	s.src.buf = s.pending
	return s.sim.Run(s.r)
}

// Step closes an iteration, as a {"step":N} line does: it records and
// returns the report so far.
func (s *Sim) Step() Report {
	s.sim.Step()
	return s.steps[len(s.steps)-1]
}

// Report returns the report so far without closing a step.
func (s *Sim) Report() Report { return s.report(s.sim.Report()) }

func (s *Sim) report(r sched.Report) Report {
	out := Report{ExecNs: r.ExecNs, PeakBytes: r.PeakBytes, PeakDevice: r.PeakDevice}
	s.sim.Engine().DevicePeaks(func(low, ranks, peak int64) {
		out.Devices = append(out.Devices, DevicePeak{LowestRank: low, Ranks: ranks, PeakBytes: peak})
	})
	return out
}

// Steps returns the reports recorded at each step.
func (s *Sim) Steps() []Report { return s.steps }

// Commands is the number of commands applied, sub-commands included.
func (s *Sim) Commands() int64 { return s.sim.Engine().Commands() }

// WorldSize is the number of ranks simulated.
func (s *Sim) WorldSize() int64 { return s.sim.Header().WorldSize }

// Header is the header of the history simulated.
func (s *Sim) Header() Header { return s.sim.Header() }

// Close releases the goroutines a Sim with Jobs > 1 keeps between
// commands (they also leave by themselves shortly after the last command).
// The Sim's reports stay readable.
func (s *Sim) Close() { s.sim.Close() }

// Finish declares the history complete: every task queued so far must
// have run, else the error names the first task that never can (a
// deadlock in the program, such as two sends that wait for each other).
func (s *Sim) Finish() error { return s.sim.Finish() }

// WriteTrace writes the timeline so far to w as Chrome trace JSON (open it
// in ui.perfetto.dev). It needs Options.KeepTrace.
func (s *Sim) WriteTrace(w io.Writer) error { return s.sim.WriteTrace(w) }

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
type Transformer struct {
	Model                   Model
	TP, PP, DP              int
	MicroBatch, GlobalBatch int
	Schedule, Recompute     string
	SequenceParallel        bool
	Zero                    int
	FlashAttention          bool
	// StageCollectives sends each collective to a whole stage at once,
	// so that even a traced grouped replay simulates a stage once, at the
	// price of collectives that join the whole stage (see synth --help).
	StageCollectives bool
	Steps            int
	GPUsPerHost      int   // 0: 8
	CommandNs        int64 // controller time between commands; 0: 20 µs; negative: 0
}

func (t Transformer) job() (workload.Job, error) {
	// The batches are bounded before the job multiplies them with the
	// layout: a product past int64 would wrap into a batch that splits.
	if t.MicroBatch < 1 || t.MicroBatch > synth.MaxBatch || t.GlobalBatch < 1 || t.GlobalBatch > synth.MaxBatch {
		return workload.Job{}, fmt.Errorf("%w: micro batch %d and global batch %d must be 1..%d sequences", workload.ErrJob, t.MicroBatch, t.GlobalBatch, synth.MaxBatch)
	}
	j := workload.Job{Model: t.Model, TP: t.TP, PP: t.PP, DP: t.DP, MicroBatch: t.MicroBatch, GlobalBatch: t.GlobalBatch,
		SequenceParallel: t.SequenceParallel, Zero: t.Zero, FlashAttention: t.FlashAttention,
		StageCollectives: t.StageCollectives, Steps: t.Steps, GPUsPerHost: t.GPUsPerHost, CommandNs: t.CommandNs}
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

// Check reports the first thing about t that does not fit.
func (t Transformer) Check() error {
	_, err := t.job()
	return err
}

// WriteHistory streams t's history to w.
func (t Transformer) WriteHistory(w io.Writer) error {
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
	Steps       int
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
func (t Train) WriteHistory(w io.Writer) error { return synth.WriteTrain(w, t.synth()) }

// History returns t's history in memory.
func (t Train) History() ([]byte, error) {
	var b bytes.Buffer
	if err := t.WriteHistory(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
