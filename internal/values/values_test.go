package values

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestSliceRanks(t *testing.T) {
	tests := []struct {
		s      Slice
		ranks  []int64
		lo, hi int64
	}{
		{Slice{Offset: 3}, []int64{3}, 3, 3},
		{Slice{Offset: 0, Sizes: []int64{2, 4}, Strides: []int64{4, 1}}, []int64{0, 1, 2, 3, 4, 5, 6, 7}, 0, 7},
		{Slice{Offset: 1, Sizes: []int64{2, 2}, Strides: []int64{1, 4}}, []int64{1, 5, 2, 6}, 1, 6},
		{Slice{Offset: 7, Sizes: []int64{3}, Strides: []int64{-2}}, []int64{7, 5, 3}, 3, 7},
		{Slice{Offset: 0, Sizes: []int64{2, 0}, Strides: []int64{1, 1}}, nil, 0, -1},
		{Slice{Offset: 2, Sizes: []int64{3}, Strides: []int64{0}}, []int64{2, 2, 2}, 2, 2},
	}
	for _, tc := range tests {
		got := tc.s.AppendRanks(nil)
		if !reflect.DeepEqual(got, tc.ranks) || int64(len(got)) != tc.s.Len() {
			t.Errorf("%+v: ranks %v (Len %d), want %v", tc.s, got, tc.s.Len(), tc.ranks)
		}
		if lo, hi := tc.s.Bounds(); lo != tc.lo || hi != tc.hi {
			t.Errorf("%+v: bounds %d..%d, want %d..%d", tc.s, lo, hi, tc.lo, tc.hi)
		}
		if err := tc.s.Check(8); err != nil {
			t.Errorf("%+v: %v", tc.s, err)
		}
		c := Slice{Offset: tc.s.Offset, Sizes: append([]int64(nil), tc.s.Sizes...), Strides: append([]int64(nil), tc.s.Strides...)}
		if !c.Equal(&tc.s) {
			t.Errorf("%+v not Equal to its copy", tc.s)
		}
	}
	bad := []struct {
		s    Slice
		want string
	}{
		{Slice{Offset: 8}, "rank 8 is outside"},
		{Slice{Offset: -1}, "rank -1 is outside"},
		{Slice{Offset: 0, Sizes: []int64{3}, Strides: []int64{4}}, "rank 8 is outside"},
		{Slice{Offset: 0, Sizes: []int64{2}, Strides: []int64{9}}, "stride 9 over 2 ranks"},
		{Slice{Offset: 0, Sizes: []int64{2}, Strides: []int64{-1 << 63}}, "reaches outside"},
		{Slice{Offset: 0, Sizes: []int64{2}}, "1 sizes but 0 strides"},
		{Slice{Offset: 0, Sizes: []int64{-1}, Strides: []int64{1}}, "negative size"},
		{Slice{Offset: 0, Sizes: []int64{1 << 40, 1 << 40}, Strides: []int64{0, 0}}, "more than"},
	}
	for _, tc := range bad {
		if err := tc.s.Check(8); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.s, err, tc.want)
		}
	}
}

func TestRegistryIDs(t *testing.T) {
	r := NewRegistry()
	ids := []int64{5000, -7, 1 << 40, 1, 2, 3, 100000, 4999, 0}
	for k := 0; k < 3; k++ {
		for i := int64(0); i < 3000; i++ {
			ids = append(ids, 6000+i*int64(k+1))
		}
	}
	seen := map[int64]int32{}
	for _, id := range ids {
		if _, dup := seen[id]; dup {
			if _, err := r.Define(id, id, 0, "", nil, false); err == nil {
				t.Fatalf("id %d defined twice without error", id)
			}
			continue
		}
		tv, err := r.Define(id, id, 0, "", nil, false)
		if err != nil {
			t.Fatal(err)
		}
		seen[id] = tv.Idx
	}
	for id, idx := range seen {
		tv, ok := r.Lookup(id)
		if !ok || tv.Idx != idx || tv.ID != id {
			t.Fatalf("Lookup(%d) = %+v, %v; want index %d", id, tv, ok, idx)
		}
	}
	if _, ok := r.Lookup(77); ok {
		t.Error("Lookup of an unknown id")
	}
	r.Reset()
	if _, ok := r.Lookup(5000); ok || r.Len() != 0 {
		t.Error("Reset keeps tensors")
	}
}

// EachRanks walks the same ranks as AppendRanks, in chunks of the
// buffer's capacity.
func TestEachRanksMatchesAppendRanks(t *testing.T) {
	for _, s := range []Slice{
		{Offset: 3},
		{Offset: 0, Sizes: []int64{2, 3, 4}, Strides: []int64{100, 10, 1}},
		{Offset: 50, Sizes: []int64{7}, Strides: []int64{-3}},
		{Offset: 0, Sizes: []int64{0, 5}, Strides: []int64{1, 1}},
	} {
		want := s.AppendRanks(nil)
		for _, c := range []int{1, 5, 256} {
			var got []int64
			s.EachRanks(make([]int64, 0, c), func(rs []int64) {
				if len(rs) == 0 || len(rs) > c {
					t.Errorf("chunk of %d with capacity %d", len(rs), c)
				}
				got = append(got, rs...)
			})
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%+v chunks of %d: %v, want %v", s, c, got, want)
			}
		}
	}
}

// TestEachRanksChunksAsAppendRanks: walking in chunks of every size from 1
// gives the ranks AppendRanks lists, in order, for slices of 0 to 3 dims
// with negative and zero strides.
func TestEachRanksChunksAsAppendRanks(t *testing.T) {
	for _, s := range []Slice{
		{Offset: 4},
		{Offset: 0, Sizes: []int64{5}, Strides: []int64{1}},
		{Offset: 9, Sizes: []int64{3, 2}, Strides: []int64{-3, 1}},
		{Offset: 1, Sizes: []int64{2, 3, 2}, Strides: []int64{12, 4, 0}},
		{Offset: 1, Sizes: []int64{2, 0}, Strides: []int64{1, 1}},
	} {
		want := s.AppendRanks(nil)
		for c := 1; c <= len(want)+1; c++ {
			var got []int64
			s.EachRanks(make([]int64, 0, c), func(rs []int64) {
				if len(rs) > c || len(rs) == 0 {
					t.Fatalf("%+v: a chunk of %d with cap %d", s, len(rs), c)
				}
				got = append(got, rs...)
			})
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%+v chunks of %d: %v, want %v", s, c, got, want)
			}
		}
	}
}

// TestSliceOutsideWorldIsRankError: a slice reaching outside the world is
// both a bad slice and the one rank-outside-the-world error, with its text
// unchanged; a malformed slice is only a bad slice.
func TestSliceOutsideWorldIsRankError(t *testing.T) {
	out := Slice{Offset: 0, Sizes: []int64{3}, Strides: []int64{4}} // ranks 0, 4, 8 in a world of 8
	err := out.Check(8)
	if !errors.Is(err, ErrSlice) || !errors.Is(err, ErrRank) || err.Error() != "rank 8 is outside the world of 8 ranks" {
		t.Errorf("outside: %v (ErrSlice %v, ErrRank %v)", err, errors.Is(err, ErrSlice), errors.Is(err, ErrRank))
	}
	bad := Slice{Offset: 0, Sizes: []int64{2}}
	if err := bad.Check(8); !errors.Is(err, ErrSlice) || errors.Is(err, ErrRank) {
		t.Errorf("malformed: %v", err)
	}
}

// TestNameIdx checks that names get dense indexes in order of first mention,
// the same index when named again, and fresh ones after Reset.
func TestNameIdx(t *testing.T) {
	r := NewRegistry()
	for _, c := range []struct {
		name string
		want int32
	}{{"aten.mm", 0}, {"aten.add", 1}, {"aten.mm", 0}, {"", 2}, {"aten.add", 1},
		// Names of one length may share a place of the cache in front of the map.
		{"aten.mv", 3}, {"aten.mm", 0}, {"aten.mv", 3}, {string([]byte("aten.mm")), 0}} {
		if got := r.NameIdx(c.name); got != c.want {
			t.Errorf("NameIdx(%q) = %d, want %d", c.name, got, c.want)
		}
	}
	// More names than the cache has places: some share one, and each keeps
	// the index of its first mention (4 + its number here), asked again
	// after all the others.
	for round := 0; round < 2; round++ {
		for i := 0; i < 200; i++ {
			name := fmt.Sprintf("aten.op%d.default", i)
			if got, want := r.NameIdx(name), int32(4+i); got != want {
				t.Fatalf("round %d: NameIdx(%q) = %d, want %d", round, name, got, want)
			}
		}
	}
	if got := r.NameIdx("aten.mm"); got != 0 {
		t.Errorf("NameIdx(aten.mm) = %d after 200 other names, want 0", got)
	}
	r.Reset()
	if got := r.NameIdx("aten.add"); got != 0 {
		t.Errorf("after Reset, NameIdx(aten.add) = %d, want 0", got)
	}
}

// TestSliceRepeated checks the smallest rank a slice names twice, with the
// ranks worked out by hand (rank = offset + sum of index * stride), in
// nested and overlapping layouts whose strides come in either order.
func TestSliceRepeated(t *testing.T) {
	tests := []struct {
		s     Slice
		rank  int64
		found bool
	}{
		{Slice{Offset: 3}, 0, false},
		// i + 2j, i < 2, j < 3: 0 2 4 1 3 5, distinct.
		{Slice{Sizes: []int64{2, 3}, Strides: []int64{1, 2}}, 0, false},
		// 3i + j, i < 2, j < 3: 0 1 2 3 4 5, distinct (strides descending).
		{Slice{Sizes: []int64{2, 3}, Strides: []int64{3, 1}}, 0, false},
		// i + 2j, i < 3, j < 2: 0 1 2 2 3 4: 2 twice.
		{Slice{Sizes: []int64{3, 2}, Strides: []int64{1, 2}}, 2, true},
		// 10 + 2i + j, i < 2, j < 3 (strides descending): 10 11 12 12 13 14: 12 twice.
		{Slice{Offset: 10, Sizes: []int64{2, 3}, Strides: []int64{2, 1}}, 12, true},
		// 5 - i, i < 2: 5 4, distinct.
		{Slice{Offset: 5, Sizes: []int64{2}, Strides: []int64{-1}}, 0, false},
		// 6 - 2i + 3j, i < 3, j < 2: 6 9 4 7 2 5, distinct; sizes of 1 are skipped.
		{Slice{Offset: 6, Sizes: []int64{3, 1, 2}, Strides: []int64{-2, 7, 3}}, 0, false},
		// 6 - 2i + 3j, i < 3, j < 3: 6 9 12 4 7 10 2 5 8, distinct although not nested.
		{Slice{Offset: 6, Sizes: []int64{3, 3}, Strides: []int64{-2, 3}}, 0, false},
		// 2 + 0i: 2 2 2.
		{Slice{Offset: 2, Sizes: []int64{3}, Strides: []int64{0}}, 2, true},
	}
	for _, tc := range tests {
		rank, found, _ := tc.s.Repeated(nil)
		if rank != tc.rank || found != tc.found {
			t.Errorf("%+v: Repeated %d %v, want %d %v", tc.s, rank, found, tc.rank, tc.found)
		}
	}
}
