package groups

import (
	"cmp"
	"math"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/fastsim/fastsim/internal/jsonl"
)

// Rank sets are roaring bitmaps of uint32 ranks. Roaring keeps them in
// containers of 65,536 values each, and its run queries have edges there:
// NextAbsentValue answers -1 when the bitmap's last container is full to its
// end, and jumps to the start of the next container even when that value is
// present. Every run query of this package goes through nextAbsent, which
// corrects both, and every value past the largest rank is carried as a
// uint64, never narrowed.

// nextAbsent is the smallest value >= r that b does not hold, as a uint64:
// 2^32 when b holds every value from r up.
func nextAbsent(b *roaring.Bitmap, r uint32) uint64 {
	v := uint64(r)
	for v <= math.MaxUint32 && b.Contains(uint32(v)) {
		n := b.NextAbsentValue(uint32(v))
		switch {
		case n < 0: // the last container is full to its end
			return uint64(b.Maximum()) + 1
		case uint64(n) <= v: // no progress: step over v (never seen)
			v++
		default: // absent, or the start of the next container: check again
			v = uint64(n)
		}
	}
	return v
}

// eachRun calls fn with every maximal run lo..hi (inclusive) of b, in
// increasing order, until fn returns false. It costs the number of runs, not
// of ranks.
func eachRun(b *roaring.Bitmap, fn func(lo, hi uint64) bool) {
	it := b.Iterator()
	for it.HasNext() {
		lo := it.Next()
		end := nextAbsent(b, lo)
		if !fn(uint64(lo), end-1) || end > math.MaxUint32 {
			return
		}
		it.AdvanceIfNeeded(uint32(end))
	}
}

// addSlice adds the ranks of s to b. A dense block is one range add; rows of
// a contiguous last dimension are one range add each while they are few; a
// slice of many rows, or of strided ranks, is enumerated, sorted and added
// in one pass, so that building it costs O(ranks log ranks) however the
// bitmap's containers grow (a range add into a run container costs its runs).
func (p *Partition) addSlice(b *roaring.Bitmap, s *jsonl.Slice) error {
	if err := p.check(s); err != nil {
		return err
	}
	nd := len(s.Sizes)
	switch {
	case nd == 0:
		b.Add(uint32(s.Offset))
		return nil
	case s.Len() == 0:
		return nil
	case dense(s):
		b.AddRange(uint64(s.Offset), uint64(s.Offset+s.Len()))
		return nil
	case s.Strides[nd-1] == 1 && s.Len()/s.Sizes[nd-1] <= maxRowAdds:
		row := jsonl.Slice{Offset: s.Offset, Sizes: s.Sizes[:nd-1], Strides: s.Strides[:nd-1]}
		p.scratch = row.AppendRanks(p.scratch[:0])
		width := uint64(s.Sizes[nd-1])
		for _, r := range p.scratch {
			b.AddRange(uint64(r), uint64(r)+width)
		}
		return nil
	}
	p.scratch = s.AppendRanks(p.scratch[:0])
	p.u32 = p.u32[:0]
	for _, r := range p.scratch {
		p.u32 = append(p.u32, uint32(r))
	}
	if !slices.IsSorted(p.u32) {
		slices.Sort(p.u32)
	}
	p.u32 = slices.Compact(p.u32)
	if b.IsEmpty() {
		b.AddMany(p.u32)
	} else {
		b.Or(roaring.BitmapOf(p.u32...))
	}
	b.RunOptimize()
	return nil
}

// maxRowAdds is how many rows a slice may have for addSlice to add them one
// range at a time.
const maxRowAdds = 64

// dense reports whether s covers offset..offset+len-1 exactly: row-major
// strides with no gaps.
func dense(s *jsonl.Slice) bool {
	want := int64(1)
	for k := len(s.Sizes) - 1; k >= 0; k-- {
		if s.Sizes[k] != 1 && s.Strides[k] != want {
			return false
		}
		want *= s.Sizes[k]
	}
	return true
}

// distinct reports whether s names no rank twice, without enumerating it
// when its strides nest (sorted by magnitude, each stride exceeds the extent
// of the dimensions below it): the common case, and a sufficient condition.
func distinct(s *jsonl.Slice) (ok, sure bool) {
	var dims [jsonl.MaxSliceDims][2]int64 // |stride|, size
	n := 0
	for k, size := range s.Sizes {
		if size <= 1 {
			continue
		}
		st := s.Strides[k]
		if st == 0 {
			return false, true
		}
		if st < 0 {
			st = -st
		}
		dims[n] = [2]int64{st, size}
		n++
	}
	slices.SortFunc(dims[:n], func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	extent := int64(0)
	for _, d := range dims[:n] {
		if d[0] <= extent {
			return false, false
		}
		extent += d[0] * (d[1] - 1)
	}
	return true, true
}
