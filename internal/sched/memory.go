package sched

import (
	"fmt"

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
func (e *Engine) putTensor(s int32, t *jsonl.Tensor) int32 {
	st := &e.streams[s]
	if row, ok := st.tensors[t.ID]; ok {
		return row
	}
	row := e.tensors.Alloc()
	e.tensors.ID[row] = t.ID
	e.tensors.Storage[row] = t.Storage
	e.tensors.NBytes[row] = t.NBytes
	e.tensors.Owner[row] = s
	if e.isBorrowed(t.Idx) {
		e.tensors.Flags[row] = soa.TensorBorrowed
	}
	st.tensors[t.ID] = row
	return row
}

// putCPU gives worker w the CPU tensor t, unused.
func (e *Engine) putCPU(w int32, t *jsonl.Tensor) error {
	wk := &e.workers[w]
	if row, ok := wk.cpu[t.ID]; ok {
		if e.tensors.Refs[row] > 0 {
			return fmt.Errorf("%w: CPU tensor %d received again on worker %d while a queued task uses it", ErrTensorInUse, t.ID, w)
		}
		return nil
	}
	if wk.cpu == nil {
		wk.cpu = make(map[int64]int32)
	}
	row := e.tensors.Alloc()
	e.tensors.ID[row] = t.ID
	e.tensors.Storage[row] = t.Storage
	e.tensors.NBytes[row] = t.NBytes
	e.tensors.Owner[row] = w
	e.tensors.Flags[row] = soa.TensorCPU
	wk.cpu[t.ID] = row
	return nil
}

// firstUse counts tensor row among its storage's tensors when the task that
// creates it starts; the storage's first tensor allocates it.
func (e *Engine) firstUse(row int32, ns int64, s int32) error {
	tf := &e.tensors.Flags[row]
	if *tf&(soa.TensorInStorage|soa.TensorCPU) != 0 {
		return nil
	}
	*tf |= soa.TensorInStorage
	wk := &e.workers[e.streams[s].worker]
	id := e.tensors.Storage[row]
	if sr, ok := wk.storages[id]; ok {
		e.storages.Count[sr]++
		return nil
	}
	if wk.storages == nil {
		wk.storages = make(map[int64]int32)
	}
	sr := e.storages.Alloc()
	wk.storages[id] = sr
	e.storages.Count[sr] = 1
	bytes := e.tensors.NBytes[row]
	e.storages.Bytes[sr] = bytes
	if *tf&soa.TensorBorrowed != 0 || bytes == 0 {
		return nil
	}
	st := &e.streams[s]
	st.usage += bytes
	e.storages.AllocStream[sr] = s
	e.storages.AllocNs[sr] = ns
	st.mem = append(st.mem, memEvent{ns, bytes})
	return nil
}

// unref drops one reference on a tensor row at time ns.
func (e *Engine) unref(row int32, ns int64) error {
	if e.tensors.Refs[row] <= 0 {
		return fmt.Errorf("%w: tensor %d released more often than it was used", ErrMissingTensor, e.tensors.ID[row])
	}
	e.tensors.Refs[row]--
	return e.maybeRemove(row, ns)
}

// deleteTensor marks a row deleted by the controller at time ns.
func (e *Engine) deleteTensor(row int32, ns int64) error {
	e.tensors.Flags[row] |= soa.TensorPending
	return e.maybeRemove(row, ns)
}

// maybeRemove removes a deleted, unreferenced tensor at time ns, releasing
// its storage when it was the last tensor of it.
func (e *Engine) maybeRemove(row int32, ns int64) error {
	f := e.tensors.Flags[row]
	if e.tensors.Refs[row] > 0 || f&soa.TensorPending == 0 {
		return nil
	}
	owner := e.tensors.Owner[row]
	if f&soa.TensorCPU != 0 {
		delete(e.workers[owner].cpu, e.tensors.ID[row])
		e.tensors.Free(row)
		return nil
	}
	err := e.releaseStorage(row, ns, owner)
	delete(e.streams[owner].tensors, e.tensors.ID[row])
	e.tensors.Free(row)
	return err
}

// releaseStorage takes tensor row out of its storage at time ns on stream s;
// the storage's last tensor releases its bytes, which must have been
// allocated on s, before ns.
func (e *Engine) releaseStorage(row int32, ns int64, s int32) error {
	f := e.tensors.Flags[row]
	id := e.tensors.ID[row]
	if f&soa.TensorInStorage == 0 {
		return fmt.Errorf("%w: tensor %d removed before any task produced it", ErrMemory, id)
	}
	st := &e.streams[s]
	wk := &e.workers[st.worker]
	sid := e.tensors.Storage[row]
	sr, ok := wk.storages[sid]
	if !ok {
		return fmt.Errorf("%w: tensor %d releases storage %d, which is not allocated", ErrMemory, id, sid)
	}
	e.storages.Count[sr]--
	if e.storages.Count[sr] > 0 {
		return nil
	}
	delete(wk.storages, sid)
	defer e.storages.Free(sr)
	bytes := e.storages.Bytes[sr]
	if f&soa.TensorBorrowed != 0 || bytes == 0 {
		return nil
	}
	switch alloc := e.storages.AllocStream[sr]; {
	case bytes > st.usage:
		return fmt.Errorf("%w: tensor %d frees %d bytes of storage %d on stream %q, which holds only %d", ErrMemory, id, bytes, sid, e.streamName(s), st.usage)
	case alloc < 0:
		return fmt.Errorf("%w: tensor %d frees storage %d on stream %q, but the storage was never allocated (a borrowed tensor created it)", ErrMemory, id, sid, e.streamName(s))
	case alloc != s:
		return fmt.Errorf("%w: tensor %d frees storage %d on stream %q, but it was allocated on stream %q", ErrMemory, id, sid, e.streamName(s), e.streamName(alloc))
	case e.storages.AllocNs[sr] >= ns:
		return fmt.Errorf("%w: tensor %d frees storage %d at %d ns, not after its allocation at %d ns", ErrMemory, id, sid, ns, e.storages.AllocNs[sr])
	}
	st.usage -= bytes
	st.mem = append(st.mem, memEvent{ns, -bytes})
	return nil
}
