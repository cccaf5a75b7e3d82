package sched

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/fastsim/fastsim/internal/jsonl"
	"github.com/fastsim/fastsim/internal/soa"
)

// memEvent is one allocation (+) or release (-) on a stream.
type memEvent struct {
	ns    int64
	delta int64
}

// putTensor returns stream s's row for tensor t, creating it (unused) if the
// stream does not hold t yet.
func (e *Engine) putTensor(g *group, s int32, t *jsonl.Tensor) int32 {
	st := &g.streams[s]
	if row, ok := st.tensors[t.ID]; ok {
		return row
	}
	row := e.newRow(g, t)
	g.tensors.Owner[row] = s
	if e.isBorrowed(t.Idx) {
		g.tensors.Flags[row] = soa.TensorBorrowed
	}
	st.tensors[t.ID] = row
	return row
}

// putCPU gives group gi the CPU tensor t, unused.
func (e *Engine) putCPU(gi int32, t *jsonl.Tensor) error {
	g := &e.gs[gi]
	if row, ok := g.cpu[t.ID]; ok {
		if g.tensors.Refs[row] > 0 {
			return fmt.Errorf("%w: CPU tensor %d received again on %s while a queued task uses it", ErrTensorInUse, t.ID, e.who(gi))
		}
		return nil
	}
	if g.cpu == nil {
		g.cpu = make(map[int64]int32)
	}
	row := e.newRow(g, t)
	g.tensors.Flags[row] = soa.TensorCPU
	g.cpu[t.ID] = row
	return nil
}

// firstUse counts tensor row among its storage's tensors when the task that
// creates it starts; the storage's first tensor allocates it.
func (e *Engine) firstUse(g *group, row int32, ns int64, s int32) error {
	tf := &g.tensors.Flags[row]
	if *tf&(soa.TensorInStorage|soa.TensorCPU) != 0 {
		return nil
	}
	*tf |= soa.TensorInStorage
	id := g.tensors.Storage[row]
	if sr, ok := g.storage[id]; ok {
		g.storages.Count[sr]++
		return nil
	}
	if g.storage == nil {
		g.storage = make(map[int64]int32)
	}
	sr := g.storages.Alloc()
	g.storage[id] = sr
	g.storages.Count[sr] = 1
	bytes := g.tensors.NBytes[row]
	g.storages.Bytes[sr] = bytes
	if *tf&soa.TensorBorrowed != 0 || bytes == 0 {
		return nil
	}
	st := &g.streams[s]
	st.usage += bytes
	g.storages.AllocStream[sr] = s
	g.storages.AllocNs[sr] = ns
	st.mem = append(st.mem, memEvent{ns, bytes})
	return nil
}

// unref drops one reference on a tensor row at time ns.
func (e *Engine) unref(g *group, row int32, ns int64) error {
	if g.tensors.Refs[row] <= 0 {
		return fmt.Errorf("%w: tensor %d released more often than it was used", ErrMissingTensor, g.tensors.ID[row])
	}
	g.tensors.Refs[row]--
	return e.maybeRemove(g, row, ns)
}

// deleteTensor marks a row deleted by the controller at time ns.
func (e *Engine) deleteTensor(g *group, row int32, ns int64) error {
	g.tensors.Flags[row] |= soa.TensorPending
	return e.maybeRemove(g, row, ns)
}

// maybeRemove removes a deleted, unreferenced tensor at time ns, releasing
// its storage when it was the last tensor of it.
func (e *Engine) maybeRemove(g *group, row int32, ns int64) error {
	f := g.tensors.Flags[row]
	if g.tensors.Refs[row] > 0 || f&soa.TensorPending == 0 {
		return nil
	}
	if f&soa.TensorCPU != 0 {
		delete(g.cpu, g.tensors.ID[row])
		e.freeRow(g, row)
		return nil
	}
	owner := g.tensors.Owner[row]
	err := e.releaseStorage(g, row, ns, owner)
	delete(g.streams[owner].tensors, g.tensors.ID[row])
	e.freeRow(g, row)
	return err
}

// newRow makes a tensor row for t and counts it among t's rows.
func (e *Engine) newRow(g *group, t *jsonl.Tensor) int32 {
	row := g.tensors.Alloc()
	g.tensors.ID[row] = t.ID
	g.tensors.Idx[row] = t.Idx
	g.tensors.Storage[row] = t.Storage
	g.tensors.NBytes[row] = t.NBytes
	e.rowsOf(t.Idx, 1)
	return row
}

// freeRow recycles a tensor row. When it was its tensor's last row in any
// group, the tensor is gone from the whole world: the group notes it so the
// history's registry can forget the tensor once the command is done, which
// keeps the registry as small as the tensors alive, not the history.
func (e *Engine) freeRow(g *group, row int32) {
	idx := g.tensors.Idx[row]
	g.tensors.Free(row)
	if e.rowsOf(idx, -1) == 0 {
		g.gone = append(g.gone, idx)
	}
}

// rowsOf adds delta to the count of rows of tensor idx, atomically (groups
// run in parallel), and returns the new count. The counts array grows only
// between parallel sections: registry indices come from the decoder, before
// the command runs.
func (e *Engine) rowsOf(idx int32, delta int32) int32 {
	return atomic.AddInt32(&e.tensorRows[idx], delta)
}

// reserveRows makes room in the row counts for tensors up to n, before a
// command runs.
func (e *Engine) reserveRows(n int) {
	for len(e.tensorRows) < n {
		e.tensorRows = append(e.tensorRows, 0)
	}
}

// Gone returns the registry indices of the tensors that the last command
// removed from every worker, and forgets the list. The caller (who owns the
// registry) may drop them; the engine clears what it kept by index.
func (e *Engine) Gone() []int32 {
	e.gone = e.gone[:0]
	for gi := range e.gs {
		g := &e.gs[gi]
		for _, idx := range g.gone {
			if e.tensorRows[idx] == 0 { // not made again since
				e.gone = append(e.gone, idx)
				if int(idx) < len(e.borrowed) {
					e.borrowed[idx] = false
				}
			}
		}
		g.gone = g.gone[:0]
	}
	slices.Sort(e.gone)
	e.gone = slices.Compact(e.gone)
	return e.gone
}

// releaseStorage takes tensor row out of its storage at time ns on stream s;
// the storage's last tensor releases its bytes, which must have been
// allocated on s, before ns.
func (e *Engine) releaseStorage(g *group, row int32, ns int64, s int32) error {
	f := g.tensors.Flags[row]
	id := g.tensors.ID[row]
	if f&soa.TensorInStorage == 0 {
		return fmt.Errorf("%w: tensor %d removed before any task produced it", ErrMemory, id)
	}
	st := &g.streams[s]
	sid := g.tensors.Storage[row]
	sr, ok := g.storage[sid]
	if !ok {
		return fmt.Errorf("%w: tensor %d releases storage %d, which is not allocated", ErrMemory, id, sid)
	}
	g.storages.Count[sr]--
	if g.storages.Count[sr] > 0 {
		return nil
	}
	delete(g.storage, sid)
	defer g.storages.Free(sr)
	bytes := g.storages.Bytes[sr]
	if f&soa.TensorBorrowed != 0 || bytes == 0 {
		return nil
	}
	switch alloc := g.storages.AllocStream[sr]; {
	case bytes > st.usage:
		return fmt.Errorf("%w: tensor %d frees %d bytes of storage %d on stream %q, which holds only %d", ErrMemory, id, bytes, sid, e.streamName(g, s), st.usage)
	case alloc < 0:
		return fmt.Errorf("%w: tensor %d frees storage %d on stream %q, but the storage was never allocated (a borrowed tensor created it)", ErrMemory, id, sid, e.streamName(g, s))
	case alloc != s:
		return fmt.Errorf("%w: tensor %d frees storage %d on stream %q, but it was allocated on stream %q", ErrMemory, id, sid, e.streamName(g, s), e.streamName(g, alloc))
	case g.storages.AllocNs[sr] >= ns:
		return fmt.Errorf("%w: tensor %d frees storage %d at %d ns, not after its allocation at %d ns", ErrMemory, id, sid, ns, g.storages.AllocNs[sr])
	}
	st.usage -= bytes
	st.mem = append(st.mem, memEvent{ns, -bytes})
	return nil
}
