package workload

import (
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/batchring"
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
// each record is copied into a batch, its lists (ranks, trees' text and
// leaves, deletions, dims) into the batch's own arrays; the rest of a
// record is values or points at what the generator never changes once
// made (strings, a tensor's shape, a rank slice's sizes and strides, a
// recording's lists). A replayed layer pass is handed over as one item
// (its recording, its stage, its inputs, where its ids start): the
// sink's goroutine asks the sink to apply it as one step
// (PassSink.BeginPass) and, if it does not, writes the pass's records
// there from the recording, as the generator would have. What the
// generator does after a pass never depends on whether the sink applied
// it, so it goes on at once.
//
// Batches travel through a fixed ring of batches reused from one to the
// next (their arrays keep their capacity, so nothing is allocated per
// record in steady state); a goroutine that waits for a batch parks. A
// sink's first error is handed back to the generator, whose next write
// returns it, so that it stops within a stage action (runStep checks for
// a write error after each), and the sink's goroutine reads the rest of
// the batches without applying them until the generator has ended: the
// generator's goroutine never outlives the call.

// Batches of a hundred items or so, so that the goroutines meet seldom
// while a batch's arrays stay small (some 100 KiB), in a ring of several
// (internal/batchring), as the pipelined replay's. Variables so that a
// test can make batches of one item and a ring of two.
var (
	pipeItems = 128
	pipeRing  = 8
)

// A batch keeps what its items hold in a few arrays of its own, filled in
// order (arenas), which the sink's goroutine reads in order: a record's
// lists are spans of them, not slices of their own, so that handing a
// record over touches a few cache lines, next to the previous record's.

// arenaSpan is a run of an arena: [at, at+n), or nil when n < 0.
type arenaSpan struct{ at, n int32 }

// noArenaSpan stands for a nil slice.
var noArenaSpan = arenaSpan{n: -1}

// pipeItem is one record or one replayed pass, handed over: its header,
// and where in the batch the rest of it lies.
type pipeItem struct {
	ts, step, line int64
	isStep         bool
	kind           gen.MsgKind
	name           string
	ranks          arenaSpan
	at             int32 // its message in the batch's array of its kind, or its pass in passes (kind pipePass)
	extra          int32 // its record's and message's extras in extras (-1: none)
}

// pipePass is the kind of an item that is a replayed pass.
const pipePass = gen.MsgKind(255)

// pipeCall is a CallFunction whose lists are spans of the batch.
type pipeCall struct {
	c                 gen.CallFunction // its slices nil
	args, kwargs, res pipeTree
	mutates           arenaSpan
}

// pipeTree is a values.Tree whose slices are spans of the batch.
type pipeTree struct{ leaves, raw, tmpl, forms arenaSpan }

// pipeReduce is a Reduce whose Dims are a arenaSpan of the batch's strings.
type pipeReduce struct {
	r    gen.Reduce // Dims nil
	dims arenaSpan
}

// pipeRefs is a DeleteRefs as spans of the batch.
type pipeRefs struct{ refs, idx arenaSpan }

// pipeRecv is a PipeRecv whose tree is spans of the batch.
type pipeRecv struct {
	p   gen.PipeRecv // Result nil
	res pipeTree
}

// pipePassItem is a replayed pass (see pipeWriter.pass).
type pipePassItem struct {
	t     *template
	ctx   passCtx
	pass  sched.Pass // Ins nil: ins
	ins   arenaSpan
	ts0   int64
	baseB int64
}

// pipeExtra is a record's and its message's extras, whole (rare: the
// mesh's dimension names).
type pipeExtra struct{ rec, msg values.Extras }

// pipeBatch is a run of items and the arenas their lists lie in.
type pipeBatch struct {
	items []pipeItem
	n     int

	tensors []values.Tensor
	text    []byte
	slices  []values.Slice
	ints    []int64
	int32s  []int32
	strs    []string
	calls   []pipeCall
	sends   []gen.SendTensor
	reduces []pipeReduce
	creates []gen.BorrowCreate
	borrows []int64 // BorrowFirstUse, BorrowLastUse, BorrowDrop: the borrow
	bidx    []int32 // and its index
	refs    []pipeRefs
	recvs   []pipeRecv
	streams []gen.CreateStream
	passes  []pipePassItem
	extras  []pipeExtra
}

// reset empties b for filling, keeping its arrays.
func (b *pipeBatch) reset() {
	b.n = 0
	b.tensors, b.text, b.slices, b.ints, b.int32s, b.strs = b.tensors[:0], b.text[:0], b.slices[:0], b.ints[:0], b.int32s[:0], b.strs[:0]
	b.calls, b.sends, b.reduces, b.creates, b.borrows, b.bidx = b.calls[:0], b.sends[:0], b.reduces[:0], b.creates[:0], b.borrows[:0], b.bidx[:0]
	b.refs, b.recvs, b.streams, b.passes = b.refs[:0], b.recvs[:0], b.streams[:0], b.passes[:0]
	clear(b.extras) // they hold slices of their own
	b.extras = b.extras[:0]
}

// put appends src to *arena and returns its arenaSpan.
func put[T any](arena *[]T, src []T) arenaSpan {
	if src == nil {
		return noArenaSpan
	}
	at := len(*arena)
	*arena = append(*arena, src...)
	return arenaSpan{at: int32(at), n: int32(len(src))}
}

// get is arenaSpan sp of arena (capped, so that an append to it copies).
func get[T any](arena []T, sp arenaSpan) []T {
	if sp.n < 0 {
		return nil
	}
	e := sp.at + sp.n
	return arena[sp.at:e:e]
}

func (b *pipeBatch) putTree(t *values.Tree) pipeTree {
	return pipeTree{leaves: put(&b.tensors, t.Leaves), raw: put(&b.text, t.Raw), tmpl: put(&b.text, t.Tmpl), forms: put(&b.text, t.Forms)}
}

func (b *pipeBatch) tree(t pipeTree) values.Tree {
	return values.Tree{Leaves: get(b.tensors, t.leaves), Raw: get(b.text, t.raw), Tmpl: get(b.text, t.tmpl), Forms: get(b.text, t.forms)}
}

// copyExtras is a copy of e with slices of its own (nil for none).
func copyExtras(e values.Extras) values.Extras {
	out := values.Extras{Order: append([]uint8(nil), e.Order...), Keys: append([]string(nil), e.Keys...)}
	for _, v := range e.Vals {
		out.Vals = append(out.Vals, append([]byte(nil), v...))
	}
	return out
}

func emptyExtras(e *values.Extras) bool {
	return len(e.Order) == 0 && len(e.Keys) == 0 && len(e.Vals) == 0
}

// put adds record src to b as item it.
func (b *pipeBatch) put(it *pipeItem, src *history.Record) error {
	it.ts, it.step, it.line, it.isStep = src.Ts, src.Step, src.Line, src.IsStep
	it.ranks = put(&b.slices, src.Ranks)
	m := &src.Msg
	it.kind, it.name, it.extra = m.Kind, m.TypeName, -1
	if !emptyExtras(&m.Extra) || !emptyExtras(&src.Extra) {
		it.extra = int32(len(b.extras))
		b.extras = append(b.extras, pipeExtra{rec: copyExtras(src.Extra), msg: copyExtras(m.Extra)})
	}
	switch m.Kind {
	case gen.MsgInvalid, gen.MsgCreateDeviceMesh:
	case gen.MsgCreateStream:
		it.at = int32(len(b.streams))
		b.streams = append(b.streams, m.CreateStream)
	case gen.MsgCallFunction:
		it.at = int32(len(b.calls))
		c := &m.CallFunction
		pc := pipeCall{c: *c, args: b.putTree(&c.Args), kwargs: b.putTree(&c.Kwargs), res: b.putTree(&c.Result), mutates: put(&b.tensors, c.Mutates)}
		pc.c.Args, pc.c.Kwargs, pc.c.Result, pc.c.Mutates = values.Tree{}, values.Tree{}, values.Tree{}, nil
		b.calls = append(b.calls, pc)
	case gen.MsgSendTensor:
		it.at = int32(len(b.sends))
		b.sends = append(b.sends, m.SendTensor)
	case gen.MsgReduce:
		it.at = int32(len(b.reduces))
		pr := pipeReduce{r: m.Reduce, dims: put(&b.strs, m.Reduce.Dims)}
		pr.r.Dims = nil
		b.reduces = append(b.reduces, pr)
	case gen.MsgBorrowCreate:
		it.at = int32(len(b.creates))
		b.creates = append(b.creates, m.BorrowCreate)
	case gen.MsgBorrowFirstUse:
		it.at = int32(len(b.borrows))
		b.borrows, b.bidx = append(b.borrows, m.BorrowFirstUse.Borrow), append(b.bidx, m.BorrowFirstUse.BorrowIdx)
	case gen.MsgBorrowLastUse:
		it.at = int32(len(b.borrows))
		b.borrows, b.bidx = append(b.borrows, m.BorrowLastUse.Borrow), append(b.bidx, m.BorrowLastUse.BorrowIdx)
	case gen.MsgBorrowDrop:
		it.at = int32(len(b.borrows))
		b.borrows, b.bidx = append(b.borrows, m.BorrowDrop.Borrow), append(b.bidx, m.BorrowDrop.BorrowIdx)
	case gen.MsgDeleteRefs:
		it.at = int32(len(b.refs))
		b.refs = append(b.refs, pipeRefs{refs: put(&b.ints, m.DeleteRefs.Refs), idx: put(&b.int32s, m.DeleteRefs.RefsIdx)})
	case gen.MsgPipeRecv:
		it.at = int32(len(b.recvs))
		pr := pipeRecv{p: m.PipeRecv, res: b.putTree(&m.PipeRecv.Result)}
		pr.p.Result = values.Tree{}
		b.recvs = append(b.recvs, pr)
	default:
		return fmt.Errorf("%w (%s)", errPipeKind, m.TypeName)
	}
	return nil
}

// record sets r to item it of b: its slices are spans of b's arenas,
// valid until b is filled again. Only the message named by Kind is set
// (the others are meaningless).
func (b *pipeBatch) record(r *history.Record, it *pipeItem) {
	r.Ts, r.Step, r.Line, r.IsStep = it.ts, it.step, it.line, it.isStep
	r.Ranks = get(b.slices, it.ranks)
	m := &r.Msg
	m.Kind, m.TypeName = it.kind, it.name
	r.Extra, m.Extra = values.Extras{}, values.Extras{}
	if it.extra >= 0 {
		x := &b.extras[it.extra]
		r.Extra, m.Extra = x.rec, x.msg
	}
	switch it.kind {
	case gen.MsgCreateStream:
		m.CreateStream = b.streams[it.at]
	case gen.MsgCallFunction:
		pc := &b.calls[it.at]
		m.CallFunction = pc.c
		c := &m.CallFunction
		c.Args, c.Kwargs, c.Result = b.tree(pc.args), b.tree(pc.kwargs), b.tree(pc.res)
		c.Mutates = get(b.tensors, pc.mutates)
	case gen.MsgSendTensor:
		m.SendTensor = b.sends[it.at]
	case gen.MsgReduce:
		pr := &b.reduces[it.at]
		m.Reduce = pr.r
		m.Reduce.Dims = get(b.strs, pr.dims)
	case gen.MsgBorrowCreate:
		m.BorrowCreate = b.creates[it.at]
	case gen.MsgBorrowFirstUse:
		m.BorrowFirstUse = gen.BorrowFirstUse{Borrow: b.borrows[it.at], BorrowIdx: b.bidx[it.at]}
	case gen.MsgBorrowLastUse:
		m.BorrowLastUse = gen.BorrowLastUse{Borrow: b.borrows[it.at], BorrowIdx: b.bidx[it.at]}
	case gen.MsgBorrowDrop:
		m.BorrowDrop = gen.BorrowDrop{Borrow: b.borrows[it.at], BorrowIdx: b.bidx[it.at]}
	case gen.MsgDeleteRefs:
		pr := &b.refs[it.at]
		m.DeleteRefs = gen.DeleteRefs{Refs: get(b.ints, pr.refs), RefsIdx: get(b.int32s, pr.idx)}
	case gen.MsgPipeRecv:
		pr := &b.recvs[it.at]
		m.PipeRecv = pr.p
		m.PipeRecv.Result = b.tree(pr.res)
	}
}

// pipeRingQ is the batches in flight from the generator (the producer)
// to the sink's goroutine.
type pipeRingQ = batchring.Ring[pipeBatch]

func newPipeRing(n, items int) *pipeRingQ {
	return batchring.New(n, func(b *pipeBatch) { b.items = make([]pipeItem, items) })
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
		w.cur = w.q.Free()
		w.cur.reset()
	}
	it := &w.cur.items[w.cur.n]
	w.cur.n++
	return it
}

// send hands the current batch over, if it holds anything.
func (w *pipeWriter) send() {
	if w.cur != nil && w.cur.n > 0 {
		w.q.Give(false)
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
	if err := w.cur.put(it, rec); err != nil {
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
	b := w.cur
	*it = pipeItem{kind: pipePass, at: int32(len(b.passes)), step: step, extra: -1}
	pp := pipePassItem{t: t, ctx: ctx, pass: *p, ins: put(&b.tensors, p.Ins), ts0: ts0, baseB: baseB}
	pp.pass.Ins = nil
	b.passes = append(b.passes, pp)
}

// EmitStatsPiped is EmitStats with the generator on a goroutine of its
// own, handing the records to sink, in order, on the caller's goroutine;
// passes are offered to a PassSink as EmitStats offers them. The sink
// sees the same calls as from EmitStats up to its first error and, after
// it, at most the rest of a recorded pass it was being written (EmitStats
// goes on writing to the end of the stage action). A panic of the sink's
// is its error (sched.ErrInternal). The error is the sink's first, else
// the generator's own.
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
	g.Go(func() (err error) {
		defer q.End()
		// A panic becomes an error (sched.ErrInternal), as on the
		// search's goroutines: the process would otherwise end with a
		// stack dump.
		defer sched.RecoverInternal(&err)
		var s Stats
		s, _, err = emitStats(j, w, emitOpts{templates: true})
		w.send() // what was written before an error was written serially too
		st = s
		return err
	})
	ps, _ := sink.(PassSink)
	ce := emitter{w: sink}
	var serr error
	var rec history.Record
	for b := q.Next(); b != nil; b = q.Next() {
		for i := 0; i < b.n && serr == nil; i++ {
			serr = ce.applySafe(b, &b.items[i], &rec, ps)
			if serr != nil {
				w.fail.Store(&serr)
			}
		}
		q.Done()
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

// applySafe is apply with a panic of the sink's turned into its error
// (sched.ErrInternal), so that the generator, told of it, stops and its
// goroutine ends before the call returns.
func (e *emitter) applySafe(b *pipeBatch, it *pipeItem, rec *history.Record, ps PassSink) (err error) {
	defer sched.RecoverInternal(&err)
	return e.apply(b, it, rec, ps)
}

// apply gives item it of batch b to e's sink (ps, when it is one); rec
// is the record a record item is set into.
func (e *emitter) apply(b *pipeBatch, it *pipeItem, rec *history.Record, ps PassSink) error {
	if it.kind != pipePass {
		b.record(rec, it)
		return e.w.Write(rec, nil)
	}
	pp := &b.passes[it.at]
	pp.pass.Ins = get(b.tensors, pp.ins)
	if ps != nil && ps.BeginPass(&pp.pass) {
		return nil
	}
	e.callErr = nil
	e.rp.start(pp.t, pp.pass.Ins, pp.pass.Base)
	e.rp.insB, e.rp.baseB = nil, pp.baseB
	e.rec.Step = it.step
	e.writePass(pp.t, pp.ctx, pp.ts0)
	e.rp.ins = nil
	if ps != nil {
		ps.EndPass()
	}
	return e.callErr
}
