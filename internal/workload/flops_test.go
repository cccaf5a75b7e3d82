package workload_test

import (
	"strings"
	"testing"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/workload"
)

// iterationFLOPs counts the matrix-multiply FLOPs of the first step of
// j's history over every rank: 2*m*n*k for each aten.mm ([m,k] x [k,n])
// and each aten.bmm (per batch), times the ranks the command runs on.
func iterationFLOPs(t *testing.T, j workload.Job) int64 {
	t.Helper()
	var total int64
	stepped := eachRecord(t, j, true, func(rec *history.Record) {
		if rec.Msg.Kind != gen.MsgCallFunction {
			return
		}
		c := &rec.Msg.CallFunction
		var flops int64
		switch {
		case strings.HasSuffix(c.Function, ".mm.default"):
			a, w := c.Args.Leaves[0].Shape, c.Args.Leaves[1].Shape
			if a[1] != w[0] {
				t.Fatalf("line %d: mm of %v and %v", rec.Line, a, w)
			}
			flops = 2 * a[0] * a[1] * w[1]
		case strings.HasSuffix(c.Function, ".bmm.default"):
			a, w := c.Args.Leaves[0].Shape, c.Args.Leaves[1].Shape
			if a[0] != w[0] || a[2] != w[1] {
				t.Fatalf("line %d: bmm of %v and %v", rec.Line, a, w)
			}
			flops = 2 * a[0] * a[1] * a[2] * w[2]
		default:
			return
		}
		for i := range rec.Ranks {
			total += flops * rec.Ranks[i].Len()
		}
	})
	if !stepped {
		t.Fatal("no step line")
	}
	return total
}

func preset(t *testing.T, name string) workload.Model {
	m, ok := workload.Preset(name)
	if !ok {
		t.Fatalf("no preset %s", name)
	}
	return m
}

// TestIterationFLOPs checks the histories against the published counts:
// an iteration of a GPT of l layers, hidden size h, sequence s,
// vocabulary V and batch B does 72*B*s*l*h^2*(1 + s/(6h) + V/(12*l*h))
// FLOPs = 72Bslh^2 + 12Bs^2lh + 6BshV (forward, and backward twice the
// forward: Korthikanti et al. 2022, Eq. 7), and with full recomputation
// 4/3 of the layer part (96Bslh^2 + 16Bs^2lh + 6BshV: Narayanan et al.,
// SC'21, Eq. 3 and its appendix):
// 2*m*n*k per GEMM, the attention's QK^T and AV counted as GEMMs. The
// expected figures are worked out by hand below.
func TestIterationFLOPs(t *testing.T) {
	cases := []struct {
		name          string
		job           workload.Job
		want, wantRec int64
	}{
		// megatron-1.7b, l=24, h=2304, s=2048, V=51200, B=1:
		// 72*1*2048*24*2304^2 = 18,786,186,952,704
		// 12*1*2048^2*24*2304 =  2,783,138,807,808
		// 6*1*2048*2304*51200 =  1,449,551,462,400
		// total 23,018,877,222,912; with recomputation the layer part
		// x4/3: 25,048,249,270,272 + 3,710,851,743,744 + 1,449,551,462,400
		// = 30,208,652,476,416.
		{"megatron-1.7b", workload.Job{Model: preset(t, "megatron-1.7b"), TP: 1, PP: 1, DP: 1, MicroBatch: 1, GlobalBatch: 1},
			23_018_877_222_912, 30_208_652_476_416},
		// megatron-3.6b, l=30, h=3072, s=2048, V=51200, B=4 on tp=2,
		// pp=2, dp=2 (two microbatches of 1 per replica):
		// 72*4*2048*30*3072^2 = 166,988,328,468,480
		// 12*4*2048^2*30*3072 =  18,554,258,718,720
		// 6*4*2048*3072*51200 =   7,730,941,132,800
		// total 193,273,528,320,000; recomputed: 222,651,104,624,640 +
		// 24,739,011,624,960 + 7,730,941,132,800 = 255,121,057,382,400.
		{"megatron-3.6b", workload.Job{Model: preset(t, "megatron-3.6b"), TP: 2, PP: 2, DP: 2, MicroBatch: 1, GlobalBatch: 4},
			193_273_528_320_000, 255_121_057_382_400},
		// korthikanti-22b, l=48, h=6144, s=2048, V=51200, B=1 on tp=8:
		// 72*2048*48*6144^2 = 267,181,325,549,568
		// 12*2048^2*48*6144 =  14,843,406,974,976
		// 6*2048*6144*51200 =   3,865,470,566,400
		// total 285,890,203,090,944; recomputed: 356,241,767,399,424 +
		// 19,791,209,299,968 + 3,865,470,566,400 = 379,898,447,265,792.
		{"korthikanti-22b", workload.Job{Model: preset(t, "korthikanti-22b"), TP: 8, PP: 1, DP: 1, MicroBatch: 1, GlobalBatch: 1, SequenceParallel: true},
			285_890_203_090_944, 379_898_447_265_792},
	}
	if testing.Short() {
		cases = cases[:1]
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := c.job
			j.Schedule, j.Steps = workload.OneFOneB, 1
			if got := iterationFLOPs(t, j); got != c.want {
				t.Errorf("no recomputation: %d FLOPs, want %d", got, c.want)
			}
			j.Recompute = workload.RecomputeFull
			if got := iterationFLOPs(t, j); got != c.wantRec {
				t.Errorf("full recomputation: %d FLOPs, want %d", got, c.wantRec)
			}
		})
	}
}

// TestLayerForwardFLOPs: full recomputation repeats each layer's forward
// once per microbatch, so the difference between the two iterations is l
// layer forwards of B sequences: 24*B*s*h^2 + 4*B*s^2*h each (Narayanan et
// al., SC'21, Appendix: QKV 6Bsh^2, attention 4Bs^2h, projection 2Bsh^2,
// MLP 16Bsh^2). For megatron-1.7b (B=1): 24*2048*2304^2 + 4*2048^2*2304 =
// 260,919,263,232 + 38,654,705,664 = 299,573,968,896 per layer.
func TestLayerForwardFLOPs(t *testing.T) {
	j := workload.Job{Model: preset(t, "megatron-1.7b"), TP: 2, PP: 2, DP: 1, MicroBatch: 1, GlobalBatch: 1, Schedule: workload.GPipe, Steps: 1}
	plain := iterationFLOPs(t, j)
	j.Recompute = workload.RecomputeFull
	rec := iterationFLOPs(t, j)
	if got, want := (rec-plain)/24, int64(299_573_968_896); got != want || (rec-plain)%24 != 0 {
		t.Errorf("layer forward %d FLOPs (remainder %d), want %d", got, (rec-plain)%24, want)
	}
}
