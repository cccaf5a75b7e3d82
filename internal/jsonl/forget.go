package jsonl

// Forget drops tensor idx from the registry: its id is no longer known, and
// a later first mention reuses its row. The replay calls it for tensors that
// no worker holds any more, so a long history's registry stays as small as
// the tensors alive at once. A later bare mention of a forgotten id resolves
// as a first mention would.
func (r *Registry) Forget(idx int32) {
	if idx < 0 || int(idx) >= len(r.id) || r.isDead(idx) {
		return
	}
	id := r.id[idx]
	if uint64(id) < uint64(len(r.dense)) && r.dense[id] == idx+1 {
		r.dense[id] = 0
	} else if i, ok := r.idx[id]; ok && i == idx {
		delete(r.idx, id)
	}
	for len(r.dead) < len(r.id) {
		r.dead = append(r.dead, false)
	}
	r.dead[idx] = true
	r.free = append(r.free, idx)
}

func (r *Registry) isDead(idx int32) bool { return int(idx) < len(r.dead) && r.dead[idx] }
