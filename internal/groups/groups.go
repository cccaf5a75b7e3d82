// Package groups partitions the ranks of a world into groups of ranks that
// have received exactly the same commands, so the engine simulates each
// group once.
//
// Each group's ranks are a roaring bitmap. A command's receiving set (the
// union of its slices) is built as a bitmap with range adds, one per
// contiguous row of a slice, never rank by rank for contiguous runs. A group
// entirely inside the receiving set receives the command as one; a group
// partly inside splits lazily into the part that receives it and the rest,
// and the caller copies the group's simulation state to the new group.
//
// The index: rankGroup holds every rank's group id (4 bytes a rank: 4 MiB
// at world 1,048,576), so the groups a receiving set touches are found by
// walking the set's runs and jumping over each group's run with
// NextAbsentValue: the cost follows the number of group runs inside the set,
// not its ranks. A cache keyed by the command's slices remembers which
// groups a receiving set resolved to; any split invalidates it, so in the
// steady state of a training loop (same slices every step, no more splits)
// resolving a command costs one map lookup.
//
// Ungrouped, every rank is its own group and no bitmap is kept.
package groups

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/fastsim/fastsim/internal/jsonl"
)

// ErrRank is returned for a slice that reaches outside the world.
var ErrRank = errors.New("rank outside the world")

// MaxWorld is the largest world a Partition accepts (ranks are uint32 in
// the bitmaps; the engine's own limits are lower).
const MaxWorld = 1 << 30

// maxCache bounds the resolved-set cache; it is cleared when full.
const maxCache = 1 << 14

// Split copies the simulation state of group from into the new group to
// (to is always the next unused id, Len() before the call returned it).
type Split func(from, to int32) error

// Partition is a partition of ranks 0..world-1 into groups.
type Partition struct {
	world   int64
	grouped bool

	ranks     []*roaring.Bitmap // grouped: each group's ranks
	rankGroup []int32           // grouped: each rank's group

	epoch uint64 // bumped by every split; cache entries of older epochs are stale
	cache map[string]entry
	key   []byte

	recv    *roaring.Bitmap
	touched []int32
	out     []int32
	outB    []int32
	scratch []int64
	mark    []uint32 // ungrouped: per rank, the pass that last saw it
	pass    uint32
}

type entry struct {
	epoch uint64
	a, b  []int32
}

// New returns the partition of a world of world ranks: one group holding
// every rank when grouped, else one group per rank.
func New(world int64, grouped bool) (*Partition, error) {
	if world < 1 || world > MaxWorld {
		return nil, fmt.Errorf("%w: world size %d (want 1..%d)", ErrRank, world, MaxWorld)
	}
	p := &Partition{world: world, grouped: grouped, cache: make(map[string]entry)}
	if grouped {
		all := roaring.New()
		all.AddRange(0, uint64(world))
		p.ranks = []*roaring.Bitmap{all}
		p.rankGroup = make([]int32, world)
		p.recv = roaring.New()
	} else {
		p.mark = make([]uint32, world)
	}
	return p, nil
}

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
func (p *Partition) Size(g int32) int64 {
	if !p.grouped {
		return 1
	}
	return int64(p.ranks[g].GetCardinality())
}

// Lowest is the lowest rank of group g.
func (p *Partition) Lowest(g int32) int64 {
	if !p.grouped {
		return int64(g)
	}
	return int64(p.ranks[g].Minimum())
}

// GroupOf is the group holding rank r.
func (p *Partition) GroupOf(r int64) int32 {
	if !p.grouped {
		return int32(r)
	}
	return p.rankGroup[r]
}

// AppendRanges appends g's ranks as inclusive ranges, "[0-3] [8-11]".
func (p *Partition) AppendRanges(dst []byte, g int32) []byte {
	if !p.grouped {
		return fmt.Appendf(dst, "[%d-%d]", g, g)
	}
	it := p.ranks[g].Iterator()
	first := true
	for it.HasNext() {
		lo := it.Next()
		hi := uint32(p.ranks[g].NextAbsentValue(lo) - 1)
		if !first {
			dst = append(dst, ' ')
		}
		first = false
		dst = fmt.Appendf(dst, "[%d-%d]", lo, hi)
		it.AdvanceIfNeeded(hi + 1)
	}
	return dst
}

// Resolve returns the groups that receive a command sent to the union of
// slices, splitting groups partly inside it (split copies their state). The
// result is sorted and valid until the next call.
func (p *Partition) Resolve(slices_ []jsonl.Slice, split Split) ([]int32, error) {
	if !p.grouped {
		return p.resolveRanks(slices_)
	}
	p.key = append(p.key[:0], 'R')
	for i := range slices_ {
		p.key = appendSliceKey(p.key, &slices_[i])
	}
	if e, ok := p.cache[string(p.key)]; ok && e.epoch == p.epoch {
		p.out = append(p.out[:0], e.a...)
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
	return out, nil
}

// Pairs resolves a point-to-point send from the ranks of from to the ranks
// of to, paired by position. It splits groups until every sending group's
// ranks all send to one receiving group and every receiving group's ranks
// all receive from one sending group; then pair i is (senders[i],
// receivers[i]). Ungrouped, pair i is simply the i-th rank of each side.
func (p *Partition) Pairs(from, to *jsonl.Slice, split Split) (senders, receivers []int32, err error) {
	if err := p.check(from); err != nil {
		return nil, nil, err
	}
	if err := p.check(to); err != nil {
		return nil, nil, err
	}
	if from.Len() != to.Len() {
		return nil, nil, fmt.Errorf("%w: from %d ranks to %d ranks", ErrCount, from.Len(), to.Len())
	}
	if !p.grouped {
		p.scratch = from.AppendRanks(p.scratch[:0])
		p.out = p.out[:0]
		for _, r := range p.scratch {
			p.out = append(p.out, int32(r))
		}
		p.scratch = to.AppendRanks(p.scratch[:0])
		p.outB = p.outB[:0]
		for _, r := range p.scratch {
			p.outB = append(p.outB, int32(r))
		}
		return p.out, p.outB, nil
	}
	p.key = append(p.key[:0], 'P')
	p.key = appendSliceKey(p.key, from)
	p.key = appendSliceKey(p.key, to)
	if e, ok := p.cache[string(p.key)]; ok && e.epoch == p.epoch {
		p.out = append(p.out[:0], e.a...)
		p.outB = append(p.outB[:0], e.b...)
		return p.out, p.outB, nil
	}
	// Each side's groups must lie wholly inside it.
	for _, s := range []*jsonl.Slice{from, to} {
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
	// Refine until partners agree: a group whose ranks pair with ranks of
	// different groups splits by partner group. Each pass splits at least
	// one group or ends, and groups never exceed ranks, so this ends.
	for changed := true; changed; {
		changed = false
		for side := 0; side < 2 && !changed; side++ {
			mine, theirs := src, dst
			if side == 1 {
				mine, theirs = dst, src
			}
			c, err := p.refine(mine, theirs, split)
			if err != nil {
				return nil, nil, err
			}
			changed = c
		}
	}
	// Distinct pairs in position order.
	p.out, p.outB = p.out[:0], p.outB[:0]
	seen := make(map[[2]int32]bool)
	for i := range src {
		pair := [2]int32{p.rankGroup[src[i]], p.rankGroup[dst[i]]}
		if !seen[pair] {
			seen[pair] = true
			p.out = append(p.out, pair[0])
			p.outB = append(p.outB, pair[1])
		}
	}
	p.remember(p.out, p.outB)
	return p.out, p.outB, nil
}

// ErrCount is returned when the two sides of a send differ in size.
var ErrCount = errors.New("rank counts differ")

// refine splits the first group of mine whose ranks have partners (by
// position in theirs) in more than one group; it reports whether it split.
func (p *Partition) refine(mine, theirs []int64, split Split) (bool, error) {
	partner := make(map[int32]int32)
	for i, r := range mine {
		g, pg := p.rankGroup[r], p.rankGroup[theirs[i]]
		first, ok := partner[g]
		if !ok {
			partner[g] = pg
			continue
		}
		if first == pg {
			continue
		}
		// Split g: the ranks whose partner is in group `first` stay.
		keep := roaring.New()
		for j, r2 := range mine {
			if p.rankGroup[r2] == g && p.rankGroup[theirs[j]] == first {
				keep.Add(uint32(r2))
			}
		}
		return true, p.splitGroup(g, keep, split)
	}
	return false, nil
}

// splitBy splits every group that recv covers in part and returns the
// groups inside recv, sorted.
func (p *Partition) splitBy(recv *roaring.Bitmap, split Split) ([]int32, error) {
	p.touched = p.touched[:0]
	it := recv.Iterator()
	for it.HasNext() {
		r := it.Next()
		g := p.rankGroup[r]
		p.touched = append(p.touched, g)
		// Jump to the end of g's run of ranks.
		end := p.ranks[g].NextAbsentValue(r)
		if end < 0 || end >= int64(p.world) {
			break
		}
		it.AdvanceIfNeeded(uint32(end))
	}
	slices.Sort(p.touched)
	p.touched = slices.Compact(p.touched)
	p.out = p.out[:0]
	for _, g := range p.touched {
		in := roaring.And(p.ranks[g], recv)
		if in.GetCardinality() == p.ranks[g].GetCardinality() {
			p.out = append(p.out, g)
			continue
		}
		n, err := p.splitOff(g, in, split)
		if err != nil {
			return nil, err
		}
		p.out = append(p.out, n)
	}
	slices.Sort(p.out)
	return p.out, nil
}

// splitGroup splits g into keep and the rest.
func (p *Partition) splitGroup(g int32, keep *roaring.Bitmap, split Split) error {
	_, err := p.splitOff(g, keep, split)
	return err
}

// splitOff splits part (a proper, non-empty subset of g) away from g and
// returns the group id that now holds part. The smaller side takes the new
// id, so relabelling rankGroup costs the smaller side's size.
func (p *Partition) splitOff(g int32, part *roaring.Bitmap, split Split) (int32, error) {
	rest := roaring.AndNot(p.ranks[g], part)
	n := int32(len(p.ranks))
	moved, kept := part, rest
	partID := n
	if part.GetCardinality() > rest.GetCardinality() {
		moved, kept = rest, part
		partID = g
	}
	if err := split(g, n); err != nil {
		return 0, err
	}
	moved.RunOptimize()
	kept.RunOptimize()
	p.ranks[g] = kept
	p.ranks = append(p.ranks, moved)
	it := moved.Iterator()
	for it.HasNext() {
		p.rankGroup[it.Next()] = n
	}
	p.epoch++
	return partID, nil
}

func (p *Partition) remember(a, b []int32) {
	if len(p.cache) >= maxCache {
		clear(p.cache)
	}
	p.cache[string(p.key)] = entry{epoch: p.epoch, a: slices.Clone(a), b: slices.Clone(b)}
}

func (p *Partition) check(s *jsonl.Slice) error {
	lo, hi := s.Bounds()
	if lo > hi {
		return nil // empty
	}
	if lo < 0 || hi >= p.world {
		return fmt.Errorf("%w: slice spans ranks %d..%d, world size is %d", ErrRank, lo, hi, p.world)
	}
	return nil
}

// addSlice adds the ranks of s to b: one range add per contiguous row (the
// last dimension, when its stride is 1), and the whole slice in one add when
// it is a dense block.
func (p *Partition) addSlice(b *roaring.Bitmap, s *jsonl.Slice) error {
	if err := p.check(s); err != nil {
		return err
	}
	nd := len(s.Sizes)
	if nd == 0 {
		b.Add(uint32(s.Offset))
		return nil
	}
	if s.Len() == 0 {
		return nil
	}
	if dense(s) {
		b.AddRange(uint64(s.Offset), uint64(s.Offset+s.Len()))
		return nil
	}
	if s.Strides[nd-1] != 1 {
		p.scratch = s.AppendRanks(p.scratch[:0])
		for _, r := range p.scratch {
			b.Add(uint32(r))
		}
		return nil
	}
	// Rows of the last dimension are contiguous: enumerate row starts.
	row := jsonl.Slice{Offset: s.Offset, Sizes: s.Sizes[:nd-1], Strides: s.Strides[:nd-1]}
	p.scratch = row.AppendRanks(p.scratch[:0])
	width := uint64(s.Sizes[nd-1])
	for _, r := range p.scratch {
		b.AddRange(uint64(r), uint64(r)+width)
	}
	return nil
}

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

// resolveRanks is Resolve ungrouped: the distinct ranks of the slices.
func (p *Partition) resolveRanks(ss []jsonl.Slice) ([]int32, error) {
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
				p.out = append(p.out, int32(r))
			}
		}
	}
	return p.out, nil
}

func appendSliceKey(b []byte, s *jsonl.Slice) []byte {
	b = binary.AppendVarint(b, s.Offset)
	b = binary.AppendUvarint(b, uint64(len(s.Sizes)))
	for k := range s.Sizes {
		b = binary.AppendVarint(b, s.Sizes[k])
		b = binary.AppendVarint(b, s.Strides[k])
	}
	return b
}
