package sched

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/fastsim/fastsim/internal/trace"
)

// Report is what a replay computes up to some point.
type Report struct {
	ExecNs     int64 // latest end of any controller or stream event
	PeakBytes  int64 // highest memory of any device
	PeakDevice int64 // the rank that reached PeakBytes first, or -1
}

// ExecSeconds is the exec time in seconds, computed as the reference does
// (microseconds, then seconds) so the floats agree to the last digit.
func (r Report) ExecSeconds() float64 { return float64(r.ExecNs) / 1000 / 1e6 }

// PeakMB is the peak memory in MB (bytes / 1e6).
func (r Report) PeakMB() float64 { return float64(r.PeakBytes) / 1e6 }

// Report computes exec time and peak memory of everything so far.
func (e *Engine) Report() Report {
	r := Report{ExecNs: max(e.ctrlMaxNs, e.evMaxNs), PeakDevice: -1}
	for w := range e.workers {
		if !e.workers[w].active {
			continue
		}
		e.mergeMemory(int32(w), func(_, running int64) {
			if running > r.PeakBytes {
				r.PeakBytes, r.PeakDevice = running, int64(w)
			}
		})
	}
	return r
}

// mergeMemory walks worker w's memory events merged across its streams in
// time order (ties: the earlier-created stream first; within a stream, the
// smaller delta first) and calls fn with each event's time and the running
// total.
func (e *Engine) mergeMemory(w int32, fn func(ns, running int64)) {
	ss := e.workers[w].streams
	var cur [8]int
	pos := cur[:0]
	for _, s := range ss {
		e.sortMemory(s)
		pos = append(pos, 0)
	}
	running := int64(0)
	for {
		best := -1
		var bestNs int64
		for i, s := range ss {
			m := e.streams[s].mem
			if pos[i] < len(m) && (best < 0 || m[pos[i]].ns < bestNs) {
				best, bestNs = i, m[pos[i]].ns
			}
		}
		if best < 0 {
			return
		}
		ev := e.streams[ss[best]].mem[pos[best]]
		pos[best]++
		running += ev.delta
		fn(ev.ns, running)
	}
}

// sortMemory puts stream s's memory events in (time, delta) order. Events
// arrive nearly sorted, so only the new tail is sorted and merged in.
func (e *Engine) sortMemory(s int32) {
	st := &e.streams[s]
	if st.sorted == len(st.mem) {
		return
	}
	byTime := func(a, b memEvent) int {
		if c := cmp.Compare(a.ns, b.ns); c != 0 {
			return c
		}
		return cmp.Compare(a.delta, b.delta)
	}
	slices.SortFunc(st.mem[st.sorted:], byTime)
	if st.sorted > 0 && byTime(st.mem[st.sorted-1], st.mem[st.sorted]) > 0 {
		slices.SortStableFunc(st.mem, byTime) // both halves sorted: a merge in effect
	}
	st.sorted = len(st.mem)
}

// WriteTrace writes the timeline kept so far (Options.KeepEvents) as Chrome
// trace events: the controller, then each device given any task, with a
// thread per stream and its memory counter.
func (e *Engine) WriteTrace(w *trace.Writer) error {
	if !e.opt.KeepEvents {
		return fmt.Errorf("%w: the engine was not asked to keep events", ErrOptions)
	}
	// Perfetto shares one id space between processes and threads: hand out
	// every id once.
	next := int64(0)
	id := func() int64 { next++; return next }
	pid, tid := id(), id()
	w.ProcessName(pid, "Controller")
	w.ThreadName(pid, tid, "Controller")
	for i := range e.ctrlName {
		w.Complete(pid, tid, e.names.Name(e.ctrlName[i]), e.ctrlStart[i], e.ctrlEnd[i], e.ctrlCmd[i])
	}
	var name []byte
	for rank := range e.workers {
		wk := &e.workers[rank]
		if !wk.active {
			continue
		}
		pid := id()
		name = fmt.Appendf(name[:0], "Device %d", rank)
		w.ProcessName(pid, string(name))
		for _, s := range wk.streams {
			st := &e.streams[s]
			tid := id()
			w.ThreadName(pid, tid, e.names.Name(st.name))
			for i := range st.evStart {
				w.Complete(pid, tid, e.names.Name(st.evName[i]), st.evStart[i], st.evEnd[i], st.evCmd[i])
			}
		}
		e.mergeMemory(int32(rank), func(ns, running int64) { w.Counter(pid, ns, running) })
	}
	return nil
}
