package predict

import (
	"context"
	"fmt"
	"math"

	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/validation"
	"github.com/fastsim/fastsim/internal/workload"
)

// Compared is one published value of a validation point beside fastsim's
// prediction of it.
type Compared struct {
	Point     string
	Quantity  string // one of Quantities
	Kind      string // measured or analytical, as the point gives it
	Published float64
	Predicted float64
	ErrorPct  float64 // 100 x (predicted - published) / published
}

// Quantities lists the published quantities a prediction is compared on.
var Quantities = []string{"step_time_s", "tflops_per_gpu", "mfu_percent", "model_state_gib", "activation_gib"}

// JobOf is the training job of validation point p: a GPT of the point's
// shape (biases, learned positions and tied embeddings, as Megatron-LM's
// GPT has them) in the point's layout, unpublished fields filled by the
// point's chosen values (validation.Point.Resolved).
func JobOf(p *validation.Point) (workload.Job, error) {
	m := workload.Model{Name: p.ID, Layers: p.Model.Layers, Hidden: p.Model.Hidden, Heads: p.Model.Heads,
		FFN: p.Model.FFN, Vocab: p.Model.Vocab, Seq: p.Model.Seq, Bias: true, Tied: true, Dtype: "bfloat16",
		Source: p.Model.Name}
	l := p.Resolved()
	j := workload.Job{Model: m, TP: l.TP, PP: l.PP, DP: l.DP, GlobalBatch: l.GlobalBatch, MicroBatch: l.MicroBatch,
		SequenceParallel: l.SequenceParallel, Zero: l.ZeroStage}
	// Data parallelism as the run did it: with the implementation its
	// script names (validation.Chosen.DDP), else Megatron-LM's default of
	// 2021-2022, --DDP-impl local (megatron/arguments.py at commits
	// 6985e58 and 2755bcb), which all-reduces the gradients after the
	// backward pass; PyTorch DDP overlaps it with the backward. The
	// gradients go over the network in 16 bits when the run is fp16
	// (Megatron-LM forces fp32 gradient reduction only for bf16; PyTorch
	// DDP reduces the fp16 param.grad) and as the fp32 main gradients
	// otherwise. The model's dtype stays bf16: fp16 has the same size and
	// tensor-core peak on the GPUs modelled.
	ddp, precision := "local", "bf16"
	if c := p.Chosen; c != nil {
		if c.DDP != "" {
			ddp = c.DDP
		}
		if c.Precision != "" {
			precision = c.Precision
		}
	}
	if ddp == "local" && j.Zero == 0 { // ZeRO runs are DeepSpeed's, which overlaps
		j.GradReduce = workload.GradAfterBackward
	}
	j.HalfGradReduce = precision == "fp16"
	// Megatron-LM fuses the weight gradients' accumulation into their
	// GEMMs whenever gradients accumulate in fp32 (bf16 runs) since
	// February 2022, before sequence parallelism and selective
	// recomputation were added (April-May 2022; workload.Job's
	// FuseGradAccumulation); the SC'21 runs (fp16, 2021) predate it.
	j.FuseGradAccumulation = precision == "bf16"
	// Megatron-LM's pipeline exchange of 2021-2022 is synchronous
	// (workload.Job's BlockingP2P).
	j.BlockingP2P = true
	// Its loss runs in fp32 (neither run sets --fp16-lm-cross-entropy).
	j.FP32CrossEntropy = true
	// The SC'21 runs are Megatron-LM of August 2021 (the scripts of
	// examples/sc21, commit 6985e58), whose only layer norm is its own
	// fused_mix_prec_layer_norm_cuda (workload.Job's ApexLayerNorm). The
	// 2022 code of the other points runs apex's one-pass persistent
	// kernel where it is installed (MixedFusedLayerNorm at 2755bcb),
	// which ATen's native_layer_norm prices.
	j.ApexLayerNorm = p.Chosen != nil && p.Chosen.Source.Ref == "megatron-sc21"
	// Their gradients are the fp16 param.grad of that code, reduced by
	// PyTorch 1.8's DDP (DDP=torch) or Megatron-LM's local DDP without
	// contiguous buffers (DDP=local; CONFIG.sh passes neither
	// --use-contiguous-buffers-in-ddp nor --accumulate-allreduce-grads-in-fp32)
	// and moved to fp32 by its fp16 optimizer (workload.Job's FP16Grads).
	// The 2022 code of the other points is bf16 with fp32 gradients in
	// contiguous buffers, zeroed each step, and no loss scaler to unscale
	// with (megatron/arguments.py, megatron/optimizer at 2755bcb).
	j.FP16Grads = j.ApexLayerNorm && precision == "fp16"
	var err error
	if j.Schedule, j.Chunks, err = workload.ParseSchedule(l.Schedule); err != nil {
		return j, fmt.Errorf("%w: point %s: %v", ErrPredict, p.ID, err)
	}
	if j.Recompute, err = workload.ParseRecompute(l.Recompute); err != nil {
		return j, fmt.Errorf("%w: point %s: %v", ErrPredict, p.ID, err)
	}
	return j, j.Check()
}

// Validate predicts point p on its hardware and compares every published
// quantity of Quantities (measured or analytical; not other tools'
// predictions) with the prediction.
func Validate(ctx context.Context, p *validation.Point) (Result, []Compared, error) {
	j, err := JobOf(p)
	if err != nil {
		return Result{}, nil, err
	}
	spec, err := hardware.Load(p.Hardware)
	if err != nil {
		return Result{}, nil, fmt.Errorf("%w: point %s: %v", ErrPredict, p.ID, err)
	}
	r, err := Run(ctx, j, spec)
	if err != nil {
		return r, nil, fmt.Errorf("point %s: %w", p.ID, err)
	}
	predicted := map[string]float64{
		"step_time_s": r.StepTimeS,
		// Narayanan et al. count teraFLOP/s by their Eq. 3, which
		// includes full recomputation's extra forward pass.
		"tflops_per_gpu": validation.NarayananFLOPs(p.Model, p.Layout.GlobalBatch) / r.StepTimeS / float64(r.World) / 1e12,
		"mfu_percent":    100 * r.MFU,
		// The published model states are Korthikanti et al.'s
		// accounting: the transformer layers' parameters only.
		"model_state_gib": r.LayerStateGiB,
		// The published activations are Korthikanti et al.'s
		// formulas (their Eq. 2 or 6 per layer, summed over the first
		// stage's layers and microbatches in flight): what the layers
		// store for their backward passes, not the logits and
		// temporaries also alive at the device's peak
		// (Result.ActivationGiB, reported beside it).
		"activation_gib": r.StoredActivationGiB,
	}
	var out []Compared
	for _, q := range Quantities {
		for _, kind := range []string{validation.KindMeasured, validation.KindAnalytical} {
			m, ok := p.Get(q, kind)
			if !ok || m.Value == 0 {
				continue
			}
			out = append(out, Compared{Point: p.ID, Quantity: q, Kind: kind, Published: m.Value,
				Predicted: predicted[q], ErrorPct: 100 * (predicted[q] - m.Value) / m.Value})
		}
	}
	return r, out, nil
}

// MeanAbsErrorPct is the mean of |ErrorPct| over cs whose Quantity is q.
func MeanAbsErrorPct(cs []Compared, q string) (float64, int) {
	sum, n := 0.0, 0
	for _, c := range cs {
		if c.Quantity == q {
			sum += math.Abs(c.ErrorPct)
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), n
}
