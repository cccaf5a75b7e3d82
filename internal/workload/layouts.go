package workload

// FeatureLayouts are small layouts that together use every schedule,
// recomputation policy, ZeRO stage, sequence parallelism on and off,
// attention and MLP kind, the gradient-reduction, 16-bit gradient and point-to-point
// options and several tensor- and pipeline-parallel splits, with several
// layers per stage so that recorded layer passes are replayed, and a
// first stage whose first layer takes the embedding's view. They are the
// common ground of the properties that compare two ways of producing or
// replaying a job (recordings against generation here, passes applied as
// steps against command by command in internal/predict). Each call
// returns fresh values.
func FeatureLayouts() []Job {
	gpt := Model{Name: "tiny-gpt", Layers: 12, Hidden: 128, Heads: 4, Vocab: 300, Seq: 32, Bias: true, Tied: true, Dtype: "bfloat16"}
	llama := Model{Name: "tiny-llama", Layers: 12, Hidden: 128, Heads: 4, KVHeads: 2, FFN: 192, Vocab: 300, Seq: 32, Gated: true, Dtype: "bfloat16"}
	j := func(m Model, tp, pp, dp, gb int, s Schedule, edit func(*Job)) Job {
		job := Job{Model: m, TP: tp, PP: pp, DP: dp, MicroBatch: 1, GlobalBatch: gb, Schedule: s, Steps: 2}
		if edit != nil {
			edit(&job)
		}
		return job
	}
	return []Job{
		j(gpt, 1, 1, 1, 2, OneFOneB, nil),
		j(gpt, 2, 2, 1, 4, OneFOneB, nil),
		j(gpt, 2, 3, 2, 12, GPipe, func(j *Job) { j.SequenceParallel = true; j.Zero = 1 }),
		j(gpt, 2, 3, 2, 12, Interleaved, func(j *Job) { j.Chunks = 2; j.Recompute = RecomputeSelective }),
		j(gpt, 2, 2, 2, 8, OneFOneB, func(j *Job) { j.Recompute = RecomputeFull; j.FP32CrossEntropy = true; j.ApexLayerNorm = true }),
		j(gpt, 2, 2, 2, 8, OneFOneB, func(j *Job) { j.GradReduce = GradAfterBackward; j.HalfGradReduce = true; j.BlockingP2P = true }),
		j(gpt, 2, 2, 2, 8, OneFOneB, func(j *Job) { j.Recompute = RecomputeFull; j.HalfGradReduce = true; j.FP16Grads = true }),
		j(gpt, 2, 2, 2, 8, OneFOneB, func(j *Job) { j.GradReduce = GradAfterBackward; j.HalfGradReduce = true; j.FP16Grads = true }),
		j(gpt, 4, 2, 2, 8, OneFOneB, func(j *Job) { j.StageCollectives = true; j.Zero = 1; j.FuseGradAccumulation = true }),
		j(gpt, 2, 2, 2, 8, OneFOneB, func(j *Job) { j.NoScatterGather = true; j.CommandNs = -1 }),
		j(gpt, 2, 2, 2, 8, OneFOneB, func(j *Job) { j.Zero = 2 }),
		j(gpt, 2, 2, 2, 8, OneFOneB, func(j *Job) { j.Zero = 3; j.Recompute = RecomputeFull }),
		j(gpt, 2, 3, 2, 12, Interleaved, func(j *Job) { j.Chunks = 2; j.Zero = 3; j.SequenceParallel = true; j.Recompute = RecomputeSelective }),
		j(llama, 2, 2, 2, 8, OneFOneB, func(j *Job) { j.FlashAttention = true; j.Zero = 3 }),
		j(llama, 1, 3, 2, 12, Interleaved, func(j *Job) { j.Chunks = 2; j.FlashAttention = true; j.Zero = 2 }),
		j(llama, 2, 2, 2, 8, OneFOneB, func(j *Job) { j.FlashAttention = true }),
		j(llama, 1, 3, 1, 6, Interleaved, func(j *Job) { j.Chunks = 2; j.FlashAttention = true; j.SequenceParallel = true }),
		j(llama, 2, 4, 1, 8, OneFOneB, func(j *Job) { j.Recompute = RecomputeSelective }),
		j(gpt, 2, 2, 1, 8, OneFOneB, func(j *Job) { j.SequenceParallel = true; j.Recompute = RecomputeFull }),
	}
}
