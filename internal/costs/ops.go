package costs

// The op table: which FLOP and byte formulas price each ATen op. It is data,
// declared once; roofline.go evaluates the formulas by kind, never by op
// name. Arguments follow ATen's schemas (native_functions.yaml) in
// positional order: a call's tensor leaves are its tensor arguments
// depth-first in document order, so "arg 1" below is the second tensor
// leaf.
//
// FLOP conventions (one multiply-add is 2 FLOPs):
//   - matrix products count 2·m·k·n per product (plus one add per output
//     element for a bias or beta·self term);
//   - attention forward counts its two matrix products, QKᵀ and PV:
//     2·b·h·s·s_kv·d + 2·b·h·s·s_kv·d_v, which is 4·b·h·s²·d for
//     self-attention: Narayanan et al., SC'21, "Efficient Large-Scale
//     Language Model Training on GPU Clusters Using Megatron-LM",
//     appendix "Floating-Point Operations", counts the attention scores
//     QKᵀ and the attention over values as 2·B·s²·h FLOPs each (h =
//     heads·d), and Korthikanti et al. 2022, "Reducing Activation
//     Recomputation in Large Transformer Models", counts model FLOPs the
//     same way; softmax and scaling are not counted;
//   - attention backward is 2× its forward (both papers take the backward
//     pass as twice the forward's FLOPs; FlashAttention's backward also
//     recomputes the scores, which this count leaves out);
//   - causal attention (is_causal true) counts half: a flash kernel skips
//     the blocks above the diagonal, so it executes about half the
//     products (the papers above count the full square);
//   - elementwise, normalization, softmax and optimizer ops count a fixed
//     number of FLOPs per element, below; these ops are memory-bound on
//     every GPU of internal/hardware (their arithmetic intensity is a few
//     FLOPs per byte, the ridge points are tens to hundreds), so the
//     constants hardly matter.
//
// Byte conventions: a kernel reads its distinct tensor arguments once and
// writes its results and the tensors it mutates once (bytesIO), except
// where a row says otherwise.

// flopKind selects the FLOP formula of an op.
type flopKind uint8

const (
	flopNone        flopKind = iota // no arithmetic worth counting (copies, gathers)
	flopElementwise                 // perElem × the largest result's elements (else the largest argument's)
	flopMM                          // mm(self[m,k], mat2[k,n]): 2mkn
	flopAddmm                       // addmm(self, mat1[m,k], mat2[k,n]): 2mkn + mn
	flopBmm                         // bmm(self[b,m,k], mat2[b,k,n]): 2bmkn
	flopBaddbmm                     // baddbmm(self, batch1[b,m,k], batch2[b,k,n]): 2bmkn + bmn
	flopLinear                      // linear(input[...,k], weight[n,k], bias[n]?): 2·rows·k·n (+ rows·n)
	flopMatmul                      // matmul(self[...,m,k], other[...,k,n]): 2·(result elements)·k
	flopAttnFwd                     // q[...,s,d], k[...,s_kv,d], v[...,s_kv,d_v] = args 0,1,2
	flopAttnBwd                     // grad_out, q, k, v = args 0,1,2,3: 2 × forward
	flopAdam                        // perElem × parameter elements (a quarter of the args' elements)
)

// byteKind selects the byte formula of an op.
type byteKind uint8

const (
	bytesIO              byteKind = iota // distinct args + distinct results and mutated tensors
	bytesNone                            // no kernel at all: a view; costs nothing, not even a launch
	bytesCopyInto                        // copy_(self, src): src read, self written (self is not read)
	bytesForeachCopyInto                 // _foreach_copy_(self[], src[]): the second half of the args read, the first half written
	bytesEmbedding                       // embedding(weight[V,D], indices): gathered rows + indices + result
	bytesNLLForward                      // nll_loss_forward(self[N,C], target[N], ...): one element of self per target + target + results
	bytesNLLBackward                     // nll_loss_backward(grad, self, target, ...): every arg but self (only its shape is used) + results
	bytesWrite                           // a fill (zero_, fill_): writes its results and mutated tensors, reads nothing
)

// opRow is one op's pricing.
type opRow struct {
	flops   flopKind
	bytes   byteKind
	perElem float64 // FLOPs per element, for flopElementwise and flopAdam
	// tensorCore: the op runs on tensor cores at its dtype's dense peak
	// and the GEMM efficiency curve; other ops compute at the CUDA-core
	// FP32 peak.
	tensorCore bool
	// causalArg is the position of is_causal among the positional
	// arguments (counting every argument, tensor or not), -1 if none.
	causalArg int
	// memEff is the share of the GPU's HBM bandwidth the kernel was
	// measured to reach over its bytes, memAt bytes; 0: the GPU's
	// memory_efficiency curve, as for every other op. At another size the
	// kernel's time gains or loses what the curve's latency term does
	// between the two sizes (roofline.go).
	memEff, memAt float64
}

// dropoutForward is PyTorch's dropout forward (aten.native_dropout). It
// draws its random numbers in the kernel (fused_dropout_kernel_vec: one
// Philox curand_uniform4 per four elements, a byte mask written beside
// the output) and is measured slower than a stream of the same bytes,
// where the backward (masked_scale) is not. Dao et al. 2022
// (FlashAttention, arXiv:2205.14135, Appendix E.6) time attention on an
// A100-40GB in fp16, batch 16, 8 heads, sequence 2,048, with dropout 0.1
// and without; the differences are the dropout of 16 x 8 x 2,048^2 =
// 536,870,912 elements of 5 bytes (2 read, 2 written, the mask's 1
// written):
//   - forward 2.24 ms ("PyTorch Attention", Table 15 minus Table 18:
//     6.56 - 4.32), 2.28 ("Megatron": 6.56 - 4.28) and 2.25 (masked,
//     Table 9 minus Table 12: 9.33 - 7.08);
//   - backward 1.95, 1.94 and 1.98 (Table 16 minus Table 19, Table 10
//     minus Table 13): the STREAM rate the memory efficiency curve
//     gives, so the backward keeps the curve.
//
// The forward's mean, 2.2567 ms, is 2,684,354,560 B / 2.2567 ms =
// 1,189.5 GB/s, 0.765 of the 40 GB part's 1,555 GB/s (NVIDIA A100
// datasheet). It is applied as that share of any GPU's bandwidth, as the
// layer norm's measurements below are: what holds the kernel back (the
// random draws, or the few bytes it keeps in flight between them) is not
// established, and no measurement on another GPU was found.
var dropoutForward = opRow{flops: flopElementwise, bytes: bytesIO, perElem: 2, causalArg: -1, memEff: 536870912 * 5 / 2.2567e6 / 1555, memAt: 536870912 * 5}

var (
	free   = opRow{flops: flopNone, bytes: bytesNone, causalArg: -1}
	copyOp = opRow{flops: flopNone, bytes: bytesIO, causalArg: -1}
	fill   = opRow{flops: flopNone, bytes: bytesWrite, causalArg: -1}
)

func ew(perElem float64) opRow {
	return opRow{flops: flopElementwise, bytes: bytesIO, perElem: perElem, causalArg: -1}
}

func gemm(k flopKind) opRow { return opRow{flops: k, bytes: bytesIO, tensorCore: true, causalArg: -1} }

func attn(k flopKind, causalArg int) opRow {
	return opRow{flops: k, bytes: bytesIO, tensorCore: true, causalArg: causalArg}
}

// opTable prices ops by clean name without overload ("aten.add" also
// prices "aten.add.Tensor"). Per-element FLOP counts are this table's own
// convention (the arithmetic of the op's definition; see above).
var opTable = map[string]opRow{
	// Matrix products.
	"aten.mm":      gemm(flopMM),
	"aten.addmm":   gemm(flopAddmm),
	"aten.bmm":     gemm(flopBmm),
	"aten.baddbmm": gemm(flopBaddbmm),
	"aten.linear":  gemm(flopLinear),
	"aten.matmul":  gemm(flopMatmul),

	// Attention. is_causal positions from the schemas:
	// _scaled_dot_product_flash_attention(query, key, value, dropout_p, is_causal, ...): 4
	// _scaled_dot_product_efficient_attention(query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, ...): 6
	// scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, ...): 5
	// _scaled_dot_product_flash_attention_backward(grad_out, query, key, value, out, logsumexp,
	//   cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, ...): 11
	// _scaled_dot_product_efficient_attention_backward(grad_out_, query, key, value, attn_bias, out,
	//   logsumexp, philox_seed, philox_offset, dropout_p, grad_input_mask, is_causal, ...): 11
	"aten._scaled_dot_product_flash_attention":              attn(flopAttnFwd, 4),
	"aten._scaled_dot_product_efficient_attention":          attn(flopAttnFwd, 6),
	"aten.scaled_dot_product_attention":                     attn(flopAttnFwd, 5),
	"aten._scaled_dot_product_flash_attention_backward":     attn(flopAttnBwd, 11),
	"aten._scaled_dot_product_efficient_attention_backward": attn(flopAttnBwd, 11),

	// Softmax: max, subtract, exp, sum, divide; backward: multiply, sum,
	// subtract, multiply.
	"aten._softmax":                   ew(5),
	"aten._softmax_backward_data":     ew(4),
	"aten._log_softmax":               ew(5),
	"aten._log_softmax_backward_data": ew(4),
	"aten.softmax":                    ew(5),
	"aten.log_softmax":                ew(5),
	"aten.nll_loss_forward":           {flops: flopNone, bytes: bytesNLLForward, causalArg: -1},
	"aten.nll_loss_backward":          {flops: flopNone, bytes: bytesNLLBackward, causalArg: -1},
	"aten.nll_loss":                   {flops: flopNone, bytes: bytesNLLForward, causalArg: -1},
	"aten.cross_entropy_loss":         ew(6), // log-softmax and the target gather
	// The vocabulary-parallel cross entropy's pieces: the row maximum and
	// log-sum-exp read the logits once and write one value per row; the
	// gather of each row's target logit reads one element per index, as
	// nll_loss_forward does.
	"aten.amax":                       ew(1),
	"aten.logsumexp":                  ew(4), // subtract the max, exp, add, log
	"aten.gather":                     {flops: flopNone, bytes: bytesNLLForward, causalArg: -1},
	"aten.cat":                        copyOp,
	"aten.native_layer_norm":          ew(8), // mean 1, variance 3, normalize 2, affine 2
	"aten.native_layer_norm_backward": ew(16),
	"aten.layer_norm":                 ew(8),
	"aten.rms_norm":                   ew(6), // square 1, mean 1, rsqrt-scale 2, weight 2
	"aten._fused_rms_norm":            ew(6),
	"aten._fused_rms_norm_backward":   ew(12),
	"aten.gelu":                       ew(8), // x·Φ(x) with erf's polynomial
	"aten.gelu_backward":              ew(12),
	"aten.silu":                       ew(4), // x / (1 + exp(-x))
	"aten.silu_backward":              ew(6),
	"aten.relu":                       ew(1),
	"aten.threshold_backward":         ew(1),
	"aten.native_dropout":             dropoutForward,
	"aten.native_dropout_backward":    ew(2),
	"aten.add":                        ew(1),
	"aten.add_":                       ew(1),
	"aten.sub":                        ew(1),
	"aten.sub_":                       ew(1),
	"aten.mul":                        ew(1),
	"aten.mul_":                       ew(1),
	"aten.div":                        ew(1),
	"aten.div_":                       ew(1),
	"aten.neg":                        ew(1),
	"aten.rsub":                       ew(1),
	"aten.pow":                        ew(1),
	"aten.sqrt":                       ew(1),
	"aten.rsqrt":                      ew(1),
	"aten.exp":                        ew(1),
	"aten.tanh":                       ew(1),
	"aten.sum":                        ew(1),
	"aten.mean":                       ew(1),
	"aten.zero_":                      fill,
	"aten.randn":                      copyOp, // factories write their result
	"aten.rand":                       copyOp,
	"aten.zeros":                      copyOp,
	"aten.ones":                       copyOp,
	"aten.full":                       copyOp,
	"aten.zeros_like":                 copyOp,
	"aten.ones_like":                  copyOp,
	"aten.fill_":                      fill,
	"aten.embedding":                  {flops: flopNone, bytes: bytesEmbedding, causalArg: -1},
	"aten.embedding_dense_backward":   ew(1), // accumulate rows of grad_output into the weight gradient
	// Adam per parameter element: m 3, v 4, bias corrections 2, sqrt and eps 2,
	// step 3, weight decay 2 = 16.
	"aten._fused_adam_":   {flops: flopAdam, bytes: bytesIO, perElem: 16, causalArg: -1},
	"aten._fused_adamw_":  {flops: flopAdam, bytes: bytesIO, perElem: 16, causalArg: -1},
	"aten.copy_":          {flops: flopNone, bytes: bytesCopyInto, causalArg: -1},
	"aten._foreach_copy_": {flops: flopNone, bytes: bytesForeachCopyInto, causalArg: -1},
	"aten._foreach_zero_": fill,
	// Unscales each gradient in place and sets found_inf on inf or NaN:
	// every gradient read and written once (one multiply and a check an
	// element).
	"aten._amp_foreach_non_finite_check_and_unscale_": ew(2),
	// The global gradient norm of clipping: each gradient read once, one
	// scalar written per tensor; square and add per element.
	"aten._foreach_norm":    ew(2),
	"aten._to_copy":         copyOp,
	"aten.clone":            copyOp,
	"aten.contiguous":       copyOp,
	"aten.view":             free,
	"aten._unsafe_view":     free,
	"aten.reshape":          free,
	"aten.transpose":        free,
	"aten.t":                free,
	"aten.permute":          free,
	"aten.expand":           free,
	"aten.unsqueeze":        free,
	"aten.squeeze":          free,
	"aten.slice":            free,
	"aten.select":           free,
	"aten.split":            free,
	"aten.split_with_sizes": free,
	"aten.as_strided":       free,
	"aten.detach":           free,
	"aten.alias":            free,
	"aten.unbind":           free,
	"aten.narrow":           free,
	"aten._reshape_alias":   free,
	"aten.empty":            free, // allocation only, no kernel
	"aten.empty_like":       free,
	"aten.empty_strided":    free,

	// Megatron-LM's own layer norm of 2021 (megatron/fused_kernels at
	// 6985e58, "copied from NVIDIA apex"): apex's FusedLayerNorm
	// kernels. NVIDIA measured them on an A100 ("GA100") for apex pull
	// request #1037 (January 2021, "current APEX affine LN kernels", fp16
	// x of 16,384 x 1,024): forward 0.0751 ms, 895.7822 GB/s, backward
	// 0.1762 ms, 572.1678 GB/s, counting what the op table's bytes count
	// (x, y, gamma, beta, mean and rsigma forward; x, dx, dy, gamma,
	// dgamma, dbeta, mean and rsigma backward: apex's
	// test_fast_layer_norm.py at 780e02c). The backward is slow because
	// it reads dy and x twice, once for dgamma and dbeta
	// (cuComputePartGradGammaBeta) and once for dx (cuComputeGradInput).
	// The shares are of the 40 GB A100's 1,555 GB/s (the A100 of that
	// time; on the 80 GB part's 2,039 GB/s they would be 0.439 and
	// 0.281, and the kernels slower still): 0.576 and 0.368.
	"fused_mix_prec_layer_norm_cuda.forward_affine":  {flops: flopElementwise, bytes: bytesIO, perElem: 8, causalArg: -1, memEff: 895.7822 / 1555, memAt: 67_244_032},
	"fused_mix_prec_layer_norm_cuda.backward_affine": {flops: flopElementwise, bytes: bytesIO, perElem: 16, causalArg: -1, memEff: 572.1678 / 1555, memAt: 100_802_560},
}
