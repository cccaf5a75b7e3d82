package sched

// paged is a group's table of int32 values by a dense index from the
// history's registry (a tensor's, a storage's, a borrow's or a stream's):
// 0 where nothing was set. The indexes are shared by the whole world but a
// group holds few of them, so the values lie in small pages, made on the
// first write into them and recycled when their last value goes back to 0.
// A group then pays for the pages it uses, not for the world's largest
// index, and a lookup is two loads: no hashing on the per-command path. The
// pages come from the group's pagePool, which its tables share, so that an
// empty table costs one slice header.
type paged struct {
	pages []*page
}

const (
	pageBits = 5
	pageLen  = 1 << pageBits
)

type page struct {
	v    [pageLen]int32
	used int32 // values that are not 0
}

// pagePool holds a group's spare pages: emptied ones, reused first, and a
// slab made ahead in one allocation.
type pagePool struct {
	spare []*page
	slab  []page
	made  int32 // pages made so far
}

// maxSlab bounds the pages a slab holds.
const maxSlab = 16

// get returns the value at index i (0 if none; any i is accepted).
func (p *paged) get(i int32) int32 {
	n := uint(uint32(i) >> pageBits)
	if n >= uint(len(p.pages)) {
		return 0
	}
	pg := p.pages[n]
	if pg == nil {
		return 0
	}
	return pg.v[i&(pageLen-1)]
}

// set stores v at index i (i >= 0), taking pages from pool and giving
// emptied ones back.
func (p *paged) set(pool *pagePool, i, v int32) {
	n := int(uint32(i) >> pageBits)
	if n >= len(p.pages) {
		if v == 0 {
			return
		}
		for len(p.pages) <= n {
			p.pages = append(p.pages, nil)
		}
	}
	pg := p.pages[n]
	if pg == nil {
		if v == 0 {
			return
		}
		pg = pool.get()
		p.pages[n] = pg
	}
	old := &pg.v[i&(pageLen-1)]
	switch {
	case *old == 0 && v != 0:
		pg.used++
	case *old != 0 && v == 0:
		pg.used--
	}
	*old = v
	if pg.used == 0 {
		p.pages[n] = nil
		pool.spare = append(pool.spare, pg)
	}
}

// get returns an empty page: a spare one, else one from the slab. A slab
// holds as many pages as were made before it (up to maxSlab), so a group
// that grows makes few allocations and a small one wastes little.
func (pool *pagePool) get() *page {
	if k := len(pool.spare); k > 0 {
		pg := pool.spare[k-1]
		pool.spare = pool.spare[:k-1]
		return pg
	}
	if len(pool.slab) == 0 {
		n := min(max(pool.made, 1), maxSlab)
		pool.slab = make([]page, n)
		pool.made += n
	}
	pg := &pool.slab[0]
	pool.slab = pool.slab[1:]
	return pg
}

// clonePages returns deep copies of tables ts, their pages in one
// allocation, and the pool those pages count in.
func clonePages(ts ...*paged) ([]paged, pagePool) {
	n := 0
	for _, t := range ts {
		for _, pg := range t.pages {
			if pg != nil {
				n++
			}
		}
	}
	block := make([]page, n)
	out := make([]paged, len(ts))
	for k, t := range ts {
		out[k].pages = make([]*page, len(t.pages))
		for j, pg := range t.pages {
			if pg != nil {
				block[0] = *pg
				out[k].pages[j] = &block[0]
				block = block[1:]
			}
		}
	}
	return out, pagePool{made: int32(n)}
}
