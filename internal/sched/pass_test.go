package sched_test

import (
	"testing"

	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/workload"
)

// TestPassEffectsRepeat: every later run of a recorded pass, applied
// command by command, has the effect recorded from its first run,
// exactly (times relative to the pass's start, memory events, what it
// leaves of its inputs and its own tensors): the effect does not depend
// on when the pass starts.
func TestPassEffectsRepeat(t *testing.T) {
	m := workload.Model{Name: "tiny", Layers: 8, Hidden: 128, Heads: 4, Vocab: 300, Seq: 32, Bias: true, Tied: true, Dtype: "bfloat16"}
	jobs := []workload.Job{
		{Model: m, TP: 2, PP: 2, DP: 1, MicroBatch: 1, GlobalBatch: 4, Schedule: workload.OneFOneB, Steps: 2},
		{Model: workload.Model{Name: "tiny12", Layers: 12, Hidden: 128, Heads: 4, Vocab: 300, Seq: 32, Bias: true, Tied: true, Dtype: "bfloat16"}, TP: 2, PP: 3, DP: 2, MicroBatch: 1, GlobalBatch: 12, Schedule: workload.Interleaved, Chunks: 2, Recompute: workload.RecomputeSelective, SequenceParallel: true, Zero: 2, Steps: 2},
		{Model: m, TP: 1, PP: 2, DP: 2, MicroBatch: 1, GlobalBatch: 8, Schedule: workload.GPipe, Recompute: workload.RecomputeFull, Steps: 2},
	}
	for i, j := range jobs {
		j.CommandNs = -1
		h, err := workload.HeaderOf(j)
		if err != nil {
			t.Fatal(err)
		}
		checked, differ := 0, 0
		sched.CheckPasses(func(k sched.PassKey, same bool) {
			checked++
			if !same {
				differ++
				if differ == 1 {
					t.Errorf("job %d: pass %+v: the effect seen differs from the one recorded", i, k)
				}
			}
		})
		_, err = replay.Typed(h, "job", func(s *replay.Sim) error { return workload.Emit(j, s) },
			replay.Options{Grouped: true, Controller: sched.ControllerNone})
		sched.CheckPasses(nil)
		if err != nil {
			t.Fatal(err)
		}
		if checked == 0 {
			t.Errorf("job %d: no pass run again", i)
		}
	}
}
