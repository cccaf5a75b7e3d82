package predict

import (
	"context"
	"fmt"
	"testing"

	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/workload"
)

// passLayouts are layouts of every schedule, recomputation policy, ZeRO
// stage, sequence parallelism on and off, attention and MLP kind and
// several tensor- and pipeline-parallel splits, with several layers per
// stage so that recorded passes are replayed (the layouts of
// internal/workload's TestTemplatesWriteTheSameRecords).
func passLayouts() []workload.Job {
	gpt := workload.Model{Name: "tiny-gpt", Layers: 12, Hidden: 128, Heads: 4, Vocab: 300, Seq: 32, Bias: true, Tied: true, Dtype: "bfloat16"}
	llama := workload.Model{Name: "tiny-llama", Layers: 12, Hidden: 128, Heads: 4, KVHeads: 2, FFN: 192, Vocab: 300, Seq: 32, Gated: true, Dtype: "bfloat16"}
	j := func(m workload.Model, tp, pp, dp, gb int, s workload.Schedule, edit func(*workload.Job)) workload.Job {
		job := workload.Job{Model: m, TP: tp, PP: pp, DP: dp, MicroBatch: 1, GlobalBatch: gb, Schedule: s, Steps: 2}
		if edit != nil {
			edit(&job)
		}
		return job
	}
	return []workload.Job{
		j(gpt, 1, 1, 1, 2, workload.OneFOneB, nil),
		j(gpt, 2, 2, 1, 4, workload.OneFOneB, nil),
		j(gpt, 2, 3, 2, 12, workload.GPipe, func(j *workload.Job) { j.SequenceParallel = true; j.Zero = 1 }),
		j(gpt, 2, 3, 2, 12, workload.Interleaved, func(j *workload.Job) { j.Chunks = 2; j.Recompute = workload.RecomputeSelective }),
		j(gpt, 2, 2, 2, 8, workload.OneFOneB, func(j *workload.Job) { j.Recompute = workload.RecomputeFull; j.FP32CrossEntropy = true }),
		j(gpt, 2, 2, 2, 8, workload.OneFOneB, func(j *workload.Job) {
			j.GradReduce = workload.GradAfterBackward
			j.HalfGradReduce = true
			j.BlockingP2P = true
		}),
		j(gpt, 4, 2, 2, 8, workload.OneFOneB, func(j *workload.Job) { j.StageCollectives = true; j.Zero = 1; j.FuseGradAccumulation = true }),
		j(gpt, 2, 2, 2, 8, workload.OneFOneB, func(j *workload.Job) { j.NoScatterGather = true }),
		j(gpt, 2, 2, 2, 8, workload.OneFOneB, func(j *workload.Job) { j.Zero = 2 }),
		j(gpt, 2, 2, 2, 8, workload.OneFOneB, func(j *workload.Job) { j.Zero = 3; j.Recompute = workload.RecomputeFull }),
		j(gpt, 2, 3, 2, 12, workload.Interleaved, func(j *workload.Job) {
			j.Chunks = 2
			j.Zero = 3
			j.SequenceParallel = true
			j.Recompute = workload.RecomputeSelective
		}),
		j(llama, 2, 2, 2, 8, workload.OneFOneB, func(j *workload.Job) { j.FlashAttention = true; j.Zero = 3 }),
		j(llama, 1, 3, 2, 12, workload.Interleaved, func(j *workload.Job) { j.Chunks = 2; j.FlashAttention = true; j.Zero = 2 }),
		j(llama, 2, 2, 2, 8, workload.OneFOneB, func(j *workload.Job) { j.FlashAttention = true }),
		j(llama, 1, 3, 1, 6, workload.Interleaved, func(j *workload.Job) { j.Chunks = 2; j.FlashAttention = true; j.SequenceParallel = true }),
		j(llama, 2, 4, 1, 8, workload.OneFOneB, func(j *workload.Job) { j.Recompute = workload.RecomputeSelective }),
		j(gpt, 2, 2, 1, 8, workload.OneFOneB, func(j *workload.Job) { j.SequenceParallel = true; j.Recompute = workload.RecomputeFull }),
	}
}

// outcome is everything a replay of a job reports, device by device.
type outcome struct {
	res   replay.Result
	peaks []string // per device: lowest rank, ranks, peak, final bytes
}

// replayOutcome replays j on spec, its passes applied command by command
// (perCommand) or as steps where they can be.
func replayOutcome(t *testing.T, j workload.Job, spec *hardware.Spec, perCommand bool) outcome {
	t.Helper()
	j.CommandNs = -1
	j.GPUsPerHost = spec.Host.GPUsPerHost
	if err := j.Check(); err != nil {
		t.Fatal(err)
	}
	model, err := costs.NewWithHardware(costs.Config{}, spec)
	if err != nil {
		t.Fatal(err)
	}
	var o outcome
	res, _, err := replayJob(context.Background(), j, model, func(opt *replay.Options) {
		opt.PerCommand = perCommand
		opt.Inspect = func(eng *sched.Engine, _ *replay.Result) error {
			eng.DevicePeaks(func(low, ranks, peak int64) {
				_, final := eng.DeviceBytes(low)
				o.peaks = append(o.peaks, fmt.Sprintf("device %d (%d ranks): peak %d, final %d", low, ranks, peak, final))
			})
			return nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	o.res = *res
	return o
}

// TestPassStepsChangeNothing: replaying a layout's recorded layer passes
// as single steps gives what applying their commands one by one gives:
// every step's time and peak, the peak device and its final memory, every
// device's peak and final memory, the commands, records by kind and tasks
// counted.
func TestPassStepsChangeNothing(t *testing.T) {
	spec, err := hardware.Preset("a100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	steps := int64(0)
	for _, j := range passLayouts() {
		name := fmt.Sprintf("%s tp%d pp%d dp%d %v zero%d recompute%d sp%v", j.Model.Name, j.TP, j.PP, j.DP, j.Schedule, j.Zero, j.Recompute, j.SequenceParallel)
		one := replayOutcome(t, j, spec, true)
		fast := replayOutcome(t, j, spec, false)
		if one.res.PassSteps != 0 {
			t.Errorf("%s: %d passes applied as steps with PerCommand", name, one.res.PassSteps)
		}
		steps += fast.res.PassSteps
		a, b := one.res, fast.res
		a.Wall, b.Wall = 0, 0
		a.PassSteps, a.PassesRecorded, b.PassSteps, b.PassesRecorded = 0, 0, 0, 0
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s: results differ:\ncommand by command %+v\npasses as steps    %+v", name, a, b)
		}
		if fmt.Sprint(one.peaks) != fmt.Sprint(fast.peaks) {
			t.Errorf("%s: devices differ:\ncommand by command %v\npasses as steps    %v", name, one.peaks, fast.peaks)
		}
		// Passes that lend (ZeRO 3's gathered matrices) are written
		// command by command; every other layout applies its passes.
		if j.Zero < 3 && fast.res.PassSteps == 0 {
			t.Errorf("%s: no pass applied as a step", name)
		}
		t.Logf("%s: %d commands; %d passes applied as steps, %d recorded", name, b.Commands, fast.res.PassSteps, fast.res.PassesRecorded)
	}
	if steps == 0 {
		t.Error("no pass was applied as a step")
	}
}
