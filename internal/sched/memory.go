package sched

import (
	"fmt"
	"github.com/fastsim/fastsim/internal/groups"
	"math"

	"github.com/fastsim/fastsim/gen"
	"slices"

	"github.com/fastsim/fastsim/internal/jsonl"
)

// memEvent is one allocation (+) or release (-) on a stream.
type memEvent struct {
	ns    int64
	delta int64
}

// putTensor returns stream s's row for tensor t, creating it (unused) if the
// stream does not hold t yet.
func (e *Engine) putTensor(g *group, s gen.StreamID, t *jsonl.Tensor) gen.TensorRow {
	st := &g.streams[s]
	if row, ok := st.tensors[t.ID]; ok {
		return row
	}
	row := e.newRow(g, t)
	g.tensors.Owner[row] = s
	if e.isBorrowed(t.Idx) {
		g.tensors.Flags[row] = tensorBorrowed
	}
	st.tensors[t.ID] = row
	if g.holder == nil {
		g.holder = make(map[int64]gen.StreamID)
	}
	if h, ok := g.holder[t.ID]; !ok {
		g.holder[t.ID] = s
	} else if h != s {
		g.holder[t.ID] = -1
	}
	return row
}

// dropHolder notes that stream s no longer holds tensor id.
func (g *group) dropHolder(id int64, s gen.StreamID) {
	h, ok := g.holder[id]
	switch {
	case !ok:
	case h == s:
		delete(g.holder, id)
	case h < 0:
		// Several held it: count those left (rare, so a scan).
		left, n := gen.StreamID(-1), 0
		for o := range g.streams {
			if _, ok := g.streams[o].tensors[id]; ok && gen.StreamID(o) != s {
				left, n = gen.StreamID(o), n+1
			}
		}
		switch n {
		case 0:
			delete(g.holder, id)
		case 1:
			g.holder[id] = left
		}
	}
}

// putCPU gives group gi the CPU tensor t, unused.
func (e *Engine) putCPU(gi groups.GroupID, t *jsonl.Tensor) error {
	g := e.gs[gi]
	if row, ok := g.cpu[t.ID]; ok {
		if g.tensors.Refs[row] > 0 {
			return fmt.Errorf("%w: CPU tensor %d received again on %s while a queued task uses it", ErrTensorInUse, t.ID, e.who(gi))
		}
		return nil
	}
	if g.cpu == nil {
		g.cpu = make(map[int64]gen.TensorRow)
	}
	row := e.newRow(g, t)
	g.tensors.Flags[row] = tensorCPU
	g.cpu[t.ID] = row
	return nil
}

// firstUse counts tensor row among its storage's tensors when the task that
// creates it starts; the storage's first tensor allocates it.
func (e *Engine) firstUse(g *group, row gen.TensorRow, ns int64, s gen.StreamID) error {
	tf := &g.tensors.Flags[row]
	if *tf&(tensorInStorage|tensorCPU) != 0 {
		return nil
	}
	*tf |= tensorInStorage
	id := g.tensors.Storage[row]
	if sr, ok := g.storage[id]; ok {
		g.storages.Count[sr]++
		return nil
	}
	if g.storage == nil {
		g.storage = make(map[int64]gen.StorageRow)
	}
	sr := g.storages.Alloc()
	g.storage[id] = sr
	g.storages.Count[sr] = 1
	bytes := g.tensors.NBytes[row]
	g.storages.Bytes[sr] = bytes
	if *tf&tensorBorrowed != 0 || bytes == 0 {
		return nil
	}
	st := &g.streams[s]
	if bytes > math.MaxInt64-st.usage {
		return e.memOverflow(g, s, bytes)
	}
	st.usage += bytes
	g.storages.AllocStream[sr] = s
	g.storages.AllocNs[sr] = ns
	st.mem = append(st.mem, memEvent{ns, bytes})
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
	g.tensors.Flags[row] |= tensorPending
	return e.maybeRemove(g, row, ns)
}

// maybeRemove removes a deleted, unreferenced tensor at time ns, releasing
// its storage when it was the last tensor of it.
func (e *Engine) maybeRemove(g *group, row gen.TensorRow, ns int64) error {
	f := g.tensors.Flags[row]
	if g.tensors.Refs[row] > 0 || f&tensorPending == 0 {
		return nil
	}
	if f&tensorCPU != 0 {
		delete(g.cpu, g.tensors.ID[row])
		e.freeRow(g, row)
		return nil
	}
	owner := g.tensors.Owner[row]
	err := e.releaseStorage(g, row, ns, owner)
	delete(g.streams[owner].tensors, g.tensors.ID[row])
	g.dropHolder(g.tensors.ID[row], owner)
	e.freeRow(g, row)
	return err
}

// newRow makes a tensor row for t. Rows are counted per tensor across all
// groups, so the engine knows when a tensor is gone from the whole world;
// groups run in parallel, so each logs its births and deaths and the counts
// are settled after the command, by one goroutine (a shared atomic counter
// would be contended by every group at once).
func (e *Engine) newRow(g *group, t *jsonl.Tensor) gen.TensorRow {
	row := g.tensors.Alloc()
	g.tensors.ID[row] = t.ID
	g.tensors.Idx[row] = t.Idx
	g.tensors.Storage[row] = t.Storage
	g.tensors.NBytes[row] = t.NBytes
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

// Unused reports whether no worker holds a row of tensor idx (and then
// forgets that it was a borrow's result), so the caller may give idx to a
// new tensor.
func (e *Engine) Unused(idx int32) bool {
	if int(idx) < len(e.tensorRows) && e.tensorRows[idx] != 0 {
		return false
	}
	if int(idx) < len(e.borrowed) {
		e.borrowed[idx] = false
	}
	return true
}

// Gone returns the registry indices of the tensors that the commands since
// the last call removed from every worker, and forgets the list. The caller
// (who owns the registry) may drop them; the engine clears what it kept by
// index.
func (e *Engine) Gone() []int32 {
	out := e.goneOut[:0]
	for _, idx := range e.gone {
		if e.tensorRows[idx] == 0 { // not made again since
			out = append(out, idx)
			if int(idx) < len(e.borrowed) {
				e.borrowed[idx] = false
			}
		}
	}
	e.gone = e.gone[:0]
	slices.Sort(out)
	out = slices.Compact(out)
	e.goneOut = out
	return out
}

// releaseStorage takes tensor row out of its storage at time ns on stream s;
// the storage's last tensor releases its bytes, which must have been
// allocated on s, before ns.
func (e *Engine) releaseStorage(g *group, row gen.TensorRow, ns int64, s gen.StreamID) error {
	f := g.tensors.Flags[row]
	id := g.tensors.ID[row]
	if f&tensorInStorage == 0 {
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
	if f&tensorBorrowed != 0 || bytes == 0 {
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
