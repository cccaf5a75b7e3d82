package workload

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrJob reports a layout that does not fit the model or the mesh.
var ErrJob = errors.New("bad training layout")

// Schedule is a pipeline schedule (Narayanan et al., SC'21, §2.2).
type Schedule uint8

// The schedules.
const (
	// GPipe runs every microbatch's forward, then every backward
	// (Huang et al. 2019): m microbatches in flight.
	GPipe Schedule = iota + 1
	// OneFOneB is PipeDream-Flush: p-s-1 warm-up forwards on stage s,
	// then one forward, one backward, then the remaining backwards.
	OneFOneB
	// Interleaved is 1F1B with each stage holding Chunks model chunks
	// (layers s, s+p, s+2p, ... in blocks), cutting the bubble by Chunks.
	Interleaved
)

// Recompute is an activation recomputation policy (Korthikanti et al. 2022).
type Recompute uint8

// The recomputation policies.
const (
	// RecomputeNone keeps every activation the backward needs.
	RecomputeNone Recompute = iota
	// RecomputeSelective keeps Q, K and V and recomputes the attention
	// core (QK^T, softmax, dropout, attention over V) in the backward pass
	// (Korthikanti et al. 2022, §4.2).
	RecomputeSelective
	// RecomputeFull keeps only each layer's input and re-runs the layer's
	// forward (with its collectives) before its backward.
	RecomputeFull
)

// GradReduce is when the data-parallel gradient all-reduce runs.
type GradReduce uint8

// The gradient reductions.
const (
	// GradOverlap all-reduces each parameter group's gradient on the
	// communication stream as soon as the last microbatch's backward has
	// made it, overlapped with the rest of the backward pass (PyTorch
	// DDP's buckets, Megatron-LM's later --overlap-grad-reduce).
	GradOverlap GradReduce = iota
	// GradAfterBackward all-reduces every gradient after the last
	// backward pass, on the compute stream, before the optimizer:
	// Megatron-LM's own data parallelism (--DDP-impl local, its default
	// in 2021-2022), whose train_step calls allreduce_gradients() once
	// forward_backward_func returns, first dividing the gradients by the
	// data-parallel size (megatron/training.py and
	// megatron/model/distributed.py at commit 6985e58, Aug. 2021, and
	// 2755bcb, June 2022).
	GradAfterBackward
)

// Job is a training job: a model, its parallel layout and its batch.
//
// Ranks: rank = (stage*DP + replica)*TP + shard, tensor parallelism
// fastest-varying so a tensor-parallel group sits inside a host when TP
// divides the GPUs per host, as Megatron-LM orders its groups
// (Narayanan et al., SC'21, §3.3: tensor parallelism within a server).
type Job struct {
	Model       Model
	TP, PP, DP  int
	MicroBatch  int // sequences per microbatch (b)
	GlobalBatch int // sequences per step over all replicas (B)
	Schedule    Schedule
	Chunks      int // model chunks per stage with Interleaved (v)
	Recompute   Recompute
	// SequenceParallel splits the norms, dropouts and residuals over the
	// tensor-parallel shards along the sequence, turning each
	// all-reduce into a reduce-scatter and an all-gather (Korthikanti et
	// al. 2022, §4.2.2).
	SequenceParallel bool
	// NoScatterGather sends each pipeline activation and gradient whole
	// from every tensor-parallel shard, instead of Megatron-LM's default
	// scatter/gather (1/t from each shard, all-gathered by the receiver;
	// see generator.scatterGather).
	NoScatterGather bool
	// FP32CrossEntropy converts the logits to fp32 for the loss and its
	// gradient back to 16 bits after it, as Megatron-LM does unless
	// --fp16-lm-cross-entropy (fp16 only) is given:
	// post_language_model_processing calls
	// vocab_parallel_cross_entropy(output.float(), labels)
	// (megatron/model/gpt_model.py at 2755bcb).
	FP32CrossEntropy bool
	// BlockingP2P makes a pipeline send block the sender's compute
	// stream until the receiver has taken the transfer, as Megatron-LM's
	// point-to-point exchange does: _communicate waits for its batched
	// isend/irecv and then calls torch.cuda.synchronize()
	// (megatron/p2p_communication.py at 6985e58 and 2755bcb). Otherwise
	// the sender goes on and waits for the transfer only at its next send
	// in the same direction. The sender's wait is written when the
	// receiver takes the transfer, so it falls after whatever the sender
	// wrote before then (usually nothing: the schedule runs the receiver
	// next).
	BlockingP2P bool
	// ApexLayerNorm runs the layer norms as Megatron-LM's own kernels of
	// 2021 (fused_mix_prec_layer_norm_cuda, apex's FusedLayerNorm
	// kernels: megatron/fused_kernels at 6985e58), whose backward reads
	// the output gradient and the input twice and also returns the
	// weight and bias gradients; the op table prices both at the
	// bandwidth NVIDIA measured for them on an A100 (internal/costs
	// ops.go). Otherwise they are ATen's native_layer_norm and its
	// backward at the GPU's memory efficiency (generator.layerNorm,
	// normBackward).
	ApexLayerNorm bool
	// GradReduce is when the data-parallel gradient all-reduce runs
	// (ZeRO 0; ZeRO 1 to 3 always overlap it).
	GradReduce GradReduce
	// HalfGradReduce all-reduces the data-parallel gradients in 16 bits
	// (the model's dtype) instead of as the fp32 main gradients: what an
	// fp16 Megatron-LM run without --accumulate-allreduce-grads-in-fp32
	// does (its gradients are the fp16 param.grad; megatron/arguments.py
	// forces fp32 only for bf16, at commits 6985e58 and 2755bcb), and
	// PyTorch DDP on fp16 parameters. Only the transfer is 16-bit: the
	// memory model keeps its fp32 gradient buffer (FP16Grads makes the
	// gradients themselves 16-bit).
	HalfGradReduce bool
	// FuseGradAccumulation has each linear layer's weight-gradient GEMM
	// accumulate straight into the fp32 main gradient, with no 16-bit
	// weight gradient and no separate addition: Megatron-LM's gradient
	// accumulation fusion (--no-gradient-accumulation-fusion turns it
	// off), added in February 2022 (commit 83b1e42) and on by default
	// whenever gradients accumulate in fp32, as they do with bf16
	// (megatron/arguments.py and megatron/mpu/layers.py at 2755bcb).
	FuseGradAccumulation bool
	// FP16Grads keeps each gradient as the model's own 16-bit param.grad
	// during the backward and moves it to fp32 only in the optimizer step,
	// with the kernels Megatron-LM of August 2021 issues in an fp16 run
	// without --accumulate-allreduce-grads-in-fp32 and
	// --use-contiguous-buffers-in-ddp, as the SC'21 scripts run it
	// (examples/sc21/CONFIG.sh at 6985e58: --fp16 --loss-scale 8192
	// --clip-grad 1.0):
	//   - autograd's AccumulateGrad takes a parameter's first gradient of a
	//     step as param.grad without a kernel (zero_grad(set_to_none=True)
	//     left it None) and adds later microbatches' in 16 bits;
	//   - PyTorch 1.8's DDP (GradOverlap; gradient_as_bucket_view False by
	//     default) copies each gradient into its bucket, multiplying by
	//     1/dp on the way (Reducer::copy_grad_to_bucket's mul_out), before
	//     the bucket's all-reduce, and copies the bucket back into the
	//     gradient when the backward finishes (finalize_bucket_dense);
	//     Megatron-LM's local DDP (GradAfterBackward) flattens the
	//     gradients into one buffer (_flatten_dense_tensors, a cat),
	//     divides it by dp, all-reduces it and copies it back
	//     (allreduce_gradients without contiguous buffers,
	//     megatron/model/distributed.py at 6985e58);
	//   - Float16OptimizerWithFloat16Params.step (megatron/optimizer at
	//     6985e58) copies each gradient to a new fp32 main gradient
	//     (.float()), unscales it while checking for inf and NaN
	//     (torch._amp_foreach_non_finite_check_and_unscale_), takes the
	//     norm for clipping, runs apex's FusedAdam on the fp32 master
	//     weights and copies them back to the 16-bit parameters; nothing
	//     zeroes the gradients: the optimizer frees each 16-bit gradient
	//     right after its copy to fp32 (model_param.grad = None), so they
	//     hold memory from a step's first gradient to that copy. The clipping's scaling pass
	//     (multi_tensor_scale, only when the norm exceeds --clip-grad)
	//     depends on the data and is left out.
	// Without it, gradients accumulate into a zeroed fp32 main-gradient
	// buffer (Megatron-LM's contiguous buffers, 2022). ZeRO 0 only, and not
	// with FuseGradAccumulation, which accumulates into that fp32 buffer.
	FP16Grads bool
	// Zero is the ZeRO stage (Rajbhandari et al. 2020): 0 replicates the
	// optimizer state, 1 shards it over the data-parallel replicas, 2 also
	// the gradients, 3 also the parameters (FSDP).
	Zero int
	// FlashAttention computes attention with
	// _scaled_dot_product_flash_attention (nothing of size s^2 kept);
	// otherwise the explicit QK^T, softmax, dropout, AV path.
	FlashAttention bool
	// StageCollectives sends each collective as one command to a whole
	// stage instead of one per tensor-parallel or data-parallel group.
	// The format gives a Reduce command one peer set, so the exact form
	// (the default) addresses every group apart, as a run of commands at
	// one time that a grouped replay applies together, keeping a stage
	// one group, traced or not; this form does so with one command a
	// collective, at the price of collectives that join the whole stage
	// (their dims still name the mesh dimension they reduce over, for a
	// cost model that prices by it).
	StageCollectives bool
	Steps            int
	GPUsPerHost      int
	// CommandNs is the controller's time between two commands; 0 means
	// the default of 20 µs (about what a Python controller spends sending
	// one); negative means every command is sent at time 0.
	CommandNs int64
}

// World is the number of ranks.
func (j *Job) World() int64 { return int64(j.TP) * int64(j.PP) * int64(j.DP) }

// Micro is the number of microbatches per replica per step (m).
func (j *Job) Micro() int { return j.GlobalBatch / (j.MicroBatch * j.DP) }

// VStages is the number of virtual pipeline stages (p * chunks).
func (j *Job) VStages() int { return j.PP * j.chunks() }

func (j *Job) chunks() int {
	if j.Schedule == Interleaved {
		return j.Chunks
	}
	return 1
}

// Check reports the first thing about j that does not fit.
func (j *Job) Check() error {
	m := &j.Model
	if err := m.Check(); err != nil {
		return err
	}
	switch {
	case j.TP < 1 || j.PP < 1 || j.DP < 1:
		return fmt.Errorf("%w: tp, pp and dp must be at least 1", ErrJob)
	case j.World() > 1<<24:
		return fmt.Errorf("%w: world of %d ranks is over 2^24", ErrJob, j.World())
	case m.Heads%j.TP != 0 || m.kv()%j.TP != 0:
		return fmt.Errorf("%w: %d heads (%d KV heads) do not split over tp %d", ErrJob, m.Heads, m.kv(), j.TP)
	case m.ffn()%j.TP != 0:
		return fmt.Errorf("%w: ffn %d does not split over tp %d", ErrJob, m.ffn(), j.TP)
	case j.SequenceParallel && m.Seq%j.TP != 0:
		return fmt.Errorf("%w: sequence %d does not split over tp %d", ErrJob, m.Seq, j.TP)
	case j.Schedule < GPipe || j.Schedule > Interleaved:
		return fmt.Errorf("%w: unknown schedule", ErrJob)
	case j.Schedule == Interleaved && (j.Chunks < 2 || j.PP < 3):
		return fmt.Errorf("%w: the interleaved schedule needs at least 2 chunks and 3 stages (as Megatron-LM requires)", ErrJob)
	case j.Schedule == Interleaved && j.Chunks > 1024:
		return fmt.Errorf("%w: %d chunks per stage is over 1024", ErrJob, j.Chunks)
	case m.Layers%j.VStages() != 0:
		return fmt.Errorf("%w: %d layers do not split into %d stages x %d chunks", ErrJob, m.Layers, j.PP, j.chunks())
	case j.MicroBatch < 1 || j.GlobalBatch < 1:
		return fmt.Errorf("%w: micro-batch %d and global batch %d must be at least 1", ErrJob, j.MicroBatch, j.GlobalBatch)
	}
	if perStep, ok := mulSize(int64(j.MicroBatch), int64(j.DP)); !ok || perStep > int64(j.GlobalBatch) {
		return fmt.Errorf("%w: global batch %d is less than micro-batch %d x dp %d (one microbatch on each data-parallel replica)", ErrJob, j.GlobalBatch, j.MicroBatch, j.DP)
	}
	switch {
	case j.GlobalBatch%(j.MicroBatch*j.DP) != 0:
		return fmt.Errorf("%w: global batch %d is not a multiple of micro-batch %d x dp %d = %d (each data-parallel replica runs whole microbatches)", ErrJob, j.GlobalBatch, j.MicroBatch, j.DP, j.MicroBatch*j.DP)
	case j.Schedule == Interleaved && j.Micro()%j.PP != 0:
		return fmt.Errorf("%w: the interleaved schedule needs the %d microbatches to be a multiple of the %d stages", ErrJob, j.Micro(), j.PP)
	case j.Micro() > 1<<20:
		return fmt.Errorf("%w: %d microbatches per step is over 2^20", ErrJob, j.Micro())
	case j.Recompute > RecomputeFull:
		return fmt.Errorf("%w: unknown recomputation policy", ErrJob)
	case j.Zero < 0 || j.Zero > 3:
		return fmt.Errorf("%w: zero stage %d (want 0..3)", ErrJob, j.Zero)
	case j.GradReduce > GradAfterBackward:
		return fmt.Errorf("%w: unknown gradient reduction", ErrJob)
	case j.GradReduce == GradAfterBackward && j.Zero > 0 && j.DP > 1:
		return fmt.Errorf("%w: the gradient reduction after the backward pass is Megatron-LM's local DDP, without ZeRO", ErrJob)
	case j.FP16Grads && (j.Zero > 0 || j.FuseGradAccumulation):
		return fmt.Errorf("%w: 16-bit gradients (Megatron-LM's fp16 optimizer of 2021) need ZeRO 0 and no fused gradient accumulation", ErrJob)
	case j.FP16Grads && !j.HalfGradReduce:
		// 16-bit gradients are reduced in 16 bits whatever HalfGradReduce
		// says; asking for both keeps one job from having two names.
		return fmt.Errorf("%w: 16-bit gradients (Megatron-LM's fp16 optimizer of 2021) are reduced in 16 bits: give the half-precision gradient reduction with them", ErrJob)
	case j.Steps < 0 || j.Steps > 1<<16:
		return fmt.Errorf("%w: steps %d (want 0..65536)", ErrJob, j.Steps)
	case j.GPUsPerHost < 0:
		return fmt.Errorf("%w: gpus per host %d (want at least 1; 0: 8)", ErrJob, j.GPUsPerHost)
	}
	if err := j.checkCommandTimes(); err != nil {
		return err
	}
	return j.checkSizes()
}

// ParseSchedule reads "gpipe", "1f1b" or "interleaved:V".
func ParseSchedule(s string) (Schedule, int, error) {
	switch {
	case s == "gpipe":
		return GPipe, 1, nil
	case s == "1f1b":
		return OneFOneB, 1, nil
	case strings.HasPrefix(s, "interleaved:"):
		v, err := strconv.Atoi(strings.TrimPrefix(s, "interleaved:"))
		if err != nil || v < 2 || v > 1024 {
			return 0, 0, fmt.Errorf("%q: want interleaved:V with V (chunks per stage) in 2..1024", s)
		}
		return Interleaved, v, nil
	}
	return 0, 0, fmt.Errorf("%q: want gpipe, 1f1b or interleaved:V", s)
}

// ParseRecompute reads "none", "selective" or "full".
func ParseRecompute(s string) (Recompute, error) {
	switch s {
	case "none":
		return RecomputeNone, nil
	case "selective":
		return RecomputeSelective, nil
	case "full":
		return RecomputeFull, nil
	}
	return 0, fmt.Errorf("%q: want none, selective or full", s)
}
