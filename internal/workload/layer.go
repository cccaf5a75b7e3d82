package workload

import "github.com/fastsim/fastsim/internal/values"

// ATen functions, by their qualified overload names.
const (
	opView        = "torch.ops.aten.view.default"
	opMM          = "torch.ops.aten.mm.default"
	opBMM         = "torch.ops.aten.bmm.default"
	opLayerNorm   = "torch.ops.aten.native_layer_norm.default"
	opLayerNormBw = "torch.ops.aten.native_layer_norm_backward.default"
	opDropout     = "torch.ops.aten.native_dropout.default"
	opDropoutBw   = "torch.ops.aten.native_dropout_backward.default"
	opSoftmax     = "torch.ops.aten._softmax.default"
	opSoftmaxBw   = "torch.ops.aten._softmax_backward_data.default"
	opFlash       = "torch.ops.aten._scaled_dot_product_flash_attention.default"
	opFlashBw     = "torch.ops.aten._scaled_dot_product_flash_attention_backward.default"
	opGelu        = "torch.ops.aten.gelu.default"
	opGeluBw      = "torch.ops.aten.gelu_backward.default"
	opSilu        = "torch.ops.aten.silu.default"
	opSiluBw      = "torch.ops.aten.silu_backward.default"
	opMul         = "torch.ops.aten.mul.Tensor"
	opCat         = "torch.ops.aten.cat.default"
	opAdd         = "torch.ops.aten.add.Tensor"
	opAddInPlace  = "torch.ops.aten.add_.Tensor"
	opEmbedding   = "torch.ops.aten.embedding.default"
	opEmbeddingBw = "torch.ops.aten.embedding_dense_backward.default"
	opLogSoftmax  = "torch.ops.aten._log_softmax.default"
	opAmax        = "torch.ops.aten.amax.default"
	opSumDim      = "torch.ops.aten.sum.dim_IntList"
	opClone       = "torch.ops.aten.clone.default"
	opLogSumExp   = "torch.ops.aten.logsumexp.default"
	opGather      = "torch.ops.aten.gather.default"
	opLogSmBw     = "torch.ops.aten._log_softmax_backward_data.default"
	opNLL         = "torch.ops.aten.nll_loss_forward.default"
	opNLLBw       = "torch.ops.aten.nll_loss_backward.default"
	opToCopy      = "torch.ops.aten._to_copy.default"
	opOnesLike    = "torch.ops.aten.ones_like.default"
	opZeros       = "torch.ops.aten.zeros.default"
	opEmpty       = "torch.ops.aten.empty.memory_format"
	opZero        = "torch.ops.aten.zero_.default"
	opAdam        = "torch.ops.aten._fused_adam_.default"
	opForeachCopy = "torch.ops.aten._foreach_copy_.default"
	opForeachNorm = "torch.ops.aten._foreach_norm.Scalar"
	opDivInPlace  = "torch.ops.aten.div_.Scalar"
	opMMOut       = "torch.ops.aten.mm.out"
	opMulOut      = "torch.ops.aten.mul.out"
	opCopyInto    = "torch.ops.aten.copy_.default"
	// Megatron-LM's fp16 optimizer unscales the fp32 main gradients and
	// checks them for inf and NaN with this (megatron/optimizer/optimizer.py
	// at 6985e58).
	opUnscale = "torch.ops.aten._amp_foreach_non_finite_check_and_unscale_.default"
)

// Megatron-LM's own layer norm of 2021, a C++ extension called from
// Python by these paths (megatron/model/fused_layer_norm.py at 6985e58).
const (
	opApexLayerNorm   = "fused_mix_prec_layer_norm_cuda.forward_affine"
	opApexLayerNormBw = "fused_mix_prec_layer_norm_cuda.backward_affine"
)

// dropP is the hidden and attention dropout of the GPT models (Radford et
// al. 2019 and Megatron-LM's default --hidden-dropout and
// --attention-dropout, 0.1); Llama trains without dropout.
const dropP = 0.1

const lnEps = 1e-5

// saved is what one layer's forward keeps for its backward (one
// microbatch). Korthikanti et al. 2022, §4.1, list the same tensors:
// the norms' inputs, the projection inputs, Q, K and V, the softmax output,
// its dropout mask and output, the GELU input and the dropout masks.
//
// A generated forward's tensors are held whole (savedTensors). A
// replayed one's are compact: each made tensor's id and storage, and the
// recording whose results they are, which holds every other field of
// them, shared by all its replays; only the results that are the pass's
// inputs are held whole. The backward reads them tens of microbatches
// later, from memory gone cold: about 9 cache lines where 25 tensors are
// 35 (bench/RESULTS.md, "One effect for every stage").
type saved struct {
	*savedTensors       // nil while compact
	core          bool  // the attention core's tensors are held
	kept          int64 // bytes(), as the forward left it (layerForward)

	from *template                     // compact: the recording; outs[1+i] is field i
	ids  [nSaved][2]int64              // compact: a made field's id and storage
	in   [maxSavedInputs]values.Tensor // compact: the fields that are inputs, in order
}

// nSaved is how many tensors a saved set has (savedTensors' fields);
// maxSavedInputs how many of them a compact set holds whole: the layer's
// input x, the only one in every layout; a set with more is held whole.
const (
	nSaved         = 25
	maxSavedInputs = 1
)

// savedTensors are a saved set's tensors, held whole.
type savedTensors struct {
	x, mu1, rs1, ln1          values.Tensor
	qkv, q, k, v              values.Tensor
	p, pd, amask              values.Tensor // explicit attention
	o, lse                    values.Tensor // flash attention
	ctx                       values.Tensor // [s*b, h/t], the output projection's input
	m1, x2, mu2, rs2, ln2, m2 values.Tensor
	h1, act                   values.Tensor // fc1 output and the activation (fc2 input)
	gate, up, sg              values.Tensor // gated MLP: views of h1 and silu(gate)
}

// bytes is the memory the layer keeps for its backward: its saved
// tensors' storages, each counted once (Q, K and V are views of one
// buffer).
func (sv *saved) bytes() int64 {
	var seen [32]int64
	n, total := 0, int64(0)
	// Pointers, not copies: the tensors are read, and copying 25 of
	// them twice a layer showed in profiles.
	for _, t := range [...]*values.Tensor{&sv.x, &sv.mu1, &sv.rs1, &sv.ln1, &sv.qkv, &sv.q, &sv.k, &sv.v, &sv.p, &sv.pd, &sv.amask,
		&sv.o, &sv.lse, &sv.ctx, &sv.m1, &sv.x2, &sv.mu2, &sv.rs2, &sv.ln2, &sv.m2, &sv.h1, &sv.act, &sv.gate, &sv.up, &sv.sg} {
		if t.ID == 0 {
			continue
		}
		dup := false
		for _, s := range seen[:n] {
			dup = dup || s == t.Storage
		}
		if !dup {
			seen[n] = t.Storage
			n++
			total += t.NBytes
		}
	}
	return total
}

// KeptBytes is what one layer's forward keeps of one microbatch for its
// backward on a rank of j: the storages saved.bytes() counts once the
// forward has run, from j's dimensions alone (a search bounds a layout's
// memory with it before emitting anything). For the GPT models without
// sequence parallelism it is Korthikanti et al. 2022's Eq. 2, 10sbh +
// 24sbh/t + 5as²b/t, plus the two norms' fp32 mean and reciprocal
// deviation (16 bytes a token, which the paper leaves out); the same
// tensors give the other shapes: a model without dropout keeps no masks
// and no dropped copy of the scores, grouped-query attention a narrower
// QKV buffer, a gated MLP two fc1 outputs and the SiLU's, flash attention
// its output and log-sum-exp instead of the scores.
func KeptBytes(j *Job) int64 {
	d := dimsOf(j)
	tok := d.sp * d.b // tokens of the sequence-parallel region on this rank
	if j.Recompute == RecomputeFull {
		return 2 * tok * d.h // the layer's input alone
	}
	// The input, both norms' outputs and the residual between them (bf16
	// [sp, b, h]), and their statistics.
	kept := 4*2*tok*d.h + 2*8*tok
	kept += 2 * d.sb * d.qkvW // the QKV buffer (Q, K and V are views of it)
	kept += 2 * d.sb * d.fc1W // fc1's output (gate and up are views of it)
	kept += 2 * d.sb * d.f    // the activation, fc2's input
	if j.Model.Gated {
		kept += 2 * d.sb * d.f // SiLU(gate), before its product with up
	}
	if d.drop {
		kept += 2 * tok * d.h // the two hidden dropout masks, a byte an element
	}
	bh := d.b * d.at
	switch {
	case d.flash:
		kept += 2*bh*d.s*d.hd + 4*bh*d.s // the output (the context is a view of it) and log-sum-exp
	default:
		kept += 2 * d.sb * (d.h / d.t) // the context, copied to [s, b, h/t]
		if j.Recompute != RecomputeSelective {
			kept += 2 * bh * d.s * d.s // the softmax output
			if d.drop {
				kept += 3 * bh * d.s * d.s // its dropped copy and the mask
			}
		}
	}
	return kept
}

// dims are a job's tensor dimensions on one rank.
type dims struct {
	s, b, h, t, sp, sb int64
	at, gt, hd, qkvW   int64 // heads and KV heads per shard, head width, QKV width per shard
	f, fc1W            int64 // MLP width per shard, fc1 output width per shard
	vt                 int64 // padded vocabulary per shard
	drop               bool
	flash              bool
}

func dimsOf(j *Job) dims {
	m := &j.Model
	t := int64(j.TP)
	d := dims{s: int64(m.Seq), b: int64(j.MicroBatch), h: int64(m.Hidden), t: t}
	d.sp = d.s
	if j.SequenceParallel {
		d.sp = d.s / t
	}
	d.sb = d.s * d.b
	d.at, d.gt, d.hd = int64(m.Heads)/t, int64(m.kv())/t, int64(m.HeadDim())
	d.qkvW = (d.at + 2*d.gt) * d.hd
	d.f = int64(m.ffn()) / t
	d.fc1W = d.f
	if m.Gated {
		d.fc1W = 2 * d.f
	}
	d.vt = int64(m.PaddedVocab(j.TP)) / t
	d.drop = m.Bias
	d.flash = j.FlashAttention
	return d
}

// view is a reshape or transpose (a view in PyTorch: no data moves, and
// the replay gives aten.view no time).
func (g *generator) view(st *stage, src values.Tensor, shape ...int64) values.Tensor {
	v := g.e.alias(src, src.Dtype, shape...)
	g.e.call(st.all, st.main, opView, []any{src, shape}, []any{v})
	return v
}

func (g *generator) op(st *stage, fn string, args []any, results ...values.Tensor) {
	res := make([]any, len(results))
	for i, r := range results {
		res[i] = r
	}
	g.e.call(st.all, st.main, fn, args, res)
}

// free deletes tensors on the stage's ranks (zero ids are skipped).
func (g *generator) free(st *stage, ts ...values.Tensor) {
	n := 0
	for _, t := range ts {
		if t.ID != 0 {
			ts[n] = t
			n++
		}
	}
	if n > 0 {
		g.e.del(st.all, ts[:n]...)
	}
}

// tpAllReduce sums partial results over each tensor-parallel group, in
// place (a row-parallel linear's forward, a column-parallel linear's
// backward: Shoeybi et al. 2019, Fig. 3's g and f).
func (g *generator) tpAllReduce(st *stage, x values.Tensor) values.Tensor {
	if g.d.t == 1 {
		return x
	}
	r := g.e.alias(x, x.Dtype, x.Shape...)
	g.e.reduceEach(st.tpGroups, dimTP, st.main, r, x, "sum", false)
	return r
}

// tpReduceScatter sums over each tensor-parallel group and keeps this
// shard's part of the sequence (sequence parallelism's g).
func (g *generator) tpReduceScatter(st *stage, x values.Tensor, shape ...int64) values.Tensor {
	r := g.e.tensor(x.Dtype, shape...)
	g.e.reduceEach(st.tpGroups, dimTP, st.main, r, x, "sum", true)
	return r
}

// tpAllGather gathers the sequence shards of each tensor-parallel group
// (sequence parallelism's f).
func (g *generator) tpAllGather(st *stage, x values.Tensor, shape ...int64) values.Tensor {
	r := g.e.tensor(x.Dtype, shape...)
	g.e.reduceEach(st.tpGroups, dimTP, st.main, r, x, "stack", false)
	return r
}

// rowOut finishes a row-parallel linear's output [s*b, h]: the all-reduce,
// or with sequence parallelism the reduce-scatter, back to [sp, b, h].
func (g *generator) rowOut(st *stage, o values.Tensor) values.Tensor {
	d := &g.d
	if g.j.SequenceParallel && d.t > 1 {
		r := g.tpReduceScatter(st, o, d.sp, d.b, d.h)
		g.free(st, o)
		return r
	}
	v := g.view(st, o, d.s, d.b, d.h)
	r := g.tpAllReduce(st, v)
	if r.ID != v.ID {
		g.free(st, v)
	}
	g.free(st, o)
	return r
}

// gatherSeq makes a norm's output [sp, b, h] whole along the sequence for
// a column-parallel linear and returns it as [s*b, h]; extra is the
// gathered tensor to free after use (zero without sequence parallelism).
func (g *generator) gatherSeq(st *stage, x values.Tensor) (flat, extra values.Tensor) {
	d := &g.d
	if g.j.SequenceParallel && d.t > 1 {
		extra = g.tpAllGather(st, x, d.s, d.b, d.h)
		x = extra
	}
	return g.view(st, x, d.sb, d.h), extra
}

// layerNorm runs native_layer_norm over the last dimension; the affine
// parameters live in the layer's small-parameter buffer. With
// Job.ApexLayerNorm it is Megatron-LM's own kernel of 2021 instead,
// fused_mix_prec_layer_norm_cuda.forward_affine (same arguments and
// results; the op table prices it at its measured bandwidth).
func (g *generator) layerNorm(st *stage, x values.Tensor) (out, mean, rstd values.Tensor) {
	d := &g.d
	out = g.e.tensor(bf16, d.sp, d.b, d.h)
	mean = g.e.tensor(f32, d.sp, d.b, 1)
	rstd = g.e.tensor(f32, d.sp, d.b, 1)
	op := opLayerNorm
	if g.j.ApexLayerNorm {
		op = opApexLayerNorm
	}
	g.op(st, op, []any{x, []int64{d.h}, nil, nil, lnEps}, out, mean, rstd)
	return
}

// normBackward is a layer norm's backward pass: the gradient of its input
// x [sp, b, h] from the output gradient dy, with the forward's mean mu and
// reciprocal deviation rs, in one native_layer_norm_backward (the norm's
// weight and bias gradients, two sums over the rows, are left out: a
// one-pass kernel makes them as it goes, as apex's persistent
// FastLayerNorm, which Megatron-LM runs from 2022 where it is installed,
// does: MixedFusedLayerNorm in megatron/model/fused_layer_norm.py at
// 2755bcb). With Job.ApexLayerNorm it is Megatron-LM's own kernel of
// 2021, fused_mix_prec_layer_norm_cuda.backward_affine(dout, mean,
// invvar, input, normalized_shape, weight, bias, eps), which returns the
// weight and bias gradients too and reads dout and input twice, once for
// them and once for the input gradient (cuda_layer_norm_gradient in
// megatron/fused_kernels/layer_norm_cuda_kernel.cu at 6985e58); the op
// table prices it at its measured bandwidth.
func (g *generator) normBackward(st *stage, dy, x, mu, rs values.Tensor) values.Tensor {
	d := &g.d
	dx := g.e.tensor(bf16, d.sp, d.b, d.h)
	if g.j.ApexLayerNorm {
		dw, db := g.e.tensor(bf16, d.h), g.e.tensor(bf16, d.h)
		g.e.call(st.all, st.main, opApexLayerNormBw, []any{dy, mu, rs, x, []int64{d.h}, nil, nil, lnEps}, []any{dx, dw, db})
		g.free(st, dw, db)
		return dx
	}
	g.e.call(st.all, st.main, opLayerNormBw, []any{dy, x, []int64{d.h}, mu, rs, nil, nil, []any{true, false, false}}, []any{dx, nil, nil})
	return dx
}

// dropout runs native_dropout on x when the model has dropout; the mask is
// kept for the backward.
func (g *generator) dropout(st *stage, x values.Tensor) (out, mask values.Tensor) {
	if !g.d.drop {
		return x, values.Tensor{}
	}
	out = g.e.tensor(bf16, x.Shape...)
	mask = g.e.tensor(boolT, x.Shape...)
	g.op(st, opDropout, []any{x, dropP, true}, out, mask)
	return out, mask
}

// qkvBias adds the QKV projection's bias to its product in a kernel of
// its own, as Megatron-LM's column-parallel linear does when the bias is
// not handed on to a fusion (the QKV projection; fc1's goes to the bias-GeLU
// fusion, the row-parallel ones' to bias-dropout-add): at 6985e58 (2021)
// ColumnParallelLinear calls F.linear on the 3-d [s, b, h] input, which in
// the PyTorch of that time (1.8, NGC 20.12) is matmul followed by
// output.add_(bias) for inputs of more than two dimensions
// (aten/src/ATen/native/Linear.cpp); at 2755bcb (2022)
// LinearWithGradAccumulationAndAsyncCommunication.forward is
// torch.matmul(...) then output = output + bias. Models without biases
// skip it, and so do ZeRO-3 jobs, whose parameters are DeepSpeed's shards.
func (g *generator) qkvBias(st *stage, w *layerW, qkv values.Tensor) {
	if !g.j.Model.Bias {
		return
	}
	if w.small.ID == 0 { // ZeRO 3 (DeepSpeed's, not Megatron-LM's model code)
		return
	}
	b := g.view(st, w.small, g.d.qkvW)
	g.e.call(st.all, st.main, opAddInPlace, []any{qkv, b}, []any{qkv}, qkv)
	g.free(st, b)
}

// biasGrad is a bias's gradient, the sum of the output gradient dy over
// its rows, in a reduction kernel of its own: Megatron-LM's
// column-parallel linear computes grad_output.sum(dim=0) for the QKV
// bias (2755bcb; at 6985e58 autograd's reduction of F.linear's broadcast
// bias), fc1's bias gradient is the bias-GeLU backward's output summed to
// the bias's shape (GeLUFunction.backward returns it twice), and the
// row-parallel biases, added by bias-dropout-add as bias.expand_as(residual),
// get the sum of that expansion's gradient (megatron/model/transformer.py,
// megatron/model/fused_bias_gelu.py, megatron/mpu/layers.py at 6985e58 and
// 2755bcb). Models without biases skip it.
func (g *generator) biasGrad(st *stage, dy values.Tensor) {
	if !g.j.Model.Bias {
		return
	}
	n := dy.Shape[len(dy.Shape)-1]
	dims := make([]int64, len(dy.Shape)-1)
	for i := range dims {
		dims[i] = int64(i)
	}
	db := g.e.tensor(bf16, n)
	g.op(st, opSumDim, []any{dy, dims, false}, db)
	g.free(st, db)
}

// forward runs one transformer layer on x [sp, b, h]: norm, QKV
// projection (column-parallel), attention, output projection
// (row-parallel), dropout and residual; norm, fc1 (column-parallel),
// activation, fc2 (row-parallel), dropout and residual. It returns the
// output and what the backward needs; with keep false only x is kept
// (full recomputation).
func (g *generator) forward(st *stage, w *layerW, x values.Tensor, keep bool) (values.Tensor, *saved) {
	d := &g.d
	sv := &saved{savedTensors: &savedTensors{x: x}, core: true}
	sv.ln1, sv.mu1, sv.rs1 = g.layerNorm(st, x)
	in, extra := g.gatherSeq(st, sv.ln1)
	W := g.weights(st, w, false)
	sv.qkv = g.e.tensor(bf16, d.sb, d.qkvW)
	g.op(st, opMM, []any{in, W[0]}, sv.qkv)
	g.free(st, in, extra)
	g.qkvBias(st, w, sv.qkv)
	sv.q = g.view(st, sv.qkv, d.b, d.at, d.s, d.hd)
	sv.k = g.view(st, sv.qkv, d.b, d.gt, d.s, d.hd)
	sv.v = g.view(st, sv.qkv, d.b, d.gt, d.s, d.hd)
	var ctx values.Tensor
	if d.flash {
		ctx = g.flash(st, sv)
	} else {
		ctx = g.attentionCore(st, sv)
		if g.j.Recompute == RecomputeSelective {
			g.free(st, sv.p, sv.pd, sv.amask)
			sv.p, sv.pd, sv.amask = values.Tensor{}, values.Tensor{}, values.Tensor{}
			sv.core = false
		}
	}
	if d.flash {
		sv.ctx = g.view(st, ctx, d.sb, d.h/d.t)
	} else {
		// Megatron-LM's explicit attention returns its context
		// [b·heads, s, hd] as [s, b, h/t] through
		// permute(2, 0, 1, 3).contiguous(): a copy
		// (megatron/model/transformer.py ParallelAttention.forward at
		// 6985e58, CoreAttention.forward at 2755bcb).
		sv.ctx = g.e.tensor(bf16, d.sb, d.h/d.t)
		g.op(st, opClone, []any{ctx}, sv.ctx)
	}
	g.free(st, ctx)
	po := g.e.tensor(bf16, d.sb, d.h)
	g.op(st, opMM, []any{sv.ctx, W[1]}, po)
	r := g.rowOut(st, po)
	dr, m1 := g.dropout(st, r)
	sv.m1 = m1
	sv.x2 = g.e.tensor(bf16, d.sp, d.b, d.h)
	g.op(st, opAdd, []any{x, dr}, sv.x2)
	g.free(st, r)
	if dr.ID != r.ID {
		g.free(st, dr)
	}
	sv.ln2, sv.mu2, sv.rs2 = g.layerNorm(st, sv.x2)
	in, extra = g.gatherSeq(st, sv.ln2)
	sv.h1 = g.e.tensor(bf16, d.sb, d.fc1W)
	g.op(st, opMM, []any{in, W[2]}, sv.h1)
	g.free(st, in, extra)
	if g.j.Model.Gated {
		sv.gate = g.view(st, sv.h1, d.sb, d.f)
		sv.up = g.view(st, sv.h1, d.sb, d.f)
		sv.sg = g.e.tensor(bf16, d.sb, d.f)
		g.op(st, opSilu, []any{sv.gate}, sv.sg)
		sv.act = g.e.tensor(bf16, d.sb, d.f)
		g.op(st, opMul, []any{sv.sg, sv.up}, sv.act)
	} else {
		sv.act = g.e.tensor(bf16, d.sb, d.f)
		g.op(st, opGelu, []any{sv.h1, "tanh"}, sv.act)
	}
	o2 := g.e.tensor(bf16, d.sb, d.h)
	g.op(st, opMM, []any{sv.act, W[3]}, o2)
	g.releaseWeights(st, w, W)
	r = g.rowOut(st, o2)
	dr, m2 := g.dropout(st, r)
	sv.m2 = m2
	y := g.e.tensor(bf16, d.sp, d.b, d.h)
	g.op(st, opAdd, []any{sv.x2, dr}, y)
	g.free(st, r)
	if dr.ID != r.ID {
		g.free(st, dr)
	}
	if !keep {
		g.dropSaved(st, sv, false)
		sv = &saved{savedTensors: &savedTensors{x: x}}
	}
	return y, sv
}

// attentionCore is the explicit path: scores = Q K^T, softmax, dropout,
// context = P V; it returns the context [b*heads/t, s, hd].
func (g *generator) attentionCore(st *stage, sv *saved) values.Tensor {
	d := &g.d
	bh := d.b * d.at
	q3 := g.view(st, sv.q, bh, d.s, d.hd)
	kt := g.view(st, sv.k, bh, d.hd, d.s)
	sc := g.e.tensor(bf16, bh, d.s, d.s)
	g.op(st, opBMM, []any{q3, kt}, sc)
	g.free(st, q3, kt)
	sv.p = g.e.tensor(bf16, bh, d.s, d.s)
	g.op(st, opSoftmax, []any{sc, -1, false}, sv.p)
	g.free(st, sc)
	if d.drop {
		sv.pd, sv.amask = g.e.tensor(bf16, bh, d.s, d.s), g.e.tensor(boolT, bh, d.s, d.s)
		g.op(st, opDropout, []any{sv.p, dropP, true}, sv.pd, sv.amask)
	} else {
		sv.pd = g.view(st, sv.p, bh, d.s, d.s)
	}
	v3 := g.view(st, sv.v, bh, d.s, d.hd)
	ctx := g.e.tensor(bf16, bh, d.s, d.hd)
	g.op(st, opBMM, []any{sv.pd, v3}, ctx)
	g.free(st, v3)
	return ctx
}

// flash is _scaled_dot_product_flash_attention (causal): it keeps the
// output and the log-sum-exp, nothing of size s^2.
func (g *generator) flash(st *stage, sv *saved) values.Tensor {
	d := &g.d
	p := 0.0
	if d.drop {
		p = dropP
	}
	sv.o = g.e.tensor(bf16, d.b, d.at, d.s, d.hd)
	sv.lse = g.e.tensor(f32, d.b, d.at, d.s)
	g.e.call(st.all, st.main, opFlash, []any{sv.q, sv.k, sv.v, p, true, false},
		[]any{sv.o, sv.lse, nil, nil, d.s, d.s, nil, nil, nil})
	return g.view(st, sv.o, d.b*d.at, d.s, d.hd)
}

// dropSaved frees a layer's saved tensors (all but x unless withX).
func (g *generator) dropSaved(st *stage, sv *saved, withX bool) {
	x := values.Tensor{}
	if withX {
		x = sv.x
	}
	g.free(st, x, sv.mu1, sv.rs1, sv.ln1, sv.qkv, sv.q, sv.k, sv.v, sv.p, sv.pd, sv.amask, sv.o, sv.lse, sv.ctx,
		sv.m1, sv.x2, sv.mu2, sv.rs2, sv.ln2, sv.m2, sv.h1, sv.act, sv.gate, sv.up, sv.sg)
}

// linearBackward is a linear layer's input and weight gradients:
// dX = dY W^T and dW = X^T dY, the latter accumulated into the main
// gradient. dy and x are [s*b, out] and [s*b, in].
func (g *generator) linearBackward(st *stage, w *layerW, slot int, WT, dy, x values.Tensor) values.Tensor {
	d := &g.d
	in := x.Shape[1]
	dx := g.e.tensor(bf16, d.sb, in)
	g.op(st, opMM, []any{dy, WT}, dx)
	xt := g.view(st, x, in, d.sb)
	g.weightGrad(st, w, slot, xt, dy)
	g.free(st, xt)
	return dx
}

// backward runs layer w's backward from the output gradient dy [sp, b, h]
// and returns the input gradient; it frees what the forward kept. The
// caller starts the layer's gradient reduction after it (layerDone).
func (g *generator) backward(st *stage, w *layerW, dy values.Tensor, sv *saved) values.Tensor {
	d := &g.d
	if g.j.Recompute == RecomputeFull {
		var y values.Tensor
		y, sv = g.forward(st, w, sv.x, true)
		g.free(st, y)
	}
	WT := g.weights(st, w, true)
	// MLP
	dd2 := dy
	if d.drop {
		dd2 = g.e.tensor(bf16, d.sp, d.b, d.h)
		g.op(st, opDropoutBw, []any{dy, sv.m2, 1 / (1 - dropP)}, dd2)
		g.free(st, sv.m2)
	}
	g.biasGrad(st, dd2)
	dflat, extra := g.gatherSeq(st, dd2)
	actIn := sv.act
	da := g.linearBackward(st, w, 3, WT[3], dflat, actIn)
	g.free(st, dflat, extra, sv.act)
	if dd2.ID != dy.ID {
		g.free(st, dd2)
	}
	var dh1 values.Tensor
	if g.j.Model.Gated {
		dup := g.e.tensor(bf16, d.sb, d.f)
		g.op(st, opMul, []any{da, sv.sg}, dup)
		dsg := g.e.tensor(bf16, d.sb, d.f)
		g.op(st, opMul, []any{da, sv.up}, dsg)
		dgate := g.e.tensor(bf16, d.sb, d.f)
		g.op(st, opSiluBw, []any{dsg, sv.gate}, dgate)
		dh1 = g.e.tensor(bf16, d.sb, d.fc1W)
		g.op(st, opCat, []any{tlist{dgate, dup}, 1}, dh1)
		g.free(st, dup, dsg, dgate, sv.sg, sv.gate, sv.up)
	} else {
		dh1 = g.e.tensor(bf16, d.sb, d.f)
		g.op(st, opGeluBw, []any{da, sv.h1, "tanh"}, dh1)
	}
	g.free(st, da, sv.h1)
	g.biasGrad(st, dh1)
	in, extra := g.gatherSeq(st, sv.ln2)
	dl2 := g.linearBackward(st, w, 2, WT[2], dh1, in)
	g.free(st, dh1, in, extra, sv.ln2)
	dl2r := g.columnGradOut(st, dl2)
	dx2 := g.normBackward(st, dl2r, sv.x2, sv.mu2, sv.rs2)
	g.free(st, dl2r, sv.x2, sv.mu2, sv.rs2)
	dmid := g.e.tensor(bf16, d.sp, d.b, d.h)
	g.op(st, opAdd, []any{dx2, dy}, dmid)
	g.free(st, dx2, dy)
	// attention
	dd1 := dmid
	if d.drop {
		dd1 = g.e.tensor(bf16, d.sp, d.b, d.h)
		g.op(st, opDropoutBw, []any{dmid, sv.m1, 1 / (1 - dropP)}, dd1)
		g.free(st, sv.m1)
	}
	g.biasGrad(st, dd1)
	dflat, extra = g.gatherSeq(st, dd1)
	dctx := g.linearBackward(st, w, 1, WT[1], dflat, sv.ctx)
	g.free(st, dflat, extra, sv.ctx)
	if dd1.ID != dmid.ID {
		g.free(st, dd1)
	}
	dqkv := g.coreBackward(st, sv, dctx)
	g.free(st, dctx)
	g.biasGrad(st, dqkv)
	in, extra = g.gatherSeq(st, sv.ln1)
	dl1 := g.linearBackward(st, w, 0, WT[0], dqkv, in)
	g.free(st, dqkv, in, extra, sv.ln1, sv.qkv, sv.q, sv.k, sv.v)
	g.releaseWeights(st, w, WT)
	dl1r := g.columnGradOut(st, dl1)
	dx1 := g.normBackward(st, dl1r, sv.x, sv.mu1, sv.rs1)
	g.free(st, dl1r, sv.x, sv.mu1, sv.rs1)
	dx := g.e.tensor(bf16, d.sp, d.b, d.h)
	g.op(st, opAdd, []any{dx1, dmid}, dx)
	g.free(st, dx1, dmid)
	return dx
}

// columnGradOut finishes a column-parallel linear's input gradient
// [s*b, h]: the all-reduce of the partial sums, or with sequence
// parallelism the reduce-scatter, to [sp, b, h].
func (g *generator) columnGradOut(st *stage, dx values.Tensor) values.Tensor {
	return g.rowOut(st, dx)
}

// coreBackward is the attention core's backward from the context gradient
// [s*b, h/t]; it returns the gradient of the QKV projection's output
// [s*b, qkv width], whose Q, K and V parts are written into one buffer.
func (g *generator) coreBackward(st *stage, sv *saved, dctx values.Tensor) values.Tensor {
	d := &g.d
	bh := d.b * d.at
	if d.flash {
		dO := g.view(st, dctx, d.b, d.at, d.s, d.hd)
		buf := g.e.tensor(bf16, d.sb, d.qkvW)
		dq := g.e.alias(buf, bf16, d.b, d.at, d.s, d.hd)
		dk := g.e.alias(buf, bf16, d.b, d.gt, d.s, d.hd)
		dv := g.e.alias(buf, bf16, d.b, d.gt, d.s, d.hd)
		p := 0.0
		if d.drop {
			p = dropP
		}
		g.e.call(st.all, st.main, opFlashBw, []any{dO, sv.q, sv.k, sv.v, sv.o, sv.lse, nil, nil, d.s, d.s, p, true, nil, nil},
			[]any{dq, dk, dv})
		g.free(st, dO, sv.o, sv.lse)
		out := g.view(st, dq, d.sb, d.qkvW)
		g.free(st, dq, dk, dv)
		return out
	}
	if !sv.core { // selective recomputation: the core again, as in the forward
		ctx := g.attentionCore(st, sv)
		g.free(st, ctx)
	}
	dc := g.view(st, dctx, bh, d.s, d.hd)
	vt := g.view(st, sv.v, bh, d.hd, d.s)
	dpd := g.e.tensor(bf16, bh, d.s, d.s)
	g.op(st, opBMM, []any{dc, vt}, dpd)
	pdt := g.view(st, sv.pd, bh, d.s, d.s)
	// Q, K and V are split from the QKV output (torch.split in
	// split_tensor_along_last_dim, Megatron-LM 6985e58 and 2755bcb), so
	// their three gradients are made apart and concatenated by the split's
	// backward: a copy of the QKV gradient.
	dv := g.e.tensor(bf16, bh, d.s, d.hd)
	g.op(st, opBMM, []any{pdt, dc}, dv)
	g.free(st, vt, pdt, dc, sv.pd)
	dp := dpd
	if d.drop {
		dp = g.e.tensor(bf16, bh, d.s, d.s)
		g.op(st, opDropoutBw, []any{dpd, sv.amask, 1 / (1 - dropP)}, dp)
		g.free(st, dpd, sv.amask)
	}
	ds := g.e.tensor(bf16, bh, d.s, d.s)
	g.op(st, opSoftmaxBw, []any{dp, sv.p, -1, bf16}, ds)
	g.free(st, dp, sv.p)
	k3 := g.view(st, sv.k, bh, d.s, d.hd)
	dq := g.e.tensor(bf16, bh, d.s, d.hd)
	g.op(st, opBMM, []any{ds, k3}, dq)
	dst := g.view(st, ds, bh, d.s, d.s)
	q3 := g.view(st, sv.q, bh, d.s, d.hd)
	dk := g.e.tensor(bf16, bh, d.s, d.hd)
	g.op(st, opBMM, []any{dst, q3}, dk)
	g.free(st, k3, dst, q3, ds)
	out := g.e.tensor(bf16, d.sb, d.qkvW)
	g.op(st, opCat, []any{tlist{dq, dk, dv}, -1}, out)
	g.free(st, dq, dk, dv)
	return out
}
