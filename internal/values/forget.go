package values

// A tensor id lives in a history from its first mention until a DeleteRefs
// names it (internal/history applies this after each record, in every
// form and mode). After that the id is unknown: a later mention begins a
// new tensor and must be complete. The id's row is then reused by a later
// first mention, so a long history's registry stays as small as the
// tensors alive at once. A replay defers the reuse until no worker holds a
// row of the tensor (the engine indexes its per-tensor tables by row), which
// changes nothing the registry answers.

// Row states (Registry.state).
const (
	rowLive    uint8 = iota // its id resolves to it
	rowDeleted              // deleted, waiting for Release
	rowFree                 // in the free list
)

// Delete ends tensor id's life: the id no longer resolves. Unknown ids are
// ignored. Its row is freed at once, or, with DeferFree, listed for
// TakeDeleted and freed by Release.
func (r *Registry) Delete(id int64) {
	if idx, ok := r.find(id); ok {
		r.deleteLive(idx)
	}
}

// deleteLive ends the life of live row idx: Delete once the row is known.
func (r *Registry) deleteLive(idx int32) {
	r.unmap(idx)
	if r.deferFree {
		r.setState(idx, rowDeleted)
		r.deleted = append(r.deleted, idx)
		return
	}
	r.free1(idx)
}

// DeleteRow is Delete of the tensor whose row is idx, for a reader that
// already resolved the id (a row that is not live is ignored, as an
// unknown id is). It saves Delete's lookup of the id.
func (r *Registry) DeleteRow(idx int32) {
	if idx >= 0 && int(idx) < len(r.id) && r.stateOf(idx) == rowLive {
		r.deleteLive(idx)
	}
}

// DeferFree makes Delete keep rows until Release frees them.
func (r *Registry) DeferFree(on bool) { r.deferFree = on }

// TakeDeleted returns the rows deleted since the last call and forgets the
// list (valid until the next Delete).
func (r *Registry) TakeDeleted() []int32 {
	d := r.deleted
	r.deleted = r.deleted[:0]
	return d
}

// Release frees row idx if it was deleted and not yet freed; a live or
// free row is left alone.
func (r *Registry) Release(idx int32) {
	if idx >= 0 && int(idx) < len(r.id) && r.stateOf(idx) == rowDeleted {
		r.free1(idx)
	}
}

// Forget deletes tensor idx and frees its row at once, whatever
// DeferFree says: its id is no longer known, and a later first mention
// reuses its row.
func (r *Registry) Forget(idx int32) {
	if idx < 0 || int(idx) >= len(r.id) {
		return
	}
	switch r.stateOf(idx) {
	case rowLive:
		r.unmap(idx)
		r.free1(idx)
	case rowDeleted:
		r.free1(idx)
	}
}

// unmap makes row idx's id resolve to nothing.
func (r *Registry) unmap(idx int32) { r.ids.remove(r.id[idx], idx) }

// free1 frees row idx, and its hold on its storage's index.
func (r *Registry) free1(idx int32) {
	r.setState(idx, rowFree)
	r.free = append(r.free, idx)
	r.storageUnref(r.storIdx[idx])
}

func (r *Registry) setState(idx int32, s uint8) {
	for len(r.state) < len(r.id) {
		r.state = append(r.state, rowLive)
	}
	r.state[idx] = s
}

func (r *Registry) stateOf(idx int32) uint8 {
	if int(idx) < len(r.state) {
		return r.state[idx]
	}
	return rowLive
}

// Fresh returns the rows defined (first mentions) since the last
// ClearFresh, in order of definition: what a record defines. A nil
// registry (a writer fed by a program, not a reader) has none.
func (r *Registry) Fresh() []int32 {
	if r == nil {
		return nil
	}
	return r.fresh
}

// ClearFresh starts a new list for Fresh.
func (r *Registry) ClearFresh() { r.fresh = r.fresh[:0] }

// DeleteAt is Delete(id) for a caller that knows id's row, idx (from
// TensorIdx since): it skips finding the id. An idx that is not id's
// live row falls back to Delete.
func (r *Registry) DeleteAt(idx int32, id int64) {
	if idx < 0 || int(idx) >= len(r.id) || r.id[idx] != id || r.stateOf(idx) != rowLive {
		r.Delete(id)
		return
	}
	r.deleteLive(idx)
}
