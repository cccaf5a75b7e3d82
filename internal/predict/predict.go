// Package predict answers for one training layout on one machine: it writes
// the layout's transformer training history (internal/workload), replays it
// grouped, priced by the hardware model (internal/costs over a
// internal/hardware spec) with no controller cost, as an SPMD Megatron-LM
// job runs, and reads off what the job would measure: the step time,
// throughput, model FLOP/s per GPU and MFU, and the worst device's memory
// with its split into model state and activations.
//
// Nothing here is fitted: every figure comes from the simulated timeline
// and memory, or from the model's shape by a published formula.
package predict

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/workload"
)

// GiB is 2^30 bytes: memory figures are in GiB, as Korthikanti et al. and
// PyTorch's allocator report them.
const GiB = 1 << 30

// ErrPredict reports a layout that cannot be predicted.
var ErrPredict = errors.New("cannot predict")

// Result is what one layout would measure. As JSON (its field tags) it
// has the keys and values `fastsim predict --json` writes for the
// figures both hold, but for the wall time (wall_ns here).
type Result struct {
	World        int64   `json:"world"`
	StepTimeS    float64 `json:"step_time_s"`               // the last simulated step's time
	TokensPerS   float64 `json:"tokens_per_s"`              // global batch x sequence / step time
	ModelFLOPs   float64 `json:"model_flops_per_iteration"` // per iteration, counted from the model's shape (ModelFLOPs)
	TFLOPsPerGPU float64 `json:"tflops_per_gpu"`            // ModelFLOPs / step time / GPUs, in 10^12 FLOP/s
	MFU          float64 `json:"mfu"`                       // TFLOPsPerGPU over the GPU's dense peak for the model's dtype
	// NarayananTFLOPsPerGPU is the same step counted as Narayanan et al.
	// count the teraFLOP/s of their Tables 1 and 2 (NarayananFLOPs: one
	// recomputed forward of every layer included, whatever the layout
	// recomputes), to compare with those tables.
	NarayananTFLOPsPerGPU float64 `json:"narayanan_tflops_per_gpu"`
	PeakGiB               float64 `json:"peak_memory_gib"` // the worst device's peak memory
	PeakDevice            int64   `json:"peak_device"`     // that device's rank
	// ModelStateGiB is what the worst device holds at the end of the
	// history, when every transient tensor is freed: parameters, fp32
	// main gradients and optimizer state (18 bytes a parameter, sharded
	// by ZeRO; with Job.FP16Grads the gradients live within the step and
	// count with the activations: 14 bytes, 16 with data parallelism
	// overlapped with the backward, PyTorch DDP's 16-bit bucket). ActivationGiB is the rest of its
	// peak: activations and the temporaries alive with them.
	ModelStateGiB float64 `json:"model_state_gib"`
	ActivationGiB float64 `json:"activation_gib"`
	// LayerStateGiB is the part of ModelStateGiB that belongs to the
	// device's transformer layers: the model state times the layers'
	// share of the device's parameters (workload.StageParams; the state
	// is a fixed number of bytes per parameter, sharded alike by ZeRO).
	// It leaves out the embeddings and the output layer, as Korthikanti
	// et al.'s accounting of 18 bytes over 12·L·h²/(t·p) parameters does
	// (internal/validation/FORMULAS.md, section 2).
	LayerStateGiB float64 `json:"layer_state_gib"`
	// StoredActivationGiB is what the worst device's transformer layers
	// keep at once for their backward passes (workload.Stats): the
	// activations as Korthikanti et al. 2022 count them (Eq. 1-6 summed
	// over the stage's layers and microbatches in flight), a part of
	// ActivationGiB, which also holds the output layer's logits and the
	// temporaries alive at the peak.
	StoredActivationGiB float64 `json:"stored_activation_gib"`
	HBMGiB              float64 `json:"hbm_gib"`          // the GPU's memory
	Fits                bool    `json:"fits"`             // PeakGiB <= HBMGiB
	Groups              int     `json:"groups_simulated"` // groups the grouped replay simulated
	Commands            int64   `json:"commands"`
	// PassSteps counts the layer passes the replay applied as one step
	// each (internal/sched's pass.go), not command by command.
	PassSteps  int64         `json:"layer_passes_as_steps"`
	Wall       time.Duration `json:"wall_ns"`          // how long the prediction took (as JSON in ns; --json writes wall_s)
	UnknownOps int64         `json:"unknown_op_calls"` // calls the hardware model priced by its default
	// Mechanisms are the flags of the mechanisms the job ran with
	// (MechanismsOf): [] for none.
	Mechanisms []string `json:"mechanisms"`
}

// Run predicts job j on hardware spec (job.Steps, default 2: the step time
// is the last step's, after the first has allocated what the job keeps).
func Run(ctx context.Context, j workload.Job, spec *hardware.Spec) (Result, error) {
	return RunProgress(ctx, j, spec, nil)
}

// RunProgress is Run calling progress, when not nil, about once a second
// with the records replayed so far (a large layout takes minutes). It
// runs on one goroutine: a program that predicts many layouts at once
// (a search) has its cores busy already, and there the second goroutine
// of RunJobs costs more than it saves.
func RunProgress(ctx context.Context, j workload.Job, spec *hardware.Spec, progress func(records int64)) (Result, error) {
	return RunJobs(ctx, j, spec, 1, progress)
}

// RunJobs is RunProgress on up to jobs goroutines: with 2 or more (and
// at least 2 cores for Go, GOMAXPROCS) the workload is written on a
// goroutine of its own while the replay runs (workload.EmitStatsPiped),
// which gives the same records in the same order, so the same result;
// with 1 it is written inline.
func RunJobs(ctx context.Context, j workload.Job, spec *hardware.Spec, jobs int, progress func(records int64)) (Result, error) {
	began := time.Now()
	if j.Steps < 1 {
		j.Steps = 2
	}
	j.CommandNs = -1 // SPMD: every command is sent at time 0
	if j.GPUsPerHost == 0 {
		j.GPUsPerHost = spec.Host.GPUsPerHost
	}
	if err := j.Check(); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrPredict, err)
	}
	peak, ok := spec.GPU.PeakTFLOPS(j.Model.Dtype)
	if !ok || peak <= 0 {
		return Result{}, fmt.Errorf("%w: %s has no dense peak for %s", ErrPredict, spec.Name, j.Model.Dtype)
	}
	model, err := costs.NewWithHardware(costs.Config{}, spec)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrPredict, err)
	}
	piped := jobs >= 2 && runtime.GOMAXPROCS(0) >= 2
	res, stats, err := replayJob(ctx, j, model, piped, func(o *replay.Options) { o.Progress = progress })
	if err != nil {
		return Result{}, err
	}
	if len(res.Steps) == 0 {
		return Result{}, fmt.Errorf("%w: the history has no step", ErrPredict)
	}
	stepNs := res.Steps[0].ExecNs
	if n := len(res.Steps); n >= 2 {
		stepNs = res.Steps[n-1].ExecNs - res.Steps[n-2].ExecNs
	}
	if stepNs <= 0 {
		return Result{}, fmt.Errorf("%w: a step of %d ns", ErrPredict, stepNs)
	}
	r := Result{
		World:      j.World(),
		StepTimeS:  float64(stepNs) / 1e9,
		ModelFLOPs: ModelFLOPs(j),
		PeakGiB:    float64(res.Final.PeakBytes) / GiB,
		PeakDevice: res.Final.PeakDevice,
		HBMGiB:     spec.GPU.HBMGB * 1e9 / GiB,
		Groups:     res.Groups,
		Commands:   res.Commands,
		PassSteps:  res.PassSteps,
	}
	r.TokensPerS = float64(j.GlobalBatch) * float64(j.Model.Seq) / r.StepTimeS
	r.TFLOPsPerGPU = r.ModelFLOPs / r.StepTimeS / float64(r.World) / 1e12
	r.MFU = r.TFLOPsPerGPU / peak
	r.NarayananTFLOPsPerGPU = NarayananFLOPs(j) / r.StepTimeS / float64(r.World) / 1e12
	r.ModelStateGiB = float64(res.PeakDeviceFinalBytes) / GiB
	r.ActivationGiB = r.PeakGiB - r.ModelStateGiB
	stage := int(r.PeakDevice / (int64(j.DP) * int64(j.TP)))
	if stage < len(stats.StoredActivations) {
		r.StoredActivationGiB = float64(stats.StoredActivations[stage]) / GiB
	}
	if layers, other := workload.StageParams(j, stage); layers+other > 0 {
		r.LayerStateGiB = r.ModelStateGiB * float64(layers) / float64(layers+other)
	}
	r.Fits = r.PeakGiB <= r.HBMGiB
	r.Mechanisms = MechanismsOf(&j)
	if roof := model.Roofline(); roof != nil {
		r.UnknownOps, _ = roof.Unknown()
	}
	r.Wall = time.Since(began)
	return r, nil
}

// replayJob replays j's history as the workload produces it, typed, with
// no text in between; piped, the workload is written on a goroutine of
// its own (workload.EmitStatsPiped).
// edit, when set, changes the replay's options (the tests' variants, a
// progress callback).
func replayJob(ctx context.Context, j workload.Job, model sched.CostModel, piped bool, edit func(*replay.Options)) (*replay.Result, workload.Stats, error) {
	h, err := workload.HeaderOf(j)
	if err != nil {
		return nil, workload.Stats{}, err
	}
	var stats workload.Stats
	opt := replay.Options{Model: model, Grouped: true, Jobs: 1, Controller: sched.ControllerNone, Stop: ctx.Done(), FixedStreams: true}
	if edit != nil {
		edit(&opt)
	}
	res, err := replay.Typed(h, "layout", func(s *replay.Sim) error {
		var err error
		if piped {
			stats, err = workload.EmitStatsPiped(j, s)
		} else {
			stats, err = workload.EmitStats(j, s)
		}
		return err
	}, opt)
	if err == nil && res.Partial {
		err = ctx.Err()
	}
	return res, stats, err
}

// ModelFLOPs is the model FLOPs of one training iteration of j: three
// times the forward pass (the backward costs twice the forward), not
// counting recomputation: Narayanan et al.'s derivation (SC'21, Appendix)
// without its recomputed forward, which is Korthikanti et al. 2022's
// model FLOPs (Eq. 7), the numerator of MFU.
// The forward of a layer, per token, is 2 FLOPs per weight of its four
// GEMMs (QKV, output projection, the MLP's two or, gated, three) plus
// 4·s·h for attention (QKᵀ and AV, 2·s·h each); the logits add 2·h·V per
// token. For a GPT layer (QKV 3h², projection h², MLP 8h²) this is
// 24·B·s·h² + 4·B·s²·h per layer and 72·B·s·l·h²·(1 + s/(6h) +
// V/(12·l·h)) per iteration, Korthikanti et al.'s Eq. 7.
func ModelFLOPs(j workload.Job) float64 {
	layers, logits := forwardFLOPs(j)
	return 3 * (layers + logits)
}

// NarayananFLOPs is one iteration of j counted as Narayanan et al. count
// the teraFLOP/s of their Tables 1 and 2 (SC'21, Eq. 3 and Appendix): each
// layer's forward four times (forward, its recomputation, a backward of
// twice the forward) and the logits' three times, whatever the layout
// recomputes. For a GPT layer it is their 96·B·s·l·h²·(1 + s/(6h) +
// V/(16·l·h)).
func NarayananFLOPs(j workload.Job) float64 {
	layers, logits := forwardFLOPs(j)
	return 4*layers + 3*logits
}

// forwardFLOPs is the FLOPs of one iteration's forward passes: the
// transformer layers' and the logits'.
func forwardFLOPs(j workload.Job) (layers, logits float64) {
	m := &j.Model
	h, s := float64(m.Hidden), float64(m.Seq)
	kv := m.KVHeads
	if kv == 0 {
		kv = m.Heads
	}
	qkv := float64(m.Heads+2*kv) * float64(m.HeadDim())
	f := float64(m.FFN)
	if f == 0 {
		f = 4 * h
	}
	fc1 := f
	if m.Gated {
		fc1 = 2 * f
	}
	layer := 2*(h*qkv+h*h+h*fc1+f*h) + 4*s*h
	tokens := float64(j.GlobalBatch) * s
	return float64(m.Layers) * layer * tokens, 2 * h * float64(m.Vocab) * tokens
}
