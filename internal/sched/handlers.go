package sched

import (
	"fmt"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/jsonl"
	"github.com/fastsim/fastsim/internal/soa"
)

// The Engine is the generated handler interface: gen.Dispatch calls one of
// these per command, after the controller's part is done.
var _ gen.Handler = (*Engine)(nil)

// CreateStream creates the stream on every receiving worker.
func (e *Engine) CreateStream(m *gen.CreateStream) error {
	name := e.names.ID(m.Result.Name)
	wait := e.names.ID("waiting for " + m.Result.Name)
	for _, w := range e.ranks {
		if e.streamOf(w, m.Result.Ref) >= 0 {
			return fmt.Errorf("%w: stream %d (%q) on worker %d", ErrStreamExists, m.Result.Ref, m.Result.Name, w)
		}
		e.newStream(w, m.Result.Ref, name, wait)
	}
	return nil
}

// CallFunction queues the function on its stream of every receiving worker.
func (e *Engine) CallFunction(m *gen.CallFunction) error {
	e.inputs = appendUnique(e.inputs[:0], m.Args.Leaves)
	e.outs = appendUnique(e.outs[:0], m.Result.Leaves)
	e.outs = appendUnique(e.outs, m.Mutates)
	name := e.fnName(m.Function)
	for _, w := range e.ranks {
		if _, err := e.addTask(w, m.Stream.Ref, name, e.opt.Costs.CallFunctionNs, e.inputs, e.outs, -1); err != nil {
			return err
		}
	}
	return nil
}

// Reduce queues one collective across every receiving worker.
func (e *Engine) Reduce(m *gen.Reduce) error {
	var name string
	switch {
	case m.Reduction == "stack" && m.Scatter:
		name = "all_to_all"
	case m.Reduction == "stack":
		name = "all_gather"
	case m.Scatter:
		name = "all_reduce" // the reference's labels, kept as they are
	default:
		name = "reduce_scatter"
	}
	id := e.names.ID(name)
	e.inputs = append(e.inputs[:0], m.LocalTensor)
	e.outs = append(e.outs[:0], m.Result)
	c := e.colls.Alloc()
	for _, w := range e.ranks {
		t, err := e.addTask(w, m.Stream.Ref, id, e.opt.Costs.ReduceNs, e.inputs, e.outs, c)
		if err != nil {
			return err
		}
		e.colls.Add(c, t)
	}
	if e.colls.Len[c] == 0 {
		e.colls.Live[c] = 1 // an empty collective: recycle the row at once
		e.colls.Done(c)
	}
	return nil
}

// SendTensor queues a local copy, or pairs of send and receive tasks
// between the ranks of from_ranks and to_ranks, position by position.
func (e *Engine) SendTensor(m *gen.SendTensor) error {
	if m.FromStream.Ref != m.ToStream.Ref {
		return fmt.Errorf("%w: SendTensor from stream %d to stream %d (both must be the same)", ErrStreams, m.FromStream.Ref, m.ToStream.Ref)
	}
	stream := m.FromStream.Ref
	send := e.names.ID("SendTensor")
	if m.FromRanks.Equal(&m.ToRanks) {
		e.epoch++ // a fresh epoch: from_ranks is deduplicated on its own
		ws, err := e.appendRanks(e.ranks[:0], &m.FromRanks, true)
		e.ranks = ws
		if err != nil {
			return err
		}
		e.inputs = append(e.inputs[:0], m.Tensor)
		e.outs = append(e.outs[:0], m.Result)
		for _, w := range e.ranks {
			if _, err := e.addTask(w, stream, send, e.opt.Costs.SendLocalNs, e.inputs, e.outs, -1); err != nil {
				return err
			}
		}
		return nil
	}
	from, err := e.appendRanks(e.ranks[:0], &m.FromRanks, false)
	if err != nil {
		return err
	}
	n := len(from)
	all, err := e.appendRanks(from, &m.ToRanks, false)
	e.ranks = all
	if err != nil {
		return err
	}
	if len(all)-n != n {
		return fmt.Errorf("%w: SendTensor from %d ranks to %d ranks", ErrRankCount, n, len(all)-n)
	}
	recv := e.names.ID("RecvTensor")
	// Sends first, then receives, as the reference queues them: the order
	// matters when a rank is on both sides. Each pair is then one
	// collective (a collective's members are added together).
	tasks := e.pairs[:0]
	e.inputs = append(e.inputs[:0], m.Tensor)
	for i := 0; i < n; i++ {
		t, err := e.addTask(all[i], stream, send, e.opt.Costs.SendRemoteNs, e.inputs, nil, -1)
		if err != nil {
			return err
		}
		tasks = append(tasks, t)
	}
	e.outs = append(e.outs[:0], m.Result)
	for i := 0; i < n; i++ {
		t, err := e.addTask(all[n+i], stream, recv, e.opt.Costs.SendRemoteNs, nil, e.outs, -1)
		if err != nil {
			return err
		}
		tasks = append(tasks, t)
	}
	for i := 0; i < n; i++ {
		c := e.colls.Alloc()
		for _, t := range [2]soa.TaskID{tasks[i], tasks[n+i]} {
			e.tasks.Coll[t] = c
			e.colls.Add(c, t)
		}
	}
	e.pairs = tasks
	return nil
}

// BorrowCreate lends a tensor from one stream to another on every
// receiving worker.
func (e *Engine) BorrowCreate(m *gen.BorrowCreate) error {
	e.markBorrowed(m.Result.Idx)
	for _, w := range e.ranks {
		if err := e.borrowCreate(w, m); err != nil {
			return err
		}
	}
	return nil
}

func (e *Engine) borrowCreate(w int32, m *gen.BorrowCreate) error {
	wk := &e.workers[w]
	if _, dup := wk.borrows[m.Borrow]; dup {
		return fmt.Errorf("%w: borrow %d created twice on worker %d", ErrBorrow, m.Borrow, w)
	}
	from := e.streamOf(w, m.FromStream.Ref)
	to := e.streamOf(w, m.ToStream.Ref)
	if from < 0 || to < 0 {
		return e.noStream(w, m.FromStream.Ref, m.ToStream.Ref)
	}
	recorded := e.newest(from)
	if recorded < 0 {
		return fmt.Errorf("%w: borrow %d: stream %q of worker %d has no task yet", ErrNoTaskToWaitFor, m.Borrow, e.streamName(from), w)
	}
	src, ok := e.streams[from].tensors[m.Tensor.ID]
	if !ok {
		return fmt.Errorf("%w: borrow %d lends tensor %d, which is not on stream %q of worker %d", ErrMissingTensor, m.Borrow, m.Tensor.ID, e.streamName(from), w)
	}
	ev := e.newEvent(from, recorded)
	b := e.allocBorrow()
	e.tasks.Borrow[ev] = b
	e.tasks.Holds[ev]++ // held by the borrow until it is dropped
	e.borrows[b] = borrow{src: m.Tensor.ID, srcRow: src, from: from, to: to, create: ev, last: -1, state: borrowCreated, holdsSrc: true}
	if wk.borrows == nil {
		wk.borrows = make(map[int64]int32)
	}
	wk.borrows[m.Borrow] = b
	e.tensors.Refs[src]++
	// The borrowed tensor appears on the destination stream already in
	// use; its storage is never charged.
	dst := e.putTensor(to, &m.Result)
	if e.tensors.Refs[dst] > 0 {
		return fmt.Errorf("%w: borrow %d result tensor %d", ErrTensorInUse, m.Borrow, m.Result.ID)
	}
	return e.firstUse(dst, -1, to)
}

// BorrowFirstUse makes the destination stream wait for the lent tensor.
func (e *Engine) BorrowFirstUse(m *gen.BorrowFirstUse) error {
	for _, w := range e.ranks {
		b, err := e.borrowOf(w, m.Borrow)
		if err != nil {
			return err
		}
		br := &e.borrows[b]
		if br.state != borrowCreated {
			return fmt.Errorf("%w: borrow %d first used twice or after its last use on worker %d", ErrBorrow, m.Borrow, w)
		}
		br.state = borrowFirstUsed
		e.workers[w].active = true
		e.enqueue(br.to, br.create)
	}
	return nil
}

// BorrowLastUse records the destination stream's newest task as the one the
// source stream must wait for when the borrow is dropped.
func (e *Engine) BorrowLastUse(m *gen.BorrowLastUse) error {
	for _, w := range e.ranks {
		b, err := e.borrowOf(w, m.Borrow)
		if err != nil {
			return err
		}
		br := &e.borrows[b]
		if br.state == borrowLastUsed {
			return fmt.Errorf("%w: borrow %d last used twice on worker %d", ErrBorrow, m.Borrow, w)
		}
		recorded := e.newest(br.to)
		if recorded < 0 {
			return fmt.Errorf("%w: borrow %d: stream %q of worker %d has no task yet", ErrNoTaskToWaitFor, m.Borrow, e.streamName(br.to), w)
		}
		ev := e.newEvent(br.to, recorded)
		e.tasks.Holds[ev]++
		br.last = ev
		br.state = borrowLastUsed
	}
	return nil
}

// BorrowDrop makes the source stream wait for the last use, then returns the
// lent tensor.
func (e *Engine) BorrowDrop(m *gen.BorrowDrop) error {
	for _, w := range e.ranks {
		b, err := e.borrowOf(w, m.Borrow)
		if err != nil {
			return err
		}
		br := e.borrows[b]
		if br.state != borrowLastUsed {
			return fmt.Errorf("%w: borrow %d dropped before its last use on worker %d", ErrBorrow, m.Borrow, w)
		}
		e.workers[w].active = true
		e.enqueue(br.from, br.last)
		e.release(br.last)
		// The create event no longer returns anything once the borrow is
		// gone (it may still be queued behind a collective).
		e.tasks.Borrow[br.create] = -1
		e.release(br.create)
		delete(e.workers[w].borrows, m.Borrow)
		e.freeBorrow(b)
		s := &e.streams[br.from]
		row, ok := s.tensors[br.src]
		if !ok || row != br.srcRow || !br.holdsSrc {
			return fmt.Errorf("%w: borrow %d: lent tensor %d is no longer on stream %q of worker %d", ErrBorrow, m.Borrow, br.src, e.streamName(br.from), w)
		}
		if err := e.unref(row, s.nowNs); err != nil {
			return err
		}
	}
	return nil
}

// DeleteRefs deletes tensors: CPU ones at once, stream ones once unused.
func (e *Engine) DeleteRefs(m *gen.DeleteRefs) error {
	for _, w := range e.ranks {
		wk := &e.workers[w]
		for _, id := range m.Refs {
			if row, ok := wk.cpu[id]; ok {
				if err := e.deleteTensor(row, e.nowNs); err != nil {
					return err
				}
			}
		}
		for _, s := range wk.streams {
			st := &e.streams[s]
			for _, id := range m.Refs {
				if row, ok := st.tensors[id]; ok {
					if err := e.deleteTensor(row, max(st.nowNs, e.nowNs)); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// PipeRecv gives every receiving worker the received CPU tensors.
func (e *Engine) PipeRecv(m *gen.PipeRecv) error {
	for i := range m.Result.Leaves {
		if t := &m.Result.Leaves[i]; !t.CPU {
			return fmt.Errorf("%w: PipeRecv result tensor %d is on the GPU; only CPU tensors can be received from a pipe", ErrNotCPU, t.ID)
		}
	}
	for _, w := range e.ranks {
		for i := range m.Result.Leaves {
			if err := e.putCPU(w, &m.Result.Leaves[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// CommandGroup processes each sub-command in order, at the current time.
func (e *Engine) CommandGroup(m *gen.CommandGroup) error {
	// Sub-commands overwrite the receiving set's scratch space only for
	// SendTensor; keep a copy so every sub-command sees the group's ranks.
	ranks := append([]int32(nil), e.ranks...)
	for i := range m.Commands {
		e.ranks = append(e.ranks[:0], ranks...)
		if err := e.process(e.nowNs, &m.Commands[i]); err != nil {
			return err
		}
	}
	return nil
}

// Accepted messages are not simulated.
func (e *Engine) Accepted(gen.MsgKind) error { return nil }

// Unknown message types are counted and skipped.
func (e *Engine) Unknown(typeName string) error {
	e.warnings++
	if e.firstWarn == "" {
		e.firstWarn = fmt.Sprintf("line %d: unknown message type %q skipped", e.line, typeName)
	}
	return nil
}

// appendUnique appends the tensors of src whose ids are not yet in dst.
func appendUnique(dst, src []jsonl.Tensor) []jsonl.Tensor {
next:
	for i := range src {
		for j := range dst {
			if dst[j].ID == src[i].ID {
				continue next
			}
		}
		dst = append(dst, src[i])
	}
	return dst
}

func (e *Engine) markBorrowed(idx int32) {
	for int(idx) >= len(e.borrowed) {
		e.borrowed = append(e.borrowed, false)
	}
	e.borrowed[idx] = true
}

func (e *Engine) isBorrowed(idx int32) bool {
	return int(idx) < len(e.borrowed) && e.borrowed[idx]
}

func (e *Engine) borrowOf(w int32, id int64) (int32, error) {
	b, ok := e.workers[w].borrows[id]
	if !ok {
		return -1, fmt.Errorf("%w: unknown borrow %d on worker %d", ErrBorrow, id, w)
	}
	return b, nil
}

func (e *Engine) allocBorrow() int32 {
	if n := len(e.freeBor); n > 0 {
		b := e.freeBor[n-1]
		e.freeBor = e.freeBor[:n-1]
		return b
	}
	e.borrows = append(e.borrows, borrow{})
	return int32(len(e.borrows) - 1)
}

func (e *Engine) freeBorrow(b int32) {
	e.borrows[b] = borrow{}
	e.freeBor = append(e.freeBor, b)
}

func (e *Engine) noStream(w int32, refs ...int64) error {
	for _, r := range refs {
		if e.streamOf(w, r) < 0 {
			return fmt.Errorf("%w: stream %d on worker %d (create it with CreateStream first)", ErrUnknownStream, r, w)
		}
	}
	return nil
}
