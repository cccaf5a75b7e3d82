package sched

import "github.com/fastsim/fastsim/internal/values"

// A replay may decode on one goroutine while the engine runs on another
// (internal/replay's pipeline). The registry is then the decoder's alone:
// the engine neither reads it nor releases indexes in it. The decoder
// tells the engine what decoding each record did to it (Decoded), the
// engine makes the decisions recycle makes, in the same order, and lists
// the releases (Released) for the decoder to apply when it next may.
// An index is then reused later than serially, which changes no result:
// indexes only name rows of the engine's tables, and a released index
// names nothing any more.
type deferred struct {
	on      bool
	len     int     // the registry's Len once the last record given to Decoded was decoded
	dead    []bool  // by tensor row: deleted by a record and not yet released (what Registry.Release checks)
	deleted []int32 // rows deleted since the last recycle: the registry's TakeDeleted
	rows    []int32 // tensor rows released, for Registry.Release
	borrows []int32 // borrow indexes released, for Registry.ReleaseBorrow
}

// Defer hands registry reg to another goroutine, before the first command:
// from now on the engine never touches it (Command's reg is ignored), is
// told with Decoded what decoding each record did to it, and lists the
// indexes it releases for Released. Undefer ends it.
func (e *Engine) Defer(reg *values.Registry) {
	if reg != e.reg {
		e.reg = reg
		reg.DeferFree(true)
	}
	e.dfr.on = true
	e.dfr.len = reg.Len()
	e.Decoded(reg.Len(), reg.TakeDeleted())
}

// Decoded tells a deferring engine (Defer) what decoding the next record
// did to the registry, before the record is fed: n is the registry's Len
// after it, deleted the rows it deleted (Registry.TakeDeleted). It is
// called for every record, step records too.
func (e *Engine) Decoded(n int, deleted []int32) {
	d := &e.dfr
	d.len = n
	for _, idx := range deleted {
		for int(idx) >= len(d.dead) {
			d.dead = append(d.dead, false)
		}
		d.dead[idx] = true
	}
	d.deleted = append(d.deleted, deleted...)
}

// Released returns the tensor rows (for Registry.Release) and borrow
// indexes (for Registry.ReleaseBorrow) a deferring engine released since
// the last call, in the order it released them. The slices are valid
// until the next call into the engine.
func (e *Engine) Released() (rows, borrows []int32) {
	rows, borrows = e.dfr.rows, e.dfr.borrows
	e.dfr.rows, e.dfr.borrows = e.dfr.rows[:0], e.dfr.borrows[:0]
	return rows, borrows
}

// Undefer gives the registry back to the engine, once its owner has
// applied every release (Released) and decodes no more.
func (e *Engine) Undefer() {
	e.dfr.on = false
	e.reserveRows(e.dfr.len) // for the rows deleted and not yet recycled
}

// recycleDeferred is recycle while deferring: the same decisions, listed
// for Released instead of applied.
func (e *Engine) recycleDeferred() {
	d := &e.dfr
	e.reserveRows(d.len)
	for _, idx := range d.deleted {
		if e.tensorRows[idx] == 0 {
			e.forget(idx)
		}
	}
	d.deleted = d.deleted[:0]
	for _, idx := range e.gone {
		if e.tensorRows[idx] == 0 { // not made again since
			e.forget(idx)
		}
	}
	e.gone = e.gone[:0]
	for _, b := range e.borGone {
		if e.borrowGroups[b] == 0 {
			d.borrows = append(d.borrows, b)
		}
	}
	e.borGone = e.borGone[:0]
}
