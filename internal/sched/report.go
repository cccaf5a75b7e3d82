package sched

import (
	"fmt"

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
	r := Report{ExecNs: e.ctrlMaxNs, PeakDevice: -1}
	for gi := range e.gs {
		g := &e.gs[gi]
		r.ExecNs = max(r.ExecNs, g.evMaxNs)
		if !g.active {
			continue
		}
		peak := e.groupPeakBytes(g)
		// Ties go to the lowest rank, as a rank-by-rank scan would find.
		low := e.part.Lowest(int32(gi))
		if peak > r.PeakBytes || peak == r.PeakBytes && peak > 0 && low < r.PeakDevice {
			r.PeakBytes, r.PeakDevice = peak, low
		}
	}
	return r
}

// WorkerTasks is the number of tasks the replay stands for, rank by rank:
// a group's tasks count once for each of its ranks.
func (e *Engine) WorkerTasks() int64 {
	n := int64(0)
	for gi := range e.gs {
		n += e.gs[gi].tasksMade * e.part.Size(int32(gi))
	}
	return n
}

// Groups is the number of groups simulated (the world size, ungrouped).
func (e *Engine) Groups() int { return len(e.gs) }

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
	// Devices in order of their lowest rank; grouped, a device is named by
	// its position in that order and its ranks: "Device 2 [4-7] [12-15]".
	order := e.byLowestRank()
	var name []byte
	for i, gi := range order {
		g := &e.gs[gi]
		if !g.active {
			continue
		}
		pid := id()
		if e.part.Grouped() {
			name = fmt.Appendf(name[:0], "Device %d ", i)
			name = e.part.AppendRanges(name, gi)
		} else {
			name = fmt.Appendf(name[:0], "Device %d", gi)
		}
		w.ProcessName(pid, string(name))
		for s := range g.streams {
			st := &g.streams[s]
			tid := id()
			w.ThreadName(pid, tid, e.names.Name(st.name))
			for i := range st.evStart {
				w.Complete(pid, tid, e.names.Name(st.evName[i]), st.evStart[i], st.evEnd[i], st.evCmd[i])
			}
		}
		e.mergeAll(g, func(ns, running int64) { w.Counter(pid, ns, running) })
	}
	return nil
}
