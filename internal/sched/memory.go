package sched

import (
	"fmt"
	"math"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/groups"
	"github.com/fastsim/fastsim/internal/values"
)

// memEvent is one allocation (+) or release (-) on a stream.
type memEvent struct {
	ns    int64
	delta int64
}

// putTensor returns stream s's row for tensor t, creating it (unused) if the
// stream does not hold t yet.
func (e *Engine) putTensor(g *group, s gen.StreamID, t *values.Tensor) gen.TensorRow {
	if row := g.rowOf(t.Idx, s); row >= 0 {
		return row
	}
	row := e.newRow(g, t)
	g.tensors.Owner[row] = s
	if e.isBorrowed(t.Idx) {
		g.tensors.Flags[row] = gen.TensorFlagsBorrowed
	}
	g.link(row)
	return row
}

// cpuOwner is the Owner of a CPU tensor's row: the worker holds it, not a
// stream.
const cpuOwner gen.StreamID = -1

// rowOf returns the group's row of tensor idx held by owner (a stream, or
// cpuOwner), or -1. A tensor's rows in a group form a list, usually of one.
func (g *group) rowOf(idx int32, owner gen.StreamID) gen.TensorRow {
	tt := &g.tensors
	for r := gen.TensorRow(g.tensorAt.get(idx) - 1); r >= 0; r = tt.Next[r] {
		if tt.Owner[r] == owner {
			return r
		}
	}
	return -1
}

// inputRow returns the row a task on stream s reads tensor idx from: the
// worker's CPU tensor, else the stream's; -1 if neither exists.
func (g *group) inputRow(idx int32, s gen.StreamID) gen.TensorRow {
	tt := &g.tensors
	found := gen.TensorRow(-1)
	for r := gen.TensorRow(g.tensorAt.get(idx) - 1); r >= 0; r = tt.Next[r] {
		switch tt.Owner[r] {
		case cpuOwner:
			return r
		case s:
			found = r
		}
	}
	return found
}

// link puts a new row at the head of its tensor's list.
func (g *group) link(row gen.TensorRow) {
	idx := g.tensors.Idx[row]
	g.tensors.Next[row] = gen.TensorRow(g.tensorAt.get(idx) - 1)
	g.tensorAt.set(&g.pages, idx, int32(row)+1)
}

// unlink takes a row out of its tensor's list.
func (g *group) unlink(row gen.TensorRow) {
	tt := &g.tensors
	idx := tt.Idx[row]
	first := gen.TensorRow(g.tensorAt.get(idx) - 1)
	if first == row {
		g.tensorAt.set(&g.pages, idx, int32(tt.Next[row])+1)
	} else {
		for r := first; r >= 0; r = tt.Next[r] {
			if tt.Next[r] == row {
				tt.Next[r] = tt.Next[row]
				break
			}
		}
	}
	tt.Next[row] = -1
}

// putCPU gives group gi the CPU tensor t, unused.
func (e *Engine) putCPU(gi groups.GroupID, t *values.Tensor) error {
	g := e.gs[gi]
	if row := g.rowOf(t.Idx, cpuOwner); row >= 0 {
		if g.tensors.Refs[row] > 0 {
			return fmt.Errorf("%w: CPU tensor %d received again on %s while a queued task uses it", ErrTensorInUse, t.ID, e.who(gi))
		}
		return nil
	}
	row := e.newRow(g, t)
	g.tensors.Flags[row] = gen.TensorFlagsCPU
	g.tensors.Owner[row] = cpuOwner
	g.link(row)
	return nil
}

// firstUse counts tensor row among its storage's tensors when the task that
// creates it starts; the storage's first tensor allocates it.
func (e *Engine) firstUse(g *group, row gen.TensorRow, ns int64, s gen.StreamID) error {
	tf := &g.tensors.Flags[row]
	if *tf&(gen.TensorFlagsInStorage|gen.TensorFlagsCPU) != 0 {
		return nil
	}
	*tf |= gen.TensorFlagsInStorage
	si := g.tensors.StorageIdx[row]
	if sr := gen.StorageRow(g.storageAt.get(si) - 1); sr >= 0 {
		g.storages.Count[sr]++
		return nil
	}
	sr := g.storages.Alloc()
	g.storageAt.set(&g.pages, si, int32(sr)+1)
	g.storages.Count[sr] = 1
	bytes := g.tensors.NBytes[row]
	g.storages.Bytes[sr] = bytes
	if *tf&gen.TensorFlagsBorrowed != 0 || bytes == 0 {
		return nil
	}
	st := &g.streams[s]
	if bytes > math.MaxInt64-st.usage {
		return e.memOverflow(g, s, bytes)
	}
	st.usage += bytes
	g.storages.AllocStream[sr] = s
	g.storages.AllocNs[sr] = ns
	st.addMem(memEvent{ns, bytes})
	return e.checkAlloc(g, s, bytes)
}

// unref drops one reference on a tensor row at time ns.
func (e *Engine) unref(g *group, row gen.TensorRow, ns int64) error {
	if g.tensors.Refs[row] <= 0 {
		return fmt.Errorf("%w: tensor %d released more often than it was used", ErrMissingTensor, g.tensors.ID[row])
	}
	g.tensors.Refs[row]--
	return e.maybeRemove(g, row, ns)
}

// deleteTensor marks a row deleted by the controller at time ns.
func (e *Engine) deleteTensor(g *group, row gen.TensorRow, ns int64) error {
	g.tensors.Flags[row] |= gen.TensorFlagsPending
	return e.maybeRemove(g, row, ns)
}

// maybeRemove removes a deleted, unreferenced tensor at time ns, releasing
// its storage when it was the last tensor of it.
func (e *Engine) maybeRemove(g *group, row gen.TensorRow, ns int64) error {
	f := g.tensors.Flags[row]
	if g.tensors.Refs[row] > 0 || f&gen.TensorFlagsPending == 0 {
		return nil
	}
	if f&gen.TensorFlagsCPU != 0 {
		g.unlink(row)
		e.freeRow(g, row)
		return nil
	}
	owner := g.tensors.Owner[row]
	err := e.releaseStorage(g, row, ns, owner)
	g.unlink(row)
	e.freeRow(g, row)
	return err
}

// newRow makes a tensor row for t. Rows are counted per tensor across all
// groups, so the engine knows when a tensor is gone from the whole world;
// groups run in parallel, so each logs its births and deaths and the counts
// are settled after the command, by one goroutine (a shared atomic counter
// would be contended by every group at once).
func (e *Engine) newRow(g *group, t *values.Tensor) gen.TensorRow {
	row := g.tensors.Alloc()
	g.tensors.ID[row] = t.ID
	g.tensors.Idx[row] = t.Idx
	g.tensors.Storage[row] = t.Storage
	g.tensors.StorageIdx[row] = t.StorageIdx
	g.tensors.NBytes[row] = t.NBytes
	g.tensors.Next[row] = -1
	g.born = append(g.born, t.Idx)
	return row
}

// freeRow recycles a tensor row.
func (e *Engine) freeRow(g *group, row gen.TensorRow) {
	g.died = append(g.died, g.tensors.Idx[row])
	g.tensors.Flags[row] = tensorFreed
	g.tensors.Free(row)
}

// countRows settles the logs of tensor rows born and died in the groups
// the command reached (not every group: a command costs what it touches): a
// tensor whose count falls to zero is gone from every worker and joins
// e.gone.
func (e *Engine) countRows() {
	if r := e.pass.rec; r != nil {
		for _, gi := range e.touched {
			r.otherGroup = r.otherGroup || gi != r.g
		}
	}
	for _, gi := range e.touched {
		g := e.gs[gi]
		for _, idx := range g.born {
			e.tensorRows[idx]++
		}
		g.born = g.born[:0]
	}
	for _, gi := range e.touched {
		g := e.gs[gi]
		for _, idx := range g.died {
			e.tensorRows[idx]--
			if e.tensorRows[idx] == 0 {
				e.gone = append(e.gone, idx)
			}
		}
		g.died = g.died[:0]
		g.touched = false
	}
	e.touched = e.touched[:0]
}

// reserveRows makes room in the row counts for tensors up to n, before a
// command runs.
func (e *Engine) reserveRows(n int) {
	for len(e.tensorRows) < n {
		e.tensorRows = append(e.tensorRows, 0)
	}
}

// recycle releases, after a command, the registry indexes no worker holds
// any more: deleted tensors without rows (their storages' indexes go with
// them, in the registry) and borrows no group has. Rows are counted by
// countRows; the registry keeps a deleted tensor's row until then.
func (e *Engine) recycle() {
	if e.dfr.on {
		e.recycleDeferred()
		return
	}
	if e.reg == nil {
		e.gone, e.borGone = e.gone[:0], e.borGone[:0]
		return
	}
	// Rows deleted while the registry was another goroutine's (Defer) and
	// not yet recycled come first, as the registry would have listed them.
	for _, idx := range e.dfr.deleted {
		if e.tensorRows[idx] == 0 {
			e.forget(idx)
		}
	}
	e.dfr.deleted = e.dfr.deleted[:0]
	for _, idx := range e.reg.TakeDeleted() {
		if e.tensorRows[idx] == 0 {
			e.forget(idx)
		}
	}
	for _, idx := range e.gone {
		if e.tensorRows[idx] == 0 { // not made again since
			e.forget(idx)
		}
	}
	e.gone = e.gone[:0]
	for _, b := range e.borGone {
		if e.borrowGroups[b] == 0 {
			e.reg.ReleaseBorrow(b)
		}
	}
	e.borGone = e.borGone[:0]
}

// forget releases tensor idx's registry row, if the history deleted it
// (Registry.Release leaves a live row alone), and that it was a borrow's
// result.
func (e *Engine) forget(idx int32) {
	if int(idx) < len(e.borrowed) {
		e.borrowed[idx] = false
	}
	if e.dfr.on {
		// What Release finds in the registry at this record: the row is
		// deleted and not yet released.
		if d := &e.dfr; int(idx) < len(d.dead) && d.dead[idx] {
			d.dead[idx] = false
			d.rows = append(d.rows, idx)
		}
		return
	}
	e.reg.Release(idx)
}

// releaseStorage takes tensor row out of its storage at time ns on stream s;
// the storage's last tensor releases its bytes, which must have been
// allocated on s, before ns.
func (e *Engine) releaseStorage(g *group, row gen.TensorRow, ns int64, s gen.StreamID) error {
	f := g.tensors.Flags[row]
	id := g.tensors.ID[row]
	if f&gen.TensorFlagsInStorage == 0 {
		return fmt.Errorf("%w: tensor %d removed before any task produced it", ErrMemory, id)
	}
	st := &g.streams[s]
	sid := g.tensors.Storage[row]
	si := g.tensors.StorageIdx[row]
	sr := gen.StorageRow(g.storageAt.get(si) - 1)
	if sr < 0 {
		return fmt.Errorf("%w: tensor %d releases storage %d, which is not allocated", ErrMemory, id, sid)
	}
	g.storages.Count[sr]--
	if g.storages.Count[sr] > 0 {
		return nil
	}
	g.storageAt.set(&g.pages, si, 0)
	defer g.storages.Free(sr)
	bytes := g.storages.Bytes[sr]
	if f&gen.TensorFlagsBorrowed != 0 || bytes == 0 {
		return nil
	}
	switch alloc := g.storages.AllocStream[sr]; {
	case bytes > st.usage:
		return fmt.Errorf("%w: tensor %d frees %d bytes of storage %d on stream %q, which holds only %d", ErrMemory, id, bytes, sid, e.streamName(g, s), st.usage)
	case alloc < 0:
		return fmt.Errorf("%w: tensor %d frees storage %d on stream %q, but the storage was never allocated (a borrowed tensor created it)", ErrMemory, id, sid, e.streamName(g, s))
	case alloc != s:
		return fmt.Errorf("%w: tensor %d frees storage %d on stream %q, but it was allocated on stream %q", ErrMemory, id, sid, e.streamName(g, s), e.streamName(g, alloc))
	case g.storages.AllocNs[sr] == ns:
		// Only a task that takes no time can let this happen, which a
		// valid history meets under a cost model that prices its task at
		// 0: the message says so, so that the history is not the only
		// suspect.
		return fmt.Errorf("%w: tensor %d frees storage %d at %d ns, not after its allocation at %d ns (the same instant: the task that made it took no time, as a view does, or as the cost model priced it)", ErrMemory, id, sid, ns, g.storages.AllocNs[sr])
	case g.storages.AllocNs[sr] > ns:
		return fmt.Errorf("%w: tensor %d frees storage %d at %d ns, not after its allocation at %d ns", ErrMemory, id, sid, ns, g.storages.AllocNs[sr])
	}
	st.usage -= bytes
	st.addMem(memEvent{ns, -bytes})
	return nil
}
