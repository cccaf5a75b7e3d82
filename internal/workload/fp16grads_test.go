package workload_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/workload"
)

// kernelSums counts the first step's calls of each op (by clean name, the
// overload dropped) and sums the bytes the a100-80gb roofline prices them
// at; ns is the time of the longest call of op nsOf.
func kernelSums(t *testing.T, j workload.Job, nsOf string) (count map[string]int, bytes map[string]float64, ns int64) {
	t.Helper()
	spec, err := hardware.Load("a100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	r := costs.NewRoofline(spec)
	count, bytes = map[string]int{}, map[string]float64{}
	eachRecord(t, j, true, func(rec *history.Record) {
		if rec.Msg.Kind != gen.MsgCallFunction {
			return
		}
		c := &rec.Msg.CallFunction
		name := strings.TrimPrefix(c.Function, "torch.ops.")
		if i := strings.LastIndexByte(name, '.'); i > len("aten.") && !strings.HasSuffix(name, ".out") {
			name = name[:i]
		}
		e := r.Estimate(c, name)
		if name == nsOf {
			ns = max(ns, e.Ns())
		}
		count[name]++
		bytes[name] += e.Bytes
	})
	return count, bytes, ns
}

// TestFP16GradsKernels: the kernels Job.FP16Grads adds, counted and
// priced by hand on tiny (4 layers, h 256, V 512, s 64, biases, tied
// embedding, learned positions) with tp 1, pp 1, dp 2, one microbatch of
// one sequence a step.
//
// Parameter groups (one rank): each layer 256x768 + 256x256 + 256x1024 +
// 1024x256 matrices and 3,328 small parameters (2 norms of 2x256, the
// QKV bias 768, fc1's 1024, two 256 biases) = 196,608 + 65,536 +
// 262,144 + 262,144 + 3,328 = 789,760; the embedding 512x256 + 64x256
// positions = 147,456; the head's final norm 512. In all 4 x 789,760 +
// 147,456 + 512 = 3,307,008 parameters.
//
// PyTorch DDP (overlap): each group's 16-bit gradient multiplied into its
// bucket by 1/dp (mul.out: 2 bytes read, 2 written) and copied back (copy_:
// 2 + 2): 6 calls each, 4 x 3,307,008 = 13,228,032 bytes each. The fp16
// optimizer: _to_copy to fp32 (2 read, 4 written) 19,842,048 bytes; the
// unscale reads and writes each main gradient (8 bytes) plus found_inf
// (read and written, 4 + 4) and inv_scale (4): 26,456,076 bytes; one
// zeros of found_inf. No _foreach_zero_ of the gradients, and with one
// microbatch no matrix's gradient is added to: only the tied word
// embedding's second contribution (the embedding's after the head's),
// one add_ of 512x256 16-bit elements, read twice and written once: 6 x
// 131,072 = 786,432 bytes.
//
// Time of one layer's copy into its bucket: 3,159,040 bytes; the
// a100-80gb memory efficiency between its points [2,652,349, 0.66696]
// and [5,304,697, 0.741067] is 0.66696 x (3,159,040 / 2,652,349)^(ln
// (0.741067 / 0.66696) / ln 2) = 0.684921, so 3,159,040 / (2,039 x
// 0.684921) = 2,262.02 ns, plus the preset's 2,190 ns launch: 4,452.02,
// rounded up: 4,453 ns.
func TestFP16GradsKernels(t *testing.T) {
	base := workload.Job{Model: tiny, TP: 1, PP: 1, DP: 2, MicroBatch: 1, GlobalBatch: 2, Schedule: workload.OneFOneB,
		Steps: 1, HalfGradReduce: true, FP16Grads: true}
	count, bytes, ns := kernelSums(t, base, "aten.mul.out")
	want := []struct {
		op    string
		n     int
		bytes float64
	}{
		{"aten.mul.out", 6, 13228032},
		{"aten.copy_", 6, 13228032},
		{"aten._to_copy", 6 + 2, 19842048 + 2*1024}, // and the input tokens' two int64 copies (64 x 8 bytes read and written)
		{"aten._amp_foreach_non_finite_check_and_unscale_", 1, 26456076},
		{"aten.add_", 1 + 4, 786432 + 4*(64*768*2*2+768*2)}, // and the 4 QKV bias adds
		{"aten._foreach_zero_", 0, 0},
	}
	for _, w := range want {
		if count[w.op] != w.n || bytes[w.op] != w.bytes {
			t.Errorf("%s: %d calls of %.0f bytes, want %d of %.0f", w.op, count[w.op], bytes[w.op], w.n, w.bytes)
		}
	}
	if ns != 4453 {
		t.Errorf("a layer's copy into its DDP bucket takes %d ns, want 4,453", ns)
	}

	// Without data parallelism there is no DDP and nothing to copy.
	dp1 := base
	dp1.DP, dp1.GlobalBatch = 1, 1
	count, _, _ = kernelSums(t, dp1, "")
	if count["aten.mul.out"] != 0 || count["aten.copy_"] != 0 {
		t.Errorf("dp 1: %d mul.out and %d copy_ calls, want none", count["aten.mul.out"], count["aten.copy_"])
	}

	// Megatron-LM's local DDP (after the backward): each group flattened
	// (cat: 2 + 2 bytes), divided in place (2 + 2) and copied back (2 +
	// 2): 13,228,032 bytes each, 6 calls.
	local := base
	local.GradReduce = workload.GradAfterBackward
	count, bytes, _ = kernelSums(t, local, "")
	for _, op := range []string{"aten.cat", "aten.div_", "aten.copy_"} {
		got := bytes[op]
		if op == "aten.cat" { // less the attention's context copies: 4 layers x 3 of 4x64x64 16-bit elements, read and written
			got -= 4 * 3 * 4 * 64 * 64 * 2 * 2
		}
		if got != 13228032 || count[op] < 6 {
			t.Errorf("local DDP: %s %d calls of %.0f bytes, want 6 of 13,228,032", op, count[op], got)
		}
	}

	// Two microbatches: the second adds each matrix's gradient (4 a layer,
	// and the head's and the embedding's both to the tied word embedding),
	// 16-bit, read twice and written once: with the first microbatch's
	// tied add, 16 layer matrices (786,432 elements a layer) and 3 word
	// embedding adds (131,072 each).
	two := base
	two.GlobalBatch = 4
	count, bytes, _ = kernelSums(t, two, "")
	added := 4*786432 + 3*131072.0
	qkvBias := 2 * 4 * (64*768*2*2 + 768*2.0)
	if count["aten.add_"] != 16+3+8 || bytes["aten.add_"] != 6*added+qkvBias {
		t.Errorf("two microbatches: %d add_ calls of %.0f bytes, want 27 of %.0f", count["aten.add_"], bytes["aten.add_"], 6*added+qkvBias)
	}
}

// TestDDPCopyBackBeforeEmbeddingSync: with PyTorch DDP's bucket copies
// and a word embedding tied between the first and the last of two
// stages, every bucket is copied back into its gradient (at the end of
// the backward) before the embedding's gradients are all-reduced between
// the stages, the last reduction over "pp" of a step: a copy back after
// it would overwrite the synchronized gradient with the bucket.
func TestDDPCopyBackBeforeEmbeddingSync(t *testing.T) {
	j := workload.Job{Model: tiny, TP: 1, PP: 2, DP: 2, MicroBatch: 1, GlobalBatch: 2, Schedule: workload.OneFOneB,
		Steps: 1, HalfGradReduce: true, FP16Grads: true}
	if !j.Model.Tied {
		t.Fatal("the model must tie its word embedding for the test to mean anything")
	}
	n, lastCopy, lastPP := 0, -1, -1
	eachRecord(t, j, true, func(rec *history.Record) {
		n++
		m := &rec.Msg
		switch {
		case m.Kind == gen.MsgCallFunction && strings.HasPrefix(m.CallFunction.Function, "torch.ops.aten.copy_"):
			lastCopy = n
		case m.Kind == gen.MsgReduce && slices.Contains(m.Reduce.Dims, "pp"):
			lastPP = n
		}
	})
	if lastCopy < 0 || lastPP < 0 {
		t.Fatalf("no DDP copy back (%d) or no reduction over pp (%d) in the step", lastCopy, lastPP)
	}
	if lastCopy > lastPP {
		t.Errorf("record %d copies a bucket back after the embedding's all-reduce between the stages (record %d)", lastCopy, lastPP)
	}
}

// TestFP16GradsLifetime: with Job.FP16Grads a group's 16-bit gradient
// lives as PyTorch's param.grad does under Megatron-LM's 2021 fp16
// optimizer: autograd makes it at the step's first gradient, so it is
// created (its empty) after the step's first backward kernel (the
// loss's, nll_loss_backward), and the optimizer frees it right after
// copying it to fp32 (model_param.grad = None after .float(), in
// _copy_model_grads_to_main_grads), so it is deleted after that copy
// and before the next unscale kernel, in every step, the last too. The
// gradients are found as the optimizer finds them: the 16-bit inputs of
// its copies to fp32 (_to_copy, one a group). Two steps of tiny with tp
// 1, dp 2 (PyTorch DDP's copies): pp 1, six groups a step (the embedding
// with its positions, four layers, the final norm); pp 2, eight a step
// (on stage 0 the word embedding, the positions and two layers; on stage
// 1 two layers, the final norm and the tied word embedding's copy). The
// tied copies' gradients have the same ids on both stages (the reduction
// between them names one), so the copy dropped first, stage 0's (its
// optimizer is written first), is deleted with the other, at stage 1's
// drop: after its own unscale, but before the next step's first forward.
// A gradient is told apart by its id and its stage (the first rank of
// its records).
func TestFP16GradsLifetime(t *testing.T) {
	type key struct{ id, stage int64 }
	for _, c := range []struct {
		pp, perStep, late int
	}{{1, 6, 0}, {2, 8, 1}} {
		j := workload.Job{Model: tiny, TP: 1, PP: c.pp, DP: 2, MicroBatch: 1, GlobalBatch: 4, Schedule: workload.OneFOneB,
			Steps: 2, HalfGradReduce: true, FP16Grads: true}
		made := map[key][2]int{} // index and step of the empty that made it
		deleted := map[key]int{} // index of its deletion
		used := map[key]int{}    // step of the optimizer's copy of it
		copied := map[key]int{}  // index of that copy
		var unscales []int       // indexes of the unscale kernels
		firstBw, firstFwd := map[int]int{}, map[int]int{}
		step, i := 0, -1
		allRecords(t, j, func(rec *history.Record) bool {
			i++
			if rec.IsStep {
				step++
				return true
			}
			stage := rec.Ranks[0].Offset
			switch rec.Msg.Kind {
			case gen.MsgCallFunction:
				f := &rec.Msg.CallFunction
				switch f.Function {
				case "torch.ops.aten.empty.memory_format":
					for _, x := range f.Result.Leaves {
						made[key{x.ID, stage}] = [2]int{i, step}
					}
				case "torch.ops.aten.nll_loss_backward.default":
					if _, ok := firstBw[step]; !ok {
						firstBw[step] = i
					}
				case "torch.ops.aten.embedding.default":
					if _, ok := firstFwd[step]; !ok {
						firstFwd[step] = i
					}
				case "torch.ops.aten._to_copy.default":
					if a := f.Args.Leaves; len(a) == 1 && a[0].Dtype == "bfloat16" && f.Result.Leaves[0].Dtype == "float32" {
						used[key{a[0].ID, stage}] = step
						copied[key{a[0].ID, stage}] = i
					}
				case "torch.ops.aten._amp_foreach_non_finite_check_and_unscale_.default":
					unscales = append(unscales, i)
				}
			case gen.MsgDeleteRefs:
				for _, r := range rec.Ranks { // a tied copy's: both stages in one record
					for _, id := range rec.Msg.DeleteRefs.Refs {
						deleted[key{id, r.Offset}] = i
					}
				}
			}
			return true
		})
		perStep, late := map[int]int{}, map[int]int{}
		for id, k := range used {
			m, ok := made[id]
			d, gone := deleted[id]
			if !ok {
				t.Errorf("pp %d: gradient %v was not made by an empty", c.pp, id)
				continue
			}
			perStep[k]++
			if m[1] != k || m[0] < firstBw[k] {
				t.Errorf("pp %d: step %d's gradient %v made at record %d of step %d; want after the step's first backward kernel, record %d", c.pp, k, id, m[0], m[1], firstBw[k])
			}
			next := -1 // the first unscale after the copy
			for _, u := range unscales {
				if u > copied[id] {
					next = u
					break
				}
			}
			if gone && d > next && next >= 0 && id.stage == 0 && c.pp > 1 {
				// The tied copy dropped first: deleted with the other,
				// before the next step's first forward.
				late[k]++
				if f, ok := firstFwd[k+1]; ok && d > f {
					t.Errorf("pp %d: step %d's gradient %v deleted at record %d, after the next step's first forward, record %d", c.pp, k, id, d, f)
				}
				continue
			}
			if !gone || d < copied[id] || next < 0 || d > next {
				t.Errorf("pp %d: step %d's gradient %v deleted %v at record %d; want after its copy to fp32, record %d, before the next unscale, record %d", c.pp, k, id, gone, d, copied[id], next)
			}
		}
		if perStep[0] != c.perStep || perStep[1] != c.perStep || late[0] != c.late || late[1] != c.late {
			t.Errorf("pp %d: %v made and %v deleted late a step; want %d and %d a step", c.pp, perStep, late, c.perStep, c.late)
		}
	}
}

// TestTiedGradNoLeak: the tied word embedding's 16-bit gradient is made
// and freed once a step on both of its stages, so more steps raise no
// rank's peak: every rank peaks at the same bytes after 2 steps and
// after 5. A copy whose deletion did not free it (one DeleteRefs per
// stage for an id both hold: the first ends the id, the second finds
// nothing) grows its stage by one gradient a step. Tiny with tp 1 and
// dp 2, PyTorch DDP or local DDP, pp 2 under 1F1B, and with 8 layers pp 4
// interleaved (2 chunks).
func TestTiedGradNoLeak(t *testing.T) {
	tiny8 := tiny
	tiny8.Layers = 8
	for _, j := range []workload.Job{
		{Model: tiny, TP: 1, PP: 2, DP: 2, MicroBatch: 1, GlobalBatch: 4, Schedule: workload.OneFOneB, HalfGradReduce: true, FP16Grads: true},
		{Model: tiny, TP: 1, PP: 2, DP: 2, MicroBatch: 1, GlobalBatch: 4, Schedule: workload.OneFOneB, HalfGradReduce: true, FP16Grads: true, GradReduce: workload.GradAfterBackward},
		{Model: tiny8, TP: 1, PP: 4, DP: 2, MicroBatch: 1, GlobalBatch: 16, Schedule: workload.Interleaved, Chunks: 2, HalfGradReduce: true, FP16Grads: true},
	} {
		if !j.Model.Tied {
			t.Fatal("the model must tie its word embedding for the test to mean anything")
		}
		j.Steps = 2
		two := replayPeaks(t, j, true)
		j.Steps = 5
		five := replayPeaks(t, j, true)
		for r := range two {
			if two[r] != five[r] {
				t.Errorf("pp %d %v: rank %d peaks at %d bytes after 2 steps, %d after 5", j.PP, j.GradReduce, r, two[r], five[r])
				break
			}
		}
	}
}
