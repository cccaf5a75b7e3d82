package groups

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/fastsim/fastsim/internal/values"
)

// ErrCount is returned when the two sides of a send differ in size.
var ErrCount = errors.New("rank counts differ")

// ErrRepeat is returned for a point-to-point slice that names a rank twice:
// a send pairs distinct ranks.
var ErrRepeat = errors.New("a rank named twice")

// CheckDistinct returns ErrRepeat, naming the smallest repeated rank, when s
// names a rank twice (values.Slice.Repeated).
func (p *Partition) CheckDistinct(s *values.Slice) error {
	if err := p.check(s); err != nil {
		return err
	}
	r, dup, buf := s.Repeated(p.scratch)
	p.scratch = buf
	if dup {
		return fmt.Errorf("%w: the slice names rank %d more than once", ErrRepeat, r)
	}
	return nil
}

// Pairs resolves a point-to-point send from the ranks of from to the ranks
// of to, paired by position. Grouped, it splits groups until every sending
// group's ranks all send to one receiving group and every receiving group's
// ranks all receive from one sending group; then pair i is (senders[i],
// receivers[i]). Ungrouped, pair i is simply the i-th rank of each side.
// Neither side may name a rank twice.
//
// It keeps its answer for KnownPairs, which a caller asks first (the
// engine's SendTensor): Pairs itself does not, so a send it is asked
// about is looked up once.
func (p *Partition) Pairs(from, to *values.Slice, split Split) (senders, receivers []GroupID, err error) {
	for _, s := range []*values.Slice{from, to} {
		if err := p.CheckDistinct(s); err != nil {
			return nil, nil, err
		}
	}
	if from.Len() != to.Len() {
		return nil, nil, fmt.Errorf("%w: from %d ranks to %d ranks", ErrCount, from.Len(), to.Len())
	}
	if !p.grouped {
		p.scratch = from.AppendRanks(p.scratch[:0])
		p.out = p.out[:0]
		for _, r := range p.scratch {
			p.out = append(p.out, GroupID(r))
		}
		p.scratch = to.AppendRanks(p.scratch[:0])
		p.outB = p.outB[:0]
		for _, r := range p.scratch {
			p.outB = append(p.outB, GroupID(r))
		}
		return p.out, p.outB, nil
	}
	p.key = append(p.key[:0], 'P')
	p.key = appendSliceKey(p.key, from, false)
	p.key = appendSliceKey(p.key, to, false)
	if e, ok := p.cache[string(p.key)]; ok && e.epoch == p.epoch {
		p.out = append(p.out[:0], e.a...)
		p.outB = append(p.outB[:0], e.b...)
		p.memoPairs(from, to)
		return p.out, p.outB, nil
	}
	// Each side's groups must lie wholly inside it.
	for _, s := range []*values.Slice{from, to} {
		p.recv.Clear()
		if err := p.addSlice(p.recv, s); err != nil {
			return nil, nil, err
		}
		if _, err := p.splitBy(p.recv, split); err != nil {
			return nil, nil, err
		}
	}
	src := from.AppendRanks(nil)
	dst := to.AppendRanks(nil)
	if err := p.refinePairs(src, dst, split); err != nil {
		return nil, nil, err
	}
	// Distinct pairs in position order.
	p.out, p.outB = p.out[:0], p.outB[:0]
	seen := make(map[[2]GroupID]bool)
	last := [2]GroupID{-1, -1}
	for i := range src {
		pair := [2]GroupID{p.rankGroup[src[i]], p.rankGroup[dst[i]]}
		if pair == last {
			continue // neighbours mostly pair the same groups: no lookup
		}
		last = pair
		if !seen[pair] {
			seen[pair] = true
			p.out = append(p.out, pair[0])
			p.outB = append(p.outB, pair[1])
		}
	}
	p.remember(p.out, p.outB)
	p.memoPairs(from, to)
	return p.out, p.outB, nil
}

// KnownPairs is Pairs' answer for from and to when an earlier call in
// this epoch kept it, found with one comparison at the place a hash of the
// two slices picks. Both sides were then checked distinct and of one
// length (the answer is kept only after those checks), so a caller that
// gets ok may skip its own. The answer is valid until the next call, and
// is not to be written.
func (p *Partition) KnownPairs(from, to *values.Slice) (senders, receivers []GroupID, ok bool) {
	if !p.grouped {
		return nil, nil, false
	}
	pair := [2]values.Slice{*from, *to}
	m := &p.pairMemos[HashSlices(pair[:])&(resolveMemos-1)]
	if !m.ok || m.epoch != p.epoch || !sameSlices(m.ss, pair[:]) {
		return nil, nil, false
	}
	n := len(m.out) / 2
	return m.out[:n:n], m.out[n:len(m.out):len(m.out)], true
}

// memoPairs keeps Pairs' answer (p.out, p.outB, one length) for from and
// to in this epoch.
func (p *Partition) memoPairs(from, to *values.Slice) {
	pair := [2]values.Slice{*from, *to}
	m := &p.pairMemos[HashSlices(pair[:])&(resolveMemos-1)]
	m.set(pair[:], p.out, p.epoch)
	m.out = append(m.out, p.outB...)
}

// refinePairs splits the groups of the ranks of a send (position i sends
// src[i] to dst[i]; both sides distinct, every group wholly inside or
// outside each side) into the coarsest partition in which partners agree.
//
// The send is a partial bijection from src to dst, so its graph is a set of
// disjoint paths and cycles over the ranks. Two ranks may stay together
// exactly when walking the send forwards and backwards from each meets
// groups that are equal step by step, and both walks end after the same
// number of steps. On a path that means the same position on paths of equal
// group sequences; on a cycle, the same offset into equal cyclic sequences
// read from their least rotation, modulo the sequence's period. So each
// rank's new class is computed directly in O(n log n), where refining group
// by group until nothing changes would take a round per step of the longest
// chain (a shift by one rank: n rounds).
func (p *Partition) refinePairs(src, dst []int64, split Split) error {
	n := len(src)
	// next[i]: the position whose sender is dst[i], or -1; prev the inverse.
	// A sender's position is looked up by rank in posOf (one entry a rank
	// of the world, kept between calls and cleared after each), which
	// costs a read where sorting the senders and searching them cost
	// O(log n) comparisons a rank.
	if p.posOf == nil {
		p.posOf = make([]int32, p.world)
	}
	for i, r := range src {
		p.posOf[r] = int32(i) + 1
	}
	next := make([]int32, n)
	prev := make([]int32, n)
	for i := range prev {
		prev[i] = -1
	}
	for i, r := range dst {
		j := p.posOf[r] - 1
		next[i] = j
		if j >= 0 {
			prev[j] = int32(i)
		}
	}
	for _, r := range src {
		p.posOf[r] = 0
	}
	members := make([]member, 0, n+n/2)
	classes := make(map[string]int64) // a walk's group sequence -> its first class number
	nextClass := int64(0)
	var key []byte
	// Walks mostly meet the groups the walk before met: that one's class
	// is checked first, without building and hashing the key.
	var lastSeq []GroupID
	lastTag, lastC := byte(0), int64(0)
	classOf := func(seq []GroupID, tag byte, count int) int64 {
		if tag == lastTag && slices.Equal(seq, lastSeq) {
			return lastC
		}
		defer func() { lastSeq, lastTag = append(lastSeq[:0], seq...), tag }()
		key = append(key[:0], tag)
		for _, g := range seq {
			key = append(key, byte(g), byte(g>>8), byte(g>>16), byte(g>>24))
		}
		c, ok := classes[string(key)]
		if !ok {
			c = nextClass
			classes[string(key)] = c
			nextClass += int64(count)
		}
		lastC = c
		return c
	}
	visited := make([]bool, n)
	var seq []GroupID
	var ranks []int64
	// Paths: from each position nothing sends into.
	for i := range n {
		if prev[i] >= 0 {
			continue
		}
		seq, ranks = seq[:0], ranks[:0]
		seq = append(seq, p.rankGroup[src[i]])
		ranks = append(ranks, src[i])
		for j := int32(i); j >= 0; j = next[j] {
			visited[j] = true
			seq = append(seq, p.rankGroup[dst[j]])
			ranks = append(ranks, dst[j])
		}
		base := classOf(seq, 'p', len(seq))
		for t, r := range ranks {
			members = append(members, member{r, seq[t], base + int64(t)})
		}
	}
	// Cycles: what is left.
	for i := range n {
		if visited[i] {
			continue
		}
		seq, ranks = seq[:0], ranks[:0]
		for j := int32(i); !visited[j]; j = next[j] {
			visited[j] = true
			seq = append(seq, p.rankGroup[src[j]])
			ranks = append(ranks, src[j])
		}
		start := leastRotation(seq)
		per := period(seq)
		canon := append(slices.Clone(seq[start:]), seq[:start]...)[:per]
		base := classOf(canon, 'c', per)
		L := len(seq)
		for t, r := range ranks {
			members = append(members, member{r, seq[t], base + int64(((t-start)%L+L)%L%per)})
		}
	}
	// Split each group whose ranks fall in more than one class: the
	// largest class keeps the group's id, each other takes a new one.
	// Once the groups are settled no group has two classes, which one
	// pass finds without sorting the members.
	if !p.anySplit(members) {
		return nil
	}
	slices.SortFunc(members, func(a, b member) int {
		return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(a.class, b.class), cmp.Compare(a.rank, b.rank))
	})
	for lo := 0; lo < len(members); {
		g := members[lo].group
		hi := lo
		for hi < len(members) && members[hi].group == g {
			hi++
		}
		if members[lo].class != members[hi-1].class {
			if err := p.splitClasses(g, members[lo:hi], split); err != nil {
				return err
			}
		}
		lo = hi
	}
	return nil
}

// splitClasses splits group g, whose ranks are exactly ms (sorted by class,
// then rank), into one group per class: the largest class keeps g.
func (p *Partition) splitClasses(g GroupID, ms []member, split Split) error {
	bounds := []int{0}
	keep := 0 // the largest class, the first of equals
	for i := 1; i <= len(ms); i++ {
		if i < len(ms) && ms[i].class == ms[i-1].class {
			continue
		}
		bounds = append(bounds, i)
		c := len(bounds) - 2
		if bounds[c+1]-bounds[c] > bounds[keep+1]-bounds[keep] {
			keep = c
		}
	}
	for c := 0; c+1 < len(bounds); c++ {
		part := p.bitmapOf(ms[bounds[c]:bounds[c+1]])
		size := int64(bounds[c+1] - bounds[c])
		if c == keep {
			p.ranks[g], p.size[g] = part, size
			continue
		}
		n := GroupID(len(p.ranks))
		if err := split(g, n); err != nil {
			return err
		}
		p.ranks = append(p.ranks, part)
		p.size = append(p.size, size)
		p.relabel(part, n)
	}
	p.epoch++
	return nil
}

// anySplit reports whether some group of ms holds ranks of two classes.
// classOf holds -1 for every group between calls: a call sets only the
// groups of ms and puts them back, so it costs O(len(ms)), not a pass over
// every group of the world (up to 2^24 of them) for each send.
func (p *Partition) anySplit(ms []member) bool {
	for len(p.classOf) < len(p.ranks) {
		p.classOf = append(p.classOf, -1)
	}
	first := p.classOf
	split := false
	for _, m := range ms {
		switch c := first[m.group]; {
		case c < 0:
			first[m.group] = m.class
		case c != m.class:
			split = true
		}
		if split {
			break
		}
	}
	for _, m := range ms {
		first[m.group] = -1
	}
	return split
}

// member is a rank of a send, its group and its class (refinePairs).
type member struct {
	rank  int64
	group GroupID
	class int64
}

// bitmapOf is the set of the ranks of ms, which are sorted.
func (p *Partition) bitmapOf(ms []member) *roaring.Bitmap {
	p.u32 = p.u32[:0]
	for _, m := range ms {
		p.u32 = append(p.u32, uint32(m.rank))
	}
	b := roaring.BitmapOf(p.u32...)
	b.RunOptimize()
	return b
}

// leastRotation is the start of the lexicographically least rotation of s
// (Booth's algorithm, O(len)).
func leastRotation(s []GroupID) int {
	n := len(s)
	f := make([]int, 2*n)
	for i := range f {
		f[i] = -1
	}
	k := 0
	for j := 1; j < 2*n; j++ {
		sj := s[j%n]
		i := f[j-k-1]
		for i != -1 && sj != s[(k+i+1)%n] {
			if sj < s[(k+i+1)%n] {
				k = j - i - 1
			}
			i = f[i]
		}
		if i == -1 && sj != s[(k+i+1)%n] {
			if sj < s[(k+i+1)%n] {
				k = j
			}
			f[j-k] = -1
		} else {
			f[j-k] = i + 1
		}
	}
	return k
}

// period is the smallest p dividing len(s) with s[i] == s[i+p] (cyclically).
func period(s []GroupID) int {
	n := len(s)
	fail := make([]int, n+1)
	fail[0] = -1
	for i := 1; i <= n; i++ {
		k := fail[i-1]
		for k >= 0 && s[k] != s[i-1] {
			k = fail[k]
		}
		fail[i] = k + 1
	}
	if q := n - fail[n]; n%q == 0 {
		return q
	}
	return n
}
