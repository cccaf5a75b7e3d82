package values

// idIndex maps int64 ids to dense int32 indexes. A controller counts ids
// up, and most of them die young: the live ids sit in a window just below
// the newest. So ids from lo on go in a slice indexed by id-lo, at most
// about twice as long as the indexes handed out (plus a margin), which
// bounds its memory; when a new id falls past its end, the window slides
// up and the few ids left below it (long-lived ones: a model's weights)
// move to a hash table, as do negative ids and ids far beyond the window. A
// window that only grew with the number of live indexes would leave a
// long run's every new id to the table. It is used at decode only: the engine
// sees the indexes, never the ids.
type idIndex struct {
	lo    int64   // the id of dense[0]
	dense []int32 // dense[id-lo] = index+1 (0: none)
	big   idTable // ids below lo, negative, or far beyond the window
	// farMax is the largest id put in big while it was at or above lo,
	// if any (hasFar): other ids at or above lo are never in big, so
	// finding them skips the table.
	farMax int64
	hasFar bool
	// span is how many ids per index the window may cover (0: 2); see
	// Registry.WidenWindows.
	span int64
}

func (x *idIndex) reset() {
	clear(x.dense)
	x.big.reset()
	x.lo, x.farMax, x.hasFar = 0, 0, false
}

// maxWideWindow bounds a widened window (2^23 ids: 32 MiB of int32).
const maxWideWindow = 1 << 23

// find returns the index of id.
func (x *idIndex) find(id int64) (int32, bool) {
	if id >= x.lo {
		if d := uint64(id - x.lo); d < uint64(len(x.dense)) {
			if i := x.dense[d]; i != 0 {
				return i - 1, true
			}
		}
		if !x.hasFar || id > x.farMax {
			return 0, false
		}
	}
	return x.big.find(id)
}

// insert records that id, which has no index, has index i; ids holds the
// id of each index there is but i (ids[j], for j other than i, the id last
// given index j), and bounds the window by its length.
func (x *idIndex) insert(id int64, i int32, ids []int64) {
	n := len(ids)
	w := 2*int64(n) + 4096
	if x.span > 2 {
		w = max(w, min(x.span*int64(n), maxWideWindow)+4096)
	}
	if id >= x.lo {
		d := id - x.lo
		if d >= w && d < 4*w {
			x.slide(id-w/2, ids)
			d = id - x.lo
		}
		if d < w {
			if d >= int64(len(x.dense)) {
				m := max(int(d)+1, 2*len(x.dense), 1024)
				if m <= cap(x.dense) {
					x.dense = x.dense[:m]
				} else {
					x.dense = append(x.dense[:cap(x.dense)], make([]int32, m-cap(x.dense))...)
				}
			}
			x.dense[d] = i + 1
			return
		}
		if !x.hasFar || id > x.farMax {
			x.farMax, x.hasFar = id, true
		}
	}
	x.big.set(id, i)
}

// slide moves the window up to start at id lo, moving the ids below it to
// the table. ids holds each index's id (or an id no longer mapped to it):
// the ids to move are found by reading those or the entries that leave the
// window, whichever are fewer. A widened window covers many more ids than
// there are indexes, nearly all of them dead: the 1T-parameter prediction's
// widened windows slid 300 times, each leaving about 76,000 entries behind,
// about 400 of them live, with about 4,600 ids in the column.
func (x *idIndex) slide(lo int64, ids []int64) {
	k := min(lo-x.lo, int64(len(x.dense)))
	if int64(len(ids)) < k {
		for j, id := range ids {
			// The entry of an id left behind names j only if the id
			// still has index j.
			if d := uint64(id - x.lo); d < uint64(k) && x.dense[d] == int32(j)+1 {
				x.big.set(id, int32(j))
			}
		}
	} else {
		for d, v := range x.dense[:k] {
			if v != 0 {
				x.big.set(x.lo+int64(d), v-1)
			}
		}
	}
	n := copy(x.dense, x.dense[k:])
	clear(x.dense[n:])
	x.lo = lo
}

// remove forgets id if it has index i.
func (x *idIndex) remove(id int64, i int32) {
	if id >= x.lo && uint64(id-x.lo) < uint64(len(x.dense)) && x.dense[id-x.lo] == i+1 {
		x.dense[id-x.lo] = 0
	} else if j, ok := x.big.find(id); ok && j == i {
		x.big.remove(id)
	}
}

// idTable is a hash table from int64 ids to int32 indexes: open
// addressing with linear probing, at most half full, and deletion by
// shifting back the entries that follow (so no tombstones pile up in a
// table that sees millions of ids come and go). Go's map costs a hash of
// its own and a grouped lookup per access; the ids here need neither. A
// slot holds its key and value side by side, so a probe touches one
// cache line, not two.
type idTable struct {
	slots []idSlot
	n     int // entries
	mask  uint64
}

// idSlot is one place of an idTable.
type idSlot struct {
	key int64
	val int32 // index+1 (0: empty slot)
}

func (t *idTable) reset() {
	clear(t.slots)
	t.n = 0
}

// slot is where the probe for id begins (Fibonacci hashing: ids counting
// up spread over the table).
func (t *idTable) slot(id int64) uint64 {
	return (uint64(id) * 0x9e3779b97f4a7c15 >> 32) & t.mask
}

func (t *idTable) find(id int64) (int32, bool) {
	if t.n == 0 {
		return 0, false
	}
	for s := t.slot(id); ; s = (s + 1) & t.mask {
		sl := &t.slots[s]
		if sl.val == 0 {
			return 0, false
		}
		if sl.key == id {
			return sl.val - 1, true
		}
	}
}

// set gives id index i, replacing any index it had.
func (t *idTable) set(id int64, i int32) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	for s := t.slot(id); ; s = (s + 1) & t.mask {
		sl := &t.slots[s]
		if sl.val == 0 {
			sl.key, sl.val = id, i+1
			t.n++
			return
		}
		if sl.key == id {
			sl.val = i + 1
			return
		}
	}
}

func (t *idTable) grow() {
	old := t.slots
	size := max(2*len(old), 64)
	t.slots, t.mask, t.n = make([]idSlot, size), uint64(size-1), 0
	for _, sl := range old {
		if sl.val != 0 {
			t.set(sl.key, sl.val-1)
		}
	}
}

// remove forgets id, then moves back the entries after it whose probe
// would otherwise pass the emptied slot.
func (t *idTable) remove(id int64) {
	if t.n == 0 {
		return
	}
	s := t.slot(id)
	for {
		if t.slots[s].val == 0 {
			return
		}
		if t.slots[s].key == id {
			break
		}
		s = (s + 1) & t.mask
	}
	t.slots[s].val = 0
	t.n--
	for j := (s + 1) & t.mask; t.slots[j].val != 0; j = (j + 1) & t.mask {
		home := t.slot(t.slots[j].key)
		// Move entry j into the hole at s unless its home lies in (s, j]
		// (cyclically): then its probe never passes s.
		if (j-home)&t.mask >= (j-s)&t.mask {
			t.slots[s] = t.slots[j]
			t.slots[j].val = 0
			s = j
		}
	}
}

// pool hands out dense indexes for ids, reusing those released: the
// registry's storages and borrows. An index lives from the first time its
// id is named until Release.
type pool struct {
	ids  idIndex
	id   []int64 // by index: its id
	refs []int32 // by index: holders (storages: the tensor rows naming it)
	free []int32
}

func (p *pool) reset() {
	p.ids.reset()
	p.id, p.refs, p.free = p.id[:0], p.refs[:0], p.free[:0]
}

// get returns the index of id, giving it one if it has none.
func (p *pool) get(id int64) int32 {
	if i, ok := p.ids.find(id); ok {
		return i
	}
	var i int32
	if n := len(p.free); n > 0 {
		i = p.free[n-1]
		p.free = p.free[:n-1]
		p.id[i], p.refs[i] = id, 0
	} else {
		i = int32(len(p.id))
		p.id = append(p.id, id)
		p.refs = append(p.refs, 0)
	}
	p.ids.insert(id, i, p.id)
	return i
}

// release forgets index i's id and lets a later id reuse it.
func (p *pool) release(i int32) {
	if i < 0 || int(i) >= len(p.id) || p.id[i] == freeID {
		return
	}
	p.ids.remove(p.id[i], i)
	p.id[i] = freeID
	p.free = append(p.free, i)
}

// freeID marks a released index (no id is this: ids that reach a pool are
// the history's, and a released one is never looked up).
const freeID = -1 << 63

// Storages is how many storage indexes are in use or free: storage indexes
// are below it.
func (r *Registry) Storages() int { return len(r.stor.id) }

// StreamIdx returns the dense index of stream ref, giving it one at its
// first mention. Streams are never destroyed, so indexes are not reused.
func (r *Registry) StreamIdx(ref int64) int32 {
	if i, ok := r.streams.find(ref); ok {
		return i
	}
	i := int32(len(r.streamRef))
	r.streamRef = append(r.streamRef, ref)
	r.streams.insert(ref, i, r.streamRef)
	return i
}

// Streams is the number of stream indexes handed out.
func (r *Registry) Streams() int { return len(r.streamRef) }

// NameIdx returns the dense index of name (a function path), giving it one
// at its first mention; names are never forgotten before Reset. A history
// names few distinct functions, so the map is small; it is looked up at
// decode only, so that the engine keeps what it derives from a name in a
// slice indexed by it.
//
// A small cache comes first, its place picked from the name's length and
// bytes of its middle and its end: a program names its functions with the
// same few strings, so the comparison there is usually of one string with
// itself (equal data pointers), cheaper than hashing it for the map.
func (r *Registry) NameIdx(name string) int32 {
	// 32 places of two ways each: two names that collide on a place
	// (8 names in 32 places do more often than not) take one way each;
	// three on one place, about one time in twenty, fall to the map.
	at := nameSlot(name) & (len(r.nameCache) - 2)
	c := &r.nameCache[at]
	if c.ok && c.name == name {
		return c.idx
	}
	if c1 := &r.nameCache[at+1]; c1.ok && c1.name == name {
		return c1.idx
	}
	r.nameCache[at+1] = *c // the older name moves to the second way
	i, ok := r.names[name]
	if !ok {
		if r.names == nil {
			r.names = make(map[string]int32)
		}
		i = int32(len(r.names))
		r.names[name] = i
	}
	*c = nameEntry{name: name, idx: i, ok: true}
	return i
}

// nameSlot picks a place of the cache of names for name. Function paths
// share long prefixes and suffixes ("torch.ops.aten.", ".default"): the
// length with a byte or two collided for names that differ only in the
// operator between them (relu, gelu and view), so it mixes 24 bytes, the
// last 16 and 8 around the middle, as three 8-byte words (the multipliers
// are odd 64-bit constants; the top bits of the sum are the place).
func nameSlot(name string) int {
	n := len(name)
	if n < 16 {
		h := uint64(n)
		for i := 0; i < n; i++ {
			h = h*31 + uint64(name[i])
		}
		return int(h * 0x9e3779b97f4a7c15 >> 58)
	}
	h := word(name[n-8:])*0x9e3779b97f4a7c15 ^ word(name[n-16:])*0xc2b2ae3d27d4eb4f ^ word(name[n/2-4:])*0x165667b19e3779f9
	return int((h + uint64(n)*0x27d4eb2f165667c5) >> 58)
}

// word reads the first 8 bytes of s as a little-endian integer.
func word(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// nameEntry is one place of the registry's cache of names (NameIdx).
type nameEntry struct {
	name string
	idx  int32
	ok   bool
}

// BorrowIdx returns the dense index of borrow id, giving it one at its
// first mention; it lives until ReleaseBorrow.
func (r *Registry) BorrowIdx(id int64) int32 { return r.bor.get(id) }

// ReleaseBorrow lets a later borrow reuse index i: the engine calls it when
// no worker has the borrow any more.
func (r *Registry) ReleaseBorrow(i int32) { r.bor.release(i) }

// Borrows is how many borrow indexes are in use or free.
func (r *Registry) Borrows() int { return len(r.bor.id) }

// TensorIdx returns the dense index of tensor id, or -1 if it is unknown.
func (r *Registry) TensorIdx(id int64) int32 {
	if i, ok := r.find(id); ok {
		return i
	}
	return -1
}

// StorageIdxOfID returns the dense index storage id has now, or -1 if no
// tensor row names it (its index, if it had one, is released).
func (r *Registry) StorageIdxOfID(id int64) int32 {
	if i, ok := r.stor.ids.find(id); ok {
		return i
	}
	if r.miss != nil && !r.missOff && r.miss(id) {
		if i, ok := r.stor.ids.find(id); ok {
			return i
		}
	}
	return -1
}

// StorageIdxOf returns the storage index of tensor idx (0 <= idx < Len).
func (r *Registry) StorageIdxOf(idx int32) int32 { return r.storIdx[idx] }

// storageRef counts one more tensor row naming storage id and returns its
// index.
func (r *Registry) storageRef(id int64) int32 {
	i := r.stor.get(id)
	r.stor.refs[i]++
	return i
}

// storageUnref drops a tensor row's hold on storage index i; the last
// releases the index.
func (r *Registry) storageUnref(i int32) {
	r.stor.refs[i]--
	if r.stor.refs[i] == 0 {
		r.stor.release(i)
	}
}

// WidenWindows lets the windows of tensor and storage ids cover up to
// span ids per index (at most 2^23 ids) instead of 2, for a producer
// whose tensors live across many more ids than are alive at once: a
// pipeline stage keeps a layer's saved tensors while every other stage
// makes millions of ids, and in the narrow window those ids would move to
// the hash table, one cache miss per look-up, where in the window a
// layer's ids (made one after another) share a few cache lines. What the
// registry answers does not change; only where it keeps the ids. It lasts
// through Reset.
func (r *Registry) WidenWindows(span int) {
	r.ids.span, r.stor.ids.span = int64(span), int64(span)
}
