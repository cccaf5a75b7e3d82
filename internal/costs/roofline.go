package costs

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/values"
)

// Roofline prices a function call from a hardware spec:
//
//	time = max(FLOPs / (peak × GEMM efficiency(FLOPs)),
//	           bytes / (HBM bandwidth × memory efficiency(bytes)))
//	       + launch overhead
//
// with FLOPs and bytes from the op table (ops.go) and the call's argument
// shapes and dtypes. Where the spec gives the GPU's GEMM tile, a matrix
// product's efficiency is also capped by its shape's wave quantization
// (waveEfficiency). Tensor-core ops use the dense peak of their first
// argument's dtype; the others the CUDA-core FP32 peak at full efficiency
// (their time is the memory term anyway). An op the table does not know is
// priced as memory-bound on the bytes of its arguments and results, and
// counted (Unknown). It is safe for concurrent use.
type Roofline struct {
	spec     *hardware.Spec
	vecPerNs float64 // CUDA-core FLOPs per ns
	hbmPerNs float64 // HBM bytes per ns
	launchNs float64

	unknownCalls atomic.Int64
	mu           sync.Mutex
	unknown      map[string]int64 // unknown op name -> calls priced

	// rows caches the op table's answer for recent names, placed by their
	// length and two of their bytes (rowOf); peak the dense peak of the
	// last dtype asked (peakOf). A program names a few functions and
	// dtypes with the same strings, so these compare a string with itself
	// where the table would hash it.
	// Entries are immutable, swapped atomically: the roofline stays safe
	// for concurrent use.
	rows [64]atomic.Pointer[rowEntry]
	peak atomic.Pointer[peakEntry]
}

// rowEntry is one name's answer from the op table.
type rowEntry struct {
	name  string
	row   opRow
	known bool
}

// peakEntry is one dtype's dense peak.
type peakEntry struct {
	dtype string
	tflop float64
	ok    bool
}

// nameSlot picks a place of the cache of rows for name.
func nameSlot(name string) int {
	n := len(name)
	if n == 0 {
		return 0
	}
	return n*31 + int(name[n/2])*7 + int(name[n-1])
}

// rowOf is lookup(name), through the cache.
func (r *Roofline) rowOf(name string) (opRow, bool) {
	slot := &r.rows[nameSlot(name)&(len(r.rows)-1)]
	if e := slot.Load(); e != nil && e.name == name {
		return e.row, e.known
	}
	row, known := lookup(name)
	slot.Store(&rowEntry{name: name, row: row, known: known})
	return row, known
}

// peakOf is the GPU's dense peak for dtype, through the cache.
func (r *Roofline) peakOf(dtype string) (float64, bool) {
	if e := r.peak.Load(); e != nil && e.dtype == dtype {
		return e.tflop, e.ok
	}
	p, ok := r.spec.GPU.PeakTFLOPS(dtype)
	r.peak.Store(&peakEntry{dtype: dtype, tflop: p, ok: ok})
	return p, ok
}

// NewRoofline builds the roofline of a checked spec.
func NewRoofline(spec *hardware.Spec) *Roofline {
	return &Roofline{
		spec:     spec,
		vecPerNs: spec.GPU.VectorTFLOPS * 1e3, // 1 TFLOP/s = 1e3 FLOP/ns
		hbmPerNs: spec.GPU.HBMTBps * 1e3,      // 1 TB/s = 1e3 B/ns
		launchNs: spec.GPU.LaunchOverheadNs,
		unknown:  make(map[string]int64),
	}
}

// Spec returns the hardware spec.
func (r *Roofline) Spec() *hardware.Spec { return r.spec }

// Estimate is one call's cost and how it was reached.
type Estimate struct {
	FLOPs     float64
	Bytes     float64
	ComputeNs float64 // FLOPs / (peak × efficiency)
	MemoryNs  float64 // bytes / (bandwidth × efficiency)
	LaunchNs  float64
	Known     bool // the op table has the op
	NoKernel  bool // a view: no kernel, no cost
	NoPeak    bool // a matrix product of a dtype the GPU has no dense peak for
}

// Ns is the estimate in whole nanoseconds, rounded up.
func (e Estimate) Ns() int64 {
	if e.NoKernel {
		return 0
	}
	t := math.Ceil(max(e.ComputeNs, e.MemoryNs) + e.LaunchNs)
	if !(t < float64(MaxRuntimeNs)) {
		return MaxRuntimeNs
	}
	return int64(t)
}

// lookup finds the op's row by clean name, then without its overload
// ("aten.add.Tensor" -> "aten.add").
func lookup(name string) (opRow, bool) {
	if row, ok := opTable[name]; ok {
		return row, true
	}
	if rest, ok := strings.CutPrefix(name, "aten."); ok {
		if i := strings.IndexByte(rest, '.'); i >= 0 {
			row, ok := opTable[name[:len("aten.")+i]]
			return row, ok
		}
	}
	return opRow{}, false
}

// Known reports whether the op table prices a clean name.
func Known(name string) bool {
	_, ok := lookup(name)
	return ok
}

// Estimate prices a call without counting it.
func (r *Roofline) Estimate(c *gen.CallFunction, name string) Estimate {
	row, known := r.rowOf(name)
	if !known {
		row = opRow{flops: flopNone, bytes: bytesIO, causalArg: -1}
	}
	e := Estimate{Known: known}
	if row.bytes == bytesNone {
		e.NoKernel = true
		return e
	}
	args := c.Args.Leaves
	e.FLOPs = flopsOf(row, c)
	e.Bytes = bytesOf(row, c)
	peak, eff := r.vecPerNs, 1.0
	if row.tensorCore && len(args) > 0 {
		if p, ok := r.peakOf(args[0].Dtype); ok {
			peak = p * 1e3
		} else {
			// The CUDA cores' rate: the table knows the op, but not
			// the GPU's rate for this dtype, so the call is counted as
			// priced by default (CallNs).
			e.NoPeak = true
		}
		eff = r.spec.GPU.GEMMEfficiency.At(e.FLOPs)
		if b, m, n, ok := gemmOutput(row, c); ok {
			eff = min(eff, r.waveEfficiency(b, m, n))
		}
	}
	e.ComputeNs = e.FLOPs / (peak * eff)
	if e.Bytes > 0 {
		meff := r.spec.GPU.MemoryEfficiency.At(e.Bytes)
		if row.memEff > 0 {
			// A kernel measured at memAt bytes takes the measured time
			// there; elsewhere it streams at the same rate, and its
			// latency term is the curve's at its size: the curve is
			// e·B/(B + e·HBM·L), so B/(HBM·curve(B)) = L + B/(HBM·e), and
			// 1/curve(B) - 1/curve(memAt) is HBM·L/B - HBM·L/memAt.
			// A curve that falls with size (a spec file may give one)
			// could make that faster than the curve itself, or infinite:
			// the kernel is never priced faster than the curve.
			inv := 1/row.memEff + 1/meff - 1/r.spec.GPU.MemoryEfficiency.At(row.memAt)
			if inv > 0 {
				meff = min(meff, 1/inv)
			} else {
				meff = min(meff, row.memEff)
			}
		}
		e.MemoryNs = e.Bytes / (r.hbmPerNs * meff)
	}
	e.LaunchNs = r.launchNs
	return e
}

// waveEfficiency is the efficiency of a product of b outputs of m x n on
// the spec's GEMM tile (NVIDIA Deep Learning Performance Guide, "Matrix
// Multiplication Background": tile quantization and wave quantization).
// Each thread block computes one tile of the output, one per SM at a
// time, so a product of T tiles runs in ceil(T/SMs) waves of the time of
// one tile; of that work only the m x n outputs are useful. It is the
// curve's largest efficiency (a large product's) times that useful
// fraction: b·m·n / (waves · SMs · tile area), the better of the tile's
// two orientations. Without a tile in the spec it is 1 (no limit), and
// so it is for a product thinner than the tile's smaller side (a
// matrix-vector product, attention's 2048 x 96 products): GEMM libraries
// run those with smaller tiles or GEMV kernels, and the FLOPs curve and
// the memory term price them.
func (r *Roofline) waveEfficiency(b, m, n float64) float64 {
	t, sms := r.spec.GPU.GEMMTile, float64(r.spec.GPU.SMs)
	c := r.spec.GPU.GEMMEfficiency
	if t[0] <= 0 || t[1] <= 0 || sms <= 0 || len(c) == 0 || b*m*n <= 0 {
		return 1
	}
	tr, tc := float64(t[0]), float64(t[1])
	if min(m, n) < min(tr, tc) {
		return 1
	}
	best := 0.0
	for _, o := range [2][2]float64{{tr, tc}, {tc, tr}} {
		tiles := b * math.Ceil(m/o[0]) * math.Ceil(n/o[1])
		waves := math.Ceil(tiles / sms)
		best = max(best, b*m*n/(waves*sms*tr*tc))
	}
	return c[len(c)-1][1] * best
}

// gemmOutput is a matrix product's output: b products of m x n; ok is
// false for ops that are not plain products (attention).
func gemmOutput(row opRow, c *gen.CallFunction) (b, m, n float64, ok bool) {
	a := c.Args.Leaves
	switch row.flops {
	case flopMM:
		if len(a) >= 2 {
			return 1, dim(&a[0], -2), dim(&a[1], -1), true
		}
	case flopAddmm:
		if len(a) >= 3 {
			return 1, dim(&a[1], -2), dim(&a[2], -1), true
		}
	case flopBmm:
		if len(a) >= 2 {
			return dim(&a[0], 0), dim(&a[0], 1), dim(&a[1], 2), true
		}
	case flopBaddbmm:
		if len(a) >= 3 {
			return dim(&a[1], 0), dim(&a[1], 1), dim(&a[2], 2), true
		}
	case flopLinear:
		if len(a) >= 2 {
			k := dim(&a[0], -1)
			return 1, numel(&a[0]) / k, dim(&a[1], 0), true
		}
	case flopMatmul:
		if len(a) >= 2 && len(c.Result.Leaves) > 0 {
			res := &c.Result.Leaves[0]
			m, n := dim(res, -2), dim(res, -1)
			if len(res.Shape) < 2 {
				m = 1
			}
			return numel(res) / (m * n), m, n, true
		}
	}
	return 0, 0, 0, false
}

// CallNs prices a call, counting it if its op is unknown.
func (r *Roofline) CallNs(c *gen.CallFunction, name string) int64 {
	e := r.Estimate(c, name)
	if !e.Known || e.NoPeak {
		if e.NoPeak {
			name += " (no dense peak for " + c.Args.Leaves[0].Dtype + ")"
		}
		r.unknownCalls.Add(1)
		r.mu.Lock()
		r.unknown[name]++
		r.mu.Unlock()
	}
	return e.Ns()
}

// Unknown returns how many calls had an op the table does not know, and
// those ops' names, sorted.
func (r *Roofline) Unknown() (int64, []string) {
	r.mu.Lock()
	names := make([]string, 0, len(r.unknown))
	for n := range r.unknown {
		names = append(names, n)
	}
	r.mu.Unlock()
	sort.Strings(names)
	return r.unknownCalls.Load(), names
}

// numel is a tensor's element count: its shape's product (1 for a 0-d
// tensor with a known dtype), else its nbytes over its dtype's size.
func numel(t *values.Tensor) float64 {
	if len(t.Shape) == 0 {
		if s := DtypeBytes(t.Dtype); s > 0 && t.NBytes > 0 {
			return float64(t.NBytes / s)
		}
		return 1
	}
	n := 1.0
	for _, d := range t.Shape {
		n *= float64(d)
	}
	return n
}

// dim is a tensor's size along axis i, negative i from the end; 1 when
// the tensor has no such axis.
func dim(t *values.Tensor, i int) float64 {
	if i < 0 {
		i += len(t.Shape)
	}
	if i < 0 || i >= len(t.Shape) {
		return 1
	}
	return float64(t.Shape[i])
}

func flopsOf(row opRow, c *gen.CallFunction) float64 {
	a := c.Args.Leaves
	need := func(n int) bool { return len(a) >= n }
	switch row.flops {
	case flopElementwise:
		n := 0.0
		for i := range c.Result.Leaves {
			n = max(n, numel(&c.Result.Leaves[i]))
		}
		if n == 0 {
			for i := range a {
				n = max(n, numel(&a[i]))
			}
		}
		return row.perElem * n
	case flopMM:
		if need(2) { // [m,k] @ [k,n]
			return 2 * dim(&a[0], -2) * dim(&a[0], -1) * dim(&a[1], -1)
		}
	case flopAddmm:
		if need(3) { // self, [m,k], [k,n]
			m, k, n := dim(&a[1], -2), dim(&a[1], -1), dim(&a[2], -1)
			return 2*m*k*n + m*n
		}
	case flopBmm:
		if need(2) { // [b,m,k] @ [b,k,n]
			return 2 * dim(&a[0], 0) * dim(&a[0], 1) * dim(&a[0], 2) * dim(&a[1], 2)
		}
	case flopBaddbmm:
		if need(3) {
			b, m, k, n := dim(&a[1], 0), dim(&a[1], 1), dim(&a[1], 2), dim(&a[2], 2)
			return 2*b*m*k*n + b*m*n
		}
	case flopLinear:
		if need(2) { // input[..., k], weight[n, k], bias[n]?
			k, n := dim(&a[0], -1), dim(&a[1], 0)
			rows := numel(&a[0]) / k
			f := 2 * rows * k * n
			if len(a) >= 3 && a[2].ID != a[0].ID && a[2].ID != a[1].ID {
				f += rows * n
			}
			return f
		}
	case flopMatmul:
		if need(2) {
			k := dim(&a[0], -1)
			if len(c.Result.Leaves) > 0 {
				return 2 * numel(&c.Result.Leaves[0]) * k
			}
			n := 1.0
			if len(a[1].Shape) >= 2 {
				n = dim(&a[1], -1)
			}
			return 2 * numel(&a[0]) * n
		}
	case flopAttnFwd, flopAttnBwd:
		q := 0
		if row.flops == flopAttnBwd {
			q = 1 // after grad_out
		}
		if need(q + 3) {
			f := attentionFLOPs(&a[q], &a[q+1], &a[q+2])
			if row.flops == flopAttnBwd {
				f *= 2
			}
			if causal(c, row.causalArg) {
				f /= 2
			}
			return f
		}
	case flopAdam:
		// params, grads, exp_avgs, exp_avg_sqs: four lists of equal
		// tensors; state_steps are one-element tensors, left out.
		n := 0.0
		for i := range a {
			if !seenBefore(a, i) && numel(&a[i]) > 1 {
				n += numel(&a[i])
			}
		}
		return row.perElem * n / 4
	}
	return 0
}

// attentionFLOPs counts QKᵀ and PV: 2·B·s·s_kv·d + 2·B·s·s_kv·d_v, B the
// batch and head dimensions (q's elements over s·d).
func attentionFLOPs(q, k, v *values.Tensor) float64 {
	s, d := dim(q, -2), dim(q, -1)
	skv, dv := dim(k, -2), dim(v, -1)
	bh := numel(q) / (s * d)
	return 2*bh*s*skv*d + 2*bh*s*skv*dv
}

// causal reports whether is_causal is true: the positional argument at pos
// of args, or the keyword is_causal.
func causal(c *gen.CallFunction, pos int) bool {
	if pos < 0 {
		return false
	}
	// A tree read from the binary form renders its text here (Tree.Text);
	// only the few ops with a causal flag ask.
	if v, ok := nthElement(c.Args.Text(), pos); ok {
		return bytes.Equal(bytes.TrimSpace(v), []byte("true"))
	}
	var kw map[string]json.RawMessage
	if kwargs := c.Kwargs.Text(); len(kwargs) > 0 && json.Unmarshal(kwargs, &kw) == nil {
		return bytes.Equal(bytes.TrimSpace(kw["is_causal"]), []byte("true"))
	}
	return false
}

// nthElement returns element i of a JSON array.
func nthElement(raw []byte, i int) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil, false
	}
	for j := 0; dec.More(); j++ {
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, false
		}
		if j == i {
			return v, true
		}
	}
	return nil, false
}

func bytesOf(row opRow, c *gen.CallFunction) float64 {
	a := c.Args.Leaves
	in := func(skip int) float64 {
		b := 0.0
		for i := range a {
			if i != skip && !seenBefore(a, i) {
				b += float64(TensorBytes(&a[i]))
			}
		}
		return b
	}
	out := outBytes(c)
	switch row.bytes {
	case bytesCopyInto:
		if len(a) >= 2 {
			return float64(TensorBytes(&a[1])) + float64(TensorBytes(&a[0]))
		}
	case bytesForeachCopyInto:
		if len(a) >= 2 && len(a)%2 == 0 { // self[0..n), src[n..2n): each src read, each self written
			b := 0.0
			for i := range a {
				b += float64(TensorBytes(&a[i]))
			}
			return b
		}
	case bytesEmbedding:
		if len(a) >= 2 { // weight[V, D], indices
			w, idx := &a[0], &a[1]
			rows := numel(idx) * dim(w, -1) * float64(DtypeBytes(w.Dtype))
			return rows + float64(TensorBytes(idx)) + out
		}
	case bytesNLLForward:
		if len(a) >= 2 { // self[N, C], target[N]
			return numel(&a[1])*float64(DtypeBytes(a[0].Dtype)) + in(0) + out
		}
	case bytesNLLBackward:
		if len(a) >= 2 { // grad_output, self, target, ...
			return in(1) + out
		}
	case bytesWrite:
		return out
	}
	return in(-1) + out
}

// outBytes sums the distinct result and mutated tensors. A result that is
// a mutated tensor is written once: the same tensor, or a new name for it
// (an in-place op such as add_ returns self, which a history may record
// as a new tensor of the same storage, dtype and shape).
func outBytes(c *gen.CallFunction) float64 {
	b := 0.0
	r := c.Result.Leaves
	for i := range r {
		if !seenBefore(r, i) {
			b += float64(TensorBytes(&r[i]))
		}
	}
	m := c.Mutates
mutated:
	for i := range m {
		if seenBefore(m, i) {
			continue
		}
		for j := range r {
			if r[j].ID == m[i].ID || sameTensor(&r[j], &m[i]) {
				continue mutated
			}
		}
		b += float64(TensorBytes(&m[i]))
	}
	return b
}

// sameTensor reports whether a and b name the same bytes: one storage
// (known: 0 is none given), one dtype, one shape.
func sameTensor(a, b *values.Tensor) bool {
	return a.Storage != 0 && a.Storage == b.Storage && a.Dtype == b.Dtype && slices.Equal(a.Shape, b.Shape)
}
