package values

import "testing"

// FuzzSlice checks slice expansion on arbitrary offsets, sizes and strides:
// Check never panics, and a slice that passes it enumerates Len ranks, all
// inside Bounds and inside the world.
func FuzzSlice(f *testing.F) {
	f.Add(int64(0), int64(4), int64(1), int64(0), int64(0), int64(16))
	f.Add(int64(3), int64(2), int64(8), int64(4), int64(1), int64(64))
	f.Add(int64(9), int64(3), int64(-1), int64(1), int64(0), int64(10))
	f.Add(int64(0), int64(1<<40), int64(1<<40), int64(1<<40), int64(1<<40), int64(1<<24))
	f.Fuzz(func(t *testing.T, off, n0, s0, n1, s1, world int64) {
		if world < 1 || world > 1<<20 {
			return
		}
		for _, s := range []Slice{
			{Offset: off, Sizes: []int64{n0}, Strides: []int64{s0}},
			{Offset: off, Sizes: []int64{n0, n1}, Strides: []int64{s0, s1}},
			{Offset: off},
		} {
			if err := s.Check(world); err != nil {
				continue
			}
			lo, hi := s.Bounds()
			n := s.Len()
			if n > 1<<16 {
				continue // valid but too long to enumerate here
			}
			ranks := s.AppendRanks(nil)
			if int64(len(ranks)) != n {
				t.Fatalf("%+v: Len %d, enumerated %d", s, n, len(ranks))
			}
			for _, r := range ranks {
				if r < lo || r > hi || r < 0 || r >= world {
					t.Fatalf("%+v: rank %d outside bounds %d..%d or world %d", s, r, lo, hi, world)
				}
			}
		}
	})
}
