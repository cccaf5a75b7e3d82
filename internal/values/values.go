package values

import (
	"slices"
	"strconv"
)

// Tensor is a fully-resolved tensor reference: later mentions that give only
// {"tensor":N} are filled in from the first mention.
type Tensor struct {
	ID      int64 // the controller's ref id
	Idx     int32 // dense index: 0,1,2,... in order of first mention in the history
	Storage int64 // storage id (default: ID)
	// StorageIdx is the storage's dense index: one per storage id alive in
	// the registry (a storage lives while a tensor row names it).
	StorageIdx int32
	NBytes     int64   // storage size in bytes (default 0)
	Dtype      string  // interned (same string value for same dtype)
	Shape      []int64 // owned by the registry: callers must not modify
	CPU        bool    // device == "cpu" (default "cuda")
}

// Stream is a stream reference; Name is given where the stream is created.
type Stream struct {
	Ref     int64
	Idx     int32 // dense index of Ref, given by the registry (gen.Msg.Index)
	Name    string
	HasName bool
}

// Slice is a strided block of ranks: offset + sum(i_k * Strides[k]) for every
// index vector with 0 <= i_k < Sizes[k].
type Slice struct {
	Offset  int64
	Sizes   []int64
	Strides []int64
}

// Tree is a JSON value in which tensors may appear at any depth.
type Tree struct {
	// Leaves holds every object with a "tensor" key, depth-first in document
	// order. A tensor object's own fields are not walked further.
	Leaves []Tensor
	// Raw is the exact JSON text of the value. It may alias the line buffer
	// and is valid until the next record. It is nil when Tmpl holds the
	// text instead: read the text through Text or AppendText.
	Raw []byte
	// Tmpl, when not nil, stands for the text of a tree read from the
	// binary form: the text with each tensor object cut out and a NUL byte
	// (never in JSON text) in its place, one per leaf, in order; Forms
	// says how each leaf's object is written (LeafShort, LeafFull). The
	// text is rendered from them only when asked for (AppendText), since
	// a replay reads the leaves and seldom the text. Tmpl may alias the
	// reader's buffers, as Raw does.
	Tmpl  []byte
	Forms []byte
}

// Reset empties t, keeping the capacity of Leaves and Forms.
func (t *Tree) Reset() {
	t.Leaves = t.Leaves[:0]
	t.Raw, t.Tmpl = nil, nil
	t.Forms = t.Forms[:0]
}

// Reset empties s, keeping the capacity of its slices.
func (s *Slice) Reset() {
	s.Offset = 0
	s.Sizes = s.Sizes[:0]
	s.Strides = s.Strides[:0]
}

// Len is the number of ranks the slice enumerates (the product of its sizes;
// 1 for 0 dimensions). It assumes a slice that passed Check.
func (s *Slice) Len() int64 {
	n := int64(1)
	for _, v := range s.Sizes {
		n *= v
	}
	return n
}

// AppendRanks appends the ranks of the slice to dst, row-major (last
// dimension fastest).
func (s *Slice) AppendRanks(dst []int64) []int64 {
	var w rankWalk
	if !w.start(s) {
		return dst
	}
	dst, _ = w.append(s, dst, -1)
	return dst
}

// EachRanks calls fn with the slice's ranks in row-major order, a chunk
// of at most cap(buf) at a time (buf is the chunks' storage), so a slice of
// millions of ranks is walked without holding them all.
func (s *Slice) EachRanks(buf []int64, fn func([]int64)) {
	if cap(buf) == 0 {
		buf = make([]int64, 0, 256)
	}
	var w rankWalk
	if !w.start(s) {
		return
	}
	for {
		var done bool
		buf, done = w.append(s, buf[:0], cap(buf))
		if len(buf) > 0 {
			fn(buf)
		}
		if done {
			return
		}
	}
}

// rankWalk is the odometer over a slice's index vectors that AppendRanks
// and EachRanks share.
type rankWalk struct {
	idx  [MaxSliceDims]int64
	r    int64
	zero bool // a 0-d slice: the offset alone
}

// start readies the walk; false when the slice has no ranks to walk.
func (w *rankWalk) start(s *Slice) bool {
	w.r, w.zero = s.Offset, len(s.Sizes) == 0
	if len(s.Sizes) > MaxSliceDims {
		return false
	}
	for _, v := range s.Sizes {
		if v <= 0 {
			return false
		}
	}
	return true
}

// append appends ranks to dst until it holds limit of them (limit < 0: no
// limit) or the walk ends, which it reports.
func (w *rankWalk) append(s *Slice, dst []int64, limit int) ([]int64, bool) {
	if w.zero {
		return append(dst, s.Offset), true
	}
	nd := len(s.Sizes)
	for limit < 0 || len(dst) < limit {
		dst = append(dst, w.r)
		k := nd - 1
		for ; k >= 0; k-- {
			w.idx[k]++
			w.r += s.Strides[k]
			if w.idx[k] < s.Sizes[k] {
				break
			}
			w.r -= w.idx[k] * s.Strides[k]
			w.idx[k] = 0
		}
		if k < 0 {
			return dst, true
		}
	}
	return dst, false
}

// Equal reports whether both slices have the same offset, sizes and strides.
func (s *Slice) Equal(o *Slice) bool {
	if s.Offset != o.Offset || len(s.Sizes) != len(o.Sizes) || len(s.Strides) != len(o.Strides) {
		return false
	}
	for i := range s.Sizes {
		if s.Sizes[i] != o.Sizes[i] {
			return false
		}
	}
	for i := range s.Strides {
		if s.Strides[i] != o.Strides[i] {
			return false
		}
	}
	return true
}

// Bounds returns the smallest and largest rank of the slice without
// enumerating it. An empty slice (a size of 0) returns lo > hi.
func (s *Slice) Bounds() (lo, hi int64) {
	lo, hi = s.Offset, s.Offset
	for k, n := range s.Sizes {
		if n <= 0 {
			return 0, -1
		}
		ext := (n - 1) * s.Strides[k]
		if ext < 0 {
			lo += ext
		} else {
			hi += ext
		}
	}
	return lo, hi
}

// Check validates the slice against a world of world ranks: equal numbers of
// sizes and strides, at most MaxSliceDims of them, no negative size, at most
// MaxSliceRanks ranks, every rank in [0, world). It never overflows, so Len
// and Bounds are safe on a slice that passed it.
func (s *Slice) Check(world int64) error {
	if len(s.Sizes) != len(s.Strides) {
		return errorf(ErrSlice, "%d sizes but %d strides", len(s.Sizes), len(s.Strides))
	}
	if len(s.Sizes) > MaxSliceDims {
		return errorf(ErrLimit, "%d dimensions, more than the limit of %d", len(s.Sizes), MaxSliceDims)
	}
	n := int64(1)
	for k, v := range s.Sizes {
		if v < 0 {
			return errorf(ErrSlice, "negative size %d in dimension %d", v, k)
		}
		if v > MaxSliceRanks || (n > 0 && v > MaxSliceRanks/n) {
			return errorf(ErrLimit, "more than %d ranks", MaxSliceRanks)
		}
		n *= v
	}
	if n == 0 {
		return nil
	}
	if s.Offset < 0 || s.Offset >= world {
		return rankErrorf("rank %d is outside the world of %d ranks", s.Offset, world)
	}
	for k, v := range s.Sizes {
		if v > 1 && (s.Strides[k] >= world || s.Strides[k] <= -world) {
			return rankErrorf("stride %d over %d ranks reaches outside the world of %d ranks", s.Strides[k], v, world)
		}
	}
	lo, hi := s.Bounds()
	if lo < 0 {
		return rankErrorf("rank %d is outside the world of %d ranks", lo, world)
	}
	if hi >= world {
		return rankErrorf("rank %d is outside the world of %d ranks", hi, world)
	}
	return nil
}

// Repeated returns the smallest rank the slice names more than once, if
// any (a point-to-point send pairs distinct ranks). Slices whose strides
// nest (sorted by magnitude, each stride exceeds the extent of the
// dimensions below it), the common case, are known distinct without
// enumerating them; others are enumerated into scratch and sorted. It
// assumes a slice that passed Check, and returns scratch for reuse.
func (s *Slice) Repeated(scratch []int64) (rank int64, found bool, buf []int64) {
	var dims [MaxSliceDims][2]int64 // |stride|, size
	n := 0
	nested := true
	for k, size := range s.Sizes {
		if size <= 1 {
			continue
		}
		st := s.Strides[k]
		if st < 0 {
			st = -st
		}
		if st == 0 {
			nested = false
			break
		}
		dims[n] = [2]int64{st, size}
		n++
	}
	if nested {
		// By stride, by insertion (n is at most MaxSliceDims, usually one
		// to three), indexing the array in place: passed to a sort as a
		// slice, it was moved to the heap (512 bytes a call) wherever the
		// compiler inlined Repeated into a loop, as profile-guided
		// optimization does into the reader's send check.
		for i := 1; i < n; i++ {
			for j := i; j > 0 && dims[j][0] < dims[j-1][0]; j-- {
				dims[j], dims[j-1] = dims[j-1], dims[j]
			}
		}
		extent := int64(0)
		for i := 0; i < n; i++ {
			if dims[i][0] <= extent {
				nested = false
				break
			}
			extent += dims[i][0] * (dims[i][1] - 1)
		}
		if nested {
			return 0, false, scratch
		}
	}
	scratch = s.AppendRanks(scratch[:0])
	slices.Sort(scratch)
	for i := 1; i < len(scratch); i++ {
		if scratch[i] == scratch[i-1] {
			return scratch[i], true, scratch
		}
	}
	return 0, false, scratch
}

// AppendShapes appends the shapes of the distinct tensors of ts (by id,
// first occurrence first) as "(3x4)x(4x5)", the form timing tables key
// calls by, and returns how many it wrote.
func AppendShapes(dst []byte, ts []Tensor) ([]byte, int) {
	n := 0
	for i := range ts {
		seen := false
		for j := 0; j < i && !seen; j++ {
			seen = ts[j].ID == ts[i].ID
		}
		if seen {
			continue
		}
		if n > 0 {
			dst = append(dst, 'x')
		}
		n++
		dst = append(dst, '(')
		for d, v := range ts[i].Shape {
			if d > 0 {
				dst = append(dst, 'x')
			}
			dst = strconv.AppendInt(dst, v, 10)
		}
		dst = append(dst, ')')
	}
	return dst, n
}
