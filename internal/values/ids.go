package values

import "math/bits"

// idIndex maps int64 ids to dense int32 indexes. Ids are usually small and
// dense (a controller counts them up), so they go in a slice indexed by id
// while they stay below twice the number of indexes handed out (plus a
// margin), which bounds its memory; others go in a hash table. In a long
// history the ids keep counting up while deleted rows are reused, so most
// ids end up in the table: it is an open-addressing one (linear probing,
// deletion by backward shift) rather than a Go map, to spare the map's
// hashing and group probing on every mention. It is used at decode only:
// the engine sees the indexes, never the ids.
type idIndex struct {
	dense []int32 // dense[id] = index+1 for small non-negative ids (0: none)
	big   idTable // ids that do not fit dense
}

func (x *idIndex) reset() {
	clear(x.dense)
	x.big.reset()
}

// find returns the index of id.
func (x *idIndex) find(id int64) (int32, bool) {
	if uint64(id) < uint64(len(x.dense)) {
		if i := x.dense[id]; i != 0 {
			return i - 1, true
		}
	}
	if x.big.n == 0 {
		return 0, false
	}
	return x.big.get(id)
}

// insert records that id has index i; n is how many indexes exist (it
// bounds the dense part).
func (x *idIndex) insert(id int64, i int32, n int) {
	if id >= 0 && id < 2*int64(n)+4096 {
		if id >= int64(len(x.dense)) {
			m := max(int(id)+1, 2*len(x.dense), 1024)
			if m <= cap(x.dense) {
				x.dense = x.dense[:m]
			} else {
				x.dense = append(x.dense[:cap(x.dense)], make([]int32, m-cap(x.dense))...)
			}
		}
		if x.dense[id] == 0 {
			if _, inTable := x.big.get(id); !inTable {
				x.dense[id] = i + 1
				return
			}
		}
	}
	x.big.put(id, i)
}

// remove forgets id if it has index i.
func (x *idIndex) remove(id int64, i int32) {
	if uint64(id) < uint64(len(x.dense)) && x.dense[id] == i+1 {
		x.dense[id] = 0
	} else if j, ok := x.big.get(id); ok && j == i {
		x.big.del(id)
	}
}

// idTable is a hash table from int64 ids to int32 indexes: open
// addressing with linear probing, at most half full, so a lookup reads one
// or two neighbouring slots. Deletion shifts the entries that follow back
// (Knuth, TAOCP vol. 3, 6.4, Algorithm R), so no tombstones accumulate
// however many ids come and go.
type idTable struct {
	keys  []int64
	vals  []int32 // index+1; 0: the slot is empty
	n     int     // entries held
	shift uint    // 64 - log2(len(keys))
}

func (t *idTable) reset() {
	clear(t.vals)
	t.n = 0
}

// slot is id's home slot: Fibonacci hashing (multiply by 2^64 / golden
// ratio, keep the top bits), which spreads ids counted up one by one.
func (t *idTable) slot(id int64) int {
	return int((uint64(id) * 0x9e3779b97f4a7c15) >> t.shift)
}

func (t *idTable) get(id int64) (int32, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := len(t.keys) - 1
	for i := t.slot(id); ; i = (i + 1) & mask {
		v := t.vals[i]
		if v == 0 {
			return 0, false
		}
		if t.keys[i] == id {
			return v - 1, true
		}
	}
}

func (t *idTable) put(id int64, v int32) {
	if 2*(t.n+1) > len(t.keys) {
		t.grow()
	}
	mask := len(t.keys) - 1
	for i := t.slot(id); ; i = (i + 1) & mask {
		if t.vals[i] == 0 {
			t.keys[i], t.vals[i] = id, v+1
			t.n++
			return
		}
		if t.keys[i] == id {
			t.vals[i] = v + 1
			return
		}
	}
}

// grow doubles the table (to 64 slots at first) and rehashes it.
func (t *idTable) grow() {
	keys, vals := t.keys, t.vals
	size := max(2*len(keys), 64)
	t.keys, t.vals = make([]int64, size), make([]int32, size)
	t.shift = uint(64 - bits.TrailingZeros(uint(size)))
	t.n = 0
	for i, v := range vals {
		if v != 0 {
			t.put(keys[i], v-1)
		}
	}
}

func (t *idTable) del(id int64) {
	if t.n == 0 {
		return
	}
	mask := len(t.keys) - 1
	i := t.slot(id)
	for ; ; i = (i + 1) & mask {
		if t.vals[i] == 0 {
			return
		}
		if t.keys[i] == id {
			break
		}
	}
	// Move back every later entry of the run whose home slot is not
	// cyclically within (i, j]: it was placed past i because i was taken.
	for j := (i + 1) & mask; t.vals[j] != 0; j = (j + 1) & mask {
		home := t.slot(t.keys[j])
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			t.keys[i], t.vals[i] = t.keys[j], t.vals[j]
			i = j
		}
	}
	t.vals[i] = 0
	t.n--
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
	p.ids.insert(id, i, len(p.id))
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
	i := r.nStreams
	r.nStreams++
	r.streams.insert(ref, i, int(r.nStreams))
	return i
}

// Streams is the number of stream indexes handed out.
func (r *Registry) Streams() int { return int(r.nStreams) }

// NameIdx returns the dense index of name (a function path), giving it one
// at its first mention; names are never forgotten before Reset. A history
// names few distinct functions, so the map is small; it is looked up at
// decode only, so that the engine keeps what it derives from a name in a
// slice indexed by it.
func (r *Registry) NameIdx(name string) int32 {
	if i, ok := r.names[name]; ok {
		return i
	}
	if r.names == nil {
		r.names = make(map[string]int32)
	}
	i := int32(len(r.names))
	r.names[name] = i
	return i
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
