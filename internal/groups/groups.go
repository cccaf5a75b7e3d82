// Package groups partitions the ranks of a world into groups of ranks that
// have received exactly the same commands, so the engine simulates each
// group once.
//
// Each group's ranks are a roaring bitmap. A command's receiving set (the
// union of its slices) is built as a bitmap: one range add for a dense
// block or per row of a few rows, else the ranks enumerated, sorted and
// added at once (addSlice). A group
// entirely inside the receiving set receives the command as one; a group
// partly inside splits lazily into the part that receives it and the rest,
// and the caller copies the group's simulation state to the new group.
//
// The index: rankGroup holds every rank's group id (4 bytes a rank: 4 MiB
// at world 1,048,576), so the groups a receiving set touches are found by
// walking the set's runs and jumping over each group's run (nextAbsent,
// which mends roaring's run queries at its 65,536-value container edges):
// the cost follows the number of group runs inside the set, not its ranks. A cache keyed by the command's slices remembers which
// groups a receiving set resolved to; any split invalidates it, so in the
// steady state of a training loop (same slices every step, no more splits)
// resolving a command costs one map lookup.
//
// A point-to-point send that the cache does not know finds each
// receiver's sender through posOf, a second table of 4 bytes a rank made
// on the first such send (Pairs): a read where sorting the senders and
// searching them cost O(log n) comparisons a rank.
//
// Ungrouped, every rank is its own group and no bitmap is kept.
package groups

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/fastsim/fastsim/internal/values"
)

// MaxWorld is the largest world a Partition accepts (ranks are uint32 in
// the bitmaps; the engine's own limits are lower).
const MaxWorld = 1 << 30

// maxCache bounds the resolved-set cache; it is cleared when full.
const maxCache = 1 << 14

// GroupID names a group of identical ranks: a dense index, 0..Len()-1
// (ungrouped, the rank itself).
type GroupID int32

// Split copies the simulation state of group from into the new group to
// (to is always the next unused id, Len() before the call returned it).
type Split func(from, to GroupID) error

// Partition is a partition of ranks 0..world-1 into groups.
type Partition struct {
	world   int64
	grouped bool

	ranks     []*roaring.Bitmap // grouped: each group's ranks
	size      []int64           // grouped: each group's rank count (a bitmap's is O(containers))
	rankGroup []GroupID         // grouped: each rank's group

	epoch uint64 // bumped by every split; cache entries of older epochs are stale
	cache map[string]entry
	key   []byte

	recv     *roaring.Bitmap
	touched  []GroupID
	out      []GroupID
	outB     []GroupID
	scratch  []int64
	u32      []uint32
	seen     []uint32 // grouped: per group, the walk that last met it
	seenPass uint32
	mark     []uint32 // ungrouped: per rank, the pass that last saw it
	posOf    []int32  // grouped: per rank, its position among a send's senders plus 1, else 0 (refinePairs)
	classOf  []int64  // grouped: per group, the first class met (anySplit); -1 between calls
	pass     uint32

	// Resolve's answers by the slices asked, each valid in its epoch, at
	// the place a hash of the slices picks: programs send runs of
	// commands to the same rank sets (every pipeline stage, its
	// neighbours, both), which this finds with one comparison, before a
	// canonical key is spelled and looked up.
	memos [resolveMemos]resolveMemo
	// Pairs' answers the same way: a pipeline's sends repeat between the
	// same neighbours; out holds the senders, then the receivers.
	pairMemos [resolveMemos]resolveMemo
}

// resolveMemos is how many of Resolve's (and Pairs') answers are kept (a
// power of two): a pipeline of 64 stages sends to each stage, each pair of
// neighbours and each tensor-parallel group of them, both ways: 254 rank
// sets. With 512 places 102 of them shared a place with another (and may
// go on to the canonical key); with 2,048, 19. That is 0.6% of the
// instructions of the 1T-parameter prediction (cachegrind).
const resolveMemos = 2048

// resolveMemo is one answer of Resolve: slices ss (their sizes and
// strides in dims) resolve to groups out in epoch epoch.
type resolveMemo struct {
	ss    []values.Slice
	dims  []int64
	out   []GroupID
	epoch uint64
	ok    bool
}

type entry struct {
	epoch uint64
	a, b  []GroupID
}

// New returns the partition of a world of world ranks: one group holding
// every rank when grouped, else one group per rank.
func New(world int64, grouped bool) (*Partition, error) {
	if world < 1 || world > MaxWorld {
		return nil, fmt.Errorf("%w: world size %d (want 1..%d)", values.ErrRank, world, MaxWorld)
	}
	p := &Partition{world: world, grouped: grouped, cache: make(map[string]entry)}
	if grouped {
		all := roaring.New()
		all.AddRange(0, uint64(world))
		p.ranks = []*roaring.Bitmap{all}
		p.size = []int64{world}
		p.rankGroup = make([]GroupID, world)
		p.recv = roaring.New()
	} else {
		p.mark = make([]uint32, world)
	}
	return p, nil
}

// Epoch changes whenever a group splits: an answer about the groups
// given in one epoch holds while it stays the same.
func (p *Partition) Epoch() uint64 { return p.epoch }

// Grouped reports whether ranks are grouped.
func (p *Partition) Grouped() bool { return p.grouped }

// Len is the number of groups.
func (p *Partition) Len() int {
	if !p.grouped {
		return int(p.world)
	}
	return len(p.ranks)
}

// Size is the number of ranks in group g.
func (p *Partition) Size(g GroupID) int64 {
	if !p.grouped {
		return 1
	}
	return p.size[g]
}

// Lowest is the lowest rank of group g.
func (p *Partition) Lowest(g GroupID) int64 {
	if !p.grouped {
		return int64(g)
	}
	return int64(p.ranks[g].Minimum())
}

// GroupOf is the group holding rank r.
func (p *Partition) GroupOf(r int64) GroupID {
	if !p.grouped {
		return GroupID(r)
	}
	return p.rankGroup[r]
}

// Resolve returns the groups that receive a command sent to the union of
// slices, splitting groups partly inside it (split copies their state), in
// order of their lowest rank: ungrouped, the ranks in increasing order. A
// handler that stops at the first group it fails on thus fails on the
// lowest rank that fails, grouped or not, and says the same thing. The
// result is valid until the next call, and is not to be written.
func (p *Partition) Resolve(slices_ []values.Slice, split Split) ([]GroupID, error) {
	if !p.grouped {
		return p.resolveRanks(slices_)
	}
	m := &p.memos[HashSlices(slices_)&(resolveMemos-1)]
	if m.ok && m.epoch == p.epoch && sameSlices(m.ss, slices_) {
		// The memo itself, not a copy: it too holds until the next call.
		// (Full, so that a caller's append cannot write into it.)
		return m.out[:len(m.out):len(m.out)], nil
	}
	p.key = append(p.key[:0], 'R')
	for i := range slices_ {
		p.key = appendSliceKey(p.key, &slices_[i], true)
	}
	if e, ok := p.cache[string(p.key)]; ok && e.epoch == p.epoch {
		p.out = append(p.out[:0], e.a...)
		m.set(slices_, p.out, p.epoch)
		return p.out, nil
	}
	p.recv.Clear()
	for i := range slices_ {
		if err := p.addSlice(p.recv, &slices_[i]); err != nil {
			return nil, err
		}
	}
	out, err := p.splitBy(p.recv, split)
	if err != nil {
		return nil, err
	}
	p.remember(out, nil)
	m.set(slices_, out, p.epoch)
	return out, nil
}

// HashSlices mixes the fields of ss into a memo's place (its low bits).
func HashSlices(ss []values.Slice) uint64 {
	h := uint64(len(ss))
	mix := func(v int64) { h = (h ^ uint64(v)) * 0x9e3779b97f4a7c15 }
	for i := range ss {
		mix(ss[i].Offset)
		for _, v := range ss[i].Sizes {
			mix(v)
		}
		for _, v := range ss[i].Strides {
			mix(v)
		}
	}
	return h ^ h>>29
}

// set keeps Resolve's answer out for slices ss in epoch epoch, in place
// of what m held.
func (m *resolveMemo) set(ss []values.Slice, out []GroupID, epoch uint64) {
	n := 0
	for i := range ss {
		n += len(ss[i].Sizes) + len(ss[i].Strides)
	}
	m.dims = slices.Grow(m.dims[:0], n)
	m.ss = m.ss[:0]
	for i := range ss {
		at := len(m.dims)
		m.dims = append(m.dims, ss[i].Sizes...)
		mid := len(m.dims)
		m.dims = append(m.dims, ss[i].Strides...)
		m.ss = append(m.ss, values.Slice{Offset: ss[i].Offset, Sizes: m.dims[at:mid:mid], Strides: m.dims[mid:len(m.dims):len(m.dims)]})
	}
	m.out = append(m.out[:0], out...)
	m.epoch, m.ok = epoch, true
}

// sameSlices reports whether a and b are the same slices, field by field.
func sameSlices(a, b []values.Slice) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(&b[i]) {
			return false
		}
	}
	return true
}

// splitBy splits every group that recv covers in part and returns the
// groups inside recv, sorted.
func (p *Partition) splitBy(recv *roaring.Bitmap, split Split) ([]GroupID, error) {
	p.touched = p.touched[:0]
	it := recv.Iterator()
	for it.HasNext() {
		r := it.Next()
		g := p.rankGroup[r]
		p.touched = append(p.touched, g)
		// Jump to the end of g's run of ranks (the run may end exactly
		// on a container's edge, or at the world's end).
		end := nextAbsent(p.ranks[g], r)
		if end >= uint64(p.world) {
			break
		}
		it.AdvanceIfNeeded(uint32(end))
	}
	// A group's first sighting in the walk is its lowest rank in recv:
	// keeping that order keeps the result in order of lowest rank, since
	// each group returned lies wholly inside recv.
	for len(p.seen) < len(p.ranks) {
		p.seen = append(p.seen, 0)
	}
	if p.seenPass++; p.seenPass == 0 {
		clear(p.seen)
		p.seenPass = 1
	}
	k := 0
	for _, g := range p.touched {
		if p.seen[g] != p.seenPass {
			p.seen[g] = p.seenPass
			p.touched[k] = g
			k++
		}
	}
	p.touched = p.touched[:k]
	p.out = p.out[:0]
	for _, g := range p.touched {
		in := roaring.And(p.ranks[g], recv)
		if int64(in.GetCardinality()) == p.size[g] {
			p.out = append(p.out, g)
			continue
		}
		n, err := p.splitOff(g, in, split)
		if err != nil {
			return nil, err
		}
		p.out = append(p.out, n)
	}
	return p.out, nil
}

// splitOff splits part (a proper, non-empty subset of g) away from g and
// returns the group id that now holds part. The smaller side takes the new
// id, so relabelling rankGroup costs the smaller side's size; and the
// larger side is edited in place rather than rebuilt, so splitting a few
// ranks off a large group costs the few ranks, not the group's containers.
func (p *Partition) splitOff(g GroupID, part *roaring.Bitmap, split Split) (GroupID, error) {
	n := GroupID(len(p.ranks))
	partN := int64(part.GetCardinality())
	restN := p.size[g] - partN
	if err := split(g, n); err != nil {
		return 0, err
	}
	var moved *roaring.Bitmap
	partID := n
	if partN <= restN {
		p.ranks[g].AndNot(part)
		moved = part
	} else {
		moved = roaring.AndNot(p.ranks[g], part)
		p.ranks[g] = part
		partID = g
	}
	moved.RunOptimize()
	if partN <= restN {
		p.size[g] = restN
	} else {
		p.size[g] = partN
	}
	p.ranks = append(p.ranks, moved)
	p.size = append(p.size, min(partN, restN))
	p.relabel(moved, n)
	p.epoch++
	return partID, nil
}

// relabel points the index of every rank of b at group g, a run at a time.
func (p *Partition) relabel(b *roaring.Bitmap, g GroupID) {
	eachRun(b, func(lo, hi uint64) bool {
		fillGroup(p.rankGroup[lo:hi+1], g)
		return true
	})
}

func fillGroup(dst []GroupID, g GroupID) {
	for i := range dst {
		dst[i] = g
	}
}

func (p *Partition) remember(a, b []GroupID) {
	if len(p.cache) >= maxCache {
		clear(p.cache)
	}
	p.cache[string(p.key)] = entry{epoch: p.epoch, a: slices.Clone(a), b: slices.Clone(b)}
}

func (p *Partition) check(s *values.Slice) error {
	lo, hi := s.Bounds()
	if lo > hi {
		return nil // empty
	}
	if lo < 0 || hi >= p.world {
		return fmt.Errorf("%w: slice spans ranks %d..%d, world size is %d", values.ErrRank, lo, hi, p.world)
	}
	return nil
}

// resolveRanks is Resolve ungrouped: the distinct ranks of the slices, in
// increasing order.
func (p *Partition) resolveRanks(ss []values.Slice) ([]GroupID, error) {
	p.pass++
	if p.pass == 0 {
		clear(p.mark)
		p.pass = 1
	}
	p.out = p.out[:0]
	for i := range ss {
		if err := p.check(&ss[i]); err != nil {
			return nil, err
		}
		p.scratch = ss[i].AppendRanks(p.scratch[:0])
		for _, r := range p.scratch {
			if p.mark[r] != p.pass {
				p.mark[r] = p.pass
				p.out = append(p.out, GroupID(r))
			}
		}
	}
	if !slices.IsSorted(p.out) {
		slices.Sort(p.out)
	}
	return p.out, nil
}

// appendSliceKey appends the cache key of s: its dimensions in a canonical
// spelling, so that the same ranks written differently (a size-1
// dimension, a 0-d slice against [1], a row split into two dimensions, and
// for a set, negative strides or dimensions in another order) share one
// entry. With set false the key keeps the enumeration order, which pairs
// ranks in a send; with set true it keeps only the set.
func appendSliceKey(b []byte, s *values.Slice, set bool) []byte {
	var dims [values.MaxSliceDims][2]int64 // stride, size
	off, n := s.Offset, 0
	for k, size := range s.Sizes {
		if size == 0 {
			return append(b, 'e') // empty: no ranks
		}
		if size == 1 {
			continue
		}
		st := s.Strides[k]
		if set && st < 0 {
			off += (size - 1) * st
			st = -st
		}
		dims[n] = [2]int64{st, size}
		n++
	}
	d := dims[:n]
	if set {
		slices.SortFunc(d, func(a, b [2]int64) int { return cmp.Compare(b[0], a[0]) })
	}
	// Merge a dimension into the one before it when together they walk one
	// evenly strided run: (stride a*n, size m) then (stride a, size n).
	m := 0
	for _, x := range d {
		if m > 0 && d[m-1][0] == x[0]*x[1] {
			d[m-1] = [2]int64{x[0], d[m-1][1] * x[1]}
			continue
		}
		d[m] = x
		m++
	}
	b = binary.AppendVarint(b, off)
	b = binary.AppendUvarint(b, uint64(m))
	for _, x := range d[:m] {
		b = binary.AppendVarint(b, x[1])
		b = binary.AppendVarint(b, x[0])
	}
	return b
}
