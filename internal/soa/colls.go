package soa

// Colls holds one row per collective (a set of peer tasks that finish
// together). Members of all collectives live in one flat slice; a row names
// its members by offset and length.
type Colls struct {
	Pending    []int32 // members not yet executing
	Live       []int32 // members not yet executed
	MaxStartNs []int64 // latest start among the members that are executing
	Off        []int32 // first member in Members
	Len        []int32 // number of members
	Members    []TaskID
	free       []int32
	liveRows   int
	liveMember int
}

// Alloc opens a new collective whose members will be appended with Add.
// Members of one collective must be added before the next Alloc.
func (c *Colls) Alloc() int32 {
	c.maybeCompact()
	c.liveRows++
	off := int32(len(c.Members))
	if n := len(c.free); n > 0 {
		r := c.free[n-1]
		c.free = c.free[:n-1]
		c.Pending[r], c.Live[r], c.MaxStartNs[r], c.Off[r], c.Len[r] = 0, 0, 0, off, 0
		return r
	}
	r := int32(len(c.Pending))
	c.Pending = append(c.Pending, 0)
	c.Live = append(c.Live, 0)
	c.MaxStartNs = append(c.MaxStartNs, 0)
	c.Off = append(c.Off, off)
	c.Len = append(c.Len, 0)
	return r
}

// Add appends task t to collective r, which must be the newest one.
func (c *Colls) Add(r int32, t TaskID) {
	c.Members = append(c.Members, t)
	c.Len[r]++
	c.Pending[r]++
	c.Live[r]++
	c.liveMember++
}

// MembersOf returns the members of r; valid until the next Alloc.
func (c *Colls) MembersOf(r int32) []TaskID {
	return c.Members[c.Off[r] : c.Off[r]+c.Len[r]]
}

// Done records that one member of r executed; the row is recycled after the
// last one.
func (c *Colls) Done(r int32) {
	c.Live[r]--
	if c.Live[r] == 0 {
		c.liveRows--
		c.liveMember -= int(c.Len[r])
		c.Len[r] = 0
		c.free = append(c.free, r)
	}
}

// maybeCompact drops the members of finished collectives once they are most
// of the slice, so memory follows the collectives in flight, not the history.
func (c *Colls) maybeCompact() {
	if len(c.Members) < 1024 || len(c.Members) < 2*c.liveMember {
		return
	}
	fresh := make([]TaskID, 0, 2*c.liveMember+64)
	for r := range c.Pending {
		if c.Len[r] == 0 {
			continue
		}
		off := int32(len(fresh))
		fresh = append(fresh, c.Members[c.Off[r]:c.Off[r]+c.Len[r]]...)
		c.Off[r] = off
	}
	c.Members = fresh
}
