package synth

import (
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// walked is the bitmap of a slice's ranks listed one by one, the
// definition newSlice's shortcut for runs must agree with.
func walked(offset int, sizes, strides []int) *roaring.Bitmap {
	b := roaring.New()
	var walk func(d, r int)
	walk = func(d, r int) {
		if d == len(sizes) {
			b.Add(uint32(r))
			return
		}
		for i := 0; i < sizes[d]; i++ {
			walk(d+1, r+i*strides[d])
		}
	}
	walk(0, offset)
	return b
}

// TestSliceShortcuts checks within and sameRanks, which answer from
// bounds, counts and plain bits where they can, against the bitmaps'
// own answers, on the rank sets Random draws at worlds on both sides of
// maskRanks and of a bitmap container's 65,536 ranks, and checks each
// set against its ranks listed one by one.
func TestSliceShortcuts(t *testing.T) {
	for _, world := range []int{2, 64, 1000, maskRanks + 100, BigWorld + 5, 3 * BigWorld} {
		g := &rgen{r: rand.New(rand.NewPCG(uint64(world), 1)), world: world}
		var ss []slice
		for range 150 {
			ss = append(ss, g.randSlice())
		}
		ss = append(ss, g.all(), newSlice(world-1, []int{world}, []int{-1}), newSlice(world/2, nil, nil))
		if world >= 6 {
			// Same bounds and count, other ranks: {0,1,4,5} and {0,2,3,5}.
			ss = append(ss, newSlice(0, []int{2, 2}, []int{4, 1}), newSlice(0, []int{2, 2}, []int{3, 2}))
		}
		for _, s := range ss {
			if want := walked(s.offset, s.sizes, s.strides); !s.set.Equals(want) {
				t.Fatalf("world %d: slice %d %v %v: set %v, want %v", world, s.offset, s.sizes, s.strides, s.set, want)
			}
			if lo, hi := int(s.set.Minimum()), int(s.set.Maximum()); s.lo != lo || s.hi != hi || s.card != int(s.set.GetCardinality()) {
				t.Fatalf("world %d: bounds %d..%d (%d ranks), want %d..%d (%d)", world, s.lo, s.hi, s.card, lo, hi, s.set.GetCardinality())
			}
		}
		var in, same int
		for i := range ss {
			for j := range ss {
				a, b := &ss[i], &ss[j]
				if got, want := a.within(b), a.set.AndCardinality(b.set) == a.set.GetCardinality(); got != want {
					t.Fatalf("world %d: within(%v, %v) = %v, want %v", world, a.set, b.set, got, want)
				} else if want {
					in++
				}
				if got, want := a.sameRanks(b), a.set.Equals(b.set); got != want {
					t.Fatalf("world %d: sameRanks(%v, %v) = %v, want %v", world, a.set, b.set, got, want)
				} else if want {
					same++
				}
			}
		}
		// Both answers must occur, or the comparison above checked one side only.
		if in == len(ss)*len(ss) || in <= len(ss) {
			t.Errorf("world %d: %d of %d pairs within: the sample does not test both answers", world, in, len(ss)*len(ss))
		}
		t.Logf("world %d: %d pairs within, %d the same", world, in, same)
	}
}
