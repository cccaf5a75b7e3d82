package sched

import (
	"fmt"
	"math"
	"slices"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/groups"
	"github.com/fastsim/fastsim/internal/values"
)

// newStream adds the group's stream st, indexed by st.Idx.
func (g *group) newStream(st values.Stream, name, waitFor gen.NameID) gen.StreamID {
	g.streams = append(g.streams, stream{
		ref:     st.Ref,
		name:    name,
		waitFor: waitFor,
		last:    -1,
	})
	s := gen.StreamID(len(g.streams) - 1)
	g.streamAt.set(&g.pages, st.Idx, int32(s)+1)
	return s
}

// streamOf finds the group's stream by its dense index, or -1.
func (g *group) streamOf(idx int32) gen.StreamID { return gen.StreamID(g.streamAt.get(idx) - 1) }

func (e *Engine) streamName(g *group, s gen.StreamID) string { return e.names.Name(g.streams[s].name) }

// newest is the task an event on stream s records: the newest queued task,
// else the last executed one, else -1.
func (g *group) newest(s gen.StreamID) gen.TaskID {
	st := &g.streams[s]
	if st.queue.Len() > 0 {
		return st.queue.Back()
	}
	return st.last
}

// newEvent makes an event task that waits for task recorded of stream
// recordedOn. It is queued later, on another stream, by enqueue.
func (e *Engine) newEvent(g *group, recordedOn gen.StreamID, recorded gen.TaskID) gen.TaskID {
	tk := &g.tasks
	t := tk.Alloc()
	tk.State[t] = gen.TaskStatePending
	tk.StartNs[t] = e.nowNs
	tk.RuntimeNs[t] = e.opt.Model.WaitRuntimeNs()
	tk.Stream[t] = -1
	tk.Name[t] = g.streams[recordedOn].waitFor
	tk.Command[t] = e.cmdID
	tk.Line[t] = e.line
	tk.Coll[t] = -1
	tk.Wait[t] = recorded
	tk.Waiters[t], tk.NextWaiter[t] = -1, -1
	tk.Borrow[t] = -1
	tk.Flags[t] = gen.TaskFlagsEvent
	tk.Holds[recorded]++
	return t
}

// enqueue puts an existing task (an event) at the back of stream s.
func (e *Engine) enqueue(gi groups.GroupID, s gen.StreamID, t gen.TaskID) {
	g := e.gs[gi]
	st := &g.streams[s]
	g.tasks.StartNs[t] = max(st.nowNs, g.tasks.StartNs[t])
	g.tasks.Stream[t] = s
	g.tasks.Flags[t] |= gen.TaskFlagsQueued
	g.tasks.IOOff[t] = st.io.Tail()
	st.queue.Push(t)
	if st.queue.Len() == 1 {
		g.wake(s)
	}
}

// addTask queues a task on group gi's stream ref. ins and outs are distinct
// tensors; an output that is also an input is not new.
func (e *Engine) addTask(gi groups.GroupID, stream values.Stream, name gen.NameID, runtimeNs int64, ins, outs []values.Tensor, coll gen.CollID) (gen.TaskID, error) {
	g := e.gs[gi]
	s := g.streamOf(stream.Idx)
	if s < 0 {
		return -1, e.noStream(gi, stream)
	}
	st := &g.streams[s]
	if e.tsNs > math.MaxInt64-runtimeNs {
		// Checked against the record's ts, not the start, so that every
		// trace mode (stream-only keeps the controller clock at 0) finds it.
		return -1, fmt.Errorf("%w: task %q (line %d) on stream %q sent at %d ns cannot end: its runtime of %d ns (as the cost model prices it) runs past the largest time (%d ns)",
			ErrOverflow, e.names.Name(name), e.line, e.streamName(g, s), e.tsNs, runtimeNs, int64(math.MaxInt64))
	}
	if r := e.pass.rec; r != nil && runtimeNs > r.maxRt {
		r.maxRt = runtimeNs
	}
	off := st.io.Tail()
	// Inputs first: a CPU tensor of the worker, else a tensor of this stream.
	for i := range ins {
		row := g.inputRow(ins[i].Idx, s)
		if row < 0 {
			return -1, fmt.Errorf("%w: input tensor %d is neither on stream %q of %s nor a CPU tensor there", ErrMissingTensor, ins[i].ID, e.streamName(g, s), e.who(gi))
		}
		g.tensors.Refs[row]++
		st.io.Push(row)
	}
	nOut := int32(0)
outputs:
	for i := range outs {
		for j := range ins {
			if ins[j].ID == outs[i].ID {
				continue outputs
			}
		}
		row := e.putTensor(g, s, &outs[i])
		if g.tensors.Refs[row] > 0 {
			return -1, fmt.Errorf("%w: output tensor %d is already on stream %q of %s and used by a queued task", ErrTensorInUse, outs[i].ID, e.streamName(g, s), e.who(gi))
		}
		g.tensors.Refs[row] = 1
		st.io.Push(row)
		nOut++
	}
	tk := &g.tasks
	// Alloc gives a row in its initial state: State Pending (0), Wait,
	// Waiters, NextWaiter and Borrow -1; the rest is set here.
	t := tk.Alloc()
	tk.StartNs[t] = max(st.nowNs, e.nowNs)
	tk.RuntimeNs[t] = runtimeNs
	tk.Stream[t] = s
	tk.Name[t] = name
	tk.Command[t] = e.cmdID
	tk.Line[t] = e.line
	tk.Coll[t] = coll
	tk.Flags[t] = gen.TaskFlagsQueued
	if name == e.viewName {
		tk.Flags[t] |= gen.TaskFlagsView
	}
	tk.IOOff[t] = off
	tk.NIn[t] = int32(len(ins))
	tk.NOut[t] = nOut
	g.active = true
	g.tasksMade++
	st.queue.Push(t)
	if st.queue.Len() == 1 {
		g.wake(s)
	}
	return t, nil
}

// wake marks stream s of group gi for a visit in the next round.
func (e *Engine) wake(gi groups.GroupID, s gen.StreamID) {
	e.gs[gi].wake(s)
	e.markReady(gi)
}

// markReady puts group gi in the next round if it has streams to move.
// Handlers wake streams within their groups only (so they can run groups in
// parallel) and mark the groups ready afterwards, in order.
func (e *Engine) markReady(gis ...groups.GroupID) {
	for _, gi := range gis {
		g := e.gs[gi]
		if len(g.work) > 0 && !g.ready {
			g.ready = true
			e.ready = append(e.ready, gi)
		}
	}
}

// minParallel is the fewest groups worth a parallel section: below it the
// goroutines cost more than the work they share.
const minParallel = 8

// A batch is what each does to every group: queue one task (the
// arguments are in Engine.batch) or move the group's streams. Naming the
// operation instead of passing a closure keeps the hot path free of
// allocations and indirect calls.
type batchOp uint8

const (
	opAddTask batchOp = iota // addTask with Engine.batch's arguments
	opAdvance                // advanceGroup
	opDelete                 // deleteIn with Engine.batch's refs
)

// batchArgs are the arguments of opAddTask, the same for every group.
type batchArgs struct {
	stream    values.Stream
	name      gen.NameID
	runtimeNs int64
	ins, outs []values.Tensor
	coll      gen.CollID
	tasks     []gen.TaskID // per group of the batch: the task queued
	refs      []int32      // opDelete: the tensors to delete (dense indexes)
}

func (e *Engine) apply(op batchOp, i int, gi groups.GroupID) error {
	switch op {
	case opAdvance:
		e.advanceGroup(gi)
		return nil
	case opDelete:
		return e.deleteIn(gi, e.batch.refs)
	}
	b := &e.batch
	t, err := e.addTask(gi, b.stream, b.name, b.runtimeNs, b.ins, b.outs, b.coll)
	if b.tasks != nil {
		b.tasks[i] = t
	}
	return err
}

// each applies op to every group of gs: in parallel, in contiguous chunks,
// when Jobs allows and there are enough groups. An op touches only its own
// group's state (and collectives, atomically). The error is the one of the
// earliest group in gs, so it does not depend on timing.
func (e *Engine) each(gs []groups.GroupID, op batchOp) error {
	if e.opt.Jobs <= 1 || len(gs) < minParallel {
		for i, gi := range gs {
			if i&0xffff == 0xffff && op != opAdvance && e.opt.Interrupt != nil && e.opt.Interrupt() {
				return ErrStopped
			}
			if err := e.apply(op, i, gi); err != nil {
				return err
			}
		}
		return nil
	}
	e.secOp, e.secGroups, e.secChunks = op, gs, min(e.opt.Jobs, len(gs), 32)
	e.parallel(e.secChunks)
	e.secGroups = nil
	var first error
	for _, gi := range gs {
		if err := e.gs[gi].err; err != nil {
			if first == nil {
				first = err
			}
			e.gs[gi].err = nil
		}
	}
	return first
}

// runChunk applies the current section's op to chunk k of its groups,
// stopping at the chunk's first error (kept on the group).
func (e *Engine) runChunk(k int) {
	gs, n := e.secGroups, e.secChunks
	// A helper goroutine's panic would end the process with a stack dump:
	// it becomes the chunk's error instead, reported like any other.
	defer func() {
		if r := recover(); r != nil {
			e.gs[gs[k*len(gs)/n]].err = fmt.Errorf("%w: %v", ErrInternal, r)
		}
	}()
	for i := k * len(gs) / n; i < (k+1)*len(gs)/n; i++ {
		if err := e.apply(e.secOp, i, gs[i]); err != nil {
			e.gs[gs[i]].err = err
			return
		}
	}
}

// addTasks queues the same task on every group of gs (tasks, when not nil,
// receives each group's task) and marks the groups ready.
func (e *Engine) addTasks(gs []groups.GroupID, stream values.Stream, name gen.NameID, runtimeNs int64, ins, outs []values.Tensor, coll gen.CollID, tasks []gen.TaskID) error {
	e.tasked = true // here, not in addTask, which may run on helper goroutines
	if e.opt.Jobs <= 1 || len(gs) < minParallel {
		// Serial, as each would run it, with the arguments passed
		// straight on: storing them in e.batch for apply to read back
		// cost more than the call (a struct of slices written into the
		// heap-allocated engine, and cleared again, every command).
		var err error
		for i, gi := range gs {
			if i&0xffff == 0xffff && e.opt.Interrupt != nil && e.opt.Interrupt() {
				err = ErrStopped
				break
			}
			var t gen.TaskID
			t, err = e.addTask(gi, stream, name, runtimeNs, ins, outs, coll)
			if tasks != nil {
				tasks[i] = t
			}
			if err != nil {
				break
			}
		}
		e.markReady(gs...)
		return err
	}
	e.batch = batchArgs{stream: stream, name: name, runtimeNs: runtimeNs, ins: ins, outs: outs, coll: coll, tasks: tasks}
	err := e.each(gs, opAddTask)
	e.batch = batchArgs{}
	e.markReady(gs...)
	return err
}

func (g *group) wake(s gen.StreamID) {
	if !g.streams[s].inWork {
		g.streams[s].inWork = true
		g.work = append(g.work, s)
	}
}

// run moves stream heads until nothing can move, in rounds. In a round each
// ready group moves its streams as far as it can on its own, in parallel
// with the others; a collective couples groups only through atomic
// counters, so a group that completes a collective's starts leaves the
// other members' groups a wake-up for the next round. The fixpoint does not
// depend on the order, so neither do the results.
func (e *Engine) run() error {
	for len(e.ready) > 0 {
		e.round, e.ready = e.ready, e.round[:0]
		e.touch(e.round)
		for _, gi := range e.round {
			e.gs[gi].ready = false
		}
		_ = e.each(e.round, opAdvance)
		// Between rounds, one goroutine: errors (the lowest rank's, so the
		// message depends neither on timing nor on grouping), wake-ups, recycling.
		var err error
		errLow := int64(math.MaxInt64)
		for _, gi := range e.round {
			g := e.gs[gi]
			if g.err != nil && e.part.Lowest(gi) < errLow {
				err, errLow = g.err, e.part.Lowest(gi)
			}
			g.err = nil
			for _, c := range g.wakeColls {
				for _, m := range e.colls.MembersOf(c) {
					if m.Group != gi {
						mg := e.gs[m.Group]
						if st := mg.tasks.Stream[m.Task]; st >= 0 {
							e.wake(m.Group, st)
						}
					}
				}
			}
			g.wakeColls = g.wakeColls[:0]
		}
		for _, gi := range e.round {
			g := e.gs[gi]
			for _, c := range g.doneColls {
				e.colls.Free(c)
			}
			g.doneColls = g.doneColls[:0]
		}
		if err != nil {
			for _, gi := range e.ready {
				e.gs[gi].ready = false
				e.gs[gi].work = e.gs[gi].work[:0]
			}
			e.ready = e.ready[:0]
			return err
		}
	}
	return nil
}

// advanceGroup moves group gi's woken streams. It touches only the group's
// own tables and, atomically, its tasks' collectives.
func (e *Engine) advanceGroup(gi groups.GroupID) {
	g := e.gs[gi]
	for len(g.work) > 0 {
		s := g.work[len(g.work)-1]
		g.work = g.work[:len(g.work)-1]
		g.streams[s].inWork = false
		if err := e.advance(gi, g, s); err != nil {
			g.err = err
			for _, s := range g.work {
				g.streams[s].inWork = false
			}
			g.work = g.work[:0]
			return
		}
	}
}

// advance moves the head of stream s as far as it can go.
func (e *Engine) advance(gi groups.GroupID, g *group, s gen.StreamID) error {
	tk := &g.tasks
	for {
		st := &g.streams[s]
		if st.queue.Len() == 0 {
			return nil
		}
		t := st.queue.Front()
		if tk.State[t] == gen.TaskStatePending {
			// The head's one dependency is the stream's last task, which
			// has executed: it is READY and at once EXECUTING.
			if st.last >= 0 {
				tk.StartNs[t] = max(tk.StartNs[t], tk.EndNs[st.last])
			}
			tk.State[t] = gen.TaskStateExecuting
			start := tk.StartNs[t]
			off := tk.IOOff[t] + int64(tk.NIn[t])
			for i := int64(0); i < int64(tk.NOut[t]); i++ {
				if err := e.firstUse(g, st.io.At(off+i), start, s); err != nil {
					return err
				}
			}
			if c := tk.Coll[t]; c >= 0 && e.colls.Start(c, start) {
				// The last member to start: peers waiting in this group
				// move now, those in other groups next round.
				g.wakeColls = append(g.wakeColls, c)
				for _, m := range e.colls.MembersOf(c) {
					if m.Group == gi && m.Task != t {
						g.wake(tk.Stream[m.Task])
					}
				}
			}
		}
		if c := tk.Coll[t]; c >= 0 && !e.colls.Started(c) {
			return nil // a peer has not started yet
		}
		if w := tk.Wait[t]; w >= 0 && tk.State[w] != gen.TaskStateExecuted {
			// Woken when w executes: t joins w's list of waiters once.
			if tk.Flags[t]&gen.TaskFlagsListed == 0 {
				tk.Flags[t] |= gen.TaskFlagsListed
				tk.NextWaiter[t] = tk.Waiters[w]
				tk.Waiters[w] = t
			}
			return nil
		}
		if err := e.finish(g, s, t); err != nil {
			return err
		}
	}
}

// finish executes the head task t of stream s.
func (e *Engine) finish(g *group, s gen.StreamID, t gen.TaskID) error {
	tk := &g.tasks
	st := &g.streams[s]
	start, end := tk.StartNs[t], int64(0)
	c, w := tk.Coll[t], tk.Wait[t]
	rt := tk.RuntimeNs[t]
	if c >= 0 {
		ms := e.colls.MaxStart(c)
		if ms > math.MaxInt64-rt {
			return e.timeOverflow(g, s, t, ms)
		}
		end = ms + rt
	}
	if w >= 0 {
		end = max(end, tk.EndNs[w])
	}
	if tk.Flags[t]&gen.TaskFlagsView != 0 {
		end = start
	} else {
		if start > math.MaxInt64-rt {
			return e.timeOverflow(g, s, t, start)
		}
		end = max(end, start+rt)
	}
	tk.EndNs[t] = end
	tk.State[t] = gen.TaskStateExecuted
	st.queue.Pop(1)
	old := st.last
	st.last = t
	tk.Holds[t]++
	if old >= 0 {
		g.release(old)
	}

	n := int(tk.NIn[t] + tk.NOut[t])
	if tk.Flags[t]&gen.TaskFlagsEvent != 0 {
		if b := tk.Borrow[t]; b >= 0 {
			if err := e.returnAtEvent(g, s, b, end); err != nil {
				return err
			}
		}
	} else {
		off := tk.IOOff[t]
		for i := 0; i < n; i++ {
			if err := e.unref(g, st.io.At(off+int64(i)), end); err != nil {
				return err
			}
		}
	}
	st.io.Pop(n)
	if end > start {
		g.evMaxNs = max(g.evMaxNs, end)
		if r := e.pass.rec; r != nil {
			r.noteEvent(end)
		}
		if e.opt.KeepEvents {
			st.evStart = append(st.evStart, start)
			st.evEnd = append(st.evEnd, end)
			st.evName = append(st.evName, tk.Name[t])
			st.evCmd = append(st.evCmd, tk.Command[t])
		}
	}
	st.nowNs = end
	if c >= 0 {
		tk.Coll[t] = -1
		if e.colls.Done(c) {
			g.doneColls = append(g.doneColls, c)
		}
	}
	if w >= 0 {
		tk.Wait[t] = -1
		g.release(w)
	}
	// Wake the streams whose head waits for t: the events listed on t (a
	// list rather than a scan of every stream, which would cost streams x
	// tasks).
	for ev := tk.Waiters[t]; ev >= 0; ev = tk.NextWaiter[ev] {
		if o := tk.Stream[ev]; o >= 0 && o != s {
			g.wake(o)
		}
	}
	tk.Waiters[t] = -1
	return nil
}

// timeOverflow reports a task whose end, startNs plus its runtime, does
// not fit in an int64.
func (e *Engine) timeOverflow(g *group, s gen.StreamID, t gen.TaskID, startNs int64) error {
	return fmt.Errorf("%w: task %q (line %d) on stream %q starting at %d ns ends %d ns later (its runtime, as the cost model prices it), past the largest time (%d ns)",
		ErrOverflow, e.names.Name(g.tasks.Name[t]), g.tasks.Line[t], e.streamName(g, s), startNs, g.tasks.RuntimeNs[t], int64(math.MaxInt64))
}

// returnAtEvent handles a borrow's create event executing on stream s: if s
// holds the lent tensor, the borrow's reference on it goes.
func (e *Engine) returnAtEvent(g *group, s gen.StreamID, b gen.BorrowRow, endNs int64) error {
	br := &g.borrows[b]
	row := g.rowOf(br.srcIdx, s)
	if row < 0 {
		return nil
	}
	if !br.holdsSrc || row != br.srcRow {
		return fmt.Errorf("%w: lent tensor %d returned twice", ErrBorrow, br.src)
	}
	br.holdsSrc = false
	return e.unref(g, row, endNs)
}

// release drops one hold on task t and recycles its row when nothing can
// reach it any more.
func (g *group) release(t gen.TaskID) {
	tk := &g.tasks
	tk.Holds[t]--
	if tk.Holds[t] > 0 {
		return
	}
	if tk.State[t] != gen.TaskStateExecuted {
		if tk.Flags[t]&gen.TaskFlagsQueued != 0 {
			return // still queued: the stream will finish it
		}
		if w := tk.Wait[t]; w >= 0 { // an event that was never queued
			tk.Wait[t] = -1
			g.release(w)
		}
	}
	tk.Free(t)
}

// split copies group from's state into the new group to: every table is
// copied wholesale (ids are local to a group, so nothing is renumbered),
// and the copies of tasks still in a collective join it.
func (e *Engine) split(from, to groups.GroupID) error {
	if int(to) != len(e.gs) {
		return fmt.Errorf("internal: split into group %d, want %d", to, len(e.gs))
	}
	// What the group carries undefined is defined first: both groups
	// hold it after the split.
	e.defineGroup(from)
	src := e.gs[from]
	dst := group{
		tasks:      src.tasks.Clone(),
		tensors:    src.tensors.Clone(),
		storages:   src.storages.Clone(),
		streams:    make([]stream, len(src.streams)),
		borrows:    slices.Clone(src.borrows),
		freeBor:    slices.Clone(src.freeBor),
		active:     src.active,
		evMaxNs:    src.evMaxNs,
		tasksMade:  src.tasksMade,
		memBase:    src.memBase,
		memPeak:    src.memPeak,
		finalBase:  src.finalBase,
		finalPeak:  src.finalPeak,
		allocBytes: src.allocBytes,
	}
	at, pool := clonePages(&src.streamAt, &src.tensorAt, &src.storageAt, &src.borrowAt)
	dst.streamAt, dst.tensorAt, dst.storageAt, dst.borrowAt, dst.pages = at[0], at[1], at[2], at[3], pool
	for i := range src.streams {
		s := &src.streams[i]
		dst.streams[i] = stream{
			ref: s.ref, name: s.name, waitFor: s.waitFor, nowNs: s.nowNs, last: s.last,
			queue: s.queue.Clone(), io: s.io.Clone(),
			usage: s.usage, mem: s.mem.clone(), sorted: s.sorted, base: s.base, final: s.final,
			evStart: slices.Clone(s.evStart), evEnd: slices.Clone(s.evEnd),
			evName: slices.Clone(s.evName), evCmd: slices.Clone(s.evCmd),
		}
	}
	e.gs = append(e.gs, &dst)
	for i := range dst.borrows {
		if b := &dst.borrows[i]; b.live {
			e.borrowHeld(b.idx, 1)
		}
	}
	tt := &e.gs[to].tensors
	for r, f := range tt.Flags {
		if f != tensorFreed {
			e.tensorRows[tt.Idx[r]]++
		}
	}
	tk := &e.gs[to].tasks
	for t := range tk.Coll {
		if c := tk.Coll[t]; c >= 0 && tk.State[t] != gen.TaskStateExecuted {
			e.colls.Join(c, Member{Group: to, Task: gen.TaskID(t)}, tk.State[t] < gen.TaskStateExecuting, true)
		}
	}
	return nil
}
