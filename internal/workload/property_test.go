package workload_test

import (
	"bytes"
	"testing"

	"github.com/fastsim/fastsim"
	"github.com/fastsim/fastsim/internal/workload"
)

// layouts covers every schedule, recomputation policy, ZeRO stage,
// sequence parallelism, flash and explicit attention, and both MLP kinds
// on worlds of up to 32 ranks.
func layouts() []workload.Job {
	gpt := tiny
	gpt.Layers = 6
	llama := workload.Model{Name: "tiny-llama", Layers: 6, Hidden: 128, Heads: 4, KVHeads: 2, FFN: 192,
		Vocab: 300, Seq: 32, Gated: true, Dtype: "bfloat16"}
	j := func(m workload.Model, tp, pp, dp, gb int, s workload.Schedule, edit func(*workload.Job)) workload.Job {
		job := workload.Job{Model: m, TP: tp, PP: pp, DP: dp, MicroBatch: 1, GlobalBatch: gb, Schedule: s, Steps: 2}
		if edit != nil {
			edit(&job)
		}
		return job
	}
	return []workload.Job{
		j(gpt, 1, 1, 1, 2, workload.OneFOneB, nil),
		j(gpt, 2, 2, 2, 8, workload.OneFOneB, nil),
		j(gpt, 2, 3, 2, 12, workload.GPipe, func(j *workload.Job) { j.SequenceParallel = true; j.Zero = 1 }),
		j(gpt, 2, 3, 2, 12, workload.Interleaved, func(j *workload.Job) { j.Chunks = 2; j.Recompute = workload.RecomputeSelective }),
		j(gpt, 2, 2, 4, 16, workload.OneFOneB, func(j *workload.Job) { j.Zero = 2; j.Recompute = workload.RecomputeFull }),
		j(gpt, 4, 2, 4, 16, workload.OneFOneB, func(j *workload.Job) { j.Zero = 3; j.SequenceParallel = true }),
		j(gpt, 2, 2, 4, 16, workload.OneFOneB, func(j *workload.Job) { j.StageCollectives = true; j.Zero = 1 }),
		j(llama, 2, 2, 2, 8, workload.OneFOneB, func(j *workload.Job) { j.FlashAttention = true; j.Zero = 3 }),
		j(llama, 1, 3, 2, 12, workload.Interleaved, func(j *workload.Job) { j.Chunks = 2; j.FlashAttention = true; j.Zero = 2 }),
	}
}

// TestGroupedEqualsUngrouped replays each layout grouped and ungrouped
// and compares the step reports and every rank's peak.
func TestGroupedEqualsUngrouped(t *testing.T) {
	all := layouts()
	if testing.Short() { // the race detector's run: every other layout
		for i := 0; 2*i < len(all); i++ {
			all[i] = all[2*i]
		}
		all = all[:(len(all)+1)/2]
	}
	for _, j := range all {
		var b bytes.Buffer
		if err := workload.Write(&b, j); err != nil {
			t.Fatalf("%+v: %v", j, err)
		}
		data := b.Bytes()
		var reps [2]fastsim.Report
		var steps [2][]fastsim.Report
		var peaks [2][]int64
		for i, grouped := range []bool{false, true} {
			sim, err := fastsim.Replay(bytes.NewReader(data), fastsim.Options{Grouped: grouped})
			if err != nil {
				t.Fatalf("tp=%d pp=%d dp=%d grouped=%v: %v", j.TP, j.PP, j.DP, grouped, err)
			}
			reps[i], steps[i] = sim.Report(), sim.Steps()
			peaks[i] = make([]int64, j.World())
			for _, d := range reps[i].Devices {
				for r := d.LowestRank; r < d.LowestRank+d.Ranks; r++ {
					peaks[i][r] = d.PeakBytes
				}
			}
		}
		if reps[0].ExecNs != reps[1].ExecNs || reps[0].PeakBytes != reps[1].PeakBytes || len(steps[0]) != j.Steps || len(steps[1]) != j.Steps {
			t.Errorf("tp=%d pp=%d dp=%d: ungrouped %+v, grouped %+v", j.TP, j.PP, j.DP, reps[0], reps[1])
		}
		for i := range steps[0] {
			if steps[0][i].ExecNs != steps[1][i].ExecNs || steps[0][i].PeakBytes != steps[1][i].PeakBytes {
				t.Errorf("tp=%d pp=%d dp=%d step %d: ungrouped %+v, grouped %+v", j.TP, j.PP, j.DP, i, steps[0][i], steps[1][i])
			}
		}
		// Nothing leaks: every rank peaks as high after one step as after two.
		one := j
		one.Steps = 1
		first := replayPeaks(t, one, true)
		for r := range peaks[0] {
			if first[r] != peaks[1][r] {
				t.Errorf("tp=%d pp=%d dp=%d rank %d: peak %d after one step, %d after two", j.TP, j.PP, j.DP, r, first[r], peaks[1][r])
			}
			if peaks[0][r] != peaks[1][r] || peaks[0][r] == 0 {
				t.Errorf("tp=%d pp=%d dp=%d rank %d: ungrouped peak %d, grouped %d", j.TP, j.PP, j.DP, r, peaks[0][r], peaks[1][r])
			}
		}
	}
}
