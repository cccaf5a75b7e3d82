package soa

import "sync/atomic"

// Member is one task of a collective: the group that runs it and its row in
// that group's task table.
type Member struct {
	Group int32
	Task  TaskID
}

// Colls holds one row per collective (peer tasks that finish together, on
// different groups). Members of all collectives live in one flat slice; a
// row names its members by offset and length.
//
// Rows are created and members added by one goroutine between fixpoint
// rounds. During a round, groups running in parallel update Pending,
// MaxStartNs and Live only through the atomic methods below.
type Colls struct {
	Pending    []int32 // members not yet executing
	Live       []int32 // members not yet executed
	MaxStartNs []int64 // latest start among the members that are executing
	Off        []int32 // first member in Members
	Len        []int32 // number of members
	Members    []Member
	free       []int32
	liveMember int
}

// Alloc opens a new, empty collective.
func (c *Colls) Alloc() int32 {
	c.maybeCompact()
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

// Add appends a member that has neither started nor executed.
func (c *Colls) Add(r int32, m Member) { c.Join(r, m, true, true) }

// Join appends a member to r in any state: pending says it has not started,
// live that it has not executed. A split group's copies of its tasks join
// their collectives this way.
func (c *Colls) Join(r int32, m Member, pending, live bool) {
	if end := c.Off[r] + c.Len[r]; int(end) != len(c.Members) {
		// r's members are not at the end: move them there so they stay
		// contiguous. The old place becomes garbage for maybeCompact.
		off := int32(len(c.Members))
		c.Members = append(c.Members, c.Members[c.Off[r]:end]...)
		c.Off[r] = off
	}
	c.Members = append(c.Members, m)
	c.Len[r]++
	c.liveMember++
	if pending {
		c.Pending[r]++
	}
	if live {
		c.Live[r]++
	}
}

// MembersOf returns the members of r; valid until the next Alloc or Join.
func (c *Colls) MembersOf(r int32) []Member {
	return c.Members[c.Off[r] : c.Off[r]+c.Len[r]]
}

// Start records, atomically, that a member of r started executing at
// startNs, and reports whether it was the last one to start. The start is
// published before the count drops, so whoever sees the count reach zero
// also sees every start.
func (c *Colls) Start(r int32, startNs int64) bool {
	for {
		old := atomic.LoadInt64(&c.MaxStartNs[r])
		if startNs <= old || atomic.CompareAndSwapInt64(&c.MaxStartNs[r], old, startNs) {
			break
		}
	}
	return atomic.AddInt32(&c.Pending[r], -1) == 0
}

// Started reports whether every member of r has started.
func (c *Colls) Started(r int32) bool { return atomic.LoadInt32(&c.Pending[r]) == 0 }

// MaxStart is the latest start of r's members; final once Started.
func (c *Colls) MaxStart(r int32) int64 { return atomic.LoadInt64(&c.MaxStartNs[r]) }

// Done records that a member of r executed and reports whether it was the
// last; the caller then frees r with Free (outside a parallel round).
func (c *Colls) Done(r int32) bool { return atomic.AddInt32(&c.Live[r], -1) == 0 }

// Free recycles collective r.
func (c *Colls) Free(r int32) {
	c.liveMember -= int(c.Len[r])
	c.Len[r] = 0
	c.free = append(c.free, r)
}

// maybeCompact drops the members of finished collectives once they are most
// of the slice, so memory follows the collectives in flight, not the history.
func (c *Colls) maybeCompact() {
	if len(c.Members) < 1024 || len(c.Members) < 2*c.liveMember {
		return
	}
	fresh := make([]Member, 0, 2*c.liveMember+64)
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
