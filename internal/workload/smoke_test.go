package workload

import (
	"bytes"
	"testing"

	"github.com/fastsim/fastsim/internal/replay"
)

func TestSmoke(t *testing.T) {
	m := Model{Name: "tiny", Layers: 8, Hidden: 64, Heads: 4, Vocab: 256, Seq: 32, Bias: true, Tied: true, Dtype: "bfloat16"}
	l := Model{Name: "tinyllama", Layers: 8, Hidden: 64, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 256, Seq: 32, Gated: true, Dtype: "bfloat16"}
	for _, j := range []Job{
		{Model: m, TP: 1, PP: 1, DP: 1, MicroBatch: 1, GlobalBatch: 2, Schedule: OneFOneB, Steps: 2},
		{Model: m, TP: 2, PP: 2, DP: 2, MicroBatch: 1, GlobalBatch: 8, Schedule: OneFOneB, Steps: 2},
		{Model: m, TP: 2, PP: 2, DP: 2, MicroBatch: 1, GlobalBatch: 8, Schedule: GPipe, Steps: 2, SequenceParallel: true, Zero: 1},
		{Model: m, TP: 2, PP: 4, DP: 2, MicroBatch: 1, GlobalBatch: 16, Schedule: Interleaved, Chunks: 2, Steps: 2},
		{Model: m, TP: 2, PP: 2, DP: 2, MicroBatch: 1, GlobalBatch: 8, Schedule: OneFOneB, Steps: 2, Zero: 2, Recompute: RecomputeFull},
		{Model: m, TP: 2, PP: 2, DP: 2, MicroBatch: 1, GlobalBatch: 8, Schedule: OneFOneB, Steps: 2, Zero: 3, Recompute: RecomputeSelective},
		{Model: l, TP: 2, PP: 2, DP: 2, MicroBatch: 1, GlobalBatch: 8, Schedule: OneFOneB, Steps: 2, Zero: 3, FlashAttention: true, SequenceParallel: true},
		{Model: l, TP: 1, PP: 1, DP: 4, MicroBatch: 1, GlobalBatch: 8, Schedule: OneFOneB, Steps: 2, Zero: 2, FlashAttention: true},
	} {
		var b bytes.Buffer
		if err := Write(&b, j); err != nil {
			t.Fatalf("write: %v", err)
		}
		n := b.Len()
		res, err := replay.Reader(&b, "x", replay.Options{})
		if err != nil {
			t.Fatalf("%+v: %v", j, err)
		}
		t.Logf("bytes %d exec %d peak %d", n, res.Final.ExecNs, res.Final.PeakBytes)
	}
}
