package groups

import (
	"fmt"
	"slices"
	"testing"

	"github.com/fastsim/fastsim/internal/values"
)

func sl(offset int64, sizes, strides []int64) values.Slice {
	return values.Slice{Offset: offset, Sizes: sizes, Strides: strides}
}

// recorder is a Split that remembers the splits it was asked for.
type recorder struct{ splits [][2]GroupID }

func (r *recorder) split(from, to GroupID) error {
	r.splits = append(r.splits, [2]GroupID{from, to})
	return nil
}

func ranksOf(p *Partition, g GroupID) string { return string(p.AppendRuns(nil, g)) }

func TestResolveSplitsLazily(t *testing.T) {
	p, err := New(16, true)
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	// The whole world: one group, no split.
	gs, err := p.Resolve([]values.Slice{sl(0, []int64{16}, []int64{1})}, rec.split)
	if err != nil || !slices.Equal(gs, []GroupID{0}) || len(rec.splits) != 0 {
		t.Fatalf("whole world: groups %v splits %v err %v", gs, rec.splits, err)
	}
	// Ranks 0-3: group 0 splits; the smaller side (0-3) takes the new id 1.
	gs, _ = p.Resolve([]values.Slice{sl(0, []int64{4}, []int64{1})}, rec.split)
	if !slices.Equal(gs, []GroupID{1}) || len(rec.splits) != 1 || rec.splits[0] != [2]GroupID{0, 1} {
		t.Fatalf("ranks 0-3: groups %v splits %v", gs, rec.splits)
	}
	if ranksOf(p, 1) != "0-3" || ranksOf(p, 0) != "4-15" || p.Lowest(0) != 4 || p.Size(0) != 12 {
		t.Fatalf("after split: 1=%s 0=%s", ranksOf(p, 1), ranksOf(p, 0))
	}
	// Even ranks 0..14 (strided): both groups split, by parity.
	gs, _ = p.Resolve([]values.Slice{sl(0, []int64{8}, []int64{2})}, rec.split)
	if len(gs) != 2 || p.Len() != 4 {
		t.Fatalf("evens: groups %v, %d groups in all", gs, p.Len())
	}
	var got []string
	for _, g := range gs {
		got = append(got, ranksOf(p, g))
	}
	slices.Sort(got)
	if want := []string{"0,2", "4,6,8,10,12,14"}; !slices.Equal(got, want) {
		t.Fatalf("evens resolve to %q, want %q", got, want)
	}
	// Every rank's group holds it.
	for r := int64(0); r < 16; r++ {
		if !p.ranks[p.GroupOf(r)].Contains(uint32(r)) {
			t.Fatalf("rank %d: index says group %d, which does not hold it", r, p.GroupOf(r))
		}
	}
	// Resolving the same set again hits the cache and splits nothing.
	n := len(rec.splits)
	again, _ := p.Resolve([]values.Slice{sl(0, []int64{8}, []int64{2})}, rec.split)
	if !slices.Equal(again, gs) || len(rec.splits) != n {
		t.Fatalf("second resolve: %v (was %v), splits %d -> %d", again, gs, n, len(rec.splits))
	}
}

func TestResolveUnionOfSlices(t *testing.T) {
	p, _ := New(8, true)
	var rec recorder
	// Two slices, one repeated rank: the union is 0-5.
	gs, _ := p.Resolve([]values.Slice{sl(0, []int64{4}, []int64{1}), sl(3, []int64{3}, []int64{1})}, rec.split)
	if len(gs) != 1 || ranksOf(p, gs[0]) != "0-5" {
		t.Fatalf("union: %v %s", gs, ranksOf(p, gs[0]))
	}
}

func TestResolveOutsideWorld(t *testing.T) {
	p, _ := New(8, true)
	if _, err := p.Resolve([]values.Slice{sl(6, []int64{3}, []int64{1})}, (&recorder{}).split); err == nil {
		t.Fatal("ranks 6-8 in a world of 8: want an error")
	}
}

func TestAddSliceRanges(t *testing.T) {
	p, _ := New(64, true)
	for _, c := range []struct {
		s    values.Slice
		want string
	}{
		{sl(0, []int64{2, 4}, []int64{4, 1}), "0-7"},        // dense: one range
		{sl(1, []int64{2, 3}, []int64{16, 1}), "1-3,17-19"}, // rows
		{sl(0, []int64{4}, []int64{8}), "0,8,16,24"},        // strided
		{sl(5, nil, nil), "5"},                              // 0 dims: the offset
		{sl(9, []int64{3}, []int64{-1}), "7-9"},             // negative stride
	} {
		p.recv.Clear()
		if err := p.addSlice(p.recv, &c.s); err != nil {
			t.Fatal(err)
		}
		q, _ := New(64, true)
		q.ranks[0] = p.recv
		if got := ranksOf(q, 0); got != c.want {
			t.Errorf("%+v: %s, want %s", c.s, got, c.want)
		}
	}
}

func TestPairsRefineByPartner(t *testing.T) {
	p, _ := New(8, true)
	var rec recorder
	// Make 4-7 one group and split 0-3 into 0-1 and 2-3.
	p.Resolve([]values.Slice{sl(0, []int64{4}, []int64{1})}, rec.split)
	p.Resolve([]values.Slice{sl(0, []int64{2}, []int64{1})}, rec.split)
	// Send 0-3 -> 4-7 by position: 4-5 pair with group 0-1, 6-7 with 2-3,
	// so the receiving group splits in two.
	from, to := sl(0, []int64{4}, []int64{1}), sl(4, []int64{4}, []int64{1})
	snd, rcv, err := p.Pairs(&from, &to, rec.split)
	if err != nil {
		t.Fatal(err)
	}
	if len(snd) != 2 || len(rcv) != 2 {
		t.Fatalf("pairs %v -> %v, want two", snd, rcv)
	}
	var got []string
	for i := range snd {
		got = append(got, ranksOf(p, snd[i])+" -> "+ranksOf(p, rcv[i]))
	}
	if want := []string{"0-1 -> 4-5", "2-3 -> 6-7"}; !slices.Equal(got, want) {
		t.Fatalf("pairs %q, want %q", got, want)
	}
	// Reversed order on one side: 0-3 -> 7,6,5,4.
	rev := sl(7, []int64{4}, []int64{-1})
	snd, rcv, _ = p.Pairs(&from, &rev, rec.split)
	got = got[:0]
	for i := range snd {
		got = append(got, ranksOf(p, snd[i])+" -> "+ranksOf(p, rcv[i]))
	}
	if want := []string{"0-1 -> 6-7", "2-3 -> 4-5"}; !slices.Equal(got, want) {
		t.Fatalf("reversed pairs %q, want %q", got, want)
	}
	three := sl(4, []int64{3}, []int64{1})
	if _, _, err := p.Pairs(&from, &three, rec.split); err == nil {
		t.Fatal("3 ranks to 4: want an error")
	}
}

func TestUngroupedIsRanks(t *testing.T) {
	p, _ := New(8, false)
	gs, _ := p.Resolve([]values.Slice{sl(6, []int64{2}, []int64{1}), sl(1, []int64{2}, []int64{5})}, nil)
	if !slices.Equal(gs, []GroupID{1, 6, 7}) || p.Len() != 8 { // in increasing order
		t.Fatalf("ungrouped: %v", gs)
	}
	from, to := sl(0, []int64{2}, []int64{1}), sl(5, []int64{2}, []int64{-1})
	snd, rcv, _ := p.Pairs(&from, &to, nil)
	if fmt.Sprint(snd, rcv) != "[0 1] [5 4]" {
		t.Fatalf("ungrouped pairs %v %v", snd, rcv)
	}
}

// BenchmarkResolveCached is the steady state of a training loop at world
// 1,048,576: the same stage slices again and again, no more splits.
func BenchmarkResolveCached(b *testing.B) {
	const world, stages = 1 << 20, 8
	p, _ := New(world, true)
	var rec recorder
	slices := make([][]values.Slice, stages)
	for s := range slices {
		slices[s] = []values.Slice{sl(int64(s)*world/stages, []int64{world / stages}, []int64{1})}
		p.Resolve(slices[s], rec.split)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := p.Resolve(slices[i%stages], rec.split); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolveMiss resolves a stage's slice with the cache cleared each
// time: the cost of finding the touched groups through the index.
func BenchmarkResolveMiss(b *testing.B) {
	const world, stages = 1 << 20, 8
	p, _ := New(world, true)
	var rec recorder
	stage := make([]values.Slice, stages)
	for s := range stage {
		stage[s] = sl(int64(s)*world/stages, []int64{world / stages}, []int64{1})
		p.Resolve(stage[s:s+1], rec.split)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		clear(p.cache)
		if _, err := p.Resolve(stage[i%stages:i%stages+1], rec.split); err != nil {
			b.Fatal(err)
		}
	}
}

// TestResolveLastAnswer resolves the same slices before and after a split:
// the remembered last answer must not outlive the split, and the slices it
// remembers must not alias the caller's.
func TestResolveLastAnswer(t *testing.T) {
	p, err := New(8, true)
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	whole := []values.Slice{sl(0, []int64{8}, []int64{1})}
	for range 2 {
		if gs, err := p.Resolve(whole, rec.split); err != nil || !slices.Equal(gs, []GroupID{0}) {
			t.Fatalf("whole world: %v %v", gs, err)
		}
	}
	// Ranks 0-1 split group 0 into 1 (0-1) and 0 (2-7).
	if gs, _ := p.Resolve([]values.Slice{sl(0, []int64{2}, []int64{1})}, rec.split); !slices.Equal(gs, []GroupID{1}) {
		t.Fatalf("ranks 0-1: %v", gs)
	}
	// The whole world again is both groups, in order of lowest rank.
	if gs, _ := p.Resolve(whole, rec.split); !slices.Equal(gs, []GroupID{1, 0}) {
		t.Fatalf("whole world after the split: %v, want [1 0]", gs)
	}
	// A caller reusing its slice's arrays: the same values, then others.
	s := []values.Slice{sl(2, []int64{6}, []int64{1})}
	if gs, _ := p.Resolve(s, rec.split); !slices.Equal(gs, []GroupID{0}) {
		t.Fatalf("ranks 2-7: %v", gs)
	}
	s[0].Sizes[0] = 2 // ranks 2-3: group 0 splits
	if gs, _ := p.Resolve(s, rec.split); !slices.Equal(gs, []GroupID{2}) || ranksOf(p, 2) != "2-3" {
		t.Fatalf("ranks 2-3 in the caller's reused slice: %v (group 2 = %s)", gs, ranksOf(p, 2))
	}
}

// TestResolveKeptAnswersAlike resolves a random sequence drawn from a few
// rank sets on two partitions of the same world, one of which forgets its
// kept answers before every call: both must give the same groups, holding
// the same ranks, at every call. The sets overlap, so some calls split
// groups and a kept answer of an earlier epoch must not be given.
func TestResolveKeptAnswersAlike(t *testing.T) {
	pool := [][]values.Slice{
		{sl(0, []int64{8}, []int64{1})},
		{sl(8, []int64{8}, []int64{1})},
		{sl(0, []int64{16}, []int64{1})},
		{sl(0, []int64{8}, []int64{1}), sl(8, []int64{8}, []int64{1})},
		{sl(4, []int64{8}, []int64{1})},
		{sl(0, []int64{4, 2}, []int64{4, 1})},
		{sl(1, []int64{8}, []int64{2})},
		{sl(16, []int64{16}, []int64{1})},
		{sl(0, []int64{32}, []int64{1})},
		{sl(12, []int64{2}, []int64{1})},
		{sl(24, []int64{4}, []int64{2})},
		{sl(0, []int64{2, 2}, []int64{16, 1})},
	}
	kept, _ := New(32, true)
	fresh, _ := New(32, true)
	var rk, rf recorder
	seed := uint64(1)
	for i := range 5000 {
		// A small linear congruential generator: the sequence is fixed.
		seed = seed*6364136223846793005 + 1442695040888963407
		s := pool[(seed>>33)%uint64(len(pool))]
		fresh.memos = [resolveMemos]resolveMemo{}
		a, err := kept.Resolve(s, rk.split)
		if err != nil {
			t.Fatal(err)
		}
		a = slices.Clone(a)
		b, err := fresh.Resolve(s, rf.split)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a, b) {
			t.Fatalf("call %d, %v: kept answers give %v, none %v", i, s, a, b)
		}
		for _, g := range a {
			if ranksOf(kept, g) != ranksOf(fresh, g) {
				t.Fatalf("call %d: group %d holds %s, without kept answers %s", i, g, ranksOf(kept, g), ranksOf(fresh, g))
			}
		}
	}
	if len(rk.splits) == 0 || !slices.Equal(rk.splits, rf.splits) {
		t.Fatalf("splits %v, without kept answers %v", rk.splits, rf.splits)
	}
}

// TestPairsKeptAnswersAlike draws a fixed random sequence of sends and
// resolves over a few rank sets, on two partitions of one world, one of
// which forgets its kept answers (both Resolve's and Pairs') before every
// call: both must give the same pairs and groups at every call, and
// KnownPairs may answer only for a send made before in the same epoch,
// with what Pairs gave then. Some resolves split groups, so a kept pair of an
// earlier epoch must not be given.
func TestPairsKeptAnswersAlike(t *testing.T) {
	sends := [][2]values.Slice{
		{sl(0, []int64{8}, []int64{1}), sl(8, []int64{8}, []int64{1})},
		{sl(8, []int64{8}, []int64{1}), sl(0, []int64{8}, []int64{1})},
		{sl(8, []int64{8}, []int64{1}), sl(16, []int64{8}, []int64{1})},
		{sl(16, []int64{8}, []int64{1}), sl(24, []int64{8}, []int64{1})},
		{sl(0, []int64{4}, []int64{2}), sl(16, []int64{4}, []int64{1})},
		{sl(7, []int64{8}, []int64{-1}), sl(24, []int64{8}, []int64{1})},
	}
	resolves := [][]values.Slice{
		{sl(0, []int64{4}, []int64{1})},
		{sl(12, []int64{2}, []int64{1})},
		{sl(0, []int64{32}, []int64{1})},
		{sl(20, []int64{4}, []int64{2})},
	}
	kept, _ := New(32, true)
	fresh, _ := New(32, true)
	var rk, rf recorder
	type answer struct {
		epoch uint64
		a, b  []GroupID
	}
	last := map[int]answer{} // by send: kept's last answer and its epoch
	seed := uint64(7)
	hits := 0
	for i := range 5000 {
		seed = seed*6364136223846793005 + 1442695040888963407
		fresh.memos = [resolveMemos]resolveMemo{}
		fresh.pairMemos = [resolveMemos]resolveMemo{}
		if (seed>>40)%4 == 0 {
			s := resolves[(seed>>33)%uint64(len(resolves))]
			a, err := kept.Resolve(s, rk.split)
			if err != nil {
				t.Fatal(err)
			}
			a = slices.Clone(a)
			if b, err := fresh.Resolve(s, rf.split); err != nil || !slices.Equal(a, b) {
				t.Fatalf("call %d, resolve %v: kept answers give %v, none %v (%v)", i, s, a, b, err)
			}
			continue
		}
		k := int((seed >> 33) % uint64(len(sends)))
		s := sends[k]
		ka, kb, known := kept.KnownPairs(&s[0], &s[1])
		prev, sent := last[k]
		// Unknown is always allowed (another send may have taken its
		// place); known only for a send made in this epoch.
		if known && (!sent || prev.epoch != kept.Epoch()) {
			t.Fatalf("call %d, send %d: known, but not sent since the last split (sent before: %v)", i, k, sent)
		}
		if known {
			hits++
			if !slices.Equal(ka, prev.a) || !slices.Equal(kb, prev.b) {
				t.Fatalf("call %d, send %d: KnownPairs %v %v, Pairs gave %v %v", i, k, ka, kb, prev.a, prev.b)
			}
		}
		a, b, err := kept.Pairs(&s[0], &s[1], rk.split)
		if err != nil {
			t.Fatal(err)
		}
		last[k] = answer{kept.Epoch(), slices.Clone(a), slices.Clone(b)}
		fa, fb, err := fresh.Pairs(&s[0], &s[1], rf.split)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a, fa) || !slices.Equal(b, fb) {
			t.Fatalf("call %d, send %d: kept answers give %v %v, none %v %v", i, k, a, b, fa, fb)
		}
		for _, g := range append(slices.Clone(a), b...) {
			if ranksOf(kept, g) != ranksOf(fresh, g) {
				t.Fatalf("call %d: group %d holds %s, without kept answers %s", i, g, ranksOf(kept, g), ranksOf(fresh, g))
			}
		}
	}
	if hits == 0 || len(rk.splits) == 0 || !slices.Equal(rk.splits, rf.splits) {
		t.Fatalf("%d known pairs; splits %v, without kept answers %v", hits, rk.splits, rf.splits)
	}
}

// TestKnownPairsOnlyAfterChecks: a send refused (a rank twice, or sides of
// different lengths) is never kept, so KnownPairs cannot let a caller skip
// the checks that refused it.
func TestKnownPairsOnlyAfterChecks(t *testing.T) {
	p, _ := New(16, true)
	var rec recorder
	for _, s := range [][2]values.Slice{
		{sl(0, []int64{2, 2}, []int64{0, 1}), sl(8, []int64{4}, []int64{1})}, // rank 0 twice
		{sl(0, []int64{4}, []int64{1}), sl(8, []int64{3}, []int64{1})},       // 4 ranks to 3
	} {
		for range 2 {
			if _, _, err := p.Pairs(&s[0], &s[1], rec.split); err == nil {
				t.Fatalf("%v: not refused", s)
			}
			if _, _, ok := p.KnownPairs(&s[0], &s[1]); ok {
				t.Fatalf("%v: refused, yet known", s)
			}
		}
	}
	ungrouped, _ := New(16, false)
	a, b := sl(0, []int64{4}, []int64{1}), sl(8, []int64{4}, []int64{1})
	if _, _, err := ungrouped.Pairs(&a, &b, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := ungrouped.KnownPairs(&a, &b); ok {
		t.Fatal("ungrouped: known pairs (only grouped partitions keep them)")
	}
}
