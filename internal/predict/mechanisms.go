package predict

import "github.com/fastsim/fastsim/internal/workload"

// Mechanism is a switch of workload.Job, beside the layout (tp, pp, dp,
// batch, schedule, recomputation, sequence parallelism, ZeRO), that
// changes what a layout's history runs and so its prediction: which
// implementation of a step Megatron-LM or PyTorch takes. Two predictions
// of one layout that differ by a mechanism differ in their figures, so a
// report names the mechanisms it ran with.
type Mechanism struct {
	// Flag is the switch as fastsim's command line sets it, with its
	// value when the flag takes one ("--blocking-p2p",
	// "--grad-reduce after-backward").
	Flag string
	// On reports whether j has the mechanism set.
	On func(j *workload.Job) bool
}

// Mechanisms is every such switch, in the order a report names them: one
// row per switch of workload.Job (TestMechanismsCoverJob fails on a
// boolean field of Job without its row).
var Mechanisms = []Mechanism{
	{"--grad-reduce after-backward", func(j *workload.Job) bool { return j.GradReduce == workload.GradAfterBackward }},
	{"--half-grad-reduce", func(j *workload.Job) bool { return j.HalfGradReduce }},
	{"--fuse-grad-accumulation", func(j *workload.Job) bool { return j.FuseGradAccumulation }},
	{"--blocking-p2p", func(j *workload.Job) bool { return j.BlockingP2P }},
	{"--fp32-cross-entropy", func(j *workload.Job) bool { return j.FP32CrossEntropy }},
	{"--apex-layer-norm", func(j *workload.Job) bool { return j.ApexLayerNorm }},
	{"--fp16-grads", func(j *workload.Job) bool { return j.FP16Grads }},
	{"--no-scatter-gather", func(j *workload.Job) bool { return j.NoScatterGather }},
	{"--flash-attention", func(j *workload.Job) bool { return j.FlashAttention }},
	{"--stage-collectives", func(j *workload.Job) bool { return j.StageCollectives }},
}

// MechanismsOf lists the flags of the mechanisms j has set, in
// Mechanisms' order: the flags that, added to the layout's, ask for the
// same job. It is empty, not nil, when j sets none (a JSON [] rather
// than null).
func MechanismsOf(j *workload.Job) []string {
	on := []string{}
	for _, m := range Mechanisms {
		if m.On(j) {
			on = append(on, m.Flag)
		}
	}
	return on
}
