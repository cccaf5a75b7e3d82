package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/fastsim/fastsim/internal/search"
	"github.com/fastsim/fastsim/internal/workload"
)

// tfFlags are the transformer workload's flags, shared by synth and search.
type tfFlags struct {
	model                   string
	microBatch, globalBatch int
	schedule, recompute     string
	sp, flash, stageColl    bool
	zero                    int
	// Megatron-LM's mechanisms.
	gradReduce               string
	halfGrad, fuseGrad, noSG bool
	blockingP2P, fp32CE      bool
	apexLN, fp16Grads        bool
}

// tfOnly names the flags that only the transformer workload reads.
var tfOnly = []string{"micro-batch", "global-batch", "schedule", "recompute", "sequence-parallel", "zero", "flash-attention", "stage-collectives",
	"grad-reduce", "half-grad-reduce", "fuse-grad-accumulation", "no-scatter-gather", "blocking-p2p", "fp32-cross-entropy", "apex-layer-norm", "fp16-grads"}

// toyOnly names the flags that only the toy micro-benchmark reads.
var toyOnly = []string{"layers", "hidden", "seq", "batch", "micro"}

func (f *tfFlags) register(fs *flag.FlagSet, batch bool) {
	toy := "" // only synth writes the toy micro-benchmark for --model toy
	if fs.Name() == "synth" {
		toy = "\n'toy' is the one-weight-per-layer micro-benchmark."
	}
	fs.StringVar(&f.model, "model", "", "the transformer to train: a preset `NAME` or a JSON model FILE (its fields: README,\n\"Transformer workloads\")."+toy+"\nPresets: "+joinNames())
	if batch {
		fs.IntVar(&f.microBatch, "micro-batch", 1, "transformer: sequences per microbatch (b)")
		fs.IntVar(&f.globalBatch, "global-batch", 8, "transformer: sequences per step over all replicas (B); microbatches per replica = B/(b*dp)")
	}
	f.registerMechanisms(fs)
	fs.StringVar(&f.schedule, "schedule", "1f1b", "transformer: pipeline schedule `S`: 1f1b, gpipe or interleaved:V (V model chunks per stage)")
	fs.StringVar(&f.recompute, "recompute", "none", "transformer: activation recomputation `R`: none, selective (the attention core) or full (whole layers)")
	fs.BoolVar(&f.sp, "sequence-parallel", false, "transformer: sequence parallelism (norms and dropouts split over tp; reduce-scatter and all-gather)")
	fs.IntVar(&f.zero, "zero", 0, "transformer: ZeRO stage `N`: 0 (replicated), 1 (optimizer state sharded over dp), 2 (and gradients), 3 (and parameters: FSDP)")
	fs.BoolVar(&f.stageColl, "stage-collectives", false, "transformer: send each collective as one command to its whole stage, not one per\ntensor- or data-parallel group (the format gives a Reduce one peer set); collectives then\njoin the whole stage. A grouped replay keeps each stage one group either way, traced\nor not, so it is rarely needed")
	fs.BoolVar(&f.flash, "flash-attention", false, "transformer: attention as _scaled_dot_product_flash_attention instead of the explicit QK^T, softmax, dropout, AV path")
}

// registerMechanisms registers the flags of Megatron-LM's mechanisms
// (predict.Mechanisms), which synth, predict and search read alike.
func (f *tfFlags) registerMechanisms(fs *flag.FlagSet) {
	fs.StringVar(&f.gradReduce, "grad-reduce", "overlap", "transformer: when the data-parallel gradient all-reduce runs (ZeRO 0): `WHEN` overlap (each\ngroup's as soon as its gradient is complete, during the backward: PyTorch DDP) or after-backward\n(all of them after the last backward pass, before the optimizer: Megatron-LM's --DDP-impl local of 2021-2022)")
	fs.BoolVar(&f.halfGrad, "half-grad-reduce", false, "transformer: all-reduce the data-parallel gradients in 16 bits, as an fp16 Megatron-LM run does\n(default: the fp32 main gradients, as with bf16)")
	fs.BoolVar(&f.fuseGrad, "fuse-grad-accumulation", false, "transformer: weight-gradient GEMMs accumulate straight into the fp32 main gradient (Megatron-LM's\ngradient accumulation fusion, on by default for bf16 since 2022) instead of a 16-bit product added by a second kernel")
	fs.BoolVar(&f.blockingP2P, "blocking-p2p", false, "transformer: a pipeline send blocks the sender's compute stream until the receiver takes it\n(Megatron-LM's synchronous exchange); without it the sender goes on")
	fs.BoolVar(&f.fp32CE, "fp32-cross-entropy", false, "transformer: the loss in fp32 (the logits converted, their gradient converted back), as Megatron-LM\nruns it without --fp16-lm-cross-entropy")
	fs.BoolVar(&f.apexLN, "apex-layer-norm", false, "transformer: layer norms as Megatron-LM's own kernels of 2021 (apex's FusedLayerNorm: a backward that reads\nits inputs twice), priced at the bandwidth measured for them on an A100, instead of ATen's")
	fs.BoolVar(&f.fp16Grads, "fp16-grads", false, "transformer: gradients as the 16-bit param.grad, reduced and moved to fp32 as Megatron-LM's fp16 runs of 2021 do:\nPyTorch 1.8 DDP's bucket copies (--grad-reduce overlap) or its local DDP's flatten, divide and copy back\n(after-backward), then its fp16 optimizer's copy to fp32, unscale and inf check (ZeRO 0; with\n--half-grad-reduce, not with --fuse-grad-accumulation). Default: a zeroed fp32 gradient buffer, as Megatron-LM of 2022")
	fs.BoolVar(&f.noSG, "no-scatter-gather", false, "transformer: pipeline transfers whole from every tensor-parallel shard, instead of Megatron-LM's\nscatter/gather (each shard sends 1/t, the receiver all-gathers; not used with sequence parallelism)")
}

// mechanismConflict says what is wrong with the mechanism flags by
// themselves (a --grad-reduce value, two flags that exclude each other),
// or "".
func (f *tfFlags) mechanismConflict() string {
	switch {
	case f.gradReduce != "" && f.gradReduce != "overlap" && f.gradReduce != "after-backward":
		return fmt.Sprintf("--grad-reduce %q: want overlap or after-backward", f.gradReduce)
	case f.fp16Grads && f.fuseGrad:
		return "--fp16-grads: Megatron-LM's fp16 optimizer of 2021 ran without gradient accumulation fusion; drop --fuse-grad-accumulation"
	case f.fp16Grads && !f.halfGrad:
		return "--fp16-grads: its 16-bit gradients are reduced in 16 bits; give --half-grad-reduce with it"
	}
	return ""
}

func joinNames() string {
	s := ""
	for i, n := range workload.PresetNames() {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// setFlags reports which of names were given on the command line.
func setFlags(fs *flag.FlagSet, names []string) []string {
	var out []string
	fs.Visit(func(f *flag.Flag) {
		for _, n := range names {
			if f.Name == n {
				out = append(out, "--"+n)
			}
		}
	})
	return out
}

// job builds the transformer job the flags describe (the layout from
// tp, pp, dp); it reports a bad flag on stderr and returns false.
func (f *tfFlags) job(stderr io.Writer, cmd string, tp, pp, dp, steps, gpusPerHost int, commandNs int64) (workload.Job, bool) {
	m, err := workload.LoadModel(f.model)
	if err != nil {
		fmt.Fprintf(stderr, "fastsim %s: --model: %v\n", cmd, err)
		return workload.Job{}, false
	}
	return f.jobOf(stderr, cmd, m, tp, pp, dp, steps, gpusPerHost, commandNs)
}

// jobOf is job for a model given as a value.
func (f *tfFlags) jobOf(stderr io.Writer, cmd string, m workload.Model, tp, pp, dp, steps, gpusPerHost int, commandNs int64) (workload.Job, bool) {
	// The batches are bounded before the job multiplies them with the
	// layout: a product past int64 would wrap into a batch that splits.
	for _, b := range []struct {
		flag string
		v    int
	}{{"--micro-batch", f.microBatch}, {"--global-batch", f.globalBatch}} {
		if b.v < 1 || b.v > search.MaxBatch {
			fmt.Fprintf(stderr, "fastsim %s: %s %d: want 1..%d sequences\n", cmd, b.flag, b.v, search.MaxBatch)
			return workload.Job{}, false
		}
	}
	var err error
	j := workload.Job{Model: m, TP: tp, PP: pp, DP: dp, MicroBatch: f.microBatch, GlobalBatch: f.globalBatch,
		Steps: steps, GPUsPerHost: gpusPerHost, CommandNs: commandNs, SequenceParallel: f.sp, Zero: f.zero, FlashAttention: f.flash, StageCollectives: f.stageColl}
	if j.Schedule, j.Chunks, err = workload.ParseSchedule(f.schedule); err != nil {
		fmt.Fprintf(stderr, "fastsim %s: --schedule %v\n", cmd, err)
		return j, false
	}
	if j.Recompute, err = workload.ParseRecompute(f.recompute); err != nil {
		fmt.Fprintf(stderr, "fastsim %s: --recompute %v\n", cmd, err)
		return j, false
	}
	if f.gradReduce == "after-backward" {
		j.GradReduce = workload.GradAfterBackward
	}
	j.HalfGradReduce, j.FuseGradAccumulation, j.NoScatterGather, j.BlockingP2P = f.halfGrad, f.fuseGrad, f.noSG, f.blockingP2P
	j.FP32CrossEntropy, j.ApexLayerNorm, j.FP16Grads = f.fp32CE, f.apexLN, f.fp16Grads
	// The flags' own combinations, named as flags (Job.Check, below,
	// words them for a program that set the fields).
	dpIs := "--dp is 1"
	if cmd == "predict" {
		dpIs = "dp (--world / (--tp x --pp)) is 1"
	}
	switch {
	case f.zero < 0 || f.zero > 3:
		fmt.Fprintf(stderr, "fastsim %s: --zero %d: want 0, 1, 2 or 3\n", cmd, f.zero)
		return j, false
	case f.zero > 0 && dp == 1:
		fmt.Fprintf(stderr, "fastsim %s: --zero %d: ZeRO shards over the data-parallel replicas and %s; it would train as --zero 0\n", cmd, f.zero, dpIs)
		return j, false
	case f.sp && tp == 1:
		fmt.Fprintf(stderr, "fastsim %s: --sequence-parallel: it splits over the tensor-parallel shards and --tp is 1; it would train as without it\n", cmd)
		return j, false
	case f.fp16Grads && f.zero != 0:
		fmt.Fprintf(stderr, "fastsim %s: --fp16-grads: Megatron-LM's fp16 optimizer of 2021 ran without ZeRO; drop --zero %d\n", cmd, f.zero)
		return j, false
	case f.mechanismConflict() != "":
		fmt.Fprintf(stderr, "fastsim %s: %s\n", cmd, f.mechanismConflict())
		return j, false
	case j.GradReduce == workload.GradAfterBackward && f.zero != 0:
		fmt.Fprintf(stderr, "fastsim %s: --grad-reduce after-backward is Megatron-LM's local DDP, which has no ZeRO; drop --zero %d\n", cmd, f.zero)
		return j, false
	}
	if err := j.Check(); err != nil {
		fmt.Fprintf(stderr, "fastsim %s: %v\n", cmd, err)
		return j, false
	}
	return j, true
}
