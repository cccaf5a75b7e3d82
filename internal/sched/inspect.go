package sched

import (
	"fmt"

	"github.com/fastsim/fastsim/gen"
)

// Reading a finished replay's kept timeline (Options.KeepEvents), device by
// device, for outputs other than the Chrome trace (memory snapshots, HTML
// reports, operation tables).

// deviceGroup returns the group simulating rank, checking that events were
// kept.
func (e *Engine) deviceGroup(rank int64) (*group, error) {
	e.catchUp()
	if !e.opt.KeepEvents {
		return nil, fmt.Errorf("%w: the engine was not asked to keep events", ErrOptions)
	}
	if rank < 0 || rank >= e.opt.WorldSize {
		return nil, fmt.Errorf("%w: device %d is outside the world of %d", ErrOptions, rank, e.opt.WorldSize)
	}
	return e.gs[e.part.GroupOf(rank)], nil
}

// DeviceMemory calls fn with every memory event of the device of rank, in
// the order the report merges them (time; ties: the earlier-created stream
// first, within a stream the smaller delta first), with the stream's
// position in creation order, its name, the event's time and size (+ for an
// allocation, - for a release) and the device's running total after it.
func (e *Engine) DeviceMemory(rank int64, fn func(stream int, streamName string, ns, delta, running int64)) error {
	g, err := e.deviceGroup(rank)
	if err != nil {
		return err
	}
	pos := make([]int, len(g.streams))
	for s := range g.streams {
		g.sortMemory(gen.StreamID(s))
	}
	// Kept events are never dropped as they settle, so the walk starts
	// from nothing, not from the settled total (memBase), which already
	// counts the events it is about to add again.
	var running int64
	for {
		best := -1
		var bestNs int64
		for i := range g.streams {
			m := &g.streams[i].mem
			if pos[i] < m.Len() && (best < 0 || m.at(pos[i]).ns < bestNs) {
				best, bestNs = i, m.at(pos[i]).ns
			}
		}
		if best < 0 {
			return nil
		}
		ev := *g.streams[best].mem.at(pos[best])
		pos[best]++
		running += ev.delta
		fn(best, e.names.Name(g.streams[best].name), ev.ns, ev.delta, running)
	}
}

// DeviceEvents calls fn with every kept stream event of the device of rank,
// stream by stream in creation order, each stream's events in time order.
func (e *Engine) DeviceEvents(rank int64, fn func(stream int, streamName, name string, startNs, endNs int64)) error {
	g, err := e.deviceGroup(rank)
	if err != nil {
		return err
	}
	for s := range g.streams {
		st := &g.streams[s]
		sname := e.names.Name(st.name)
		for i := range st.evStart {
			fn(s, sname, e.names.Name(st.evName[i]), st.evStart[i], st.evEnd[i])
		}
	}
	return nil
}

// DevicePeak returns the peak memory of the device of rank, in bytes.
func (e *Engine) DevicePeak(rank int64) (int64, error) {
	g, err := e.deviceGroup(rank)
	if err != nil {
		return 0, err
	}
	return e.groupPeakBytes(g), nil
}

// Devices returns the lowest rank of every simulated device that was given
// a task (with grouped workers, of every group), in increasing order.
func (e *Engine) Devices() []int64 {
	e.catchUp()
	var out []int64
	for _, gi := range e.byLowestRank() {
		if e.gs[gi].active {
			out = append(out, e.part.Lowest(gi))
		}
	}
	return out
}

// DeviceLowestRanks returns the n lowest ranks of the device of rank (of
// its group, grouped; rank alone, ungrouped), in increasing order: the
// ranks a grouped report names where an ungrouped one would name each.
func (e *Engine) DeviceLowestRanks(rank int64, n int) []int64 {
	e.catchUp()
	return e.part.LowestRanks(nil, e.part.GroupOf(rank), n)
}

// DeviceRanks returns how many ranks the device of rank stands for: 1
// ungrouped, its group's size grouped.
func (e *Engine) DeviceRanks(rank int64) int64 {
	e.catchUp()
	return e.part.Size(e.part.GroupOf(rank))
}
