package fastsim

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

// TestSearchAgreesWithPredict: the API's search over a small space ranks
// what Predict finds for each of its layouts (two code paths: the search
// evaluates layouts itself), and the pruned search's best layout is the
// best of every layout simulated.
func TestSearchAgreesWithPredict(t *testing.T) {
	m, err := LoadModel("megatron-1.7b")
	if err != nil {
		t.Fatal(err)
	}
	m.Layers, m.Seq = 8, 256 // a small history, the preset's widths
	searchAgreesWithPredict(t, m, SearchSpace{Model: m, World: 8, Batch: 16, Zeros: "0,1", Recomputes: "none,full", Prune: true})
	// Megatron-LM's mechanisms of 2022 (bf16) and 2021 (fp16), which
	// Predict takes as fields of the same names.
	searchAgreesWithPredict(t, m, SearchSpace{Model: m, World: 8, Batch: 16, Zeros: "0", Recomputes: "none,full", Prune: true,
		GradReduce: "after-backward", FuseGradAccumulation: true, BlockingP2P: true, FP32CrossEntropy: true})
	searchAgreesWithPredict(t, m, SearchSpace{Model: m, World: 8, Batch: 16, Zeros: "0", Recomputes: "full", Prune: true,
		HalfGradReduce: true, FP16Grads: true, ApexLayerNorm: true, NoScatterGather: true})
}

func searchAgreesWithPredict(t *testing.T, m Model, space SearchSpace) {
	t.Helper()
	hw, err := LoadHardware("a100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	rs, stats, err := Search(context.Background(), space, hw, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 || len(rs) > stats.Simulated || stats.Enumerated != stats.PrunedMemory+stats.PrunedBound+stats.Simulated {
		t.Fatalf("%d results, stats %+v", len(rs), stats)
	}
	all := space
	all.Prune = false
	every, allStats, err := Search(context.Background(), all, hw, 2)
	if err != nil {
		t.Fatal(err)
	}
	if allStats.Simulated != allStats.Enumerated || allStats.Enumerated != stats.Enumerated {
		t.Fatalf("unpruned stats %+v, pruned %+v", allStats, stats)
	}
	if every[0].Layout != rs[0].Layout || every[0].StepTimeNs != rs[0].StepTimeNs {
		t.Errorf("pruned best %v (%d ns), unpruned best %v (%d ns)", rs[0].Layout, rs[0].StepTimeNs, every[0].Layout, every[0].StepTimeNs)
	}
	for i, r := range rs {
		if i > 0 && r.Fits && rs[i-1].Fits && r.StepTimeNs < rs[i-1].StepTimeNs {
			t.Errorf("result %d (%v) is faster than the one ranked before it", i, r.Layout)
		}
		tf := Transformer{Model: m, TP: r.TP, PP: r.PP, DP: r.DP, MicroBatch: space.Batch / (r.DP * r.Micro), GlobalBatch: space.Batch,
			Schedule: r.Schedule, Recompute: r.Recompute, SequenceParallel: r.SequenceParallel, Zero: r.Zero}
		// The space's mechanisms, as Predict's fields of the same names.
		tf.GradReduce, tf.HalfGradReduce, tf.FuseGradAccumulation, tf.BlockingP2P = space.GradReduce, space.HalfGradReduce, space.FuseGradAccumulation, space.BlockingP2P
		tf.FP32CrossEntropy, tf.ApexLayerNorm, tf.FP16Grads, tf.NoScatterGather = space.FP32CrossEntropy, space.ApexLayerNorm, space.FP16Grads, space.NoScatterGather
		p, err := Predict(context.Background(), tf, hw)
		if err != nil {
			t.Fatalf("%v: %v", r.Layout, err)
		}
		if math.Abs(p.StepTimeS-r.StepTimeS) > 1e-9*r.StepTimeS || p.Fits != r.Fits {
			t.Errorf("%v: search step %.9f s (fits %v), Predict %.9f s (fits %v)", r.Layout, r.StepTimeS, r.Fits, p.StepTimeS, p.Fits)
		}
	}
	t.Logf("%d layouts: %d pruned by memory, %d by the bound, %d simulated; best %v, %.4f s", stats.Enumerated, stats.PrunedMemory, stats.PrunedBound, stats.Simulated, rs[0].Layout, rs[0].StepTimeS)
}

// TestSearchRefuses: what Search needs is named.
func TestSearchRefuses(t *testing.T) {
	hw, m := presets(t, "a100-80gb", "megatron-1.7b")
	for what, c := range map[string]struct {
		s  SearchSpace
		hw *Hardware
	}{
		"no hardware":  {SearchSpace{Model: m, World: 8, Batch: 8}, nil},
		"no model":     {SearchSpace{World: 8, Batch: 8}, hw},
		"toy":          {SearchSpace{Workload: "toy", Model: m, World: 8, Batch: 8}, hw},
		"no world":     {SearchSpace{Model: m, Batch: 8}, hw},
		"a zero twice": {SearchSpace{Model: m, World: 8, Batch: 8, Zeros: "1,1"}, hw},
		"a bad peak":   {SearchSpace{Model: m, World: 8, Batch: 8, PeakTFLOPS: -5}, hw},
		// Megatron-LM's local DDP had no ZeRO.
		"local DDP with ZeRO": {SearchSpace{Model: m, World: 8, Batch: 8, Zeros: "0,1", GradReduce: "after-backward"}, hw},
		"a bad reduction":     {SearchSpace{Model: m, World: 8, Batch: 8, GradReduce: "never"}, hw},
		// Sequence parallelism needs tp > 1, and MaxTP 1 allows tp 1
		// only: no layout.
		"no layout": {SearchSpace{Model: m, World: 8, Batch: 8, MaxTP: 1, SequenceParallels: "true"}, hw},
	} {
		_, _, err := Search(context.Background(), c.s, c.hw, 1)
		if err == nil {
			t.Errorf("%s: no error", what)
			continue
		}
		t.Logf("%s: %v", what, err)
	}
}

// TestSearchDeadlineAtAMillionRanks: a search of 2^20 GPUs notices its
// deadline inside the bounds' probes, which write millions of records a
// layer there (one collective per data-parallel replica). It took 20 s
// to return after a deadline of 100 ms on a 2-core machine; now well
// under one. The bound of 5 s leaves room for a slow machine.
func TestSearchDeadlineAtAMillionRanks(t *testing.T) {
	hw, m := presets(t, "a100-80gb", "gpt3-175b")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, _, err := Search(ctx, SearchSpace{Model: m, World: 1 << 20, Batch: 1 << 20, Prune: true}, hw, 1)
	if took := time.Since(began); !errors.Is(err, context.DeadlineExceeded) || took > 5*time.Second {
		t.Errorf("Search with a deadline of 100 ms returned after %v: %v", took.Round(time.Millisecond), err)
	}
	if err != nil && err.Error() != context.DeadlineExceeded.Error() {
		t.Errorf("Search past its deadline: %q, want the context's own error", err)
	}
}
