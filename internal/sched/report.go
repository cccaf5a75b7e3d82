package sched

import (
	"fmt"
	"github.com/fastsim/fastsim/internal/groups"
	"math"
	"strconv"

	"github.com/fastsim/fastsim/internal/trace"
)

// Report is what a replay computes up to some point.
type Report struct {
	ExecNs     int64 // latest end of any controller or stream event
	PeakBytes  int64 // highest memory of any device
	PeakDevice int64 // the lowest rank that reaches PeakBytes, or -1 when no device held memory
}

// ExecSeconds is the exec time in seconds, computed as the reference does
// (microseconds, then seconds) so the floats agree to the last digit.
func (r Report) ExecSeconds() float64 { return float64(r.ExecNs) / 1000 / 1e6 }

// SecondsText is ns in seconds to six decimals, rounded from the integer
// nanoseconds, a half microsecond up: 12,302,500 ns is 0.012303 and
// 4,312,500 ns 0.004313 (formatting the float seconds rounded the first
// down and the second up, as their binary values fell). The reports
// print their times with it.
func SecondsText(ns int64) string {
	neg := ns < 0
	if neg {
		ns = -ns
	}
	us := ns/1000 + (ns%1000+500)/1000
	t := fmt.Sprintf("%d.%06d", us/1_000_000, us%1_000_000)
	if neg {
		t = "-" + t
	}
	return t
}

// PeakMB is the peak memory in MB (bytes / 1e6).
func (r Report) PeakMB() float64 { return float64(r.PeakBytes) / 1e6 }

// Report computes exec time and peak memory of everything so far.
func (e *Engine) Report() Report {
	e.catchUp()
	r := Report{ExecNs: e.ctrlMaxNs, PeakDevice: -1}
	for gi := range e.gs {
		g := e.gs[gi]
		r.ExecNs = max(r.ExecNs, g.evMaxNs)
		if !g.active {
			continue
		}
		peak := e.groupPeakBytes(g)
		// Ties go to the lowest rank, as a rank-by-rank scan would find.
		low := e.part.Lowest(groups.GroupID(gi))
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
		n += e.gs[gi].tasksMade * e.part.Size(groups.GroupID(gi))
	}
	return n
}

// Groups is the number of groups simulated (the world size, ungrouped).
func (e *Engine) Groups() int { return len(e.gs) }

// WriteTrace writes the timeline kept so far (Options.KeepEvents) as Chrome
// trace events: the controller, then each device given any task, with a
// thread per stream and its memory counter.
func (e *Engine) WriteTrace(w *trace.Writer) error {
	return e.WriteTraceWindow(w, 0, math.MaxInt64)
}

// WriteTraceWindow is WriteTrace limited to the events of the commands
// numbered firstCmd to lastCmd (the engine's command counter, as in each
// event's args.command). Memory counters are kept between the earliest start
// and the latest end of those events, starting with the running total just
// before that window, so the curve begins at the right level. Zero-length
// spans are written as instant events (trace.Writer.Span).
func (e *Engine) WriteTraceWindow(w *trace.Writer, firstCmd, lastCmd int64) error {
	e.catchUp()
	if !e.opt.KeepEvents {
		return fmt.Errorf("%w: the engine was not asked to keep events", ErrOptions)
	}
	in := func(cmd int64) bool { return cmd >= firstCmd && cmd <= lastCmd }
	whole := firstCmd <= 0 && lastCmd == math.MaxInt64
	// The window of time the chosen commands cover.
	fromNs, toNs := int64(math.MinInt64), int64(math.MaxInt64)
	if !whole {
		fromNs, toNs = math.MaxInt64, math.MinInt64
		for i := range e.ctrlCmd {
			if in(e.ctrlCmd[i]) {
				fromNs, toNs = min(fromNs, e.ctrlStart[i]), max(toNs, e.ctrlEnd[i])
			}
		}
		for gi := range e.gs {
			for s := range e.gs[gi].streams {
				st := &e.gs[gi].streams[s]
				for i := range st.evCmd {
					if in(st.evCmd[i]) {
						fromNs, toNs = min(fromNs, st.evStart[i]), max(toNs, st.evEnd[i])
					}
				}
			}
		}
	}
	// Perfetto shares one id space between processes and threads: hand out
	// every id once.
	next := int64(0)
	id := func() int64 { next++; return next }
	pid, tid := id(), id()
	w.ProcessName(pid, "Controller")
	w.ThreadName(pid, tid, "Controller")
	for i := range e.ctrlName {
		if in(e.ctrlCmd[i]) {
			w.Span(pid, tid, e.names.Name(e.ctrlName[i]), e.ctrlStart[i], e.ctrlEnd[i], e.ctrlCmd[i])
		}
	}
	// Devices in order of their lowest rank, named by it as the report
	// names them: "Device 8". A group of several ranks says which, briefly
	// in its name ("Device 8: ranks 8..11 (4 ranks)") and exactly in the
	// metadata's ranks ("8-11").
	order := e.byLowestRank()
	var name, runs []byte
	for _, gi := range order {
		g := e.gs[gi]
		if !g.active {
			continue
		}
		pid := id()
		name = strconv.AppendInt(append(name[:0], "Device "...), e.part.Lowest(gi), 10)
		if e.part.Size(gi) == 1 {
			w.ProcessName(pid, string(name))
		} else {
			name = e.part.AppendRanks(append(name, ": "...), gi)
			runs = e.part.AppendRuns(runs[:0], gi)
			w.GroupProcessName(pid, string(name), string(runs))
		}
		for s := range g.streams {
			st := &g.streams[s]
			tid := id()
			w.ThreadName(pid, tid, e.names.Name(st.name))
			for i := range st.evStart {
				if in(st.evCmd[i]) {
					w.Span(pid, tid, e.names.Name(st.evName[i]), st.evStart[i], st.evEnd[i], st.evCmd[i])
				}
			}
		}
		before, seen := int64(0), false
		e.mergeAll(g, func(ns, running int64) {
			switch {
			case ns < fromNs:
				before = running
			case ns <= toNs:
				if !seen && !whole && ns > fromNs {
					w.Counter(pid, fromNs, before)
				}
				seen = true
				w.Counter(pid, ns, running)
			}
		})
		if !seen && !whole && fromNs <= toNs {
			w.Counter(pid, fromNs, before)
		}
	}
	return nil
}
