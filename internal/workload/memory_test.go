package workload_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fastsim/fastsim"
	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/values"
	"github.com/fastsim/fastsim/internal/workload"
)

// tiny is a small GPT (layers of width h = 256, a = 4 heads, s = 64,
// V = 512) so that histories replay in milliseconds.
var tiny = workload.Model{Name: "tiny-gpt", Layers: 4, Hidden: 256, Heads: 4, Vocab: 512, Seq: 64,
	Bias: true, Tied: true, Dtype: "bfloat16"}

// replayPeaks replays j's history (grouped or not) with every command
// finishing before the next is sent (CommandNs 1 s, far beyond any
// runtime), so memory follows each stage's program order, and returns the
// peak of every rank.
func replayPeaks(t *testing.T, j workload.Job, grouped bool) []int64 {
	t.Helper()
	var b bytes.Buffer
	if err := workload.Write(&b, j); err != nil {
		t.Fatal(err)
	}
	sim, err := fastsim.Replay(&b, fastsim.Options{Grouped: grouped})
	if err != nil {
		t.Fatal(err)
	}
	peaks := make([]int64, j.World())
	for _, d := range sim.Report().Devices {
		for r := d.LowestRank; r < d.LowestRank+d.Ranks && r < j.World(); r++ {
			peaks[r] = d.PeakBytes
		}
	}
	return peaks
}

// stage0Peak is the peak memory of a first-stage rank, derived by hand
// from the formulas and the layer's program (GPT with dropout, explicit
// attention, ZeRO 0 or 1, b sequences per microbatch):
//
//	model state    18 bytes per parameter: bf16 weight (2), fp32 main
//	               gradient (4), fp32 master weight and Adam moments (12)
//	               (Rajbhandari et al. 2020, §3.1, with Megatron-LM's fp32
//	               gradient accumulation); ZeRO 1 divides the 12 by dp.
//	               Stage 0 holds the embedding shard V/t*h, the learned
//	               positions s*h and L/p layers of 12h^2/t weights plus
//	               7h/t + 6h small parameters (QKV and fc1 biases split
//	               over t; projection and fc2 biases, norm scales and
//	               shifts whole).
//	activations    held microbatches (p under 1F1B, m under GPipe) x L/p
//	               layers x Korthikanti et al. 2022 Table 2: sbh(34+5as/h)
//	               without parallelism, sbh(10+24/t+5as/(ht)) with tensor
//	               parallelism, sbh(34/t) with sequence parallelism and
//	               selective recomputation, 2sbh with full recomputation;
//	               plus the two norms' fp32 mean and rstd (16sb, /t with
//	               sequence parallelism), which Korthikanti et al. leave
//	               out as small, and the token ids (8sb bytes, int64).
//	pipeline       the last output sent (2sbh/t_sp: its loan ends at the
//	               next send) and the received output gradient (2sbh/t_sp).
//	backward       the first layer backward's working set at its largest,
//	               when fc2's weight gradient is made: the dropout
//	               gradient 2sbh/t_sp, less the mask freed (sbh/t_sp), the
//	               gathered gradient with sequence parallelism (2sbh), fc2's
//	               input gradient 8sbh/t and its weight gradient 8h^2/t.
//	full recompute the last layer's forward again before its backward: its
//	               whole set (34sbh + 5as^2b + 16sb here, less the 2sbh input
//	               already counted).
//
// t_sp is t with sequence parallelism, else 1.
func stage0Peak(j workload.Job) int64 {
	m := j.Model
	s, b, h, a, t := int64(m.Seq), int64(j.MicroBatch), int64(m.Hidden), int64(m.Heads), int64(j.TP)
	V := int64(m.PaddedVocab(j.TP))
	p, L := int64(j.PP), int64(m.Layers)
	tsp := int64(1)
	if j.SequenceParallel {
		tsp = t
	}
	sbh := s * b * h
	emb, layerN := V/t*h+s*h, 12*h*h/t+7*h/t+6*h
	params := emb + L/p*layerN
	state := 18 * params
	if j.Zero == 1 && j.DP > 1 { // each group's optimizer state is a 1/dp shard
		dp := int64(j.DP)
		state = 6*params + 12*((emb+dp-1)/dp+L/p*((layerN+dp-1)/dp))
	}
	held, layer := storedPerLayer(j)
	act := held * (L/p*layer + 8*s*b)
	pipe := 2*sbh/tsp + 2*sbh/tsp
	gathered := int64(0)
	if j.SequenceParallel {
		gathered = 2 * sbh
	}
	bw := 2*sbh/tsp - sbh/tsp + gathered + 8*sbh/t + 8*h*h/t
	if j.Recompute == workload.RecomputeFull {
		bw += 34*sbh + 5*a*s*s*b + 16*s*b - 2*sbh
	}
	return state + act + pipe + bw
}

// storedPerLayer is, for stage 0 of j (1F1B or GPipe), the microbatches
// whose activations it holds at its first backward (p, or m with GPipe)
// and what one layer keeps of one microbatch: Korthikanti et al. 2022's
// Eq. 2 (tensor parallel: 10sbh + 24sbh/t + 5as²b/t), Eq. 4 (sequence
// parallel: 34sbh/t + 5as²b/t), without the attention core when it is
// recomputed (Eq. 6 with sequence parallelism), or the input alone with
// full recomputation (2sbh/t_sp), plus the two norms' fp32 mean and
// reciprocal deviation, 16 bytes a token (on s/t tokens with sequence
// parallelism), which the paper leaves out.
func storedPerLayer(j workload.Job) (held, layer int64) {
	m := j.Model
	s, b, h, a, t := int64(m.Seq), int64(j.MicroBatch), int64(m.Hidden), int64(m.Heads), int64(j.TP)
	p := int64(j.PP)
	tsp := int64(1)
	if j.SequenceParallel {
		tsp = t
	}
	sbh := s * b * h
	held = p
	if j.Schedule == workload.GPipe {
		held = int64(j.Micro())
	}
	switch {
	case j.Recompute == workload.RecomputeFull:
		layer = 2 * sbh / tsp
	case j.SequenceParallel && j.Recompute == workload.RecomputeSelective:
		layer = 34*sbh/t + 16*s*b/t
	case j.SequenceParallel:
		layer = 34*sbh/t + 5*a*s*s*b/t + 16*s*b/t
	case j.Recompute == workload.RecomputeSelective:
		layer = 10*sbh + 24*sbh/t + 16*s*b
	default:
		layer = 10*sbh + 24*sbh/t + 5*a*s*s*b/t + 16*s*b
	}
	return held, layer
}

func TestStage0PeakMemory(t *testing.T) {
	base := workload.Job{Model: tiny, TP: 1, PP: 2, DP: 1, MicroBatch: 2, GlobalBatch: 8,
		Schedule: workload.OneFOneB, Steps: 2, CommandNs: 1_000_000_000}
	cases := []struct {
		name string
		edit func(*workload.Job)
	}{
		{"1f1b", func(*workload.Job) {}},
		{"1f1b-p4", func(j *workload.Job) { j.PP = 4 }},
		{"gpipe", func(j *workload.Job) { j.Schedule = workload.GPipe }},
		{"tp2", func(j *workload.Job) { j.TP = 2 }},
		{"tp2-sp", func(j *workload.Job) { j.TP = 2; j.SequenceParallel = true }},
		{"tp2-sp-selective", func(j *workload.Job) { j.TP = 2; j.SequenceParallel = true; j.Recompute = workload.RecomputeSelective }},
		{"selective", func(j *workload.Job) { j.Recompute = workload.RecomputeSelective }},
		{"full", func(j *workload.Job) { j.Recompute = workload.RecomputeFull }},
		{"dp2", func(j *workload.Job) { j.DP = 2 }},
		{"dp2-zero1", func(j *workload.Job) { j.DP = 2; j.Zero = 1 }},
		{"dp2-zero1-tp2-sp", func(j *workload.Job) { j.DP = 2; j.Zero = 1; j.TP = 2; j.SequenceParallel = true }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := base
			c.edit(&j)
			want := stage0Peak(j)
			modes := []bool{false, true}
			if testing.Short() {
				modes = modes[1:]
			}
			for _, grouped := range modes {
				got := replayPeaks(t, j, grouped)[0]
				if got != want {
					t.Errorf("grouped=%v: stage 0 peak %d bytes, want %d (diff %d)", grouped, got, want, got-want)
				}
			}
		})
	}
}

// discard is a sink that drops every record.
type discard struct{}

func (discard) Write(*history.Record, *values.Registry) error { return nil }

// TestStoredActivations: what EmitStats reports stage 0's layers keep at
// once is its L/p layers' Korthikanti et al. activations (storedPerLayer)
// times the microbatches it holds; and with the interleaved schedule
// (p = 4, v = 3, one layer a chunk, m = 8 microbatches) the
// (p-1)·2 + (v-1)·p + 1 = 15 chunk-microbatches of its first backward,
// which is Korthikanti et al.'s L·(1 + (p-1)/(p·v)) layer-microbatches:
// 12·(1 + 3/12) = 15.
func TestStoredActivations(t *testing.T) {
	base := workload.Job{Model: tiny, TP: 1, PP: 2, DP: 1, MicroBatch: 2, GlobalBatch: 8, Schedule: workload.OneFOneB, Steps: 1}
	for _, edit := range []func(*workload.Job){
		func(*workload.Job) {},
		func(j *workload.Job) { j.Schedule = workload.GPipe },
		func(j *workload.Job) { j.TP = 2 },
		func(j *workload.Job) { j.TP = 2; j.SequenceParallel = true },
		func(j *workload.Job) { j.TP = 2; j.SequenceParallel = true; j.Recompute = workload.RecomputeSelective },
		func(j *workload.Job) { j.TP = 2; j.Recompute = workload.RecomputeSelective },
		func(j *workload.Job) { j.Recompute = workload.RecomputeFull },
	} {
		j := base
		edit(&j)
		st, err := workload.EmitStats(j, discard{})
		if err != nil {
			t.Fatal(err)
		}
		held, layer := storedPerLayer(j)
		if want := held * int64(j.Model.Layers/j.PP) * layer; st.StoredActivations[0] != want {
			t.Errorf("tp %d sp %v recompute %d schedule %d: stage 0 stores %d bytes, want %d x %d layers x %d",
				j.TP, j.SequenceParallel, j.Recompute, j.Schedule, st.StoredActivations[0], held, j.Model.Layers/j.PP, layer)
		}
	}
	j := workload.Job{Model: tiny, TP: 1, PP: 4, DP: 1, MicroBatch: 2, GlobalBatch: 16, Schedule: workload.Interleaved, Chunks: 3, Steps: 1}
	j.Model.Layers = 12
	st, err := workload.EmitStats(j, discard{})
	if err != nil {
		t.Fatal(err)
	}
	_, layer := storedPerLayer(j)
	if want := 15 * layer; st.StoredActivations[0] != want {
		t.Errorf("interleaved: stage 0 stores %d bytes, want 15 x %d", st.StoredActivations[0], layer)
	}
}

// TestInterleavedHeldActivations: with v model chunks per stage, stage 0
// holds (p-1)*2 + (v-1)*p + 1 microbatch-chunks at its first backward
// (Megatron-LM's warm-up forwards plus the first steady-state one;
// Narayanan et al., SC'21, §2.2.2 note the interleaved schedule holds
// more activations). Each holds L/(p*v) layers, so adding p*v layers (one
// more per chunk) adds that many layer activation sets to stage 0's peak,
// plus the 18 bytes a parameter of its v more layers; the transfers
// between stages, the token ids and the backward's working set do not
// change with the depth and cancel out.
func TestInterleavedHeldActivations(t *testing.T) {
	for _, c := range []struct{ p, v, m int }{{3, 2, 6}, {4, 2, 8}, {3, 3, 6}} {
		j := workload.Job{Model: tiny, TP: 1, PP: c.p, DP: 1, MicroBatch: 2, GlobalBatch: 2 * c.m,
			Schedule: workload.Interleaved, Chunks: c.v, Steps: 1, CommandNs: 1_000_000_000}
		j.Model.Layers = c.p * c.v
		shallow := replayPeaks(t, j, true)[0]
		j.Model.Layers = 2 * c.p * c.v
		deep := replayPeaks(t, j, true)[0]
		s, b, h, a := int64(tiny.Seq), int64(2), int64(tiny.Hidden), int64(tiny.Heads)
		layer := 34*s*b*h + 5*a*s*s*b + 16*s*b // Korthikanti et al. Table 2, plus the norms' statistics
		held := int64(min((c.p-1)*2+(c.v-1)*c.p+1, c.m*c.v))
		state := 18 * int64(c.v) * (12*h*h + 7*h + 6*h)
		if got, want := deep-shallow, held*layer+state; got != want {
			t.Errorf("p=%d v=%d m=%d: one more layer per chunk adds %d bytes, want %d held x %d + %d = %d",
				c.p, c.v, c.m, got, held, layer, state, want)
		}
	}
}

// StageParams adds up to the model: on one rank without parallelism the
// stage holds Model.Params; split over two stages with a tied embedding
// the last stage adds its copy of the word embedding. With t shards each
// layer's matrices are 12h²/t (Korthikanti et al.'s 12·L·h²/(t·p) per
// GPU): for h = 64, t = 2, 4 layers on 2 stages, 2 layers x 12·64²/2 =
// 49,152 matrix elements per stage, plus the small parameters.
func TestStageParams(t *testing.T) {
	m := workload.Model{Name: "s", Layers: 4, Hidden: 64, Heads: 4, Vocab: 1000, Seq: 32, Bias: true, Tied: true, Dtype: "bfloat16"}
	one := workload.Job{Model: m, TP: 1, PP: 1, DP: 1, GlobalBatch: 2, MicroBatch: 1, Schedule: workload.OneFOneB}
	l, o := workload.StageParams(one, 0)
	if l+o != m.Params(1) {
		t.Errorf("one rank: %d + %d, want Params %d", l, o, m.Params(1))
	}
	two := one
	two.PP = 2
	l0, o0 := workload.StageParams(two, 0)
	l1, o1 := workload.StageParams(two, 1)
	if vh := int64(m.PaddedVocab(1) * m.Hidden); l0+o0+l1+o1 != m.Params(1)+vh {
		t.Errorf("two stages: %d, want Params + V·h = %d", l0+o0+l1+o1, m.Params(1)+vh)
	}
	tp := two
	tp.TP = 2
	l, _ = workload.StageParams(tp, 1)
	// small parameters per layer: norms 4h, QKV and fc1 biases (3h + 4h)/2,
	// projection and fc2 biases 2h = 4·64 + 224 + 128 = 608.
	if want := int64(2 * (12*64*64/2 + 608)); l != want {
		t.Errorf("t = 2: %d layer parameters per rank, want %d", l, want)
	}
}

// TestFusedGradAccumulation: with Megatron-LM's gradient accumulation
// fusion the weight gradients are written into the fp32 main gradient by
// their GEMMs: stage 0's backward working set loses fc2's 16-bit weight
// gradient (8h²/t bytes, see stage0Peak), and a step makes no
// add_.Tensor for the layers' and the output layer's matrices: one per
// microbatch is left on stage 0, the word embedding's (its gradient is
// not a GEMM), where without fusion each layer adds 4 per microbatch;
// besides those, each layer's forward adds the QKV bias in place, once
// per microbatch.
func TestFusedGradAccumulation(t *testing.T) {
	for _, tp := range []int{1, 2} {
		j := workload.Job{Model: tiny, TP: tp, PP: 2, DP: 1, MicroBatch: 2, GlobalBatch: 8,
			Schedule: workload.OneFOneB, Steps: 2, CommandNs: 1_000_000_000, FuseGradAccumulation: true}
		h, tt := int64(tiny.Hidden), int64(tp)
		if got, want := replayPeaks(t, j, true)[0], stage0Peak(j)-8*h*h/tt; got != want {
			t.Errorf("tp %d: stage 0 peak %d bytes, want %d (diff %d)", tp, got, want, got-want)
		}
		adds, fused := countCalls(t, j, "add_.Tensor"), countCalls(t, j, "mm.out")
		m := int64(j.Micro())
		// 4 layers x 4 matrices + the output layer, per microbatch and step;
		// add_: the embedding's and 4 layers' QKV bias adds.
		wantAdds := 2 * m * (1 + 4)
		if wantFused := 2 * m * (4*4 + 1); adds != wantAdds || fused != wantFused {
			t.Errorf("tp %d: %d add_ and %d fused GEMMs, want %d and %d", tp, adds, fused, wantAdds, wantFused)
		}
	}
}

// countCalls counts the CallFunction commands of j's history whose
// function ends in suffix.
func countCalls(t *testing.T, j workload.Job, suffix string) int64 {
	t.Helper()
	n := int64(0)
	eachRecord(t, j, false, func(rec *history.Record) {
		if rec.Msg.Kind == gen.MsgCallFunction && strings.HasSuffix(rec.Msg.CallFunction.Function, suffix) {
			n++
		}
	})
	return n
}

// TestFP32CrossEntropy: with Job.FP32CrossEntropy the last stage converts
// each microbatch's logits to fp32 and the logits' gradient back: two more
// _to_copy calls per microbatch (4 microbatches, 2 steps: 16), and with a
// vocabulary large enough that the loss makes the stage's peak (16,384:
// 8 MB of fp32 logits a microbatch against about 1 MB of activations a
// layer) the peak grows by at least the log-softmax output's extra 2
// bytes an element of the s·b x V logits (64·2 x 16,384).
func TestFP32CrossEntropy(t *testing.T) {
	j := workload.Job{Model: tiny, TP: 1, PP: 2, DP: 1, MicroBatch: 2, GlobalBatch: 8,
		Schedule: workload.OneFOneB, Steps: 2, CommandNs: 1_000_000_000}
	j.Model.Vocab = 16384
	copies, peak := countCalls(t, j, "_to_copy.default"), replayPeaks(t, j, true)[1]
	j.FP32CrossEntropy = true
	copies32, peak32 := countCalls(t, j, "_to_copy.default"), replayPeaks(t, j, true)[1]
	if copies32-copies != 16 {
		t.Errorf("%d more _to_copy calls, want 16", copies32-copies)
	}
	if min := int64(64 * 2 * 16384 * 2); peak32-peak < min {
		t.Errorf("last stage's peak grows by %d bytes, want at least %d", peak32-peak, min)
	}
}

// TestBiasAndLayoutKernels counts the kernels Megatron-LM's layer runs
// besides its GEMMs and fusions (layer.go qkvBias, biasGrad, and the
// explicit attention's context copy and QKV-gradient cat). tiny has 4
// layers; 4 microbatches a step, 2 steps: 32 layer-microbatches. Each
// runs one QKV bias add_ and one context copy per forward (two forwards
// with full recomputation), and in its backward four bias-gradient sums
// (QKV, projection, fc1, fc2) and one cat of dQ, dK and dV. Without
// biases there are no sums, and the add_ calls left are the word
// embedding's gradient accumulations (one per microbatch on stage 0: 8);
// flash attention has no context copy and no cat.
func TestBiasAndLayoutKernels(t *testing.T) {
	j := workload.Job{Model: tiny, TP: 1, PP: 2, DP: 1, MicroBatch: 2, GlobalBatch: 8,
		Schedule: workload.OneFOneB, Steps: 2, CommandNs: 1_000_000_000, FuseGradAccumulation: true}
	const lm = 32
	check := func(name string, j workload.Job, sums, clones, cats, adds int64) {
		t.Helper()
		got := [4]int64{countCalls(t, j, "sum.dim_IntList"), countCalls(t, j, "clone.default"),
			countCalls(t, j, "cat.default"), countCalls(t, j, "add_.Tensor")}
		if want := [4]int64{sums, clones, cats, adds}; got != want {
			t.Errorf("%s: sums, clones, cats, add_ = %v, want %v", name, got, want)
		}
	}
	check("biases", j, 4*lm, lm, lm, lm+8)
	full := j
	full.Recompute = workload.RecomputeFull
	check("full recomputation", full, 4*lm, 2*lm, lm, 2*lm+8)
	nb := j
	nb.Model.Bias = false
	check("no biases", nb, 0, lm, lm, 8)
	fl := j
	fl.FlashAttention = true
	check("flash attention", fl, 4*lm, 0, 0, lm+8)
}

// TestApexLayerNorm counts the layer norms' kernels. tiny has 4 layers
// of 2 norms and a final norm on the last stage; 4 microbatches a step, 2
// steps: 32 layer-microbatches, 64 layer norm forwards and backwards and
// 8 of the final norm: 72 each; full recomputation runs each layer's
// forward twice: 128 + 8 = 136 forwards. With Job.ApexLayerNorm every one
// of them is Megatron-LM's kernel (forward_affine, backward_affine) and
// none is ATen's.
func TestApexLayerNorm(t *testing.T) {
	j := workload.Job{Model: tiny, TP: 1, PP: 2, DP: 1, MicroBatch: 2, GlobalBatch: 8,
		Schedule: workload.OneFOneB, Steps: 2, CommandNs: 1_000_000_000}
	count := func(j workload.Job) [4]int64 {
		return [4]int64{countCalls(t, j, "aten.native_layer_norm.default"), countCalls(t, j, "aten.native_layer_norm_backward.default"),
			countCalls(t, j, "fused_mix_prec_layer_norm_cuda.forward_affine"), countCalls(t, j, "fused_mix_prec_layer_norm_cuda.backward_affine")}
	}
	for _, c := range []struct {
		rc       workload.Recompute
		forwards int64
	}{{workload.RecomputeNone, 72}, {workload.RecomputeFull, 136}} {
		j.Recompute = c.rc
		j.ApexLayerNorm = false
		if got, want := count(j), [4]int64{c.forwards, 72, 0, 0}; got != want {
			t.Errorf("recompute %d, ATen's: ATen forwards, backwards, Megatron-LM's forwards, backwards = %v, want %v", c.rc, got, want)
		}
		j.ApexLayerNorm = true
		if got, want := count(j), [4]int64{0, 0, c.forwards, 72}; got != want {
			t.Errorf("recompute %d, Megatron-LM's: ATen forwards, backwards, Megatron-LM's forwards, backwards = %v, want %v", c.rc, got, want)
		}
	}
}

// TestKeptBytesIsWhatLayersKeep: KeptBytes, which a search's memory bound
// is made of, is what a layer's forward keeps, for the models with and
// without dropout, gated MLPs and grouped-query attention, explicit and
// flash attention, each recomputation policy, with and without tensor
// and sequence parallelism: stage 0 of a 1F1B job (p = 2, 4 microbatches)
// holds its 2 layers' sets for 2 microbatches at its first backward, as
// EmitStats counts the saved tensors. The GPT case is also Korthikanti et
// al.'s Eq. 2 and 4 (storedPerLayer).
func TestKeptBytesIsWhatLayersKeep(t *testing.T) {
	llama := workload.Model{Name: "tiny-llama", Layers: 4, Hidden: 256, Heads: 4, KVHeads: 2, FFN: 320,
		Vocab: 300, Seq: 64, Gated: true, Dtype: "bfloat16"}
	gpt := tiny
	for _, m := range []workload.Model{gpt, llama} {
		for _, tp := range []int{1, 2} {
			for _, sp := range []bool{false, true} {
				for _, rec := range []workload.Recompute{workload.RecomputeNone, workload.RecomputeSelective, workload.RecomputeFull} {
					for _, flash := range []bool{false, true} {
						if sp && tp == 1 {
							continue
						}
						j := workload.Job{Model: m, TP: tp, PP: 2, DP: 1, MicroBatch: 2, GlobalBatch: 8,
							Schedule: workload.OneFOneB, Steps: 1, SequenceParallel: sp, Recompute: rec, FlashAttention: flash}
						st, err := workload.EmitStats(j, discard{})
						if err != nil {
							t.Fatal(err)
						}
						kept := workload.KeptBytes(&j)
						if got, want := st.StoredActivations[0], 2*2*kept; got != want {
							t.Errorf("%s tp %d sp %v recompute %d flash %v: stage 0 stores %d bytes, KeptBytes gives 2 x 2 x %d = %d",
								m.Name, tp, sp, rec, flash, got, kept, want)
						}
						if m.Name == gpt.Name && !flash {
							if _, layer := storedPerLayer(j); kept != layer {
								t.Errorf("gpt tp %d sp %v recompute %d: KeptBytes %d, Korthikanti et al. %d", tp, sp, rec, kept, layer)
							}
						}
					}
				}
			}
		}
	}
}
