package replay

import (
	"io"

	"golang.org/x/sync/errgroup"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/batchring"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/values"
)

// A pipelined replay (Run with Jobs > 1) decodes on a goroutine of its own
// while the engine runs on the caller's: in a grouped replay decoding is
// about half the work, so the two overlap. Records travel in batches
// through a ring of batches that are reused, so nothing is allocated per
// record and a record's slices keep their capacity; the two goroutines
// meet once a batch, under a mutex, and one that must wait for the other
// parks (it does not spin: on a shared machine a spinning goroutine takes
// a core from the one it waits for).
//
// The reader's registry is written by the decoder alone. The engine does
// not release indexes there as it does serially (sched.Engine.Defer): the
// decoder notes for each record what its decoding did to the registry
// (its Len, the rows it deleted), the engine lists the releases it
// decides, in order, and the decoder applies them when the batch comes
// back to it, before decoding into it again. A tensor id is unmapped when
// its record is decoded (Registry.Delete) in both ways, so only the reuse
// of a row is later, which no result depends on. A borrow's id, though,
// stays mapped until its index is released: a record decoded before the
// release reaches the decoder may already have named the borrow's id
// again and got the old index, where the serial replay gives a fresh one.
// Then the release is dropped and the old index serves as the fresh one
// would: the engine holds nothing at a released borrow index.
//
// What a record holds must stay valid until the engine has run it: its
// slices are the batch's own (Ranks, Msg's lists), strings are immutable,
// and tensor shapes point into the registry's rows, which are not reused
// before the engine releases them. Only raw JSON text (Tree.Raw, a binary
// tree's template Tree.Tmpl, extra fields) aliases the reader's buffers
// (a tree's Forms are the record's own): replays that read it (a hardware
// model prices ops from their arguments, a cost model or EachCommand may
// look at anything) run serially.
//
// The engine sees records a batch at a time, and after it stops Run waits
// for the decoder to finish the record it is reading. From a file that is
// at once; from a live stream (standard input a program is still writing)
// a batch goes to the engine as soon as the decoder has read all the
// input there is, and a stop returns once the stream gives a record or
// ends.

// Batches are of tens of records, so that the goroutines meet seldom, and
// the ring holds several, so that either side can run ahead for a while
// (the engine's work per record varies: a step's settlement, a held run
// of Reduces applied at once); internal/batchring says when a waiting
// goroutine is woken. (Variables so that a test can make batches of one
// record and a ring of two.)
var (
	batchRecords = 64
	ringBatches  = 16
)

// batch is a run of decoded records, what decoding them did to the
// registry, and the releases the engine decided while running them.
type batch struct {
	recs  []history.Record
	first int64 // sequence number of recs[0]
	n     int   // records decoded
	err   error // what ended the decoding after recs[:n] (io.EOF: the end), or nil

	lens  []int32 // by record: the registry's Len once it was decoded
	delAt []int32 // by record: where its deleted rows start in del; one more at the end
	del   []int32

	rows   []int32 // tensor rows the engine released, for Registry.Release
	bors   []int32 // borrow indexes it released, for Registry.ReleaseBorrow
	borSeq []int64 // by bors: the sequence number of the record it was released after
}

// engineJobs is the engine's share of Options.Jobs when Run may decode on
// a goroutine of its own.
func engineJobs(opt *Options) int {
	if opt.Jobs > 1 && pipelinable(opt) {
		return opt.Jobs - 1
	}
	return opt.Jobs
}

// pipelinable reports whether what opt sets reads only what a record keeps
// until the engine has run it (see above).
func pipelinable(o *Options) bool {
	return o.Hardware == nil && o.Model == nil && (o.Costs == nil || o.Costs.Roofline() == nil) && o.EachCommand == nil
}

// pipelined reports whether Run decodes on a goroutine of its own.
func (s *Sim) pipelined() bool {
	return s.opt.Jobs > 1 && pipelinable(&s.opt) && s.res.Records == 0 && s.treg == nil && len(s.res.Steps) == 0
}

// ring is the batches in flight between the decoder (the producer) and
// the engine.
type ring = batchring.Ring[batch]

func newRing(n, records int) *ring {
	return batchring.New(n, func(b *batch) { b.recs = make([]history.Record, records) })
}

// runPipelined is Run with the decoding on its own goroutine.
func (s *Sim) runPipelined(r *history.Reader) error {
	reg := r.Registry()
	q := newRing(max(ringBatches, 2), batchRecords)
	s.eng.Defer(reg)
	dec := &decoder{r: r, reg: reg}
	var g errgroup.Group
	g.Go(func() error { dec.run(q); return nil })
	err := s.consume(reg, q)
	q.Stop()
	_ = g.Wait() // the decoder returns no error: a decode error travels in its batch
	// The registry is the engine's again, once every release is applied.
	q.Each(dec.apply)
	s.eng.Undefer()
	return err
}

// consume runs the batches in order on the engine until the history ends,
// a record fails or the replay stops.
func (s *Sim) consume(reg *values.Registry, q *ring) error {
	for {
		b := q.Next()
		for i := 0; i < b.n; i++ {
			s.eng.Decoded(int(b.lens[i]), b.del[b.delAt[i]:b.delAt[i+1]])
			err := s.Feed(&b.recs[i], reg)
			s.takeReleases(b, i)
			if err != nil {
				if err == ErrStopped && s.res.Partial {
					return nil
				}
				return err
			}
		}
		if b.err != nil && b.err != io.EOF && s.stopAsked() {
			return s.stopAtInput()
		}
		switch b.err {
		case nil:
			q.Done()
		case io.EOF:
			return nil
		default:
			// A held command's own error comes first, as in Run.
			if ferr := s.eng.Flush(); ferr != nil {
				s.err = &history.Error{File: s.name, Line: heldLine(ferr, s.res.LastLine), Err: ferr}
				return s.err
			}
			return b.err
		}
	}
}

// takeReleases moves what the engine released while running record i of
// b into b, for the decoder.
func (s *Sim) takeReleases(b *batch, i int) {
	rows, bors := s.eng.Released()
	b.rows = append(b.rows, rows...)
	for _, bi := range bors {
		b.bors = append(b.bors, bi)
		b.borSeq = append(b.borSeq, b.first+int64(i))
	}
}

// decoder is the decoding side of a pipelined replay.
type decoder struct {
	r        *history.Reader
	reg      *values.Registry
	seq      int64   // records decoded
	lastSeen []int64 // by borrow index: 1 + the sequence number of the last record naming it
}

// run decodes into the ring's free batches and gives them to the engine,
// until the history ends or fails (the last batch says which), or the
// engine stops.
//
// A panic while decoding becomes the error of the batch being filled
// (sched.ErrInternal), which goes to the engine as a decoding error
// does: the engine waits for that batch, and the process would otherwise
// end with a stack dump.
func (d *decoder) run(q *ring) {
	var b *batch // being filled, not yet given
	var err error
	defer func() { // runs after RecoverInternal, deferred below it
		if err != nil && b != nil {
			b.err = err
			q.Give(true)
		}
	}()
	defer sched.RecoverInternal(&err)
	for {
		b = q.Free()
		if b == nil {
			return
		}
		d.apply(b)
		b.first, b.n, b.err = d.seq, 0, nil
		b.lens, b.delAt, b.del = b.lens[:0], append(b.delAt[:0], 0), b.del[:0]
		flush := false
		for b.n < len(b.recs) {
			if b.n > 0 && d.r.Buffered() == 0 {
				// The next record may wait for its source: hand over
				// what is decoded, so a live stream's records reach
				// the engine as they come.
				flush = true
				break
			}
			rec := &b.recs[b.n]
			if err := d.r.Next(rec); err != nil {
				b.err = err
				break
			}
			b.lens = append(b.lens, int32(d.reg.Len()))
			b.del = append(b.del, d.reg.TakeDeleted()...)
			b.delAt = append(b.delAt, int32(len(b.del)))
			if !rec.IsStep {
				d.seen(&rec.Msg)
			}
			d.seq++
			b.n++
		}
		last := b.err != nil
		b = nil
		q.Give(last || flush)
		if last {
			return
		}
	}
}

// apply makes the releases the engine listed in b, in order, and empties
// the lists.
func (d *decoder) apply(b *batch) {
	for _, idx := range b.rows {
		d.reg.Release(idx)
	}
	for k, bi := range b.bors {
		// Named again by a record decoded after the release was decided:
		// that record holds the index (see above).
		if int(bi) < len(d.lastSeen) && d.lastSeen[bi] > b.borSeq[k]+1 {
			continue
		}
		d.reg.ReleaseBorrow(bi)
	}
	b.rows, b.bors, b.borSeq = b.rows[:0], b.bors[:0], b.borSeq[:0]
}

// seen notes the borrow indexes message m (record d.seq) names.
func (d *decoder) seen(m *gen.Msg) {
	switch m.Kind {
	case gen.MsgBorrowCreate:
		d.see(m.BorrowCreate.BorrowIdx)
	case gen.MsgBorrowFirstUse:
		d.see(m.BorrowFirstUse.BorrowIdx)
	case gen.MsgBorrowLastUse:
		d.see(m.BorrowLastUse.BorrowIdx)
	case gen.MsgBorrowDrop:
		d.see(m.BorrowDrop.BorrowIdx)
	case gen.MsgCommandGroup:
		d.seenIn(&m.CommandGroup.Commands)
	}
}

func (d *decoder) seenIn(l *gen.Msgs) {
	for i := 0; i < l.Len(); i++ {
		switch l.Kind(i) {
		case gen.MsgBorrowCreate:
			d.see(l.BorrowCreateAt(i).BorrowIdx)
		case gen.MsgBorrowFirstUse:
			d.see(l.BorrowFirstUseAt(i).BorrowIdx)
		case gen.MsgBorrowLastUse:
			d.see(l.BorrowLastUseAt(i).BorrowIdx)
		case gen.MsgBorrowDrop:
			d.see(l.BorrowDropAt(i).BorrowIdx)
		case gen.MsgCommandGroup:
			d.seenIn(&l.CommandGroupAt(i).Commands)
		}
	}
}

func (d *decoder) see(bi int32) {
	if bi < 0 {
		return
	}
	for int(bi) >= len(d.lastSeen) {
		d.lastSeen = append(d.lastSeen, 0)
	}
	d.lastSeen[bi] = d.seq + 1
}
