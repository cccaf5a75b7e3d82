// Package search evaluates the parallel layouts of a training job: every
// (pp, dp, tp, microbatches) that divides the world and the model is
// synthesized as a training history, replayed grouped with a cost model,
// and ranked by simulated step time among the layouts whose peak memory
// fits a GPU. The history is a transformer's (internal/workload: real
// layers, Megatron-LM's parallelism and memory) unless the space names the
// toy micro-benchmark (internal/synth: one weight per layer).
//
// The enumeration order is fixed (pp, then dp, then microbatches, each
// ascending; tp follows from the world), so a search can be sharded: shard
// K of N evaluates the layouts whose index mod N is K, and Merge puts the
// shards back together into exactly the unsharded result.
package search

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/predict"
	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/synth"
	"github.com/fastsim/fastsim/internal/workload"
)

// ErrSpace reports a search space that cannot be searched.
var ErrSpace = errors.New("bad search space")

// ErrMerge reports shard results that do not form one search.
var ErrMerge = errors.New("shards do not merge")

// The workloads a search can synthesize.
const (
	// WorkloadTransformer is internal/workload's transformer (the default).
	WorkloadTransformer = "transformer"
	// WorkloadToy is internal/synth's micro-benchmark: one h x 4h/t
	// weight used twice per layer.
	WorkloadToy = "toy"
)

// Space is what to search: a model, a world and the GPUs' memory.
type Space struct {
	// Workload is WorkloadTransformer (or empty) or WorkloadToy.
	Workload string `json:"workload,omitempty"`
	// Model is the transformer (WorkloadTransformer); Layers, Hidden and
	// Seq repeat its figures.
	Model workload.Model `json:"model"`
	// How every transformer layout is trained: the pipeline schedule
	// ("1f1b", "gpipe", "interleaved:V"; empty: 1f1b), the recomputation
	// ("none", "selective", "full"; empty: none), sequence parallelism,
	// the ZeRO stage and flash attention.
	Schedule         string `json:"schedule,omitempty"`
	Recompute        string `json:"recompute,omitempty"`
	SequenceParallel bool   `json:"sequence_parallel,omitempty"`
	Zero             int    `json:"zero,omitempty"`
	FlashAttention   bool   `json:"flash_attention,omitempty"`
	// The mechanisms every layout trains with: which implementation of a
	// step Megatron-LM or PyTorch takes, each workload.Job's field of the
	// same name and fastsim predict's flag (predict.Mechanisms).
	// GradReduce is "overlap" (or empty) or "after-backward".
	GradReduce           string `json:"grad_reduce,omitempty"`
	HalfGradReduce       bool   `json:"half_grad_reduce,omitempty"`
	FuseGradAccumulation bool   `json:"fuse_grad_accumulation,omitempty"`
	BlockingP2P          bool   `json:"blocking_p2p,omitempty"`
	FP32CrossEntropy     bool   `json:"fp32_cross_entropy,omitempty"`
	ApexLayerNorm        bool   `json:"apex_layer_norm,omitempty"`
	FP16Grads            bool   `json:"fp16_grads,omitempty"`
	NoScatterGather      bool   `json:"no_scatter_gather,omitempty"`

	Layers      int   `json:"layers"`        // blocks, split evenly over the stages
	Hidden      int   `json:"hidden"`        // hidden size, split over tp
	Seq         int   `json:"seq"`           // tokens per sequence
	Batch       int   `json:"batch"`         // sequences per step, over all replicas
	World       int64 `json:"world"`         // ranks, pp*dp*tp
	GPUsPerHost int   `json:"gpus_per_host"` // ranks per host, for the cost model
	MemoryBytes int64 `json:"memory_bytes"`  // a GPU's capacity
	// Steps is how many training steps each history holds (>= 1). The step
	// time is the last step's: with 2 or more, the steady state without the
	// setup commands.
	Steps int `json:"steps"`
	// MaxMicro caps the microbatches tried (0: every divisor).
	MaxMicro int `json:"max_micro"`

	// The training dimensions searched besides the mesh, each a
	// comma-separated list; empty: the one given above (Schedule,
	// Recompute, SequenceParallel, Zero). Schedules holds "1f1b",
	// "gpipe" or "interleaved:V"; Recomputes "none", "selective" or
	// "full"; SequenceParallels "false" or "true"; Zeros 0 to 3. A
	// sequence-parallel layout needs tp > 1 and a ZeRO stage above 0
	// needs dp > 1 (otherwise they train as the layout without).
	Schedules         string `json:"schedules,omitempty"`
	Recomputes        string `json:"recomputes,omitempty"`
	SequenceParallels string `json:"sequence_parallels,omitempty"`
	Zeros             string `json:"zeros,omitempty"`
	// MaxTP caps tp (0: no cap); a search over the real space keeps a
	// tensor-parallel group within a host (MaxTP = GPUsPerHost).
	MaxTP int `json:"max_tp,omitempty"`
	// Prune skips the layouts that cannot win without simulating them
	// (see Bounds): those whose peak memory cannot fit, and those whose
	// step time cannot beat the best simulated so far. Results then hold
	// the layouts every pruned search simulates (see Run).
	Prune bool `json:"prune,omitempty"`
	// PeakTFLOPS is a GPU's dense peak for the model's dtype, for MFU
	// (0: no MFU).
	PeakTFLOPS float64 `json:"peak_tflops,omitempty"`
}

// MaxLayouts bounds an enumeration.
const MaxLayouts = 1 << 20

// MaxBatch bounds a global batch, in sequences (synth.MaxBatch): its
// divisors are enumerated in a moment.
const MaxBatch = synth.MaxBatch

// The commands a search may replay, checked before it starts, from
// synth.Train.Commands. Grouped replay runs at about 0.7 to 1.5 million
// commands a second on the 2-core machine of bench/RESULTS.md (rows
// w65536-10M), so one layout of 2^28 commands takes minutes and a search of
// 2^32 commands about an hour of one core: anything larger is refused
// rather than left to run for days.
const (
	MaxLayoutCommands = 1 << 28
	MaxSearchCommands = 1 << 32
)

// Check reports the first thing about s that cannot be searched.
func (s *Space) Check() error {
	if s.toy() {
		if s.Layers < 1 || s.Hidden < 1 || s.Seq < 1 {
			return fmt.Errorf("%w: layers, hidden and seq must be at least 1", ErrSpace)
		}
		// The shape's own limits, on the one layout every space has.
		t := s.Train(Layout{PP: 1, DP: 1, TP: 1, Micro: 1})
		if err := t.Check(); err != nil {
			return fmt.Errorf("%w: %v", ErrSpace, err)
		}
		if s.mechanisms() || s.FlashAttention {
			return fmt.Errorf("%w: the training mechanisms (flash attention, gradient reduction, fused accumulation, blocking sends, fp32 loss, apex layer norm, 16-bit gradients, no scatter/gather) are the transformer workload's", ErrSpace)
		}
	} else {
		if s.Workload != "" && s.Workload != WorkloadTransformer {
			return fmt.Errorf("%w: workload %q (want %s or %s)", ErrSpace, s.Workload, WorkloadTransformer, WorkloadToy)
		}
		if err := s.Model.Check(); err != nil {
			return fmt.Errorf("%w: %v", ErrSpace, err)
		}
		if _, _, err := workload.ParseSchedule(s.schedule()); err != nil {
			return fmt.Errorf("%w: schedule %v", ErrSpace, err)
		}
		if _, err := workload.ParseRecompute(s.recompute()); err != nil {
			return fmt.Errorf("%w: recompute %v", ErrSpace, err)
		}
		if s.Zero < 0 || s.Zero > 3 {
			return fmt.Errorf("%w: zero stage %d (want 0..3)", ErrSpace, s.Zero)
		}
		trains, err := s.dims()
		if err != nil {
			return err
		}
		if err := s.checkMechanisms(trains); err != nil {
			return err
		}
	}
	switch {
	case s.Batch < 1 || s.Batch > MaxBatch:
		return fmt.Errorf("%w: batch %d (want 1..%d sequences)", ErrSpace, s.Batch, MaxBatch)
	case s.World < 1 || s.World > sched.MaxGroupedWorld:
		return fmt.Errorf("%w: world %d (want 1..%d)", ErrSpace, s.World, sched.MaxGroupedWorld)
	case s.GPUsPerHost < 1:
		return fmt.Errorf("%w: gpus per host must be at least 1", ErrSpace)
	case s.MemoryBytes < 1:
		return fmt.Errorf("%w: GPU memory must be positive", ErrSpace)
	case s.Steps < 1 || s.Steps > 1000:
		return fmt.Errorf("%w: steps %d (want 1..1000)", ErrSpace, s.Steps)
	case s.MaxMicro < 0:
		return fmt.Errorf("%w: max micro must be 0 (no limit) or positive", ErrSpace)
	case s.MaxTP < 0:
		return fmt.Errorf("%w: max tp must be 0 (no limit) or positive", ErrSpace)
	case s.Prune && s.toy():
		return fmt.Errorf("%w: pruning needs the transformer workload", ErrSpace)
	}
	return nil
}

// Layout is one way to lay the job out: the mesh and the number of
// microbatches, and, in a space that searches them, how it trains (empty
// Schedule: as the space says).
type Layout struct {
	PP    int `json:"pp"`
	DP    int `json:"dp"`
	TP    int `json:"tp"`
	Micro int `json:"micro"`
	Training
}

// String is l as the results name its fields ("pp 2, dp 4, tp 8, micro
// 1, 1f1b, recompute full, sequence parallel, ZeRO 1"), the training
// fields only where set.
func (l Layout) String() string {
	b := fmt.Sprintf("pp %d, dp %d, tp %d, micro %d", l.PP, l.DP, l.TP, l.Micro)
	if l.Schedule != "" {
		b += ", " + l.Schedule
	}
	if l.Recompute != "" {
		b += ", recompute " + l.Recompute
	}
	if l.SequenceParallel {
		b += ", sequence parallel"
	}
	if l.Zero != 0 {
		b += fmt.Sprintf(", ZeRO %d", l.Zero)
	}
	return b
}

// Training is how a layout trains, when the space searches it.
type Training struct {
	Schedule         string `json:"schedule,omitempty"`
	Recompute        string `json:"recompute,omitempty"`
	SequenceParallel bool   `json:"sequence_parallel,omitempty"`
	Zero             int    `json:"zero,omitempty"`
}

func (s *Space) toy() bool { return s.Workload == WorkloadToy }

func (s *Space) schedule() string {
	if s.Schedule == "" {
		return "1f1b"
	}
	return s.Schedule
}

func (s *Space) recompute() string {
	if s.Recompute == "" {
		return "none"
	}
	return s.Recompute
}

// dims lists the ways of training a space searches, in the
// enumeration's order (schedule, then recomputation, then sequence
// parallelism, then ZeRO stage): one, as the space says, when it searches
// none.
func (s *Space) dims() ([]Training, error) {
	if s.Schedules == "" && s.Recomputes == "" && s.SequenceParallels == "" && s.Zeros == "" {
		return []Training{{}}, nil
	}
	list := func(v, def string) []string {
		if v == "" {
			return []string{def}
		}
		return strings.Split(v, ",")
	}
	// A value given twice, in any spelling ("0" and "00", "true" and
	// "TRUE"), would search its layouts twice: refused, as the same
	// spelling twice is.
	once := func(name, v string, key func(string) (string, bool)) error {
		seen := map[string]string{}
		for _, x := range list(v, "") {
			k, ok := key(x)
			if !ok {
				continue // refused below, with what is wrong with it
			}
			if first, dup := seen[k]; dup {
				return fmt.Errorf("%w: %s %q: %q and %q are one value given twice", ErrSpace, name, v, first, x)
			}
			seen[k] = x
		}
		return nil
	}
	for _, c := range []struct {
		name, v string
		key     func(string) (string, bool)
	}{
		{"schedules", s.Schedules, func(x string) (string, bool) {
			sc, v, err := workload.ParseSchedule(x)
			return fmt.Sprint(sc, v), err == nil
		}},
		{"recomputes", s.Recomputes, func(x string) (string, bool) {
			r, err := workload.ParseRecompute(x)
			return fmt.Sprint(r), err == nil
		}},
		{"sequence parallels", s.SequenceParallels, func(x string) (string, bool) {
			b, err := strconv.ParseBool(x)
			return fmt.Sprint(b), err == nil
		}},
		{"zeros", s.Zeros, func(x string) (string, bool) {
			z, err := strconv.Atoi(x)
			return fmt.Sprint(z), err == nil
		}},
	} {
		if err := once(c.name, c.v, c.key); err != nil {
			return nil, err
		}
	}
	var out []Training
	for _, sc := range list(s.Schedules, s.schedule()) {
		if _, _, err := workload.ParseSchedule(sc); err != nil {
			return nil, fmt.Errorf("%w: schedules: %v", ErrSpace, err)
		}
		for _, rc := range list(s.Recomputes, s.recompute()) {
			if _, err := workload.ParseRecompute(rc); err != nil {
				return nil, fmt.Errorf("%w: recomputes: %v", ErrSpace, err)
			}
			for _, sp := range list(s.SequenceParallels, strconv.FormatBool(s.SequenceParallel)) {
				spb, err := strconv.ParseBool(sp)
				if err != nil {
					return nil, fmt.Errorf("%w: sequence parallels: %q: want true or false", ErrSpace, sp)
				}
				for _, z := range list(s.Zeros, strconv.Itoa(s.Zero)) {
					zi, err := strconv.Atoi(z)
					if err != nil || zi < 0 || zi > 3 {
						return nil, fmt.Errorf("%w: zeros: %q: want a stage 0..3", ErrSpace, z)
					}
					out = append(out, Training{Schedule: sc, Recompute: rc, SequenceParallel: spb, Zero: zi})
				}
			}
		}
	}
	return out, nil
}

// scheduleOf and recomputeOf are how layout l trains.
func (s *Space) scheduleOf(l Layout) string {
	if l.Schedule != "" {
		return l.Schedule
	}
	return s.schedule()
}

func (s *Space) recomputeOf(l Layout) string {
	if l.Schedule != "" {
		return l.Recompute
	}
	return s.recompute()
}

// trainingOf is how layout l trains in s: its own Training when the
// space searches how layouts train, else the space's one way. A record
// read back from a document carries the way written out (WriteJSON
// writes it either way), so layouts are compared by this.
func (s *Space) trainingOf(l Layout) Training {
	if l.Schedule != "" {
		return l.Training
	}
	return Training{Schedule: s.schedule(), Recompute: s.recompute(), SequenceParallel: s.SequenceParallel, Zero: s.Zero}
}

// sameLayout reports whether a and b are one layout of s.
func (s *Space) sameLayout(a, b Layout) bool {
	return a.PP == b.PP && a.DP == b.DP && a.TP == b.TP && a.Micro == b.Micro && s.trainingOf(a) == s.trainingOf(b)
}

// Job is the transformer training job of layout l in s: Micro
// microbatches of Batch/(DP*Micro) sequences per replica.
func (s *Space) Job(l Layout) workload.Job {
	sc, rc, sp, z := s.schedule(), s.recompute(), s.SequenceParallel, s.Zero
	if l.Schedule != "" {
		sc, rc, sp, z = l.Schedule, l.Recompute, l.SequenceParallel, l.Zero
	}
	sched, chunks, _ := workload.ParseSchedule(sc)
	rec, _ := workload.ParseRecompute(rc)
	mb := 0
	if l.DP > 0 && l.Micro > 0 {
		mb = s.Batch / (l.DP * l.Micro)
	}
	j := workload.Job{
		Model: s.Model, TP: l.TP, PP: l.PP, DP: l.DP,
		MicroBatch: mb, GlobalBatch: s.Batch,
		Schedule: sched, Chunks: chunks, Recompute: rec,
		SequenceParallel: sp, Zero: z,
		Steps: s.Steps, GPUsPerHost: s.GPUsPerHost,
	}
	s.SetMechanisms(&j)
	return j
}

// SetMechanisms gives job j the space's mechanisms: every layout's job,
// and the probes its bounds come from, which must run the same kernels
// (fused gradient accumulation and apex's layer norm change a layer's
// own work).
func (s *Space) SetMechanisms(j *workload.Job) {
	j.FlashAttention = s.FlashAttention
	if s.GradReduce == gradAfterBackward {
		j.GradReduce = workload.GradAfterBackward
	}
	j.HalfGradReduce, j.FuseGradAccumulation, j.BlockingP2P = s.HalfGradReduce, s.FuseGradAccumulation, s.BlockingP2P
	j.FP32CrossEntropy, j.ApexLayerNorm, j.FP16Grads, j.NoScatterGather = s.FP32CrossEntropy, s.ApexLayerNorm, s.FP16Grads, s.NoScatterGather
}

// The values of Space.GradReduce besides empty.
const (
	gradOverlap       = "overlap"
	gradAfterBackward = "after-backward"
)

// mechanisms reports whether s sets any mechanism but flash attention.
func (s *Space) mechanisms() bool {
	return s.GradReduce != "" || s.HalfGradReduce || s.FuseGradAccumulation || s.BlockingP2P ||
		s.FP32CrossEntropy || s.ApexLayerNorm || s.FP16Grads || s.NoScatterGather
}

// checkMechanisms refuses mechanisms that cannot train every way the
// space searches (trains): rather than leave out, unsaid, the layouts of
// a ZeRO stage they exclude, the space is refused and says which to pin.
func (s *Space) checkMechanisms(trains []Training) error {
	zero := false
	for _, tr := range trains {
		if tr.Zero > 0 || (tr == Training{} && s.Zero > 0) {
			zero = true
		}
	}
	switch {
	case s.GradReduce != "" && s.GradReduce != gradOverlap && s.GradReduce != gradAfterBackward:
		return fmt.Errorf("%w: gradient reduction %q (want %s or %s)", ErrSpace, s.GradReduce, gradOverlap, gradAfterBackward)
	case s.GradReduce == gradAfterBackward && zero:
		return fmt.Errorf("%w: the gradient reduction after the backward pass is Megatron-LM's local DDP, without ZeRO: search ZeRO 0 only", ErrSpace)
	case s.FP16Grads && zero:
		return fmt.Errorf("%w: 16-bit gradients (Megatron-LM's fp16 optimizer of 2021) need ZeRO 0: search ZeRO 0 only", ErrSpace)
	case s.FP16Grads && s.FuseGradAccumulation:
		return fmt.Errorf("%w: 16-bit gradients and fused gradient accumulation (into fp32 main gradients) exclude each other", ErrSpace)
	case s.FP16Grads && !s.HalfGradReduce:
		return fmt.Errorf("%w: 16-bit gradients are reduced in 16 bits: give the half-precision gradient reduction with them", ErrSpace)
	}
	return nil
}

// check reports whether layout l is one s can train.
func (s *Space) check(l Layout) error {
	if s.toy() {
		t := s.Train(l)
		return t.Check()
	}
	if l.DP*l.Micro < 1 || s.Batch%(l.DP*l.Micro) != 0 {
		return fmt.Errorf("%w: batch %d does not split into %d replicas x %d microbatches", workload.ErrJob, s.Batch, l.DP, l.Micro)
	}
	j := s.Job(l)
	return j.Check()
}

// Train is the toy micro-benchmark job of layout l in s.
func (s *Space) Train(l Layout) synth.Train {
	return synth.Train{
		PP: l.PP, DP: l.DP, TP: l.TP, Micro: l.Micro,
		Layers: s.Layers, Hidden: s.Hidden, Seq: s.Seq, Batch: s.Batch,
		Steps: s.Steps, GPUsPerHost: s.GPUsPerHost,
	}
}

// Enumerate lists every layout of s that its workload accepts, in the
// fixed order: pp ascending, then dp, then micro (tp = world/pp/dp), then
// the ways of training the space searches (schedule, recomputation,
// sequence parallelism, ZeRO stage, in the order the space lists them).
// Duplicates are left out: sequence parallelism without tp > 1, and a
// ZeRO stage above 0 without dp > 1, train as the layout without them.
func Enumerate(s Space) ([]Layout, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	trains := []Training{{}}
	if !s.toy() {
		trains, _ = s.dims()
	}
	many := len(trains) > 1 || trains[0] != Training{}
	var out []Layout
	for _, pp := range divisors(s.World) {
		for _, dp := range divisors(s.World / pp) {
			tp := s.World / pp / dp
			if int64(s.Batch)%dp != 0 || (s.MaxTP > 0 && tp > int64(s.MaxTP)) {
				continue
			}
			for _, micro := range divisors(int64(s.Batch) / dp) {
				if s.MaxMicro > 0 && micro > int64(s.MaxMicro) {
					break
				}
				for _, tr := range trains {
					if many && ((tr.SequenceParallel && tp == 1) || (tr.Zero > 0 && dp == 1)) {
						continue
					}
					l := Layout{PP: int(pp), DP: int(dp), TP: int(tp), Micro: int(micro), Training: tr}
					if s.check(l) != nil {
						continue
					}
					if len(out) == MaxLayouts {
						return nil, fmt.Errorf("%w: more than %d layouts", ErrSpace, MaxLayouts)
					}
					out = append(out, l)
				}
			}
		}
	}
	return out, nil
}

// divisors returns n's divisors in ascending order.
func divisors(n int64) []int64 {
	var lo, hi []int64
	for d := int64(1); d*d <= n; d++ {
		if n%d == 0 {
			lo = append(lo, d)
			if d != n/d {
				hi = append(hi, n/d)
			}
		}
	}
	slices.Reverse(hi)
	return append(lo, hi...)
}

// Result is one layout's outcome.
type Result struct {
	Index int `json:"index"` // position in the enumeration
	Layout
	StepTimeS    float64 `json:"step_time_s"`
	PeakMemoryMB float64 `json:"peak_memory_mb"`
	Fits         bool    `json:"fits"`
	TokensPerS   float64 `json:"tokens_per_s"`
	// The exact integers behind StepTimeS and PeakMemoryMB, so merged
	// shards rank exactly as one search.
	StepTimeNs int64 `json:"step_time_ns"`
	PeakBytes  int64 `json:"peak_memory_bytes"`
	// ModelStateBytes is what the peak device holds at the end of the
	// run (parameters, gradients, optimizer state); the rest of its peak
	// is activations and the temporaries alive with them.
	ModelStateBytes int64 `json:"model_state_bytes,omitempty"`
	// MFU is the model FLOPs of a step (predict.ModelFLOPs) per second
	// per GPU over Space.PeakTFLOPS; 0 without it.
	MFU float64 `json:"mfu,omitempty"`
	// The layout's lower bounds (a pruned search's; see Bounds).
	MemoryBoundBytes int64 `json:"memory_bound_bytes,omitempty"`
	TimeBoundNs      int64 `json:"time_bound_ns,omitempty"`
	// MicroBatch is read from a transformer's --json record (the
	// sequences per microbatch, which Space.Job derives from the layout);
	// nothing uses it.
	MicroBatch int `json:"micro_batch,omitempty"`
}

// Shard selects the layouts whose index mod N is K.
type Shard struct {
	K int `json:"k"`
	N int `json:"n"`
}

// Has reports whether the layout at index i belongs to the shard.
func (sh Shard) Has(i int) bool { return sh.N <= 1 || i%sh.N == sh.K }

// Check reports a shard that selects nothing sensible.
func (sh Shard) Check() error {
	if sh.N < 1 || sh.K < 0 || sh.K >= sh.N {
		return fmt.Errorf("%w: shard %d/%d (want K/N with 0 <= K < N)", ErrSpace, sh.K, sh.N)
	}
	return nil
}

// Options say how to run a search.
type Options struct {
	Model sched.CostModel // nil: the reference's fixed runtimes
	// Controller prices the controller's part of each command.
	Controller sched.Controller
	Jobs       int   // layouts evaluated at once (< 1: 1)
	Shard      Shard // zero: every layout
	// Progress, when set, is called after each layout with the layouts
	// done and the shard's total (pruning: the layouts done or with a
	// step-time bound at most the best step so far, which shrinks as the
	// best improves); calls are serialized, done counting up.
	Progress func(done, total int)
	// Stats, when set, receives what the run did.
	Stats *Stats
	// Stop, when closed, ends the run early (a Ctrl-C): no layout starts
	// after it, those being simulated are given up, and Run returns the
	// layouts simulated until then, ranked, with Stats.Stopped set.
	Stop <-chan struct{}
}

// Stats counts what a run did with the layouts of its shard. With
// Space.Prune, which layouts the step-time bound prunes depends on the
// order layouts finish in (--jobs, the shard), so these are reported,
// not part of the result.
type Stats struct {
	Enumerated    int // layouts in the shard
	PrunedMemory  int // their memory bound exceeds a GPU
	PrunedBound   int // their step-time bound exceeds the best simulated step of a layout that fits
	Simulated     int
	BoundsSeconds float64 // time spent computing bounds
	// LeastMemoryBytes is the lowest memory bound of the layouts pruned by
	// memory, and LeastMemory the first layout with it (zero when none
	// was): what the space needs at least, when nothing fits.
	LeastMemoryBytes int64
	LeastMemory      Layout
	// Stopped says that Options.Stop ended the run before it simulated
	// every layout it would have: the results are the layouts simulated
	// until then (Simulated of Enumerated), all of them, not the search's
	// result. A stop that comes once they are all done changes nothing.
	Stopped bool
}

// Run evaluates the layouts of s in opt.Shard, opt.Jobs at a time, and
// returns them ranked (see Rank) with the number of layouts in the whole
// enumeration. The result does not depend on opt.Jobs.
//
// With s.Prune, the layouts' bounds come first (Bounds): a layout whose
// memory bound exceeds a GPU is not simulated, and the rest are simulated
// in order of their step-time bound, lowest first, until the bound of the
// next exceeds the best step time of a simulated layout that fits. The
// result then holds the simulated layouts whose step-time bound is at most
// the best step time of the shard: every pruned search simulates these
// whatever the order, so the result depends neither on opt.Jobs nor, once
// merged (Merge), on the sharding, and its first layout is the best of the
// space.
func Run(ctx context.Context, s Space, opt Options) ([]Result, int, error) {
	if opt.Shard.N == 0 {
		opt.Shard = Shard{K: 0, N: 1}
	}
	if err := opt.Shard.Check(); err != nil {
		return nil, 0, err
	}
	all, err := Enumerate(s)
	if err != nil {
		return nil, 0, err
	}
	var idx []int
	total := int64(0)
	for i := range all {
		if opt.Shard.Has(i) {
			idx = append(idx, i)
			t := s.Train(all[i])
			n := t.Commands()
			if n > MaxLayoutCommands {
				return nil, 0, fmt.Errorf("%w: layout pp=%d dp=%d tp=%d micro=%d is a history of about %d commands (%d steps x %d microbatches x %d layers), more than the %d one layout may have; use fewer layers, steps or microbatches (--max-micro)",
					ErrSpace, all[i].PP, all[i].DP, all[i].TP, all[i].Micro, n, s.Steps, all[i].Micro, s.Layers, int64(MaxLayoutCommands))
			}
			total = min(total+n, math.MaxInt64-MaxLayoutCommands) // n is at most MaxLayoutCommands
		}
	}
	if total > MaxSearchCommands && !s.Prune {
		return nil, 0, fmt.Errorf("%w: %d layouts are histories of about %d commands in all, more than the %d a search may replay; narrow it (--max-micro, fewer layers or steps) or spread it over machines (--shard)",
			ErrSpace, len(idx), total, int64(MaxSearchCommands))
	}
	st := Stats{Enumerated: len(idx)}
	if opt.Stats != nil {
		defer func() { *opt.Stats = st }()
	}
	stopped := func() bool {
		select {
		case <-opt.Stop:
			return true
		default:
			return false
		}
	}
	if opt.Stop != nil {
		stopCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-opt.Stop:
				cancel()
			case <-stopCtx.Done():
			}
		}()
		ctx = stopCtx
	}
	var bounds []Bound
	if s.Prune {
		began := time.Now()
		bounds, err = Bounds(ctx, s, all, idx, opt.Model, opt.Jobs)
		if err != nil && stopped() && errors.Is(err, context.Canceled) {
			st.Stopped = true
			return []Result{}, len(all), nil
		}
		if err != nil && ctx.Err() != nil {
			// Canceled or past its deadline: the caller's error, not the
			// probe's that noticed it.
			return nil, 0, ctx.Err()
		}
		if err != nil {
			return nil, 0, err
		}
		st.BoundsSeconds = time.Since(began).Seconds()
		// Lowest step-time bound first; the memory-pruned out.
		keep := idx[:0:0]
		var kb []Bound
		for j, i := range idx {
			if m := bounds[j].MemoryBytes; m > s.MemoryBytes {
				st.PrunedMemory++
				if st.LeastMemoryBytes == 0 || m < st.LeastMemoryBytes {
					st.LeastMemoryBytes, st.LeastMemory = m, all[i]
				}
				continue
			}
			keep = append(keep, i)
			kb = append(kb, bounds[j])
		}
		order := make([]int, len(keep))
		for j := range order {
			order[j] = j
		}
		slices.SortFunc(order, func(a, b int) int {
			return cmp.Or(cmp.Compare(kb[a].TimeNs, kb[b].TimeNs), cmp.Compare(keep[a], keep[b]))
		})
		idx = make([]int, len(order))
		bounds = make([]Bound, len(order))
		for j, o := range order {
			idx[j], bounds[j] = keep[o], kb[o]
		}
	}
	out := make([]Result, len(idx))
	evaluated := make([]bool, len(idx))
	var best atomic.Int64 // the best step time of a simulated layout that fits
	best.Store(math.MaxInt64)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(max(opt.Jobs, 1))
	var done atomic.Int64
	var mu sync.Mutex
	// cut records that the stop left out a layout the run would have
	// simulated: a stop that comes once every layout is done (or during
	// the bounds, which may all finish) leaves the result whole.
	var cut atomic.Bool
	for j, i := range idx {
		if s.Prune && bounds[j].TimeNs > best.Load() {
			// Every layout after this one has a bound at least as high.
			break
		}
		if stopped() {
			cut.Store(true)
			break
		}
		g.Go(func() (err error) {
			defer sched.RecoverInternal(&err)
			if stopped() {
				// Read here as well as through ctx, whose cancel comes
				// a moment later: no layout starts after the stop.
				cut.Store(true)
				return nil
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if s.Prune && bounds[j].TimeNs > best.Load() {
				return nil
			}
			r, err := Evaluate(ctx, s, all[i], opt.Model, opt.Controller)
			if err != nil && stopped() && errors.Is(err, context.Canceled) {
				cut.Store(true) // given up for the stop
				return nil
			}
			if err != nil {
				return fmt.Errorf("layout pp=%d dp=%d tp=%d micro=%d: %w", all[i].PP, all[i].DP, all[i].TP, all[i].Micro, err)
			}
			r.Index = i
			if s.Prune {
				r.MemoryBoundBytes, r.TimeBoundNs = bounds[j].MemoryBytes, bounds[j].TimeNs
				if r.StepTimeNs < r.TimeBoundNs || r.PeakBytes < r.MemoryBoundBytes {
					// Pruning trusts the bounds: one above its own layout's
					// simulation could have pruned a better layout, so the
					// ranking is not returned.
					return fmt.Errorf("%w: layout %v simulated a step of %d ns and a peak of %d bytes, under its lower bounds (%d ns, %d bytes)", sched.ErrInternal, all[i], r.StepTimeNs, r.PeakBytes, r.TimeBoundNs, r.MemoryBoundBytes)
				}
				if r.Fits {
					for old := best.Load(); r.StepTimeNs < old && !best.CompareAndSwap(old, r.StepTimeNs); old = best.Load() {
					}
				}
			}
			out[j] = r
			evaluated[j] = true
			if opt.Progress != nil {
				mu.Lock()
				n := int(done.Add(1))
				total := len(idx)
				if s.Prune {
					// Only the layouts whose bound may still beat the
					// best so far (bounds ascend) remain, not all.
					b := best.Load()
					total = max(n, sort.Search(len(bounds), func(k int) bool { return bounds[k].TimeNs > b }))
				}
				opt.Progress(n, total)
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, 0, err
	}
	st.Stopped = cut.Load()
	kept := out[:0]
	for j := range out {
		if evaluated[j] {
			st.Simulated++
			kept = append(kept, out[j])
		} else if !st.Stopped {
			st.PrunedBound++
		}
	}
	if s.Prune && !st.Stopped {
		// Stopped, every layout simulated is kept: the best step that
		// would rule some out may not be the space's.
		kept = Settled(kept)
	}
	Rank(kept)
	return kept, len(all), nil
}

// Settled keeps the results every pruned search of the same layouts
// simulates: those whose step-time bound is at most the best step time
// of a result that fits (all of them when none fits).
func Settled(rs []Result) []Result {
	best := int64(math.MaxInt64)
	for _, r := range rs {
		if r.Fits {
			best = min(best, r.StepTimeNs)
		}
	}
	out := rs[:0]
	for _, r := range rs {
		if r.TimeBoundNs <= best {
			out = append(out, r)
		}
	}
	return out
}

// Evaluate synthesizes layout l's history and replays it grouped on one
// goroutine. The records go from the workload (the transformer's or the
// toy's) to the engine as typed values, with no text in between, one at a
// time, so memory stays flat.
func Evaluate(ctx context.Context, s Space, l Layout, model sched.CostModel, ctl sched.Controller) (Result, error) {
	if err := s.check(l); err != nil {
		return Result{}, err
	}
	opt := replay.Options{Model: model, Grouped: true, Jobs: 1, Controller: ctl, Stop: ctx.Done()}
	var h history.Header
	var produce func(sink *replay.Sim) error
	if s.toy() {
		t := s.Train(l)
		var err error
		if h, err = synth.TrainHeader(t); err != nil {
			return Result{}, err
		}
		produce = func(sink *replay.Sim) error { return synth.EmitTrain(sink, t) }
	} else {
		j := s.Job(l)
		var err error
		if h, err = workload.HeaderOf(j); err != nil {
			return Result{}, err
		}
		produce = func(sink *replay.Sim) error { return workload.Emit(j, sink) }
		opt.FixedStreams = true // the workload makes its streams first
	}
	res, err := replay.Typed(h, "layout", produce, opt)
	if err == nil && res.Partial {
		err = ctx.Err()
	}
	if err != nil {
		return Result{}, err
	}
	return resultOf(s, l, res), nil
}

// resultOf derives a layout's figures from its replay: the step time is the
// last step's (the exec time at the last step line minus at the one
// before; with one step, the whole exec time), the peak the highest over
// the whole run.
func resultOf(s Space, l Layout, res *replay.Result) Result {
	r := Result{Layout: l, PeakBytes: res.Final.PeakBytes, ModelStateBytes: res.PeakDeviceFinalBytes}
	switch n := len(res.Steps); {
	case n >= 2:
		r.StepTimeNs = res.Steps[n-1].ExecNs - res.Steps[n-2].ExecNs
	case n == 1:
		r.StepTimeNs = res.Steps[0].ExecNs
	default:
		r.StepTimeNs = res.Final.ExecNs
	}
	fill(&r, s)
	return r
}

// fill derives the float figures of r from its integers.
func fill(r *Result, s Space) {
	r.StepTimeS = float64(r.StepTimeNs) / 1e9
	r.PeakMemoryMB = float64(r.PeakBytes) / 1e6
	r.Fits = r.PeakBytes <= s.MemoryBytes
	r.TokensPerS = 0
	seq := s.Seq
	if !s.toy() {
		seq = s.Model.Seq
	}
	r.MFU = 0
	if r.StepTimeNs > 0 {
		r.TokensPerS = float64(s.Batch) * float64(seq) / r.StepTimeS
		if !s.toy() && s.PeakTFLOPS > 0 && r.DP > 0 {
			r.MFU = predict.ModelFLOPs(s.Job(r.Layout)) / r.StepTimeS / float64(s.World) / 1e12 / s.PeakTFLOPS
		}
	}
}

// Rank orders results: layouts that fit first, then by step time, then by
// peak memory, then by enumeration index.
func Rank(rs []Result) {
	slices.SortFunc(rs, func(a, b Result) int {
		if a.Fits != b.Fits {
			if a.Fits {
				return -1
			}
			return 1
		}
		return cmp.Or(
			cmp.Compare(a.StepTimeNs, b.StepTimeNs),
			cmp.Compare(a.PeakBytes, b.PeakBytes),
			cmp.Compare(a.Index, b.Index),
		)
	})
}
