package sched

import (
	"cmp"
	"fmt"
	"github.com/fastsim/fastsim/gen"
	"math"
	"slices"
)

// A device's memory is the running sum of its streams' memory events
// merged in time order (SEMANTICS.md, "The report"). Each stream's events
// are sorted on their own; the merge keeps a heap of the streams whose next
// event is due, so it costs O(events log streams), not events x streams.
// The events before each stream's base are settled: folded into the
// group's memBase and memPeak and not merged again for the report. Those
// before its final are final as well (settleMemory says which): folded
// into finalBase and finalPeak too, and dropped unless a trace is kept,
// which writes them all.

// mergePeak walks a group's unsettled memory events before limitNs (from
// where from says), merged across its streams in time order (ties: the
// earlier-created stream first; within a stream, the smaller delta
// first), and returns the running total after them, which starts at the
// total of the settled events, and its peak over them (math.MinInt64 when
// there are none). It leaves in e.memPos where it stopped in each stream.
// Its callers want only those two of each event, so no function is
// called an event.
func (e *Engine) mergePeak(g *group, from int, limitNs int64) memSum {
	var sum memSum
	e.memPos, e.memHeap, sum, _ = g.merge(from, limitNs, e.memPos, e.memHeap, nil)
	return sum
}

// memSum is what a merge leaves: the running total after its events and
// the largest it reached on them (math.MinInt64 after none).
type memSum struct{ running, peak int64 }

// mergeAll walks every memory event of a group kept for the trace, from
// the start.
func (e *Engine) mergeAll(g *group, fn func(ns, running int64)) {
	e.memPos, e.memHeap, _, _ = g.merge(fromKept, math.MaxInt64, e.memPos, e.memHeap, fn)
}

// Where a merge starts: each stream's first event kept (with a running
// total of 0), its first not final (finalBase) or its first not settled
// (memBase).
const (
	fromKept = iota
	fromFinal
	fromSettled
)

// merge is mergePeak with its buffers passed in (groups check overflow
// while running in parallel) and where it starts given by from. It stops
// early, reporting true, when the running total would overflow int64.
// fn, if not nil, is called with each event; the sum is of the events
// merged either way.
func (g *group) merge(from int, limitNs int64, pos []int, heap []memHead, fn func(ns, running int64)) ([]int, []memHead, memSum, bool) {
	pos, heap = pos[:0], heap[:0]
	peak := int64(math.MinInt64)
	running := g.memBase
	switch from {
	case fromKept:
		running = 0
	case fromFinal:
		running = g.finalBase
	}
	for s := range g.streams {
		g.sortMemory(gen.StreamID(s))
		st := &g.streams[s]
		p := st.base
		switch from {
		case fromKept:
			p = 0
		case fromFinal:
			p = st.final
		}
		pos = append(pos, p)
		if p < st.mem.Len() {
			if ev := st.mem.at(p); ev.ns < limitNs {
				heap = heapPush(heap, memHead{ev.ns, ev.delta, int32(s)})
			}
		}
	}
	for len(heap) > 0 {
		s := heap[0].s
		st := &g.streams[s]
		ev := memEvent{heap[0].ns, heap[0].delta}
		if ev.delta > 0 && running > math.MaxInt64-ev.delta {
			return pos, heap, memSum{running, peak}, true
		}
		running += ev.delta
		peak = max(peak, running)
		pos[s]++
		next := memEvent{ns: math.MaxInt64}
		if pos[s] < st.mem.Len() {
			next = *st.mem.at(pos[s])
		}
		if next.ns < limitNs {
			heap[0].ns, heap[0].delta = next.ns, next.delta
		} else {
			heap[0] = heap[len(heap)-1]
			heap = heap[:len(heap)-1]
		}
		heapDown(heap, 0)
		if fn != nil {
			fn(ev.ns, running)
		}
	}
	return pos, heap, memSum{running, peak}, false
}

// memHead is a stream in the merge's heap, with its next event: the heap
// compares times it holds, not times looked up through the stream's
// events, and each event is read from its stream once.
type memHead struct {
	ns    int64
	delta int64
	s     int32
}

// less orders streams by their next event's time, then by creation.
func (a memHead) less(b memHead) bool { return a.ns < b.ns || a.ns == b.ns && a.s < b.s }

func heapPush(h []memHead, x memHead) []memHead {
	h = append(h, x)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

func heapDown(h []memHead, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].less(h[l]) {
			m = r
		}
		if !h[m].less(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// settleMemory folds into a group's running total and peak the memory
// events that no later event of its streams can come before, so the
// merge for a report or a step starts where the last one stopped.
// A stream's future events are at or after its now (tasks start no
// earlier, deletes and returns happen at or after it) and, when it has no
// queued task and holds no memory, at or after the controller clock too
// (a task starts no earlier than its command). An idle stream that holds
// memory may lend a tensor later, and the loan's drop returns it at the
// stream's now, however far behind the clock: the last reference may go,
// and the storage with it, there. So events before the smallest of those
// bounds are settled. A stream created later starts at the clock: its
// first task may allocate there, before the settled events of the group
// it is made on (a history creates streams when it likes). So only the
// events before the clock as well are final: those are dropped (without
// a trace; with one they stay for the trace but are not merged again),
// and a new stream sends its group back to them (unsettle). With a
// controller that costs nothing the clock stays 0: nothing is final
// before the end, and the events stay, unless the producer promised to
// create no stream late (Options.FixedStreams): then the settled events
// are final. Not in stream-only mode, where the clock stays 0 as well.
func (e *Engine) settleMemory(g *group) {
	if e.opt.Mode == StreamOnly {
		return
	}
	// A stream with queued tasks, memory it may lend or a tensor out on
	// loan may still record an event at its own now (a return happens
	// there); any other not before the controller clock.
	limit, any := int64(math.MaxInt64), false
	for s := range g.streams {
		st := &g.streams[s]
		bound := max(st.nowNs, e.nowNs)
		if st.queue.Len() > 0 || st.usage > 0 {
			bound = st.nowNs
		}
		limit = min(limit, bound)
		any = any || st.mem.Len() > st.final
	}
	for i := range g.borrows {
		if b := &g.borrows[i]; b.live {
			limit = min(limit, g.streams[b.from].nowNs)
		}
	}
	if !any {
		return
	}
	// Under FixedStreams the settled events are final too: when every
	// stream's settled events are final already, the walk that settles
	// is the one that makes final, and is not walked twice.
	once := e.opt.FixedStreams && g.memBase == g.finalBase && g.memPeak == g.finalPeak
	for s := range g.streams {
		once = once && g.streams[s].base == g.streams[s].final
	}
	sum := e.mergePeak(g, fromSettled, limit)
	g.memPeak, g.memBase = max(g.memPeak, sum.peak), sum.running
	// allocBytes is the sum of the unsettled allocations: subtract the
	// ones just settled, which costs what was settled. Recounting the
	// unsettled ones instead would cost, at every settlement, every event
	// an idle stream holds back: quadratic over a long step. Only a
	// saturated bound, which no longer knows its sum, is recounted.
	recount := g.allocBytes == math.MaxInt64
	for s, p := range e.memPos {
		st := &g.streams[s]
		if !recount {
			for c := range st.mem.chunks(st.base, p) {
				for _, ev := range c {
					if ev.delta > 0 {
						g.allocBytes -= ev.delta
					}
				}
			}
		}
		st.base = p
	}
	if recount {
		g.allocBytes = 0
		for s := range g.streams {
			st := &g.streams[s]
			for c := range st.mem.chunks(st.base, st.mem.Len()) {
				for _, ev := range c {
					if ev.delta > 0 {
						g.allocBytes = satAdd(g.allocBytes, ev.delta)
					}
				}
			}
		}
	}
	// The final events: settled, and before the clock, unless no stream
	// can be created any more (FixedStreams). Each event is walked once
	// settling and once here.
	final := min(limit, e.nowNs)
	if e.opt.FixedStreams {
		final = limit
	}
	if once {
		// e.memPos holds where the settling walk stopped, each stream's
		// new base, which the final walk would reach too.
		g.finalBase, g.finalPeak = g.memBase, g.memPeak
	} else {
		sum := e.mergePeak(g, fromFinal, final)
		g.finalPeak, g.finalBase = max(g.finalPeak, sum.peak), sum.running
	}
	for s, q := range e.memPos {
		st := &g.streams[s]
		if e.opt.KeepEvents || q == 0 {
			st.final = q
			continue
		}
		st.dropSettled(q)
		st.base -= q
		st.final = 0
	}
}

// unsettle sends group g's settled events back to its final ones, before
// a stream is created on it: the new stream's events may come before
// events settled past the clock, which must be merged again with them.
func (e *Engine) unsettle(g *group) {
	moved := false
	for s := range g.streams {
		st := &g.streams[s]
		if st.base == st.final {
			continue
		}
		moved = true
		for c := range st.mem.chunks(st.final, st.base) {
			for _, ev := range c {
				if ev.delta > 0 {
					g.allocBytes = satAdd(g.allocBytes, ev.delta)
				}
			}
		}
		st.base = st.final
	}
	if moved {
		g.memBase, g.memPeak = g.finalBase, g.finalPeak
	}
}

// sortMemory puts stream s's unsettled memory events in (time, delta)
// order. Events arrive nearly sorted, so only the new tail is sorted and
// merged in.
func (g *group) sortMemory(s gen.StreamID) {
	st := &g.streams[s]
	if st.sorted == st.mem.Len() {
		return
	}
	byTime := func(a, b memEvent) int {
		if c := cmp.Compare(a.ns, b.ns); c != 0 {
			return c
		}
		return cmp.Compare(a.delta, b.delta)
	}
	st.mem.sortFrom(st.sorted, func(ev []memEvent) { sortEvents(ev, byTime) })
	if st.sorted > st.base && byTime(*st.mem.at(st.sorted - 1), *st.mem.at(st.sorted)) > 0 {
		// Both parts sorted: a merge in effect. Settled events come before
		// every later one, so only the unsettled part moves.
		st.mem.sortFrom(st.base, func(ev []memEvent) { slices.SortStableFunc(ev, byTime) })
	}
	st.sorted = st.mem.Len()
}

// sortEvents sorts events by (time, delta). Tails arrive nearly in order
// (a release comes a little before the allocations queued after it), so
// an insertion sort moves few events; when it has moved more than a few
// per event it leaves the rest to slices.SortFunc. Equal events are equal
// values, so either gives the same slice.
func sortEvents(ev []memEvent, byTime func(a, b memEvent) int) {
	budget := 4*len(ev) + 16
	for i := 1; i < len(ev); i++ {
		x := ev[i]
		j := i
		for j > 0 && (ev[j-1].ns > x.ns || ev[j-1].ns == x.ns && ev[j-1].delta > x.delta) {
			ev[j] = ev[j-1]
			j--
		}
		ev[j] = x
		if budget -= i - j; budget < 0 {
			slices.SortFunc(ev, byTime)
			return
		}
	}
}

// satAdd adds two non-negative numbers, saturating at the largest int64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// checkAlloc guards an allocation of bytes just recorded on stream s
// against overflow of the device's running total. The running total
// never exceeds the settled total plus every unsettled allocation, so the
// exact merge runs only when that bound does not fit in an int64.
func (e *Engine) checkAlloc(g *group, s gen.StreamID, bytes int64) error {
	g.allocBytes = satAdd(g.allocBytes, bytes)
	if g.allocBytes < math.MaxInt64-g.memBase {
		return nil
	}
	// The event is already appended: merge with it.
	if _, _, _, over := g.merge(fromSettled, math.MaxInt64, nil, nil, nil); over {
		return e.memOverflow(g, s, bytes)
	}
	return nil
}

func (e *Engine) memOverflow(g *group, s gen.StreamID, bytes int64) error {
	return fmt.Errorf("%w: allocating %d bytes on stream %q takes the memory of a device past %d bytes", ErrOverflow, bytes, e.streamName(g, s), int64(math.MaxInt64))
}

// dropSettled drops st's first p memory events, settled.
func (st *stream) dropSettled(p int) {
	st.mem.drop(p)
	st.sorted -= p
}

// addMem appends event ev to st's memory events.
func (st *stream) addMem(ev memEvent) { st.mem.push(ev) }
