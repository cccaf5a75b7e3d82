package sched

// paged is a group's table of int32 values by a dense index from the
// history's registry (a tensor's, a storage's, a borrow's or a stream's):
// 0 where nothing was set. The indexes are shared by the whole world but a
// group holds few of them, so the values lie in small pages, made on the
// first write into them and recycled when their last value goes back to 0.
// A group then pays for the pages it uses, not for the world's largest
// index, and a lookup is two loads: no hashing on the per-command path.
type paged struct {
	pages []*page
	spare []*page // emptied pages, reused before new ones are made
	slab  []page  // pages made ahead, in one allocation
	made  int32   // pages made so far
}

const (
	pageBits = 5
	pageLen  = 1 << pageBits
)

type page struct {
	v    [pageLen]int32
	used int32 // values that are not 0
}

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

// set stores v at index i (i >= 0).
func (p *paged) set(i, v int32) {
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
		pg = p.newPage()
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
		p.spare = append(p.spare, pg)
	}
}

// newPage returns an empty page: a spare one, else one from the slab. A
// slab holds as many pages as were made before it (up to maxSlab), so a
// table that grows makes few allocations and a small one wastes little.
func (p *paged) newPage() *page {
	if k := len(p.spare); k > 0 {
		pg := p.spare[k-1]
		p.spare = p.spare[:k-1]
		return pg
	}
	if len(p.slab) == 0 {
		n := min(max(p.made, 1), maxSlab)
		p.slab = make([]page, n)
		p.made += n
	}
	pg := &p.slab[0]
	p.slab = p.slab[1:]
	return pg
}

const maxSlab = 16

// clone returns a deep copy (without the spare pages), its pages in one
// allocation.
func (p *paged) clone() paged {
	c := paged{pages: make([]*page, len(p.pages))}
	n := 0
	for _, pg := range p.pages {
		if pg != nil {
			n++
		}
	}
	block := make([]page, n)
	c.made = int32(n)
	for k, pg := range p.pages {
		if pg != nil {
			block[0] = *pg
			c.pages[k] = &block[0]
			block = block[1:]
		}
	}
	return c
}
