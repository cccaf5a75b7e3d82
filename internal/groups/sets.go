package groups

import (
	"math"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/fastsim/fastsim/internal/values"
)

// Rank sets are roaring bitmaps of uint32 ranks. Roaring keeps them in
// containers of 65,536 values each, and its run query NextAbsentValue is
// wrong at their edges, differently for each kind of container: it answers
// -1 when the bitmap's last container is full to its end, jumps to the
// start of the next container even when that value is present, and for a
// bitmap container with no absent value past the target it answers the
// container's last value plus 2^16-1 or so. Every run query of this package
// goes through nextAbsent, which accepts roaring's answer only once checked
// and otherwise searches, and every value past the largest rank is carried
// as a uint64, never narrowed.

// nextAbsent is the smallest value >= r that b does not hold, as a uint64:
// 2^32 when b holds every value from r up.
func nextAbsent(b *roaring.Bitmap, r uint32) uint64 {
	v := uint64(r)
	if !b.Contains(r) {
		return v
	}
	// Roaring's answer, when it is right: past v, absent (or 2^32), and
	// everything from v below it present. Checking costs a cardinality over
	// the containers in between.
	if n := b.NextAbsentValue(r); n > int64(v) && n <= 1<<32 {
		if (n == 1<<32 || !b.Contains(uint32(n))) && b.CardinalityInRange(v, uint64(n)) == uint64(n)-v {
			return uint64(n)
		}
	}
	// Otherwise search: the run from v is full up to some x, found by
	// bisection on whether [v, x] is full.
	lo, hi := v, uint64(b.Maximum()) // [v, lo] is full; the run ends at or before hi
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if b.CardinalityInRange(v, mid+1) == mid+1-v {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo + 1
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
func (p *Partition) addSlice(b *roaring.Bitmap, s *values.Slice) error {
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
		row := values.Slice{Offset: s.Offset, Sizes: s.Sizes[:nd-1], Strides: s.Strides[:nd-1]}
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
func dense(s *values.Slice) bool {
	want := int64(1)
	for k := len(s.Sizes) - 1; k >= 0; k-- {
		if s.Sizes[k] != 1 && s.Strides[k] != want {
			return false
		}
		want *= s.Sizes[k]
	}
	return true
}
