package groups

import (
	"strconv"

	"github.com/RoaringBitmap/roaring/v2"
)

// AppendRanks appends a description of group g's ranks for messages and
// trace names, bounded in length whatever the world size:
//
//	rank 7
//	ranks 8..11 (4 ranks)
//	ranks 65543..131071 step 4 (16,383 ranks)
//	ranks 0..3, 8..11, ..., 1048568..1048571 (131,072 blocks of 4 every 8; 524,288 ranks)
//	ranks 0..3, 9, 20..31, ..., 999 (1,234 ranks in 77 runs)
//
// Runs are inclusive. It costs the number of runs of the group.
func (p *Partition) AppendRanks(dst []byte, g GroupID) []byte {
	if !p.grouped {
		return strconv.AppendInt(append(dst, "rank "...), int64(g), 10)
	}
	return appendDescription(dst, p.ranks[g])
}

// LowestRanks appends to dst the n lowest ranks of group g in increasing
// order (all of them if it has fewer). It costs n, not the group's size.
func (p *Partition) LowestRanks(dst []int64, g GroupID, n int) []int64 {
	if !p.grouped {
		if n > 0 {
			dst = append(dst, int64(g))
		}
		return dst
	}
	it := p.ranks[g].Iterator()
	for ; n > 0 && it.HasNext(); n-- {
		dst = append(dst, int64(it.Next()))
	}
	return dst
}

// AppendRuns appends every run of group g's ranks, exactly, as
// "lo-hi,lo-hi,..." (a single rank as "r"): for tools that expand a group
// back to its ranks, such as the trace's process metadata. Its length
// follows the number of runs.
func (p *Partition) AppendRuns(dst []byte, g GroupID) []byte {
	if !p.grouped {
		return strconv.AppendInt(dst, int64(g), 10)
	}
	first := true
	eachRun(p.ranks[g], func(lo, hi uint64) bool {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = strconv.AppendUint(dst, lo, 10)
		if hi > lo {
			dst = strconv.AppendUint(append(dst, '-'), hi, 10)
		}
		return true
	})
	return dst
}

// shownRuns is how many leading runs a description names before "...".
const shownRuns = 3

func appendDescription(dst []byte, b *roaring.Bitmap) []byte {
	n := b.GetCardinality()
	switch n {
	case 0:
		return append(dst, "no ranks"...)
	case 1:
		return strconv.AppendUint(append(dst, "rank "...), uint64(b.Minimum()), 10)
	}
	// One pass over the runs: the first few, the last, and whether they are
	// all of one width at one period (a strided or 2-d block).
	var head [shownRuns][2]uint64
	var last [2]uint64
	runs := uint64(0)
	uniform := true
	var width, period uint64
	eachRun(b, func(lo, hi uint64) bool {
		if runs < shownRuns {
			head[runs] = [2]uint64{lo, hi}
		}
		switch runs {
		case 0:
			width = hi - lo + 1
		case 1:
			period = lo - last[0]
			fallthrough
		default:
			if hi-lo+1 != width || lo-last[0] != period {
				uniform = false
			}
		}
		last = [2]uint64{lo, hi}
		runs++
		return true
	})
	dst = append(dst, "ranks "...)
	switch {
	case runs == 1:
		dst = appendRun(dst, head[0])
		return appendCount(append(dst, " ("...), n, " ranks)")
	case uniform && width == 1:
		dst = strconv.AppendUint(dst, head[0][0], 10)
		dst = append(dst, ".."...)
		dst = strconv.AppendUint(dst, last[1], 10)
		dst = strconv.AppendUint(append(dst, " step "...), period, 10)
		return appendCount(append(dst, " ("...), n, " ranks)")
	}
	for i := uint64(0); i < min(runs, shownRuns); i++ {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = appendRun(dst, head[i])
	}
	if runs > shownRuns {
		if runs > shownRuns+1 {
			dst = append(dst, ", ..."...)
		}
		dst = appendRun(append(dst, ", "...), last)
	}
	dst = append(dst, " ("...)
	if uniform {
		dst = appendCount(dst, runs, " blocks of ")
		dst = strconv.AppendUint(dst, width, 10)
		dst = strconv.AppendUint(append(dst, " every "...), period, 10)
		return appendCount(append(dst, "; "...), n, " ranks)")
	}
	dst = appendCount(dst, n, " ranks in ")
	return appendCount(dst, runs, " runs)")
}

func appendRun(dst []byte, r [2]uint64) []byte {
	dst = strconv.AppendUint(dst, r[0], 10)
	if r[1] > r[0] {
		dst = strconv.AppendUint(append(dst, ".."...), r[1], 10)
	}
	return dst
}

// appendCount appends n with thousands separators, then suffix.
func appendCount(dst []byte, n uint64, suffix string) []byte {
	s := strconv.FormatUint(n, 10)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, s[i])
	}
	return append(dst, suffix...)
}
