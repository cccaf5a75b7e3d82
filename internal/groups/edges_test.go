package groups

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/fastsim/fastsim/internal/values"
)

const edge = 1 << 16 // values per roaring container

// TestNextAbsentAtContainerEdges checks nextAbsent against a rank-by-rank
// scan on sets whose runs start and end on, just before and just after the
// edges of roaring's 65,536-value containers, including full containers
// and a set that ends on the last edge.
func TestNextAbsentAtContainerEdges(t *testing.T) {
	runs := [][][2]uint64{
		{{0, edge}},                       // one full container: roaring answers -1
		{{0, 2 * edge}},                   // two adjacent full containers
		{{edge, 2 * edge}},                // a full container that is the last
		{{0, edge}, {edge + 5, edge + 9}}, // a full container, then a run in the next
		{{edge - 1, edge + 1}},            // across an edge
		{{edge - 3, edge}},                // ending on an edge
		{{edge, edge + 1}},                // a single rank on an edge
		{{0, 3}, {2*edge - 2, 3 * edge}},  // a run through two edges, ending on one
		{{5, 7}, {edge, 3*edge - 1}},      // ending just before an edge
		{{1<<32 - edge, 1 << 32}},         // the last container of uint32
		{{edge + 5, 2 * edge}},            // the last container full to its end but for a hole at its start
		{{3, edge}},                       // the same in the first container
	}
	for i := range 3 * len(runs) {
		rs := runs[i/3]
		// The same set in each kind of container roaring may hold it in:
		// runs (range adds), and values added one by one (arrays and
		// bitmaps), with and without RunOptimize.
		b := roaring.New()
		switch i % 3 {
		case 0:
			for _, r := range rs {
				b.AddRange(r[0], r[1])
			}
		default:
			for _, r := range rs {
				for x := r[0]; x < r[1]; x++ {
					b.Add(uint32(x))
				}
			}
			if i%3 == 2 {
				b.RunOptimize()
			}
		}
		for _, r := range rs {
			for _, q := range []uint64{r[0], r[0] + 1, r[1] - 1, (r[0] + r[1]) / 2} {
				if q >= r[1] {
					continue
				}
				want := q
				for want <= 1<<32-1 && b.Contains(uint32(want)) {
					want++
				}
				if got := nextAbsent(b, uint32(q)); got != want {
					t.Errorf("runs %v: nextAbsent(%d) = %d, want %d", rs, q, got, want)
				}
			}
		}
		var got [][2]uint64
		eachRun(b, func(lo, hi uint64) bool { got = append(got, [2]uint64{lo, hi + 1}); return true })
		if fmt.Sprint(got) != fmt.Sprint(merge(rs)) {
			t.Errorf("runs %v: eachRun gives %v", rs, got)
		}
	}
}

// merge joins adjacent half-open runs.
func merge(rs [][2]uint64) [][2]uint64 {
	var out [][2]uint64
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1][1] == r[0] {
			out[n-1][1] = r[1]
			continue
		}
		out = append(out, r)
	}
	return out
}

// TestResolveAcrossEdges replays the case that went wrong: a world of
// 131,072 ranks, a command to the upper half, then one to every rank, which
// must reach both groups.
func TestResolveAcrossEdges(t *testing.T) {
	p, _ := New(2*edge, true)
	var rec recorder
	if _, err := p.Resolve([]values.Slice{sl(edge, []int64{edge}, []int64{1})}, rec.split); err != nil {
		t.Fatal(err)
	}
	gs, err := p.Resolve([]values.Slice{sl(0, []int64{2 * edge}, []int64{1})}, rec.split)
	if err != nil || len(gs) != 2 {
		t.Fatalf("the whole world resolves to groups %v (%v), want both halves", gs, err)
	}
}

// model is a rank-by-rank partition: ranks are in the same group exactly
// when they received the same commands, which sig fingerprints (a
// polynomial hash of the command numbers received, in order).
type model struct{ sig []uint64 }

// TestResolveMatchesModelAtEdges resolves random slices that end on,
// before and after the 65,536 edges (single ranks at an edge, strided sets,
// 2-d blocks across an edge), in worlds of several containers that are not
// all powers of two, and checks after each command that the groups are
// exactly the classes of ranks that received the same commands, that the
// index agrees with the bitmaps, and that the resolved groups cover exactly
// the receiving ranks.
func TestResolveMatchesModelAtEdges(t *testing.T) {
	for _, world := range []int64{edge + 1, 2 * edge, 3*edge - 7, 3 * edge} {
		for seed := range uint64(3) {
			r := rand.New(rand.NewPCG(seed, uint64(world)))
			p, _ := New(world, true)
			m := model{sig: make([]uint64, world)}
			var rec recorder
			stamp := make([]int32, world)
			for cmd := range int32(40) {
				s := edgeSlice(r, world)
				gs, err := p.Resolve([]values.Slice{s}, rec.split)
				if err != nil {
					t.Fatalf("world %d: %+v: %v", world, s, err)
				}
				nrecv := int64(0)
				for _, x := range s.AppendRanks(nil) {
					stamp[x] = cmd + 1
					nrecv++
					m.sig[x] = m.sig[x]*0x9e3779b97f4a7c15 + uint64(cmd) + 1
				}
				covered := int64(0)
				for _, g := range gs {
					covered += p.Size(g)
					if stamp[p.Lowest(g)] != cmd+1 {
						t.Fatalf("world %d cmd %d: group %d (%s) is not inside the receiving set", world, cmd, g, p.AppendRanks(nil, g))
					}
				}
				if covered != nrecv {
					t.Fatalf("world %d cmd %d: resolved groups hold %d ranks, the slice %+v has %d", world, cmd, covered, s, nrecv)
				}
				if cmd%8 == 7 {
					checkPartition(t, p, m.sig)
				}
			}
		}
	}
}

// checkPartition checks that p's groups are exactly the classes of equal
// labels, and that sizes and the rank index agree with the bitmaps.
func checkPartition(t *testing.T, p *Partition, labels []uint64) {
	t.Helper()
	first := map[uint64]GroupID{}
	for x, l := range labels {
		g := p.GroupOf(int64(x))
		if !p.ranks[g].Contains(uint32(x)) {
			t.Fatalf("rank %d: the index says group %d, which does not hold it", x, g)
		}
		if h, ok := first[l]; !ok {
			first[l] = g
		} else if h != g {
			t.Fatalf("rank %d: same commands as group %d's ranks, but in group %d", x, h, g)
		}
	}
	if len(first) != p.Len() {
		t.Fatalf("%d classes of ranks but %d groups", len(first), p.Len())
	}
	for g := range p.Len() {
		if int64(p.ranks[g].GetCardinality()) != p.Size(GroupID(g)) {
			t.Fatalf("group %d: size %d, bitmap holds %d", g, p.Size(GroupID(g)), p.ranks[g].GetCardinality())
		}
	}
}

// edgeSlice is a random slice of distinct ranks near a container edge.
func edgeSlice(r *rand.Rand, world int64) values.Slice {
	for {
		e := int64(1+r.IntN(int(world/edge))) * edge // an edge inside or at the world's end
		if e > world {
			e = world
		}
		d := []int64{-1, 0, 1}[r.IntN(3)]
		var s values.Slice
		switch r.IntN(6) {
		case 0: // a run ending on, before or after the edge
			n := []int64{1, 2, 100, edge / 2, edge}[r.IntN(5)]
			s = sl(e+d-n, []int64{n}, []int64{1})
		case 1: // a run starting there
			n := []int64{1, 3, 1000, edge}[r.IntN(4)]
			s = sl(e+d, []int64{n}, []int64{1})
		case 2: // a single rank at the edge
			s = sl(e+d, nil, nil)
		case 3: // strided across the edge
			st := int64(2 + r.IntN(4))
			n := int64(1 + r.IntN(5000))
			s = sl(e+d-st*int64(r.IntN(int(n))), []int64{n}, []int64{st})
		case 4: // a 2-d block across the edge
			rows, cols := int64(1+r.IntN(300)), int64(1+r.IntN(8))
			st := cols + int64(r.IntN(8))
			s = sl(e+d-st*int64(r.IntN(int(rows))), []int64{rows, cols}, []int64{st, 1})
		default: // the whole world
			s = sl(0, []int64{world}, []int64{1})
		}
		if lo, hi := s.Bounds(); lo >= 0 && hi < world {
			return s
		}
	}
}

// TestPairsMatchesPartnersAtEdges sends between random slices around the
// edges (halves, shifts, strided and reversed sides) and checks that every
// sending group's ranks send to one receiving group and every receiving
// group's ranks receive from one sending group, and that the pairs returned
// are exactly the distinct (sender group, receiver group) of the positions.
func TestPairsMatchesPartnersAtEdges(t *testing.T) {
	world := int64(3*edge + 11)
	r := rand.New(rand.NewPCG(1, 2))
	p, _ := New(world, true)
	var rec recorder
	for range 30 {
		a := edgeSlice(r, world)
		p.Resolve([]values.Slice{a}, rec.split)
	}
	sends := [][2]values.Slice{
		{sl(0, []int64{world / 2}, []int64{1}), sl(world/2, []int64{world / 2}, []int64{1})},
		{sl(0, []int64{world - 1}, []int64{1}), sl(1, []int64{world - 1}, []int64{1})}, // shift by one
		{sl(edge-5, []int64{10}, []int64{1}), sl(2*edge+4, []int64{10}, []int64{-1})},
		{sl(1, []int64{edge}, []int64{2}), sl(0, []int64{edge}, []int64{2})}, // odd to even, interleaved
		{sl(0, []int64{2}, []int64{1}), sl(1, []int64{2}, []int64{-1})},      // a swap: a cycle
	}
	for _, sd := range sends {
		from, to := sd[0], sd[1]
		snd, rcv, err := p.Pairs(&from, &to, rec.split)
		if err != nil {
			t.Fatalf("%+v -> %+v: %v", from, to, err)
		}
		src, dst := from.AppendRanks(nil), to.AppendRanks(nil)
		partner := map[GroupID]GroupID{}
		back := map[GroupID]GroupID{}
		var want [][2]GroupID
		seen := map[[2]GroupID]bool{}
		for i := range src {
			gs, gd := p.GroupOf(src[i]), p.GroupOf(dst[i])
			if q, ok := partner[gs]; ok && q != gd {
				t.Fatalf("%+v -> %+v: sending group %d sends to groups %d and %d", from, to, gs, q, gd)
			}
			if q, ok := back[gd]; ok && q != gs {
				t.Fatalf("%+v -> %+v: receiving group %d receives from groups %d and %d", from, to, gd, q, gs)
			}
			partner[gs], back[gd] = gd, gs
			if pair := [2]GroupID{gs, gd}; !seen[pair] {
				seen[pair] = true
				want = append(want, pair)
			}
		}
		var got [][2]GroupID
		for i := range snd {
			got = append(got, [2]GroupID{snd[i], rcv[i]})
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%+v -> %+v: pairs %v, want %v", from, to, got, want)
		}
		for g := range p.Len() {
			if int64(p.ranks[g].GetCardinality()) != p.Size(GroupID(g)) || !p.ranks[g].Contains(uint32(p.Lowest(GroupID(g)))) {
				t.Fatalf("group %d: size or index broken", g)
			}
		}
	}
}

// TestPairsShiftIsLinear: a shift by one rank over 2^15 ranks ends with
// one group per rank, each pairing with its neighbour; refining one group
// at a time took a pass per rank.
func TestPairsShiftIsLinear(t *testing.T) {
	const n = 1 << 15
	p, _ := New(n, true)
	var rec recorder
	from, to := sl(0, []int64{n - 1}, []int64{1}), sl(1, []int64{n - 1}, []int64{1})
	snd, rcv, err := p.Pairs(&from, &to, rec.split)
	if err != nil {
		t.Fatal(err)
	}
	if p.Len() != n || len(snd) != n-1 {
		t.Fatalf("%d groups, %d pairs; want %d and %d", p.Len(), len(snd), n, n-1)
	}
	for i := range snd {
		if p.Lowest(rcv[i]) != p.Lowest(snd[i])+1 {
			t.Fatalf("pair %d: rank %d sends to rank %d", i, p.Lowest(snd[i]), p.Lowest(rcv[i]))
		}
	}
}

// TestPairsCycleKeepsGroups: a send whose graph is cycles needs no split
// when every rank's walk meets the same groups forever: the reversal of
// one group (2-cycles 0<->7, 1<->6, ...) keeps it whole, and after ranks
// 0-3 split off, the same reversal pairs the two halves both ways, still
// without a split.
func TestPairsCycleKeepsGroups(t *testing.T) {
	p, _ := New(8, true)
	var rec recorder
	rev := []values.Slice{sl(0, []int64{8}, []int64{1}), sl(7, []int64{8}, []int64{-1})}
	snd, rcv, err := p.Pairs(&rev[0], &rev[1], rec.split)
	if err != nil || p.Len() != 1 || len(snd) != 1 || snd[0] != 0 || rcv[0] != 0 {
		t.Fatalf("reversal of one group: %d groups, pairs %v %v, %v", p.Len(), snd, rcv, err)
	}
	low, _ := p.Resolve([]values.Slice{sl(0, []int64{4}, []int64{1})}, rec.split)
	a, b := low[0], p.GroupOf(4)
	n := len(rec.splits)
	snd, rcv, err = p.Pairs(&rev[0], &rev[1], rec.split)
	if err != nil || len(rec.splits) != n || !slices.Equal(snd, []GroupID{a, b}) || !slices.Equal(rcv, []GroupID{b, a}) {
		t.Fatalf("reversal of two halves: pairs %v -> %v (halves %d, %d), %d more splits, %v", snd, rcv, a, b, len(rec.splits)-n, err)
	}
}

// TestRepeatedRankInSend: a send side with stride 0 names a rank twice and
// is refused, grouped and not, before any split.
func TestRepeatedRankInSend(t *testing.T) {
	for _, grouped := range []bool{false, true} {
		p, _ := New(3, grouped)
		var rec recorder
		from, to := sl(0, []int64{2}, []int64{0}), sl(1, []int64{2}, []int64{1})
		for _, c := range [][2]values.Slice{{from, to}, {to, from}} {
			_, _, err := p.Pairs(&c[0], &c[1], rec.split)
			if err == nil || !strings.Contains(err.Error(), "names rank 0 more than once") {
				t.Fatalf("grouped %v: %v", grouped, err)
			}
		}
		if len(rec.splits) != 0 {
			t.Fatalf("grouped %v: split before refusing", grouped)
		}
		// Strides that do not nest but name distinct ranks are fine.
		odd := sl(0, []int64{2, 2}, []int64{1, 2}) // 0, 2, 1, 3
		if err := p.CheckDistinct(&odd); err != nil && p.world >= 4 {
			t.Fatal(err)
		}
	}
}

func TestLeastRotationAndPeriod(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		n := 1 + r.IntN(9)
		s := make([]GroupID, n)
		for i := range s {
			s[i] = GroupID(r.IntN(3))
		}
		if r.IntN(3) == 0 { // a repeated pattern
			k := 1 + r.IntN(3)
			for i := range s {
				s[i] = s[i%k]
			}
		}
		best := 0
		for k := 1; k < n; k++ {
			if slices.Compare(rot(s, k), rot(s, best)) < 0 {
				best = k
			}
		}
		if got := leastRotation(s); !slices.Equal(rot(s, got), rot(s, best)) {
			t.Fatalf("%v: least rotation at %d (%v), want %v", s, got, rot(s, got), rot(s, best))
		}
		per := n
		for q := 1; q < n; q++ {
			if n%q == 0 && slices.Equal(rot(s, q), s) {
				per = q
				break
			}
		}
		if got := period(s); got != per {
			t.Fatalf("%v: period %d, want %d", s, got, per)
		}
	}
}

func rot(s []GroupID, k int) []GroupID { return append(slices.Clone(s[k:]), s[:k]...) }

// TestDescriptions checks the bounded descriptions of rank sets against
// hand-written expectations.
func TestDescriptions(t *testing.T) {
	bm := func(runs ...[2]uint64) *roaring.Bitmap {
		b := roaring.New()
		for _, r := range runs {
			b.AddRange(r[0], r[1]+1)
		}
		return b
	}
	strided := roaring.New()
	for x := uint64(65543); x <= 131071; x += 4 {
		strided.Add(uint32(x))
	}
	var bs []uint32
	for x := uint32(0); x < 1<<20; x += 8 {
		bs = append(bs, x, x+1, x+2, x+3)
	}
	blocks := roaring.BitmapOf(bs...)
	for _, c := range []struct {
		b    *roaring.Bitmap
		want string
	}{
		{bm([2]uint64{7, 7}), "rank 7"},
		{bm([2]uint64{8, 11}), "ranks 8..11 (4 ranks)"},
		{strided, "ranks 65543..131071 step 4 (16,383 ranks)"},
		{blocks, "ranks 0..3, 8..11, 16..19, ..., 1048568..1048571 (131,072 blocks of 4 every 8; 524,288 ranks)"},
		{bm([2]uint64{0, 3}, [2]uint64{9, 9}, [2]uint64{20, 31}, [2]uint64{999, 999}), "ranks 0..3, 9, 20..31, 999 (18 ranks in 4 runs)"},
		{bm([2]uint64{0, 3}, [2]uint64{9, 9}, [2]uint64{20, 31}, [2]uint64{40, 40}, [2]uint64{999, 999}), "ranks 0..3, 9, 20..31, ..., 999 (19 ranks in 5 runs)"},
		{bm([2]uint64{0, 2*edge - 1}), "ranks 0..131071 (131,072 ranks)"},
	} {
		if got := string(appendDescription(nil, c.b)); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

// TestSliceKeySpellings: the same ranks spelled differently share one cache
// key, and slices with equal keys always name the same ranks (as sets for
// Resolve, in the same order for a send's sides).
func TestSliceKeySpellings(t *testing.T) {
	same := [][]values.Slice{
		{sl(5, nil, nil), sl(5, []int64{1}, []int64{1}), sl(5, []int64{1, 1}, []int64{7, 3})},
		{sl(0, []int64{8}, []int64{1}), sl(0, []int64{2, 4}, []int64{4, 1}), sl(0, []int64{2, 1, 4}, []int64{4, 9, 1})},
		{sl(0, []int64{4}, []int64{2}), sl(6, []int64{4}, []int64{-2})}, // as sets only
		{sl(0, []int64{2, 3}, []int64{1, 2}), sl(0, []int64{3, 2}, []int64{2, 1})},
	}
	for i, spellings := range same {
		for _, s := range spellings[1:] {
			if i < 2 && string(appendSliceKey(nil, &s, false)) != string(appendSliceKey(nil, &spellings[0], false)) {
				t.Errorf("%+v and %+v: ordered keys differ", s, spellings[0])
			}
			if string(appendSliceKey(nil, &s, true)) != string(appendSliceKey(nil, &spellings[0], true)) {
				t.Errorf("%+v and %+v: set keys differ", s, spellings[0])
			}
		}
	}
	if string(appendSliceKey(nil, &same[2][0], false)) == string(appendSliceKey(nil, &same[2][1], false)) {
		t.Error("a reversed send side has the same ordered key")
	}
	// Random slices: equal keys, equal ranks.
	r := rand.New(rand.NewPCG(5, 6))
	seen := map[string][]int64{}
	seenSet := map[string][]int64{}
	for range 20000 {
		nd := r.IntN(4)
		s := values.Slice{Offset: int64(r.IntN(50))}
		for range nd {
			s.Sizes = append(s.Sizes, int64(1+r.IntN(3)))
			s.Strides = append(s.Strides, int64(r.IntN(9)-4))
		}
		ranks := s.AppendRanks(nil)
		key := string(appendSliceKey(nil, &s, false))
		if prev, ok := seen[key]; ok && !slices.Equal(prev, ranks) {
			t.Fatalf("%+v: ordered key shared with ranks %v, names %v", s, prev, ranks)
		}
		seen[key] = ranks
		set := slices.Sorted(slices.Values(ranks))
		set = slices.Compact(set)
		key = string(appendSliceKey(nil, &s, true))
		if prev, ok := seenSet[key]; ok && !slices.Equal(prev, set) {
			t.Fatalf("%+v: set key shared with ranks %v, names %v", s, prev, set)
		}
		seenSet[key] = set
	}
}
