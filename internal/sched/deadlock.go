package sched

import (
	"fmt"
	"github.com/fastsim/fastsim/internal/groups"

	"github.com/fastsim/fastsim/gen"
)

// DeadlockError reports a task that can never run: at the end of the
// history it is still queued (SEMANTICS.md, "At the end of the history every
// queued task must have run"). Line is the history line of the command that
// created it, where the error is reported.
type DeadlockError struct {
	Line int64
	Msg  string
}

func (d *DeadlockError) Error() string { return fmt.Sprintf("%v: %s", ErrDeadlock, d.Msg) }

func (d *DeadlockError) Unwrap() error { return ErrDeadlock }

// stuckAt names one queued task: group, stream and row.
type stuckAt struct {
	gi groups.GroupID
	s  gen.StreamID
	t  gen.TaskID
}

// Finish ends the history: every queued task must have run. It returns a
// *DeadlockError naming the first stuck task, or nil. The first is the
// head of a stream queue (a task behind a head waits for that head) created
// by the earliest command; ties go to the lowest rank, then the earliest
// created stream. Each group's lowest rank names it, so grouped and
// ungrouped replays report the same task.
func (e *Engine) Finish() error {
	e.catchUp()
	if e.flushErr != nil {
		return e.flushErr
	}
	best := stuckAt{gi: -1}
	var bestCmd, bestRank int64
	for gi := range e.gs {
		g := e.gs[gi]
		for s := range g.streams {
			st := &g.streams[s]
			if st.queue.Len() == 0 {
				continue
			}
			t := st.queue.Front()
			cmd, rank := g.tasks.Command[t], e.part.Lowest(groups.GroupID(gi))
			if best.gi < 0 || cmd < bestCmd || cmd == bestCmd && (rank < bestRank || rank == bestRank && gen.StreamID(s) < best.s) {
				best, bestCmd, bestRank = stuckAt{groups.GroupID(gi), gen.StreamID(s), t}, cmd, rank
			}
		}
	}
	if best.gi < 0 {
		return nil
	}
	g := e.gs[best.gi]
	msg := fmt.Sprintf("task %s of rank %d never runs: it waits for %s", e.describe(best), bestRank, e.waitsFor(best))
	return &DeadlockError{Line: g.tasks.Line[best.t], Msg: msg}
}

// describe names a task: `"SendTensor" (line 4) on stream "main"`, with
// the line of the command that created it.
func (e *Engine) describe(at stuckAt) string {
	g := e.gs[at.gi]
	return fmt.Sprintf("%q (line %d) on stream %q", e.names.Name(g.tasks.Name[at.t]), g.tasks.Line[at.t], e.streamName(g, at.s))
}

// waitsFor says what the stuck head task waits for: a collective peer that
// has not started (the one of lowest rank), or the task an event waits for.
func (e *Engine) waitsFor(at stuckAt) string {
	g := e.gs[at.gi]
	tk := &g.tasks
	t := at.t
	if c := tk.Coll[t]; c >= 0 && !e.colls.Started(c) {
		peer := stuckAt{gi: -1}
		var peerRank int64
		for _, m := range e.colls.MembersOf(c) {
			mg := e.gs[m.Group]
			if mg.tasks.State[m.Task] >= gen.TaskStateExecuting {
				continue
			}
			r := e.part.Lowest(m.Group)
			if peer.gi < 0 || r < peerRank {
				peer, peerRank = stuckAt{m.Group, mg.tasks.Stream[m.Task], m.Task}, r
			}
		}
		if peer.gi >= 0 {
			if peer.gi == at.gi && peer.t == t {
				return "the other members of its collective to start"
			}
			// The peer's rank is left out: grouped, a send between two
			// slices of one group pairs the group with itself.
			return "its peer " + e.describe(peer) + " to start" + e.behind(peer)
		}
	}
	if w := tk.Wait[t]; w >= 0 && tk.State[w] != gen.TaskStateExecuted {
		s := tk.Stream[w]
		if s < 0 {
			return fmt.Sprintf("%q (line %d), which was never queued", e.names.Name(tk.Name[w]), tk.Line[w])
		}
		return e.describe(stuckAt{at.gi, s, w}) + " to run" + e.behind(stuckAt{at.gi, s, w})
	}
	return "nothing it can name (an internal inconsistency)"
}

// behind says which task a queued task waits behind on its stream, if it
// is not the head.
func (e *Engine) behind(at stuckAt) string {
	g := e.gs[at.gi]
	if at.s < 0 {
		return ""
	}
	st := &g.streams[at.s]
	if st.queue.Len() == 0 || st.queue.Front() == at.t {
		return ""
	}
	h := st.queue.Front()
	return fmt.Sprintf(", which is queued behind %q (line %d)", e.names.Name(g.tasks.Name[h]), g.tasks.Line[h])
}
