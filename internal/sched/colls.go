package sched

import (
	"github.com/fastsim/fastsim/internal/groups"
	"sync/atomic"

	"github.com/fastsim/fastsim/gen"
)

// Member is one task of a collective: the group that runs it and its row in
// that group's task table.
type Member struct {
	Group groups.GroupID
	Task  gen.TaskID
}

// colls holds one row per collective (peer tasks that finish together, on
// different groups): the generated table, plus the members of all
// collectives in one flat slice, which a row names by offset and length.
//
// Rows are created and members added by one goroutine between fixpoint
// rounds. During a round, groups running in parallel update Pending,
// MaxStartNs and Running only through the atomic methods below.
type colls struct {
	gen.CollTable
	Members    []Member
	liveMember int
	// spare is the array Members had before the last compaction, reused
	// by the next one: a compaction every few thousand collectives
	// otherwise allocates (and faults in) a fresh array each time.
	spare []Member
}

// Alloc opens a new, empty collective.
func (c *colls) Alloc() gen.CollID {
	c.maybeCompact()
	r := c.CollTable.Alloc()
	c.MemberOff[r] = int32(len(c.Members))
	return r
}

// Add appends a member that has neither started nor executed.
func (c *colls) Add(r gen.CollID, m Member) { c.Join(r, m, true, true) }

// Join appends a member to r in any state: pending says it has not started,
// live that it has not executed. A split group's copies of its tasks join
// their collectives this way.
func (c *colls) Join(r gen.CollID, m Member, pending, live bool) {
	if end := c.MemberOff[r] + c.MemberN[r]; int(end) != len(c.Members) {
		// r's members are not at the end: move them there so they stay
		// contiguous. The old place becomes garbage for maybeCompact.
		off := int32(len(c.Members))
		c.Members = append(c.Members, c.Members[c.MemberOff[r]:end]...)
		c.MemberOff[r] = off
	}
	c.Members = append(c.Members, m)
	c.MemberN[r]++
	c.liveMember++
	if pending {
		c.Pending[r]++
	}
	if live {
		c.Running[r]++
	}
}

// MembersOf returns the members of r; valid until the next Alloc or Join.
func (c *colls) MembersOf(r gen.CollID) []Member {
	return c.Members[c.MemberOff[r] : c.MemberOff[r]+c.MemberN[r]]
}

// Start records, atomically, that a member of r started executing at
// startNs, and reports whether it was the last one to start. The start is
// published before the count drops, so whoever sees the count reach zero
// also sees every start.
func (c *colls) Start(r gen.CollID, startNs int64) bool {
	for {
		old := atomic.LoadInt64(&c.MaxStartNs[r])
		if startNs <= old || atomic.CompareAndSwapInt64(&c.MaxStartNs[r], old, startNs) {
			break
		}
	}
	return atomic.AddInt32(&c.Pending[r], -1) == 0
}

// Started reports whether every member of r has started.
func (c *colls) Started(r gen.CollID) bool { return atomic.LoadInt32(&c.Pending[r]) == 0 }

// MaxStart is the latest start of r's members; final once Started.
func (c *colls) MaxStart(r gen.CollID) int64 { return atomic.LoadInt64(&c.MaxStartNs[r]) }

// Done records that a member of r executed and reports whether it was the
// last; the caller then frees r with Free (outside a parallel round).
func (c *colls) Done(r gen.CollID) bool { return atomic.AddInt32(&c.Running[r], -1) == 0 }

// Free recycles collective r.
func (c *colls) Free(r gen.CollID) {
	c.liveMember -= int(c.MemberN[r])
	c.MemberN[r] = 0
	c.CollTable.Free(r)
}

// maybeCompact drops the members of finished collectives once they are most
// of the slice, so memory follows the collectives in flight, not the history.
func (c *colls) maybeCompact() {
	if len(c.Members) < 1024 || len(c.Members) < 2*c.liveMember {
		return
	}
	fresh := c.spare[:0]
	if want := 2*c.liveMember + 64; cap(fresh) < want {
		fresh = make([]Member, 0, want)
	}
	for r := range c.Pending {
		if c.MemberN[r] == 0 {
			continue
		}
		off := int32(len(fresh))
		fresh = append(fresh, c.Members[c.MemberOff[r]:c.MemberOff[r]+c.MemberN[r]]...)
		c.MemberOff[r] = off
	}
	c.spare, c.Members = c.Members, fresh
}
