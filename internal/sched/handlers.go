package sched

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/groups"
	"github.com/fastsim/fastsim/internal/values"
)

// The Engine is the generated handler interface: gen.Dispatch calls one of
// these per command, after the controller's part is done. Each resolves the
// groups that receive the command (splitting groups it covers in part) and
// applies the message to each group once.
var _ gen.Handler = (*Engine)(nil)

// CreateStream creates the stream on every receiving worker.
func (e *Engine) CreateStream(m *gen.CreateStream) error {
	gs, err := e.resolve()
	if err != nil {
		return err
	}
	for _, gi := range gs {
		if e.gs[gi].streamOf(m.Result.Idx) >= 0 {
			return fmt.Errorf("%w: stream %d (%q) on %s", ErrStreamExists, m.Result.Ref, m.Result.Name, e.who(gi))
		}
	}
	if e.opt.FixedStreams && e.tasked && len(gs) > 0 {
		return fmt.Errorf("%w: stream %d (%q) on %s", ErrStreamsFixed, m.Result.Ref, m.Result.Name, e.who(gs[0]))
	}
	name := e.names.ID(m.Result.Name)
	wait := e.names.ID("waiting for " + m.Result.Name)
	for _, gi := range gs {
		g := e.gs[gi]
		e.unsettle(g)
		g.newStream(m.Result, name, wait)
	}
	return nil
}

// CallFunction queues the function on its stream of every receiving worker.
func (e *Engine) CallFunction(m *gen.CallFunction) error {
	gs, err := e.resolve()
	if err != nil {
		return err
	}
	// The message's own lists serve when they name no tensor twice (the
	// usual case), without copying each 88-byte tensor into a list of
	// distinct ones.
	ins := m.Args.Leaves
	if repeats(ins) {
		e.inputs = appendUnique(e.inputs[:0], ins)
		ins = e.inputs
	}
	outs := m.Result.Leaves
	if len(m.Mutates) > 0 || repeats(outs) {
		e.outs = appendUnique(e.outs[:0], m.Result.Leaves)
		e.outs = appendUnique(e.outs, m.Mutates)
		outs = e.outs
	}
	name := e.fnName(m)
	runtime := e.opt.Model.CallRuntimeNs(m, e.names.Name(name))
	return e.addTasks(gs, m.Stream, name, runtime, ins, outs, -1, nil)
}

// Reduce queues one collective across every receiving worker: one task per
// group, since a group's ranks start together.
func (e *Engine) Reduce(m *gen.Reduce) error {
	gs, err := e.resolve()
	if err != nil {
		return err
	}
	return e.reduceOn(gs, m, e.opt.Model.ReduceRuntimeNs(m, e.comm(gs, e.cur, nil, false)))
}

// reduceOn queues Reduce m on groups gs as one collective with the given
// runtime.
func (e *Engine) reduceOn(gs []groups.GroupID, m *gen.Reduce, runtime int64) error {
	id := e.names.ID(reduceLabel(ReduceCollective(m)))
	e.inputs = append(e.inputs[:0], m.LocalTensor)
	e.outs = append(e.outs[:0], m.Result)
	c := e.colls.Alloc()
	tasks := slices.Grow(e.pairs[:0], len(gs))[:len(gs)]
	if err := e.addTasks(gs, m.Stream, id, runtime, e.inputs, e.outs, c, tasks); err != nil {
		e.colls.Free(c)
		return err
	}
	// Members join after every task exists: none has started yet (they
	// start in run), so the collective counts all of them as pending.
	for i, gi := range gs {
		e.colls.Add(c, Member{Group: gi, Task: tasks[i]})
	}
	e.pairs = tasks
	if len(gs) == 0 {
		e.colls.Free(c)
	}
	return nil
}

// SendTensor queues a local copy on every rank of from_ranks when it equals
// to_ranks, else pairs of send and receive tasks between the ranks of
// from_ranks and to_ranks, position by position. The record's own ranks do
// not matter, as in the reference.
func (e *Engine) SendTensor(m *gen.SendTensor) error {
	if m.FromStream.Ref != m.ToStream.Ref {
		return fmt.Errorf("%w: SendTensor from stream %d to stream %d (both must be the same)", ErrStreams, m.FromStream.Ref, m.ToStream.Ref)
	}
	stream := m.FromStream
	send := e.kindName(gen.MsgSendTensor)
	// A pipeline sends between the same neighbours again and again: a send
	// between ranks paired before in this epoch was checked then.
	if senders, receivers, ok := e.part.KnownPairs(&m.FromRanks, &m.ToRanks); ok {
		return e.sendPairs(m, senders, receivers, stream, send)
	}
	// A point-to-point send pairs distinct ranks: checked on both sides,
	// before either path, so grouped and ungrouped refuse alike.
	for _, side := range [2]struct {
		name string
		s    *values.Slice
	}{{"from_ranks", &m.FromRanks}, {"to_ranks", &m.ToRanks}} {
		if err := e.part.CheckDistinct(side.s); err != nil {
			if errors.Is(err, groups.ErrRepeat) {
				return fmt.Errorf("%w: %s: %v", ErrRankRepeat, side.name, err)
			}
			return fmt.Errorf("%w: %s: %v", values.ErrRank, side.name, err)
		}
	}
	if m.FromRanks.Equal(&m.ToRanks) {
		gs, err := e.part.Resolve([]values.Slice{m.FromRanks}, e.splitF)
		if err != nil {
			return fmt.Errorf("%w: from_ranks: %v", values.ErrRank, err)
		}
		e.recv = append(e.recv[:0], gs...)
		e.touch(gs)
		e.inputs = append(e.inputs[:0], m.Tensor)
		e.outs = append(e.outs[:0], m.Result)
		runtime := e.opt.Model.SendRuntimeNs(m, e.comm(e.recv, nil, &m.FromRanks, true))
		return e.addTasks(e.recv, stream, send, runtime, e.inputs, e.outs, -1, nil)
	}
	senders, receivers, err := e.part.Pairs(&m.FromRanks, &m.ToRanks, e.splitF)
	if err != nil {
		if m.FromRanks.Len() != m.ToRanks.Len() {
			return fmt.Errorf("%w: SendTensor from %d ranks to %d ranks", ErrRankCount, m.FromRanks.Len(), m.ToRanks.Len())
		}
		return fmt.Errorf("%w: %v", values.ErrRank, err)
	}
	return e.sendPairs(m, senders, receivers, stream, send)
}

// sendPairs queues the send and receive tasks of SendTensor m between the
// groups paired by position in senders and receivers.
func (e *Engine) sendPairs(m *gen.SendTensor, senders, receivers []groups.GroupID, stream values.Stream, send gen.NameID) error {
	e.touch(senders)
	e.touch(receivers)
	if e.recvName == 0 {
		e.recvName = e.names.ID("RecvTensor") + 1
	}
	recv := e.recvName - 1
	cm := e.comm(nil, []values.Slice{m.FromRanks, m.ToRanks}, nil, false)
	cm.Ranks = 2
	runtime := e.opt.Model.SendRuntimeNs(m, cm)
	// Sends first, then receives, as the reference queues them: the order
	// matters when a rank is on both sides. Each pair is one collective.
	// Each side is visited in order of lowest rank, so the first failure is
	// on the lowest rank that fails, grouped or not.
	n := len(senders)
	tasks := slices.Grow(e.pairs[:0], 2*n)[:2*n]
	e.tasked = true // Options.FixedStreams
	e.inputs = append(e.inputs[:0], m.Tensor)
	for _, i := range e.byRank(senders) {
		t, err := e.addTask(senders[i], stream, send, runtime, e.inputs, nil, -1)
		if err != nil {
			return err
		}
		tasks[i] = t
	}
	e.outs = append(e.outs[:0], m.Result)
	for _, i := range e.byRank(receivers) {
		t, err := e.addTask(receivers[i], stream, recv, runtime, nil, e.outs, -1)
		if err != nil {
			return err
		}
		tasks[n+int(i)] = t
	}
	for i := 0; i < n; i++ {
		c := e.colls.Alloc()
		for k, gi := range [2]groups.GroupID{senders[i], receivers[i]} {
			t := tasks[i+k*n]
			e.gs[gi].tasks.Coll[t] = c
			e.colls.Add(c, Member{Group: gi, Task: t})
		}
	}
	e.pairs = tasks
	e.markReady(senders...)
	e.markReady(receivers...)
	return nil
}

// BorrowCreate lends a tensor from one stream to another on every
// receiving worker.
func (e *Engine) BorrowCreate(m *gen.BorrowCreate) error {
	gs, err := e.resolve()
	if err != nil {
		return err
	}
	e.markBorrowed(m.Result.Idx)
	for _, gi := range gs {
		if err := e.borrowCreate(gi, m); err != nil {
			return err
		}
	}
	return nil
}

func (e *Engine) borrowCreate(gi groups.GroupID, m *gen.BorrowCreate) error {
	g := e.gs[gi]
	if g.borrowAt.get(m.BorrowIdx) != 0 {
		return fmt.Errorf("%w: borrow %d created twice on %s", ErrBorrow, m.Borrow, e.who(gi))
	}
	from := g.streamOf(m.FromStream.Idx)
	to := g.streamOf(m.ToStream.Idx)
	if from < 0 || to < 0 {
		return e.noStream(gi, m.FromStream, m.ToStream)
	}
	recorded := g.newest(from)
	if recorded < 0 {
		return fmt.Errorf("%w: borrow %d: stream %q of %s has no task yet", ErrNoTaskToWaitFor, m.Borrow, e.streamName(g, from), e.who(gi))
	}
	src := g.rowOf(m.Tensor.Idx, from)
	if src < 0 {
		return fmt.Errorf("%w: borrow %d lends tensor %d, which is not on stream %q of %s", ErrMissingTensor, m.Borrow, m.Tensor.ID, e.streamName(g, from), e.who(gi))
	}
	ev := e.newEvent(g, from, recorded)
	b := g.allocBorrow()
	g.tasks.Borrow[ev] = b
	g.tasks.Holds[ev]++ // held by the borrow until it is dropped
	g.borrows[b] = borrow{src: m.Tensor.ID, srcIdx: m.Tensor.Idx, idx: m.BorrowIdx, live: true, srcRow: src, from: from, to: to, create: ev, last: -1, state: borrowCreated, holdsSrc: true}
	g.borrowAt.set(&g.pages, m.BorrowIdx, int32(b)+1)
	e.borrowHeld(m.BorrowIdx, 1)
	g.tensors.Refs[src]++
	// The borrowed tensor appears on the destination stream already in
	// use; its storage is never charged.
	dst := e.putTensor(g, to, &m.Result)
	if g.tensors.Refs[dst] > 0 {
		return fmt.Errorf("%w: borrow %d result tensor %d", ErrTensorInUse, m.Borrow, m.Result.ID)
	}
	return e.firstUse(g, dst, -1, to)
}

// BorrowFirstUse makes the destination stream wait for the lent tensor.
func (e *Engine) BorrowFirstUse(m *gen.BorrowFirstUse) error {
	e.tasked = true // it queues the loan's event (Options.FixedStreams)
	return e.eachBorrow(m.BorrowIdx, m.Borrow, func(gi groups.GroupID, g *group, b gen.BorrowRow) error {
		br := &g.borrows[b]
		if br.state != borrowCreated {
			return fmt.Errorf("%w: borrow %d first used twice or after its last use on %s", ErrBorrow, m.Borrow, e.who(gi))
		}
		br.state = borrowFirstUsed
		g.active = true
		e.enqueue(gi, br.to, br.create)
		return nil
	})
}

// BorrowLastUse records the destination stream's newest task as the one the
// source stream must wait for when the borrow is dropped.
func (e *Engine) BorrowLastUse(m *gen.BorrowLastUse) error {
	return e.eachBorrow(m.BorrowIdx, m.Borrow, func(gi groups.GroupID, g *group, b gen.BorrowRow) error {
		br := &g.borrows[b]
		if br.state == borrowLastUsed {
			return fmt.Errorf("%w: borrow %d last used twice on %s", ErrBorrow, m.Borrow, e.who(gi))
		}
		recorded := g.newest(br.to)
		if recorded < 0 {
			return fmt.Errorf("%w: borrow %d: stream %q of %s has no task yet", ErrNoTaskToWaitFor, m.Borrow, e.streamName(g, br.to), e.who(gi))
		}
		ev := e.newEvent(g, br.to, recorded)
		g.tasks.Holds[ev]++
		br.last = ev
		br.state = borrowLastUsed
		return nil
	})
}

// eachBorrow applies fn to borrow id (dense index idx) on every receiving
// group (an unknown borrow is an error), then marks the groups ready.
func (e *Engine) eachBorrow(idx int32, id int64, fn func(gi groups.GroupID, g *group, b gen.BorrowRow) error) error {
	gs, err := e.resolve()
	if err != nil {
		return err
	}
	for _, gi := range gs {
		b, err := e.borrowOf(gi, idx, id)
		if err != nil {
			return err
		}
		if err := fn(gi, e.gs[gi], b); err != nil {
			return err
		}
	}
	e.markReady(gs...)
	return nil
}

// BorrowDrop makes the source stream wait for the last use, then returns the
// lent tensor.
func (e *Engine) BorrowDrop(m *gen.BorrowDrop) error {
	e.tasked = true // it queues the return's event (Options.FixedStreams)
	return e.eachBorrow(m.BorrowIdx, m.Borrow, func(gi groups.GroupID, g *group, b gen.BorrowRow) error {
		br := g.borrows[b]
		if br.state != borrowLastUsed {
			return fmt.Errorf("%w: borrow %d dropped before its last use on %s", ErrBorrow, m.Borrow, e.who(gi))
		}
		g.active = true
		e.enqueue(gi, br.from, br.last)
		g.release(br.last)
		// The create event no longer returns anything once the borrow is
		// gone (it may still be queued behind a collective).
		g.tasks.Borrow[br.create] = -1
		g.release(br.create)
		g.borrowAt.set(&g.pages, br.idx, 0)
		e.borrowHeld(br.idx, -1)
		g.freeBorrow(b)
		s := &g.streams[br.from]
		row := g.rowOf(br.srcIdx, br.from)
		if row < 0 || row != br.srcRow || !br.holdsSrc {
			return fmt.Errorf("%w: borrow %d: lent tensor %d is no longer on stream %q of %s", ErrBorrow, m.Borrow, br.src, e.streamName(g, br.from), e.who(gi))
		}
		return e.unref(g, row, s.nowNs)
	})
}

// DeleteRefs deletes tensors: CPU ones at once, stream ones once unused.
func (e *Engine) DeleteRefs(m *gen.DeleteRefs) error {
	gs, err := e.resolve()
	if err != nil {
		return err
	}
	// Only once a pass left a unit (never while another goroutine owns
	// the registry: Defer).
	if e.pass.carrying && !e.dfr.on && e.reg != nil && len(m.RefsIdx) == len(m.Refs) {
		if err := e.deleteCarried(m, gs); err != nil {
			return err
		}
	}
	if e.opt.Jobs <= 1 || len(gs) < minParallel {
		// Serial, as each would run it, without the refs' trip through
		// e.batch (see addTasks).
		for i, gi := range gs {
			if i&0xffff == 0xffff && e.opt.Interrupt != nil && e.opt.Interrupt() {
				return ErrStopped
			}
			if err := e.deleteIn(gi, m.RefsIdx); err != nil {
				return err
			}
		}
		return nil
	}
	e.batch = batchArgs{refs: m.RefsIdx}
	err = e.each(gs, opDelete)
	e.batch = batchArgs{}
	return err
}

// deleteIn deletes tensors refs (dense indexes; -1: an unknown id) on
// group gi.
func (e *Engine) deleteIn(gi groups.GroupID, refs []int32) error {
	g := e.gs[gi]
	for _, idx := range refs {
		if row := g.rowOf(idx, cpuOwner); row >= 0 {
			if err := e.deleteTensor(g, row, e.nowNs); err != nil {
				return err
			}
		}
	}
	// Stream by stream, in creation order, and in each the refs in order
	// (the order decides which tensor of a shared storage releases it, and
	// so on which stream). Each tensor's list of rows names the streams
	// holding it, without visiting every stream.
	hits := g.hits[:0]
	tt := &g.tensors
	sorted := true // hits come in k order: sorted unless a stream goes down
	for k, idx := range refs {
		for r := gen.TensorRow(g.tensorAt.get(idx) - 1); r >= 0; r = tt.Next[r] {
			if s := tt.Owner[r]; s != cpuOwner {
				if n := len(hits); n > 0 && hits[n-1].s > s {
					sorted = false
				}
				hits = append(hits, deleteHit{s, int32(k)})
			}
		}
	}
	if !sorted {
		sortHits(hits)
	}
	g.hits = hits
	for _, h := range hits {
		st := &g.streams[h.s]
		if row := g.rowOf(refs[h.k], h.s); row >= 0 {
			if err := e.deleteTensor(g, row, max(st.nowNs, e.nowNs)); err != nil {
				return err
			}
		}
	}
	return nil
}

// sortHits puts hits in (stream, ref) order, which names each hit once: a
// stream holds one row of a tensor, and a ref is one position. A
// DeleteRefs finds a handful, so an insertion sort does; many go to
// slices.SortFunc.
func sortHits(hits []deleteHit) {
	less := func(a, b deleteHit) bool { return a.s < b.s || a.s == b.s && a.k < b.k }
	if len(hits) > 32 {
		slices.SortFunc(hits, func(a, b deleteHit) int {
			if a.s != b.s {
				return int(a.s - b.s)
			}
			return int(a.k - b.k)
		})
		return
	}
	for i := 1; i < len(hits); i++ {
		x := hits[i]
		j := i
		for j > 0 && less(x, hits[j-1]) {
			hits[j] = hits[j-1]
			j--
		}
		hits[j] = x
	}
}

// deleteHit is a tensor a DeleteRefs finds on a stream: stream s holds
// refs[k].
type deleteHit struct {
	s gen.StreamID
	k int32
}

// PipeRecv gives every receiving worker the received CPU tensors.
func (e *Engine) PipeRecv(m *gen.PipeRecv) error {
	for i := range m.Result.Leaves {
		if t := &m.Result.Leaves[i]; !t.CPU {
			return fmt.Errorf("%w: PipeRecv result tensor %d is on the GPU; only CPU tensors can be received from a pipe", ErrNotCPU, t.ID)
		}
	}
	gs, err := e.resolve()
	if err != nil {
		return err
	}
	for _, gi := range gs {
		for i := range m.Result.Leaves {
			if err := e.putCPU(gi, &m.Result.Leaves[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// CommandGroup processes each sub-command in order, fully, at the current
// time and for the group's ranks.
func (e *Engine) CommandGroup(m *gen.CommandGroup) error {
	ranks := e.cur
	// One scratch message per nesting depth, kept between records.
	if e.depth == len(e.subs) {
		e.subs = append(e.subs, new(gen.Msg))
	}
	sub := e.subs[e.depth]
	e.depth++
	defer func() { e.depth-- }()
	for i := 0; i < m.Commands.Len(); i++ {
		if e.opt.Interrupt != nil && e.opt.Interrupt() {
			return ErrStopped
		}
		if m.Commands.Kind(i) == gen.MsgCallFunction {
			if err := e.processCall(e.nowNs, ranks, m.Commands.CallFunctionAt(i)); err != nil {
				return err
			}
			continue
		}
		m.Commands.At(i, sub)
		if err := e.process(e.nowNs, ranks, sub); err != nil {
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

// repeats reports whether ts names a tensor id twice.
func repeats(ts []values.Tensor) bool {
	for i := 1; i < len(ts); i++ {
		for j := range i {
			if ts[j].ID == ts[i].ID {
				return true
			}
		}
	}
	return false
}

// appendUnique appends the tensors of src whose ids are not yet in dst.
func appendUnique(dst, src []values.Tensor) []values.Tensor {
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

func (e *Engine) borrowOf(gi groups.GroupID, idx int32, id int64) (gen.BorrowRow, error) {
	b := gen.BorrowRow(e.gs[gi].borrowAt.get(idx) - 1)
	if b < 0 {
		return -1, fmt.Errorf("%w: unknown borrow %d on %s (never created, or already dropped)", ErrBorrow, id, e.who(gi))
	}
	return b, nil
}

func (g *group) allocBorrow() gen.BorrowRow {
	if n := len(g.freeBor); n > 0 {
		b := g.freeBor[n-1]
		g.freeBor = g.freeBor[:n-1]
		return b
	}
	g.borrows = append(g.borrows, borrow{})
	return gen.BorrowRow(len(g.borrows) - 1)
}

func (g *group) freeBorrow(b gen.BorrowRow) {
	g.borrows[b] = borrow{}
	g.freeBor = append(g.freeBor, b)
}

func (e *Engine) noStream(gi groups.GroupID, ss ...values.Stream) error {
	for _, s := range ss {
		if e.gs[gi].streamOf(s.Idx) < 0 {
			return fmt.Errorf("%w: stream %d on %s (create it with CreateStream first)", ErrUnknownStream, s.Ref, e.who(gi))
		}
	}
	return nil
}

// borrowHeld counts a group that gets (+1) or loses (-1) borrow idx; the
// borrow's index is released after the command if no group has it.
func (e *Engine) borrowHeld(idx int32, d int32) {
	for int(idx) >= len(e.borrowGroups) {
		e.borrowGroups = append(e.borrowGroups, 0)
	}
	e.borrowGroups[idx] += d
	if e.borrowGroups[idx] == 0 {
		e.borGone = append(e.borGone, idx)
	}
}

// byRank returns the positions of gs in order of the groups' lowest ranks.
func (e *Engine) byRank(gs []groups.GroupID) []int32 {
	e.order = e.order[:0]
	for i := range gs {
		e.order = append(e.order, int32(i))
	}
	low := func(i int32) int64 { return e.part.Lowest(gs[i]) }
	if !slices.IsSortedFunc(e.order, func(a, b int32) int { return cmp.Compare(low(a), low(b)) }) {
		slices.SortFunc(e.order, func(a, b int32) int { return cmp.Compare(low(a), low(b)) })
	}
	return e.order
}

// who names group gi for messages by its lowest rank: the rank an
// ungrouped replay fails on first (handlers visit groups in order of lowest
// rank), so grouped and ungrouped replays say the same thing.
func (e *Engine) who(gi groups.GroupID) string {
	return "worker " + strconv.FormatInt(e.part.Lowest(gi), 10)
}

// comm describes a communication to the cost model: the ranks of groups gs
// (or, with gs nil, 2), and whether every rank of the slices (or of one)
// lies on one host.
func (e *Engine) comm(gs []groups.GroupID, ss []values.Slice, one *values.Slice, local bool) Comm {
	c := Comm{Local: local, GPUsPerHost: e.opt.GPUsPerHost, Ranks: 2}
	if gs != nil {
		c.Ranks = 0
		for _, g := range gs {
			c.Ranks += e.part.Size(g)
		}
	}
	lo, hi := int64(-1), int64(-1)
	span := func(s *values.Slice) {
		l, h := s.Bounds()
		if l > h {
			return
		}
		if lo < 0 || l < lo {
			lo = l
		}
		if h > hi {
			hi = h
		}
	}
	for i := range ss {
		span(&ss[i])
	}
	if one != nil {
		span(one)
	}
	c.SameHost = lo < 0 || lo/e.opt.GPUsPerHost == hi/e.opt.GPUsPerHost
	switch {
	case gs != nil && len(ss) > 0:
		c.Hosts, c.MaxPerHost = e.placement(ss)
	case c.SameHost:
		c.Hosts, c.MaxPerHost = 1, c.Ranks
	default:
		c.Hosts, c.MaxPerHost = c.Ranks, 1
	}
	return c
}

// placement counts the hosts the ranks of slices ss occupy and the most
// ranks on one host. Training loops repeat a few rank sets, so results
// are cached by the slices' values.
func (e *Engine) placement(ss []values.Slice) (hosts, maxPerHost int64) {
	// Training loops repeat a few rank sets (a pipeline's receives
	// alternate between its stages): the answer kept at the place a hash
	// of the slices picks is checked first, field by field, before a key
	// is spelled and looked up.
	l := &e.placeMemo[groups.HashSlices(ss)&(placeMemos-1)]
	if l.ok && l.same(ss) {
		return l.out[0], l.out[1]
	}
	hosts, maxPerHost = e.placementOf(ss)
	l.set(ss, [2]int64{hosts, maxPerHost})
	return hosts, maxPerHost
}

// placeMemos is how many of placement's answers are kept (a power of two).
const placeMemos = 256

// lastPlacement is one of placement's answers and owned copies of the
// slices it was for.
type lastPlacement struct {
	ss   []values.Slice
	dims []int64
	out  [2]int64
	ok   bool
}

func (l *lastPlacement) same(ss []values.Slice) bool {
	if len(ss) != len(l.ss) {
		return false
	}
	for i := range ss {
		if !l.ss[i].Equal(&ss[i]) {
			return false
		}
	}
	return true
}

func (l *lastPlacement) set(ss []values.Slice, out [2]int64) {
	l.dims, l.ss = l.dims[:0], l.ss[:0]
	for i := range ss {
		l.dims = append(l.dims, ss[i].Sizes...)
		l.dims = append(l.dims, ss[i].Strides...)
	}
	k := 0
	for i := range ss {
		n, m := len(ss[i].Sizes), len(ss[i].Strides)
		l.ss = append(l.ss, values.Slice{Offset: ss[i].Offset, Sizes: l.dims[k : k+n : k+n], Strides: l.dims[k+n : k+n+m : k+n+m]})
		k += n + m
	}
	l.out, l.ok = out, true
}

// placementOf is placement without the last answer: its cache, else the
// ranks counted.
func (e *Engine) placementOf(ss []values.Slice) (hosts, maxPerHost int64) {
	key := e.placeKey[:0]
	for i := range ss {
		key = strconv.AppendInt(key, ss[i].Offset, 10)
		for k := range ss[i].Sizes {
			key = append(key, ' ')
			key = strconv.AppendInt(key, ss[i].Sizes[k], 10)
			key = append(key, ':')
			key = strconv.AppendInt(key, ss[i].Strides[k], 10)
		}
		key = append(key, ';')
	}
	e.placeKey = key
	if p, ok := e.placeCache[string(key)]; ok {
		return p[0], p[1]
	}
	// The union of the slices, without repeats, in order: a bitmap, so
	// that a collective over millions of ranks stays small.
	bm := e.placeRanks
	if bm == nil {
		bm = roaring.New()
		e.placeRanks = bm
	}
	bm.Clear()
	var buf [256]int64
	for i := range ss {
		ss[i].EachRanks(buf[:0], func(rs []int64) {
			for _, r := range rs {
				bm.Add(uint32(r))
			}
		})
	}
	gph := uint32(e.opt.GPUsPerHost)
	run, prev := int64(0), uint32(0)
	it := bm.Iterator()
	for first := true; it.HasNext(); first = false {
		r := it.Next()
		if first || r/gph != prev/gph {
			hosts++
			run = 0
		}
		run++
		prev = r
		maxPerHost = max(maxPerHost, run)
	}
	if e.placeCache == nil || len(e.placeCache) >= maxPlaceCache {
		e.placeCache = make(map[string][2]int64)
	}
	e.placeCache[string(key)] = [2]int64{hosts, maxPerHost}
	return hosts, maxPerHost
}

// maxPlaceCache bounds the placement cache; it starts over when full.
const maxPlaceCache = 1024
