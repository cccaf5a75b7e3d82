package workload

import "github.com/fastsim/fastsim/internal/values"

// layerW is one parameter group on one stage: a transformer layer's four
// weight matrices (QKV, output projection, fc1, fc2) and its small
// parameters (norm scales and shifts, biases, learned positions) in one
// flat buffer; the word embedding and the output layer are groups of one
// matrix. Each group is one gradient bucket of the data-parallel
// reduction.
type layerW struct {
	shapes [][]int64       // the matrices' forward shapes
	w, wt  []values.Tensor // bf16 matrices and their transposed views (ZeRO < 3)
	small  values.Tensor   // bf16 small parameters (ZeRO < 3)
	n      int64           // elements on this rank before ZeRO sharding
	shard  int64           // elements of a ZeRO shard: ceil(n / dp)

	grad values.Tensor   // fp32 main gradient, flat (ZeRO < 2); 16-bit with Job.FP16Grads
	gv   []values.Tensor // its views shaped like the matrices
	// A tied word embedding's other copy (on the other stage): with
	// Job.FP16Grads the copy that makes its step's 16-bit gradient second
	// gives it the first one's ids, so that one Reduce names both
	// (syncEmbedding).
	tied *layerW
	// The copy whose gradient's deletion waits for the other copy's
	// (dropGrad): the stage that dropped it, or nil.
	dropped *stage
	// Job.FP16Grads: the matrices (bit k: slot k) whose gradient this
	// step already holds; the first one of a step is taken without a
	// kernel, later ones are added in.
	has uint64
	// Job.FP16Grads with PyTorch DDP (GradOverlap, dp > 1): the group's
	// 16-bit DDP bucket, which the all-reduce works on.
	ddp values.Tensor
	// ZeRO >= 2: this microbatch's gradient bucket and its views.
	bucket values.Tensor
	bv     []values.Tensor
	gshard values.Tensor // fp32 gradient shard on "comm" (ZeRO >= 2)
	pshard values.Tensor // bf16 parameter shard on "comm" (ZeRO 3)

	master, m, v values.Tensor // fp32 optimizer state (sharded with ZeRO >= 1)

	// The data-parallel reduction of this step (ZeRO < 2): the gradient
	// lent to "comm" and what the reduction made.
	borrow  int64
	reduced values.Tensor

	shared *layerW // the output layer tied to the embedding on the same stage
	last   bool    // the stage is in the last microbatch's backward of this group
}

func numel(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// newGroup lays out a group's sizes: matrices of the given shapes and
// small parameters.
func (g *generator) newGroup(small int64, shapes ...[]int64) *layerW {
	w := &layerW{shapes: shapes, n: small}
	for _, s := range shapes {
		w.n += numel(s)
	}
	dp := int64(g.j.DP)
	w.shard = (w.n + dp - 1) / dp
	return w
}

func transposed(s []int64) []int64 { return []int64{s[1], s[0]} }

// allocate creates a group's persistent tensors on stage st: parameters
// and main gradients on the stage's compute stream, sharded state on
// "comm" (ZeRO), as Megatron-LM holds them: bf16 parameters, fp32 main
// gradients (gradient accumulation in fp32), fp32 master weights and the
// two Adam moments, 18 bytes per parameter without sharding.
func (g *generator) allocate(st *stage, w *layerW) {
	z := g.zero()
	comm := int64(streamComm)
	if z < 3 {
		for _, s := range w.shapes {
			t := g.e.tensor(bf16, s...)
			g.op(st, opEmpty, []any{s}, t)
			w.w = append(w.w, t)
			w.wt = append(w.wt, g.view(st, t, transposed(s)...))
		}
		small := w.n
		for _, s := range w.shapes {
			small -= numel(s)
		}
		w.small = g.e.tensor(bf16, small)
		g.op(st, opEmpty, []any{[]int64{small}}, w.small)
	} else {
		w.pshard = g.e.tensor(bf16, w.shard)
		g.e.call(st.all, comm, opEmpty, []any{[]int64{w.shard}}, []any{w.pshard})
	}
	switch {
	case g.j.FP16Grads:
		// param.grad is made at the step's first gradient (ensureGrad)
		// and freed once the optimizer has copied it to fp32 (dropGrad). PyTorch DDP's
		// bucket is made empty here (Reducer's initialize_buckets:
		// at::empty) and held, as it is.
		if g.torchDDPCopies() {
			w.ddp = g.e.tensor(bf16, w.n)
			g.op(st, opEmpty, []any{[]int64{w.n}}, w.ddp)
		}
	case z < 2:
		w.grad = g.e.tensor(f32, w.n)
		g.op(st, opZeros, []any{[]int64{w.n}}, w.grad)
		for _, s := range w.shapes {
			w.gv = append(w.gv, g.view(st, w.grad, s...))
		}
	default:
		w.gshard = g.e.tensor(f32, w.shard)
		g.e.call(st.all, comm, opZeros, []any{[]int64{w.shard}}, []any{w.gshard})
	}
	if z == 0 {
		for _, t := range []*values.Tensor{&w.master, &w.m, &w.v} {
			*t = g.e.tensor(f32, w.n)
			g.op(st, opZeros, []any{[]int64{w.n}}, *t)
		}
	} else {
		for _, t := range []*values.Tensor{&w.master, &w.m, &w.v} {
			*t = g.e.tensor(f32, w.shard)
			g.e.call(st.all, comm, opZeros, []any{[]int64{w.shard}}, []any{*t})
		}
	}
}

// ensureGrad makes group w's 16-bit param.grad (Job.FP16Grads) if this
// step has not made it yet. Autograd makes a parameter's .grad at its
// first gradient of a step (AccumulateGrad takes the kernel's result, or
// allocates it), and the fp16 optimizer frees it once it has copied it to
// fp32 (dropGrad): so the gradients hold no memory in a step's forward
// passes before their first backward, nor in its optimizer's unscale,
// norm and Adam. The group's gradient is
// made whole at its first matrix's gradient (the matrices' gradients come
// within one layer's backward) or, for a group of small parameters only,
// where it is first read.
//
// A tied word embedding's copy whose other copy already made this step's
// gradient takes that gradient's ids (and its views', made in the same
// order), as the copies' weights share theirs (allocation in write.go).
func (g *generator) ensureGrad(st *stage, w *layerW) {
	if !g.j.FP16Grads || w.grad.ID != 0 {
		return
	}
	next := g.e.next
	if w.tied != nil && w.tied.grad.ID != 0 {
		g.e.next = w.tied.grad.ID
	}
	w.grad = g.e.tensor(bf16, w.n)
	g.op(st, opEmpty, []any{[]int64{w.n}}, w.grad)
	w.gv = w.gv[:0]
	for _, s := range w.shapes {
		w.gv = append(w.gv, g.view(st, w.grad, s...))
	}
	if g.e.next <= next {
		g.e.next = next
	}
}

// dropGrad frees group w's 16-bit gradient once the fp16 optimizer has
// copied it to fp32 (Job.FP16Grads): Megatron-LM of 2021 sets
// model_param.grad = None right after each .float() copy
// (_copy_model_grads_to_main_grads in megatron/optimizer/optimizer.py at
// 6985e58: "Safe to deallocate model's grad/main_grad after copying"),
// before the unscale, the norm and Adam.
//
// A tied word embedding's two copies share their gradient's ids, and a
// history's deletion of an id ends its definition for every rank (a later
// mention would have to define it again): so the copy dropped first is
// deleted with the other, at the other copy's drop. It stays through its
// own stage's unscale, norm and Adam, not through the next step's forward
// passes.
func (g *generator) dropGrad(st *stage, w *layerW) {
	if w.grad.ID == 0 || w.dropped != nil {
		return
	}
	if o := w.tied; o != nil && o.grad.ID == w.grad.ID {
		if o.dropped == nil {
			w.dropped = st
			return
		}
		// The same ids on both stages: one record deletes them on both.
		g.e.del2(o.dropped.all, st.all, append(w.gv, w.grad)...)
		o.grad, o.gv, o.dropped = values.Tensor{}, o.gv[:0], nil
		w.grad, w.gv = values.Tensor{}, w.gv[:0]
		return
	}
	g.free(st, append(w.gv, w.grad)...)
	w.grad, w.gv = values.Tensor{}, w.gv[:0]
}

// torchDDPCopies reports whether the gradients go through PyTorch DDP's
// own buckets (Job.FP16Grads with GradOverlap and data parallelism).
func (g *generator) torchDDPCopies() bool {
	return g.j.FP16Grads && g.j.GradReduce == GradOverlap && g.j.DP > 1
}

// takesGrad reports whether slot's gradient is the first of its step
// (Job.FP16Grads): autograd's AccumulateGrad then takes the kernel's
// result as param.grad, with no kernel of its own
// (torch/csrc/autograd/functions/accumulate_grad.h, PyTorch 1.8), so the
// kernel that makes it writes the gradient.
func (g *generator) takesGrad(w *layerW, slot int) bool {
	if w.shared != nil {
		w = w.shared
	}
	bit := uint64(1) << uint(slot)
	if !g.j.FP16Grads || w.has&bit != 0 {
		return false
	}
	w.has |= bit
	return true
}

// zero is the effective ZeRO stage: without data parallelism nothing is
// sharded.
func (g *generator) zero() int {
	if g.j.DP == 1 {
		return 0
	}
	return g.j.Zero
}

// gathered is one use of ZeRO 3's all-gathered matrices: the full tensors
// on "comm" and their loans to the compute stream.
type gathered struct {
	full, lent []values.Tensor
	borrows    []int64
}

// weights returns group w's matrices for the forward (or transposed, for
// the backward). With ZeRO 3 each is all-gathered on "comm" from the
// parameter shards and lent to the compute stream (FSDP).
func (g *generator) weights(st *stage, w *layerW, tr bool) []values.Tensor {
	if w.shared != nil {
		w = w.shared
	}
	if g.zero() < 3 {
		if tr {
			return w.wt
		}
		return w.w
	}
	h := &gathered{}
	for _, s := range w.shapes {
		if tr {
			s = transposed(s)
		}
		full := g.e.tensor(bf16, s...)
		g.e.reduceEach(st.dpGroups, dimDP, streamComm, full, w.pshard, "stack", false)
		id, lent := g.e.borrowCreate(st.all, full, streamComm, st.main)
		g.e.borrowFirstUse(st.all, id)
		h.full, h.lent, h.borrows = append(h.full, full), append(h.lent, lent), append(h.borrows, id)
	}
	if st.pendingRelease != nil { // the previous use's, now that these gathers are queued
		g.release(st, st.pendingRelease)
		st.pendingRelease = nil
	}
	st.inUse = append(st.inUse, h)
	return h.lent
}

// releaseWeights ends the use of matrices weights returned. With ZeRO 3
// their loans end at the next use's gathers (or the end of the pipeline
// action), so that "comm" gathers the next layer's matrices while this
// one computes: FSDP's prefetch of one layer.
func (g *generator) releaseWeights(st *stage, _ *layerW, W []values.Tensor) {
	if g.zero() < 3 || len(W) == 0 {
		return
	}
	for i, h := range st.inUse {
		if h.lent[0].ID == W[0].ID {
			st.inUse = append(st.inUse[:i], st.inUse[i+1:]...)
			if st.pendingRelease != nil {
				g.release(st, st.pendingRelease)
			}
			st.pendingRelease = h
			return
		}
	}
}

// release gives back one use's loans and frees the gathered matrices.
func (g *generator) release(st *stage, h *gathered) {
	for i := range h.full {
		g.e.borrowLastUse(st.all, h.borrows[i])
		g.free(st, h.lent[i])
		g.e.borrowDrop(st.all, h.borrows[i])
		g.e.del(st.all, h.full[i])
	}
}

// accumulate adds a weight gradient into the fp32 main gradient (ZeRO < 2)
// or this microbatch's bucket (ZeRO >= 2), or into the 16-bit param.grad
// with Job.FP16Grads (AccumulateGrad's in-place add).
func (g *generator) accumulate(st *stage, w *layerW, slot int, dw values.Tensor) {
	dst := g.gradTarget(st, w, slot)
	if g.j.FP16Grads { // the result is the gradient itself: read once, written once
		g.e.call(st.all, st.main, opAddInPlace, []any{dst, dw}, []any{dst}, dst)
		return
	}
	r := g.e.alias(dst, f32, dst.Shape...)
	g.e.call(st.all, st.main, opAddInPlace, []any{dst, dw}, []any{r}, dst)
	g.free(st, r)
}

// weightGrad makes the weight gradient x^T dy of a linear layer's matrix
// slot of group w and adds it into the main gradient. With
// Job.FuseGradAccumulation the product is written into the fp32 main
// gradient by the GEMM itself (Megatron-LM's gradient accumulation fusion,
// fused_dense_cuda.wgrad_gemm_accum_fp32: a cuBLAS GEMM with beta = 1
// into the fp32 buffer); otherwise it is a 16-bit product added in by a
// second kernel. The fused GEMM's read of the fp32 buffer is not counted
// (the GEMM is compute-bound).
func (g *generator) weightGrad(st *stage, w *layerW, slot int, xt, dy values.Tensor) {
	if g.takesGrad(w, slot) { // the product is param.grad (Job.FP16Grads)
		dst := g.gradTarget(st, w, slot)
		g.e.call(st.all, st.main, opMMOut, []any{xt, dy}, []any{dst}, dst)
		return
	}
	if !g.j.FuseGradAccumulation {
		dw := g.e.tensor(bf16, xt.Shape[0], dy.Shape[1])
		g.op(st, opMM, []any{xt, dy}, dw)
		g.accumulate(st, w, slot, dw)
		g.free(st, dw)
		return
	}
	dst := g.gradTarget(st, w, slot)
	r := g.e.alias(dst, f32, dst.Shape...)
	g.e.call(st.all, st.main, opMMOut, []any{xt, dy}, []any{r}, dst)
	g.free(st, r)
}

// gradTarget is where matrix slot of group w accumulates its gradient:
// a view of the fp32 main gradient (ZeRO < 2) or of this microbatch's
// bucket (ZeRO >= 2, made at its first use).
func (g *generator) gradTarget(st *stage, w *layerW, slot int) values.Tensor {
	if w.shared != nil {
		w = w.shared
	}
	var dst values.Tensor
	if g.zero() < 2 {
		g.ensureGrad(st, w)
		dst = w.gv[slot]
	} else {
		if w.bucket.ID == 0 {
			w.bucket = g.e.tensor(f32, w.n)
			g.op(st, opZeros, []any{[]int64{w.n}}, w.bucket)
			w.bv = w.bv[:0]
			for _, s := range w.shapes {
				w.bv = append(w.bv, g.view(st, w.bucket, s...))
			}
		}
		dst = w.bv[slot]
	}
	return dst
}

// layerDone starts group w's data-parallel gradient reduction on "comm"
// when its gradient is complete: after the last microbatch's backward
// (ZeRO 0: an all-reduce in place; ZeRO 1: a reduce-scatter in place, as
// Megatron-LM's distributed optimizer does), or after every microbatch's
// backward (ZeRO 2 and 3: a reduce-scatter of the bucket added into the
// gradient shard). The reduction overlaps the rest of the backward pass;
// the compute stream waits for it only before the optimizer step (ZeRO 0
// and 1) or when the next bucket is lent (ZeRO 2 and 3). With
// Job.FP16Grads and PyTorch DDP the all-reduce works on a copy in the
// group's DDP bucket (ddpReduce).
func (g *generator) layerDone(st *stage, w *layerW) {
	if g.j.DP == 1 {
		return
	}
	z := g.zero()
	if z == 0 && g.j.GradReduce == GradAfterBackward {
		return // reduceAfterBackward, once every backward pass is done
	}
	if z < 2 {
		if !w.last {
			return
		}
		if g.torchDDPCopies() {
			g.ddpReduce(st, w)
			return
		}
		id, lent := g.e.borrowCreate(st.all, w.grad, st.main, streamComm)
		g.e.borrowFirstUse(st.all, id)
		if z == 0 {
			w.reduced = g.e.alias(w.grad, f32, w.n)
		} else {
			w.reduced = g.e.alias(w.grad, f32, w.shard)
		}
		src := lent
		if z == 0 && g.j.HalfGradReduce { // 16-bit values over the network
			src = g.e.alias(lent, bf16, w.n)
			g.e.call(st.all, streamComm, opView, []any{lent, []int64{w.n}}, []any{src})
			res := g.e.alias(lent, bf16, w.n)
			g.e.reduceEach(st.dpGroups, dimDP, streamComm, res, src, "sum", false)
			g.e.del(st.all, res, src)
		} else {
			g.e.reduceEach(st.dpGroups, dimDP, streamComm, w.reduced, lent, "sum", z == 1)
		}
		g.e.borrowLastUse(st.all, id)
		g.e.del(st.all, lent)
		w.borrow = id
		st.pendingGrad = append(st.pendingGrad, w)
		return
	}
	if st.bucketBorrow != 0 {
		g.e.borrowDrop(st.all, st.bucketBorrow)
		st.bucketBorrow = 0
	}
	if w.bucket.ID == 0 { // a group of small parameters only
		w.bucket = g.e.tensor(f32, w.n)
		g.op(st, opZeros, []any{[]int64{w.n}}, w.bucket)
	}
	id, lent := g.e.borrowCreate(st.all, w.bucket, st.main, streamComm)
	g.e.borrowFirstUse(st.all, id)
	rs := g.e.tensor(f32, w.shard)
	g.e.reduceEach(st.dpGroups, dimDP, streamComm, rs, lent, "sum", true)
	r := g.e.alias(w.gshard, f32, w.shard)
	g.e.call(st.all, streamComm, opAddInPlace, []any{w.gshard, rs}, []any{r}, w.gshard)
	g.e.borrowLastUse(st.all, id)
	g.e.del(st.all, lent, rs, r)
	g.free(st, append(w.bv, w.bucket)...)
	w.bucket, w.bv = values.Tensor{}, w.bv[:0]
	st.bucketBorrow = id
}

// ddpReduce is PyTorch 1.8 DDP's reduction of group w's 16-bit gradient
// (Job.FP16Grads, GradOverlap): the gradient is copied into the group's
// bucket and divided by the data-parallel size on the way, in one
// mul_out on the compute stream (Reducer::copy_grad_to_bucket, "Divides
// while copying into the bucket view", torch/lib/c10d/reducer.cpp: so
// from before August 2020, pytorch/pytorch pull request #42399, until
// May 2021, #58937, which spans PyTorch 1.8), then the bucket is
// all-reduced on "comm". PyTorch DDP's buckets hold 25 MB
// (bucket_cap_mb) and fastsim reduces one group a bucket: the same bytes
// in fewer, larger calls. The copy back into the gradient runs when the
// backward ends (ddpCopyBack).
func (g *generator) ddpReduce(st *stage, w *layerW) {
	g.ensureGrad(st, w)
	g.e.call(st.all, st.main, opMulOut, []any{w.grad, 1 / float64(g.j.DP)}, []any{w.ddp}, w.ddp)
	id, lent := g.e.borrowCreate(st.all, w.ddp, st.main, streamComm)
	g.e.borrowFirstUse(st.all, id)
	res := g.e.alias(lent, bf16, w.n)
	g.e.reduceEach(st.dpGroups, dimDP, streamComm, res, lent, "sum", false)
	g.e.borrowLastUse(st.all, id)
	g.e.del(st.all, res, lent)
	w.borrow = id
	st.pendingGrad = append(st.pendingGrad, w)
}

// finishDDP ends stage st's backward as PyTorch 1.8 DDP does when it
// copies its buckets (torchDDPCopies): the compute stream waits for every
// bucket's all-reduce and copies each bucket back into its gradient
// (Reducer::finalize_backward, run by autograd's final callback), before
// Megatron-LM's word-embedding all-reduce between the first and the last
// stage reads the gradient, and before the optimizer step.
func (g *generator) finishDDP(st *stage) {
	for _, w := range st.pendingGrad {
		g.e.borrowDrop(st.all, w.borrow)
		g.ddpCopyBack(st, w)
	}
	st.pendingGrad = st.pendingGrad[:0]
}

// ddpCopyBack copies group w's all-reduced bucket back into its gradient
// on the compute stream, which has waited for the all-reduce: what
// PyTorch 1.8 DDP's finalize_backward does for each bucket when
// gradient_as_bucket_view is False (finalize_bucket_dense's
// grad.copy_(bucket_view)), at the end of the backward pass.
func (g *generator) ddpCopyBack(st *stage, w *layerW) {
	g.e.call(st.all, st.main, opCopyInto, []any{w.grad, w.ddp}, []any{w.grad}, w.grad)
}

// reduceAfterBackward all-reduces stage st's gradients over the
// data-parallel replicas after its last backward pass, on the compute
// stream (GradAfterBackward): each group's fp32 gradient is divided by the
// data-parallel size in place, then all-reduced (as 16-bit values with
// HalfGradReduce, as layerDone does too). Megatron-LM reduces its one contiguous buffer (or one
// coalesced tensor per dtype) in one call; one call per group moves the
// same bytes at the same bandwidth, a few NCCL latencies more.
func (g *generator) reduceAfterBackward(st *stage) {
	dp := float64(g.j.DP)
	if g.j.FP16Grads {
		g.flatReduce(st)
		return
	}
	for _, w := range st.groups {
		scaled := g.e.alias(w.grad, f32, w.n)
		g.e.call(st.all, st.main, opDivInPlace, []any{w.grad, dp}, []any{scaled}, w.grad)
		g.free(st, scaled)
		local, res := w.grad, g.e.alias(w.grad, f32, w.n)
		if g.j.HalfGradReduce {
			local = g.e.alias(w.grad, bf16, w.n)
			g.e.call(st.all, st.main, opView, []any{w.grad, []int64{w.n}}, []any{local})
			res = g.e.alias(w.grad, bf16, w.n)
		}
		g.e.reduceEach(st.dpGroups, dimDP, st.main, res, local, "sum", false)
		g.free(st, res)
		if local.ID != w.grad.ID {
			g.free(st, local)
		}
	}
}

// flatReduce is reduceAfterBackward for Job.FP16Grads: Megatron-LM's local
// DDP of 2021 without contiguous buffers (allreduce_gradients in
// megatron/model/distributed.py at 6985e58) flattens the 16-bit
// gradients into a new buffer (_flatten_dense_tensors: a cat), divides
// it by the data-parallel size in place, all-reduces it, and copies each
// gradient back from it (buf.copy_(synced)). It flattens every gradient
// of a dtype into one buffer; this does it a group at a time (the same
// kernels' bytes; one group's buffer alive at a time instead of all).
func (g *generator) flatReduce(st *stage) {
	dp := float64(g.j.DP)
	for _, w := range st.groups {
		g.ensureGrad(st, w)
		flat := g.e.tensor(bf16, w.n)
		g.op(st, opCat, []any{tlist{w.grad}}, flat)
		g.e.call(st.all, st.main, opDivInPlace, []any{flat, dp}, []any{flat}, flat)
		res := g.e.alias(flat, bf16, w.n)
		g.e.reduceEach(st.dpGroups, dimDP, st.main, res, flat, "sum", false)
		g.free(st, res)
		g.e.call(st.all, st.main, opCopyInto, []any{w.grad, flat}, []any{w.grad}, w.grad)
		g.free(st, flat)
	}
}

// optimizerStep ends a step on stage st: it waits for the gradient
// reductions, computes the gradients' norms for clipping, runs one fused Adam over the stage's groups (on the compute
// stream, or on "comm" over the shards with ZeRO >= 1), all-gathers the
// updated parameters (ZeRO 1 and 2) and zeroes the gradients.
func (g *generator) optimizerStep(st *stage) {
	z := g.zero()
	if st.bucketBorrow != 0 {
		g.e.borrowDrop(st.all, st.bucketBorrow)
		st.bucketBorrow = 0
	}
	for _, w := range st.pendingGrad {
		g.e.borrowDrop(st.all, w.borrow)
	}
	if g.j.FP16Grads {
		g.fp16Step(st)
		st.pendingGrad = st.pendingGrad[:0]
		return
	}
	var params, grads, ms, vs, masters tlist
	for _, w := range st.groups {
		masters, ms, vs = append(masters, w.master), append(ms, w.m), append(vs, w.v)
		switch {
		case z >= 2:
			grads = append(grads, w.gshard)
		case z == 1 && g.j.DP > 1:
			grads = append(grads, w.reduced)
		default:
			grads = append(grads, w.grad)
		}
		if z < 3 {
			params = append(append(params, w.w...), w.small)
		} else {
			params = append(params, w.pshard)
		}
	}
	stream := st.main
	if z >= 1 {
		stream = streamComm
	}
	// Gradient clipping by the global L2 norm, which Megatron-LM's
	// optimizer step does before Adam whenever --clip-grad > 0 (its
	// default, 1.0, "Gradient clipping based on global L2 norm"): one read
	// of every gradient for the norms (MixedPrecisionOptimizer.step,
	// clip_grad_norm_fp32).
	norms := make([]any, len(grads))
	var normTs []values.Tensor
	for i := range grads {
		n := g.e.tensor(f32)
		norms[i], normTs = n, append(normTs, n)
	}
	g.e.call(st.all, stream, opForeachNorm, []any{grads, 2.0}, norms)
	g.e.del(st.all, normTs...)
	mut := append(append(append(tlist{}, masters...), ms...), vs...)
	g.e.call(st.all, stream, opAdam, []any{masters, grads, ms, vs, tlist{}, tlist{}}, nil, mut...)
	switch z {
	case 0:
		g.e.call(st.all, st.main, opForeachCopy, []any{params, masters}, nil, params...)
	case 1, 2:
		for _, w := range st.groups {
			half := g.e.tensor(bf16, w.shard)
			g.e.call(st.all, streamComm, opToCopy, []any{w.master}, []any{half})
			full := g.e.tensor(bf16, w.shard*int64(g.j.DP))
			g.e.reduceEach(st.dpGroups, dimDP, streamComm, full, half, "stack", false)
			g.e.del(st.all, half, full)
		}
	case 3:
		g.e.call(st.all, streamComm, opForeachCopy, []any{params, masters}, nil, params...)
	}
	if z >= 1 {
		// The compute stream waits for the optimizer before the next step.
		id, lent := g.e.borrowCreate(st.all, st.groups[0].master, streamComm, st.main)
		g.e.borrowFirstUse(st.all, id)
		g.e.borrowLastUse(st.all, id)
		g.e.del(st.all, lent)
		g.e.borrowDrop(st.all, id)
	}
	var zero tlist
	for _, w := range st.groups {
		if z < 2 {
			zero = append(zero, w.grad)
		}
	}
	if len(zero) > 0 {
		g.e.call(st.all, st.main, "torch.ops.aten._foreach_zero_.default", []any{zero}, nil, zero...)
	}
	if z >= 2 {
		var gs tlist
		for _, w := range st.groups {
			gs = append(gs, w.gshard)
		}
		g.e.call(st.all, streamComm, "torch.ops.aten._foreach_zero_.default", []any{gs}, nil, gs...)
	}
	for _, w := range st.pendingGrad {
		if w.reduced.ID != 0 {
			g.e.del(st.all, w.reduced)
			w.reduced = values.Tensor{}
		}
	}
	st.pendingGrad = st.pendingGrad[:0]
}

// fp16Step is Megatron-LM's Float16OptimizerWithFloat16Params.step of
// 2021 (megatron/optimizer/optimizer.py and clip_grads.py at 6985e58) on
// stage st's 16-bit gradients (Job.FP16Grads), on the compute stream:
// each gradient copied to a new fp32 main gradient
// (_copy_model_grads_to_main_grads: model_param.grad.float(), one
// _to_copy a group here instead of one a parameter), unscaled with the
// inf/NaN check (_unscale_main_grads_and_check_for_nan:
// torch._amp_foreach_non_finite_check_and_unscale_ on every main
// gradient, with the constant scaler of --loss-scale; found_inf is
// zeroed first), the gradients' norm for clipping (clip_grad_norm_fp32:
// multi_tensor_l2norm), apex's FusedAdam on the fp32 master weights, and
// the copy of the masters to the 16-bit parameters
// (_copy_main_params_to_model_params). Each 16-bit gradient is freed
// right after its copy (dropGrad). Left out: the found_inf
// all-reduce over the model-parallel group and the norm's (one float
// each), the host synchronizations of found_inf.item() and
// total_norm.item(), and the clipping's scaling pass, which runs only
// when the norm exceeds --clip-grad (data dependent). The main gradients
// are freed after the step (zero_grad(set_to_none=True) frees them at
// the next step's start; nothing runs in between) and nothing is zeroed.
func (g *generator) fp16Step(st *stage) {
	var params, mains, ms, vs, masters tlist
	for _, w := range st.groups {
		g.ensureGrad(st, w)
		main := g.e.tensor(f32, w.n)
		g.op(st, opToCopy, []any{w.grad}, main)
		g.dropGrad(st, w)
		mains, masters, ms, vs = append(mains, main), append(masters, w.master), append(ms, w.m), append(vs, w.v)
		params = append(append(params, w.w...), w.small)
		w.has = 0
	}
	found, inv := g.e.tensor(f32, 1), g.e.tensor(f32)
	g.op(st, opZeros, []any{[]int64{1}}, found)
	g.op(st, opEmpty, []any{[]int64{}}, inv)
	mut := append(append(tlist{}, mains...), found)
	g.e.call(st.all, st.main, opUnscale, []any{mains, found, inv}, nil, mut...)
	norms := make([]any, len(mains))
	var normTs []values.Tensor
	for i := range mains {
		n := g.e.tensor(f32)
		norms[i], normTs = n, append(normTs, n)
	}
	g.e.call(st.all, st.main, opForeachNorm, []any{mains, 2.0}, norms)
	g.e.del(st.all, normTs...)
	mut = append(append(append(tlist{}, masters...), ms...), vs...)
	g.e.call(st.all, st.main, opAdam, []any{masters, mains, ms, vs, tlist{}, tlist{}}, nil, mut...)
	g.e.call(st.all, st.main, opForeachCopy, []any{params, masters}, nil, params...)
	g.free(st, append(mains, found, inv)...)
}

// StageParams counts the parameters one rank of pipeline stage st holds
// (before ZeRO sharding), as setup allocates them: layers in its
// transformer layers (matrices, biases and norms), other in everything
// else (on the first stage the word embedding shard and the learned
// positions; on the last the final norm and, when untied or when the
// first stage is another, its word-embedding shard).
func StageParams(j Job, st int) (layers, other int64) {
	if err := j.Check(); err != nil || st < 0 || st >= j.PP {
		return 0, 0
	}
	return stageParams(&j, st)
}

// stageParams is StageParams for a job whose shapes Check has accepted
// (checkSizes calls it before the sizes are known to fit: its products
// are at most about 2^61 within Model.Check's limits).
func stageParams(j *Job, st int) (layers, other int64) {
	d := dimsOf(j)
	small := 2 * d.h
	if j.Model.Bias {
		small += 2*d.h + d.qkvW + d.fc1W + 2*d.h
	}
	perLayer := small + d.h*d.qkvW + (d.h/d.t)*d.h + d.h*d.fc1W + d.f*d.h
	layers = int64(j.Model.Layers/j.PP) * perLayer
	if st == 0 {
		other += d.vt * d.h
		if j.Model.Bias {
			other += d.s * d.h
		}
	}
	if st == j.PP-1 {
		other += d.h
		if j.Model.Bias {
			other += d.h
		}
		if !j.Model.Tied || j.PP > 1 {
			other += d.vt * d.h
		}
	}
	return layers, other
}
