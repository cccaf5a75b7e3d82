package predict

import (
	"context"
	"math"
	"testing"

	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/validation"
	"github.com/fastsim/fastsim/internal/workload"
)

// layerMs is the time of one transformer layer's forward and backward
// pass (with its recomputation) on one microbatch of job j, isolated from
// everything else a step does: with d(L, m) the step time of L layers and
// m microbatches, (d(2, 2) - d(2, 1)) - (d(1, 2) - d(1, 1)). The first
// difference leaves out what a step does once (the optimizer, the first
// step's allocations), the second the embedding and the output layer.
func layerMs(t *testing.T, j workload.Job, spec *hardware.Spec) float64 {
	t.Helper()
	step := func(layers, micro int) float64 {
		k := j
		k.Model.Layers = layers
		k.GlobalBatch = micro * j.MicroBatch * j.DP
		r, err := Run(context.Background(), k, spec)
		if err != nil {
			t.Fatal(err)
		}
		return r.StepTimeS * 1e3
	}
	return (step(2, 2) - step(2, 1)) - (step(1, 2) - step(1, 1))
}

// layerGuard bounds the error of a single layer's predicted time against
// Korthikanti et al.'s Table 4: +3.8% to +5.6% in the five
// configurations since PyTorch's dropout forward runs at the rate Dao et
// al. 2022 measured for it (internal/costs dropoutForward: 0.765 of the
// bandwidth, where the curve gave 0.834); +3.5% to +5.3% since
// memory-bound kernels run at their measured
// BabelStream bandwidth (0.834 of the A100's 2,039 GB/s, less for small
// kernels by Little's law) instead of NVIDIA's claimed 95%; -1.0% to
// +1.9% at 95%, with Megatron-LM's gradient accumulation fusion; +1.0% to
// +4.1% before it, with the A100 preset's measured collective efficiency;
// -1.6% to -3.4% before that, -7.0% to -8.6% before GEMMs were priced by
// their shape's wave quantization. The guard is the current worst error
// rounded up, so that a change making a layer worse fails; the errors are
// logged for each configuration.
const layerGuard = 6.0

// TestLayerTimesAgainstKorthikantiTable4 predicts one layer of the 22B
// model (t = 8, b = 4, s = 2048) in the five configurations of
// Korthikanti et al. 2022, Table 4 (baseline with and without
// recomputation, sequence parallelism, selective recomputation, both)
// and compares the forward-plus-backward time with the measured one.
// Table 4's rows also order the configurations, and the prediction must
// keep that order: full recomputation slowest, sequence parallelism
// without recomputation fastest.
func TestLayerTimesAgainstKorthikantiTable4(t *testing.T) {
	pts, err := validation.Load()
	if err != nil {
		t.Fatal(err)
	}
	spec, err := hardware.Load("a100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, id := range []string{"korthikanti-22b-none", "korthikanti-22b-full", "korthikanti-22b-seq", "korthikanti-22b-sel", "korthikanti-22b-seqsel"} {
		var p *validation.Point
		for i := range pts {
			if pts[i].ID == id {
				p = &pts[i]
			}
		}
		if p == nil {
			t.Fatalf("no point %s", id)
		}
		m, ok := p.Get("layer_combined_ms", validation.KindMeasured)
		if !ok {
			t.Fatalf("%s has no layer_combined_ms", id)
		}
		j, err := JobOf(p)
		if err != nil {
			t.Fatal(err)
		}
		ms := layerMs(t, j, spec)
		got[id] = ms
		e := 100 * (ms - m.Value) / m.Value
		t.Logf("%-24s layer forward+backward: Table 4 %5.1f ms, predicted %5.2f ms, error %+5.1f%%", id, m.Value, ms, e)
		if math.Abs(e) > layerGuard {
			t.Errorf("%s: one layer takes %.2f ms, Table 4 measured %.1f ms: %+.1f%% is past %.0f%%", id, ms, m.Value, e, layerGuard)
		}
	}
	if !(got["korthikanti-22b-full"] > got["korthikanti-22b-sel"] && got["korthikanti-22b-sel"] > got["korthikanti-22b-none"] &&
		got["korthikanti-22b-none"] > got["korthikanti-22b-seq"]) {
		t.Errorf("layer times out of Table 4's order (full > selective > none > sequence parallel): %v", got)
	}
}
