package sched

import (
	"cmp"
	"github.com/fastsim/fastsim/internal/groups"
	"math"
	"slices"
)

// DevicePeaks calls fn for every simulated device (a group of identical
// ranks when grouped) in order of lowest rank, with its rank count and the
// peak of its memory so far (0 for a device given no task). The largest
// peak is Report's PeakBytes.
func (e *Engine) DevicePeaks(fn func(lowestRank, ranks, peakBytes int64)) {
	e.catchUp()
	for _, gi := range e.byLowestRank() {
		fn(e.part.Lowest(gi), e.part.Size(gi), e.groupPeakBytes(e.gs[gi]))
	}
}

// DeviceOf is the device that rank r's results are reported under: its
// own rank ungrouped, the lowest rank of its group when grouped.
func (e *Engine) DeviceOf(r int64) int64 {
	e.catchUp()
	return e.part.Lowest(e.part.GroupOf(r))
}

// DeviceBytes is the memory peak of rank r's device so far and what the
// device holds at the end of its events: with every transient tensor
// freed, as at the end of a training step, what it keeps for good.
func (e *Engine) DeviceBytes(r int64) (peakBytes, finalBytes int64) {
	e.catchUp()
	g := e.gs[e.part.GroupOf(r)]
	if !g.active {
		return 0, 0
	}
	sum := e.mergePeak(g, fromSettled, math.MaxInt64)
	return max(g.memPeak, sum.peak), sum.running
}

// byLowestRank lists the groups in order of their lowest rank: the order
// devices appear in reports and traces.
func (e *Engine) byLowestRank() []groups.GroupID {
	order := make([]groups.GroupID, len(e.gs))
	for i := range order {
		order[i] = groups.GroupID(i)
	}
	slices.SortFunc(order, func(a, b groups.GroupID) int { return cmp.Compare(e.part.Lowest(a), e.part.Lowest(b)) })
	return order
}

// groupPeakBytes is a group's memory peak so far, computed as Report does:
// the settled peak, then the events not yet settled.
func (e *Engine) groupPeakBytes(g *group) int64 {
	if !g.active {
		return 0
	}
	return max(g.memPeak, e.mergePeak(g, fromSettled, math.MaxInt64).peak)
}
