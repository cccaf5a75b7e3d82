package workload

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/values"
)

// A piped emission (EmitStatsPiped) runs the generator on a goroutine of
// its own and the sink (a replay) on the caller's, so that on two cores
// writing a history and simulating it overlap: the run takes about as
// long as the slower of the two instead of their sum.
//
// The generator shares nothing with the sink but what it hands over. It
// writes records with no registry (Sink.Write(rec, nil)): the sink gives
// their tensors dense indexes with a registry of its own, and the
// generator never reads what the sink writes into a record (its Idx
// fields), nor anything else of the sink's but the errors it returns. So
// each record is copied into a batch whose slices are the batch's own
// (ranks, trees' text and leaves, lists); the rest of a record is values
// or points at what the generator never changes once made (strings, a
// tensor's shape, a rank slice's sizes and strides, a recording's
// lists). A replayed layer pass is handed over as one item (its
// recording, its stage, its inputs, where its ids start): the sink's
// goroutine asks the sink to apply it as one step (PassSink.BeginPass)
// and, if it does not, writes the pass's records there from the
// recording, as the generator would have. What the generator does after
// a pass never depends on whether the sink applied it, so it goes on at
// once.
//
// Batches travel through a fixed ring of batches reused from one to the
// next (their slices keep their capacity, so nothing is allocated per
// record in steady state); a goroutine that waits for a batch parks. A sink's first error is handed back to the
// generator, whose next write returns it, so that it stops within a stage
// action (runStep checks for a write error after each), and the sink's
// goroutine reads the rest of the batches without applying them until
// the generator has ended: the generator's goroutine never outlives the
// call.

// Batches of a few hundred items, so that the goroutines meet seldom, in
// a ring of several, so that either side can run ahead for a while (the
// engine's work per record varies: a step's settlement, a held run of
// Reduces applied at once). Variables so that a test can make batches of
// one item and a ring of two.
var (
	pipeItems = 128
	pipeRing  = 8
)

// pipeItem is one record or one replayed pass, handed over.
type pipeItem struct {
	rec history.Record // a record, when t is nil

	// A replayed pass (t not nil): its recording, stage, the pass as the
	// sink is told of it (Ins are the item's own), its first command's ts
	// and the last borrow id before it.
	t     *template
	ctx   passCtx
	pass  sched.Pass
	ts0   int64
	baseB int64
	step  int64 // the record's Step as the generator left it (meaningless but copied)

	// The item's own slices, which the record's point into.
	ranks                       []values.Slice
	argLv, kwLv, resLv, mut     []values.Tensor
	argRaw, kwRaw, resRaw       []byte
	argTmpl, kwTmpl, resTmpl    []byte
	argForms, kwForms, resForms []byte
	dims                        []string
	refs                        []int64
	refsIdx                     []int32
	ins                         []values.Tensor
	extra                       pipeExtras
	recExtra                    pipeExtras
}

// pipeExtras are the item's own slices of a values.Extras.
type pipeExtras struct {
	order []uint8
	keys  []string
	vals  [][]byte
	text  []byte
}

// pipeBatch is a run of items.
type pipeBatch struct {
	items []pipeItem
	n     int
}

// pipeRingQ is the batches in flight: bufs[head..tail) (modulo its
// length) are filled and wait for the sink's goroutine, the others belong
// to the generator. A goroutine that waits parks, and is woken only once
// the ring is half full (for the sink) or half free (for the generator),
// or the generator has ended: on a shared machine a woken thread may wait
// a scheduling slice for a core, so each wake-up should bring a long run
// of work, not one batch.
type pipeRingQ struct {
	mu         sync.Mutex
	filled     sync.Cond // the sink's goroutine waits on it for filled batches
	emptied    sync.Cond // the generator waits on it for free ones
	bufs       []pipeBatch
	head, tail int  // batches taken by the sink, and given by the generator, so far
	sinkWaits  bool // the sink's goroutine waits on filled
	genWaits   bool // the generator waits on emptied
	ended      bool // the generator gives no more batches
}

func newPipeRing(n, items int) *pipeRingQ {
	q := &pipeRingQ{bufs: make([]pipeBatch, n)}
	q.filled.L, q.emptied.L = &q.mu, &q.mu
	for i := range q.bufs {
		q.bufs[i].items = make([]pipeItem, items)
	}
	return q
}

// free waits for a batch the generator may fill.
func (q *pipeRingQ) free() *pipeBatch {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.tail-q.head == len(q.bufs) {
		q.genWaits = true
		q.emptied.Wait()
	}
	b := &q.bufs[q.tail%len(q.bufs)]
	b.n = 0
	return b
}

// give hands the batch free returned to the sink's goroutine.
func (q *pipeRingQ) give() {
	q.mu.Lock()
	q.tail++
	if q.sinkWaits && 2*(q.tail-q.head) >= len(q.bufs) {
		q.sinkWaits = false
		q.filled.Signal()
	}
	q.mu.Unlock()
}

// end says the generator gives no more batches.
func (q *pipeRingQ) end() {
	q.mu.Lock()
	q.ended = true
	q.sinkWaits = false
	q.filled.Signal()
	q.mu.Unlock()
}

// next waits for the next filled batch; nil once the generator has ended
// and every batch was taken.
func (q *pipeRingQ) next() *pipeBatch {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.tail == q.head && !q.ended {
		q.sinkWaits = true
		q.filled.Wait()
	}
	if q.tail == q.head {
		return nil
	}
	return &q.bufs[q.head%len(q.bufs)]
}

// done hands the batch next returned back to the generator.
func (q *pipeRingQ) done() {
	q.mu.Lock()
	q.head++
	if q.genWaits && 2*(len(q.bufs)-(q.tail-q.head)) >= len(q.bufs) {
		q.genWaits = false
		q.emptied.Signal()
	}
	q.mu.Unlock()
}

// pipeWriter is the generator's sink in a piped emission: it copies what
// it is given into batches and hands them over.
type pipeWriter struct {
	q   *pipeRingQ
	cur *pipeBatch
	// fail holds the sink's first error, set by the sink's goroutine.
	fail atomic.Pointer[error]
	// refused counts the records and passes refused once it was set.
	refused int64
}

// errPipeKind is returned for a record of a kind a piped emission cannot
// hand over (one the generator never writes).
var errPipeKind = errors.New("workload: a piped emission cannot hand over this message kind")

// item returns the next free item of the current batch, handing the batch
// over when it is full.
func (w *pipeWriter) item() *pipeItem {
	if w.cur != nil && w.cur.n == len(w.cur.items) {
		w.send()
	}
	if w.cur == nil {
		w.cur = w.q.free()
	}
	it := &w.cur.items[w.cur.n]
	w.cur.n++
	return it
}

// send hands the current batch over, if it holds anything.
func (w *pipeWriter) send() {
	if w.cur != nil && w.cur.n > 0 {
		w.q.give()
		w.cur = nil
	}
}

// failed returns the sink's first error, or nil.
func (w *pipeWriter) failed() error {
	if p := w.fail.Load(); p != nil {
		return *p
	}
	return nil
}

// Write copies rec into the current batch (reg must be nil: the
// generator's records carry their tensors' fields in every mention).
func (w *pipeWriter) Write(rec *history.Record, reg *values.Registry) error {
	if err := w.failed(); err != nil {
		w.refused++
		return err
	}
	if reg != nil {
		return fmt.Errorf("workload: a piped emission hands over records without a registry")
	}
	it := w.item()
	it.t = nil
	if err := it.copyRecord(rec); err != nil {
		w.cur.n-- // not handed over
		return err
	}
	return nil
}

// BeginPass and EndPass make a pipeWriter a PassSink, so that the
// generator hands its replayed passes over as items (pass); the emitter
// calls pass, not BeginPass.
func (w *pipeWriter) BeginPass(p *sched.Pass) bool { return false }

// EndPass: see BeginPass.
func (w *pipeWriter) EndPass() {}

// pass hands over replayed pass t on ctx's stage, as p describes it to a
// PassSink, its first command at ts0, baseB the last borrow id before it,
// step the Step its records carry.
func (w *pipeWriter) pass(t *template, ctx passCtx, p *sched.Pass, ts0, baseB, step int64) {
	if w.failed() != nil {
		w.refused++
		return
	}
	it := w.item()
	it.t, it.ctx, it.ts0, it.baseB, it.step = t, ctx, ts0, baseB, step
	it.pass = *p
	it.ins = append(it.ins[:0], p.Ins...)
	it.pass.Ins = it.ins
}

// keep copies src into *buf, reusing its capacity, and returns the copy
// (nil for nil, so that a list that was absent stays absent).
func keep[T any](buf *[]T, src []T) []T {
	if src == nil {
		return nil
	}
	*buf = append((*buf)[:0], src...)
	return *buf
}

func keepTree(t values.Tree, lv *[]values.Tensor, raw, tmpl, forms *[]byte) values.Tree {
	return values.Tree{Leaves: keep(lv, t.Leaves), Raw: keep(raw, t.Raw), Tmpl: keep(tmpl, t.Tmpl), Forms: keep(forms, t.Forms)}
}

func (x *pipeExtras) keep(e values.Extras) values.Extras {
	if len(e.Order) == 0 && len(e.Keys) == 0 && len(e.Vals) == 0 {
		return values.Extras{} // none (the emitter's are emptied, not nil)
	}
	out := values.Extras{Order: keep(&x.order, e.Order), Keys: keep(&x.keys, e.Keys)}
	if e.Vals == nil {
		return out
	}
	x.text = x.text[:0]
	for _, v := range e.Vals {
		x.text = append(x.text, v...)
	}
	x.vals = x.vals[:0]
	at := 0
	for _, v := range e.Vals {
		x.vals = append(x.vals, x.text[at:at+len(v):at+len(v)])
		at += len(v)
	}
	out.Vals = x.vals
	return out
}

// copyRecord makes it.rec a copy of src whose slices are the item's own.
// Only the message named by Kind is copied (the others are meaningless).
func (it *pipeItem) copyRecord(src *history.Record) error {
	r := &it.rec
	r.Line, r.IsStep, r.Step, r.Ts = src.Line, src.IsStep, src.Step, src.Ts
	r.Ranks = keep(&it.ranks, src.Ranks)
	r.Extra = it.recExtra.keep(src.Extra)
	m, s := &r.Msg, &src.Msg
	m.Kind, m.TypeName = s.Kind, s.TypeName
	m.Extra = it.extra.keep(s.Extra)
	switch s.Kind {
	case gen.MsgInvalid, gen.MsgCreateDeviceMesh:
	case gen.MsgCreateStream:
		m.CreateStream = s.CreateStream
	case gen.MsgCallFunction:
		c := s.CallFunction
		c.Args = keepTree(c.Args, &it.argLv, &it.argRaw, &it.argTmpl, &it.argForms)
		c.Kwargs = keepTree(c.Kwargs, &it.kwLv, &it.kwRaw, &it.kwTmpl, &it.kwForms)
		c.Result = keepTree(c.Result, &it.resLv, &it.resRaw, &it.resTmpl, &it.resForms)
		c.Mutates = keep(&it.mut, c.Mutates)
		m.CallFunction = c
	case gen.MsgSendTensor:
		m.SendTensor = s.SendTensor
	case gen.MsgReduce:
		m.Reduce = s.Reduce
		m.Reduce.Dims = keep(&it.dims, s.Reduce.Dims)
	case gen.MsgBorrowCreate:
		m.BorrowCreate = s.BorrowCreate
	case gen.MsgBorrowFirstUse:
		m.BorrowFirstUse = s.BorrowFirstUse
	case gen.MsgBorrowLastUse:
		m.BorrowLastUse = s.BorrowLastUse
	case gen.MsgBorrowDrop:
		m.BorrowDrop = s.BorrowDrop
	case gen.MsgDeleteRefs:
		m.DeleteRefs = gen.DeleteRefs{Refs: keep(&it.refs, s.DeleteRefs.Refs), RefsIdx: keep(&it.refsIdx, s.DeleteRefs.RefsIdx)}
	case gen.MsgPipeRecv:
		p := s.PipeRecv
		p.Result = keepTree(p.Result, &it.resLv, &it.resRaw, &it.resTmpl, &it.resForms)
		m.PipeRecv = p
	default:
		return fmt.Errorf("%w (%s)", errPipeKind, s.TypeName)
	}
	return nil
}

// EmitStatsPiped is EmitStats with the generator on a goroutine of its
// own, handing the records to sink, in order, on the caller's goroutine;
// passes are offered to a PassSink as EmitStats offers them. The sink
// sees the same calls as from EmitStats up to its first error, and none
// after it (EmitStats goes on writing to the end of the stage action).
// The error is the sink's first, else the generator's own.
func EmitStatsPiped(j Job, sink Sink) (Stats, error) {
	st, _, err := emitPiped(j, sink)
	return st, err
}

// emitPiped is EmitStatsPiped; it also returns how many records and
// passes the generator wrote after the sink had failed (which it refused).
func emitPiped(j Job, sink Sink) (Stats, int64, error) {
	q := newPipeRing(max(pipeRing, 2), max(pipeItems, 1))
	w := &pipeWriter{q: q}
	var st Stats
	var g errgroup.Group
	g.Go(func() error {
		defer q.end()
		s, _, err := emitStats(j, w, true)
		w.send() // what was written before an error was written serially too
		st = s
		return err
	})
	ps, _ := sink.(PassSink)
	ce := emitter{w: sink}
	var serr error
	for b := q.next(); b != nil; b = q.next() {
		for i := 0; i < b.n && serr == nil; i++ {
			serr = ce.apply(&b.items[i], ps)
			if serr != nil {
				w.fail.Store(&serr)
			}
		}
		q.done()
	}
	gerr := g.Wait()
	if serr != nil {
		return Stats{}, w.refused, serr
	}
	if gerr != nil {
		return Stats{}, w.refused, gerr
	}
	return st, w.refused, nil
}

// apply gives one handed-over item to e's sink (ps, when it is one).
func (e *emitter) apply(it *pipeItem, ps PassSink) error {
	if it.t == nil {
		return e.w.Write(&it.rec, nil)
	}
	if ps != nil && ps.BeginPass(&it.pass) {
		return nil
	}
	e.callErr = nil
	e.rp.start(it.t, it.pass.Ins, it.pass.Base)
	e.rp.insB, e.rp.baseB = nil, it.baseB
	e.rec.Step = it.step
	e.writePass(it.t, it.ctx, it.ts0)
	e.rp.ins = nil
	if ps != nil {
		ps.EndPass()
	}
	return e.callErr
}
