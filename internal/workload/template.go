package workload

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"unsafe"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/values"
)

// PassSink is a Sink that can apply a recorded layer pass as one step (a
// replay, internal/replay's Sim): BeginPass is told of each replayed pass
// before its records and returns true if it applied the pass whole (its
// records are then not written); otherwise the records follow, then
// EndPass.
type PassSink interface {
	Sink
	BeginPass(p *sched.Pass) bool
	EndPass()
}

// A transformer layer's forward (or backward) on one stage writes the same
// commands every time, but for its tensor ids: the ids it makes are the
// next ones in order, and the ids it is given (its input, its weights,
// what the forward kept) are the only others it names; its ranks and its
// compute stream are its stage's. So the generator records one layer's
// commands once per pass (forward or backward) and recomputation policy,
// for every stage, with each id coded as "the k-th id made here" or "the
// id (or storage) of input k", each command's ranks as a place in the
// stage's slices, and writes every later layer of that kind by decoding
// the recording with the new ids on its own stage: no argument lists, no
// JSON built from values, no string formatting but the ids' own digits.
// The records written are exactly those the generator would write (a
// test compares the two streams record by record).
//
// A recording is used only where it is exact: the inputs must agree with
// the recorded ones in everything but their ids (sizes, dtypes, shapes,
// devices, which of them share ids or storages, which were mentioned
// before), and the layer must write only calls, collectives, loans
// (borrows, whose ids are coded as tensor ids are) and deletions, and
// begin with a command (not a deletion that could join pending ones).
// Otherwise the layer is generated as before.

// code is a tensor id in a recording: >= 0 the code-th id made by the
// layer, codeInput-2k the id of input k, codeInput-2k-1 its storage id;
// codeZero is no tensor (id 0).
type code int64

const (
	codeZero  code = -1
	codeInput code = -2
)

// bcode is a borrow id in a recording: >= 0 the bcode-th borrow made by
// the pass, < 0 input borrow -1-bcode.
type bcode int64

// tplTensor is a tensor in a recording: an input (whole, as given) or one
// the layer made (its ids coded, the rest as written).
type tplTensor struct {
	input   int // the input it is (isInput)
	id, st  code
	nbytes  int64
	dtype   string
	shape   []int64
	cpu     bool
	isInput bool
}

// tplRaw is a JSON tree as written, with the places of its ids.
type tplRaw struct {
	text  []byte
	holes []tplHole
}

// tplHole is an id written in a tree's text: text[at:at+n] is its digits.
type tplHole struct {
	at, n int
	id    code
}

// tplRec is one recorded command.
type tplRec struct {
	kind  gen.MsgKind
	name  string
	dts   int64   // ts after the layer's first command minus ts before it
	ranks []int32 // places in the stage's slices (stage.slices)
	// more is how many copies of a Reduce follow it, each to the next of
	// the stage's slices: a collective per group (reduceEach) is one
	// record in the recording, not one per group, which at a world of a
	// million ranks held gigabytes.
	more int32

	// CallFunction
	fn           string
	ident        code
	args, res    tplRaw
	argLv, resLv []tplTensor
	mutates      []tplTensor
	// The tensors as written with their ids left out (filled in by
	// replayer.fill).
	argProto, resProto, mutProto []values.Tensor
	stream                       values.Stream
	kwargsRaw                    []byte
	// Reduce
	reduction     string
	dims          []string
	scatter, inpl bool
	result, local tplTensor
	// DeleteRefs
	refs []code
	// BorrowCreate (result, local: its result and tensor) and the other
	// borrow messages
	borrow   bcode
	from, to values.Stream
}

// template is one recorded layer pass.
type template struct {
	never bool // the pass cannot be recorded exactly: always generate it

	ins      []values.Tensor // the inputs as recorded
	insB     []int64         // the input borrows as recorded
	insSig   []int32         // which inputs share ids and storages (sig)
	keys     []inKey         // what a replay's inputs must match, compactly
	seenOut  []int           // inputs mentioned by its end
	made     int64           // ids made
	madeB    int64           // borrow ids made
	madeSeen [][2]int64      // runs [lo, hi) of ids made (as codes) mentioned by its end
	dts      int64           // ts at the end minus ts before
	recs     []tplRec
	delRefs  []code      // deletions pending at the end
	delRanks int32       // on these ranks (a place in the stage's slices)
	outs     []tplTensor // the pass's results (layer output, saved tensors)
	outsB    []bcode     // the borrows among its results
	core     bool        // saved.core of a forward
	kept     int64       // saved.kept of a forward: its replays save the same tensors
	id       int32       // names it to a PassSink (1, 2, ...; 0: not kept)
	maxDts   int64       // the latest ts of its commands minus ts before
}

// tplKey names a recording: a forward (keep: it keeps what the backward
// needs) or a backward (keep: the forward kept the attention core). A
// recording serves every stage: the ranks of its commands are coded as
// places in the stage's slices (stage.slices), and its compute stream as
// the stage's, so one recording is replayed everywhere, which keeps the
// recordings few and their data in the caches.
type tplKey struct {
	fwd  bool
	keep bool
	// fresh: a backward whose layer holds no gradient yet this step
	// (Job.FP16Grads: its GEMMs write param.grad instead of adding to it).
	fresh bool
	// gather: the pass begins with the all-gather of its input, a
	// received shard (stage.gather).
	gather bool
}

// mainRef codes the compute stream of the stage in a recording's streams
// (stream refs are positive).
const mainRef = -1

// passCtx is the stage a pass runs on, as a recording sees it.
type passCtx struct {
	slices []values.Slice
	main   int64
	stage  int32 // the stage's index, which names its ranks to a PassSink
	// off, dp and tp, when tp > 0, say that slices are laid out as setup
	// lays out a stage's: all, then dp tensor-parallel groups, then tp
	// data-parallel ones (placeGrid).
	off, dp, tp int64
}

// place is the index of the first of c.slices equal to x, or -1.
func (c *passCtx) place(x *values.Slice) int32 {
	if c.tp > 0 {
		return c.placeGrid(x)
	}
	for k := range c.slices {
		if c.slices[k].Equal(x) {
			return int32(k)
		}
	}
	return -1
}

// placeGrid is place for a stage's slices, found from x's offset instead
// of by a scan: a pass writes a collective per group, so at a world of a
// million ranks a scan per record made recording a pass quadratic. The
// tensor-parallel group r starts at off+r·tp, the data-parallel group sh
// at off+sh; a slice equal to one of them has its offset, so the only
// candidates are all, the one tensor-parallel group and the one
// data-parallel group at x's offset, tried in the order of a scan.
func (c *passCtx) placeGrid(x *values.Slice) int32 {
	if c.slices[0].Equal(x) {
		return 0
	}
	d := x.Offset - c.off
	if d >= 0 && d%c.tp == 0 && d/c.tp < c.dp {
		if k := 1 + d/c.tp; c.slices[k].Equal(x) {
			return int32(k)
		}
	}
	if d >= 0 && d < c.tp {
		if k := 1 + c.dp + d; c.slices[k].Equal(x) {
			return int32(k)
		}
	}
	return -1
}

// recording is a pass being recorded by the emitter.
type recording struct {
	t        *template
	ctx      passCtx
	next0    int64
	borrow0  int64
	ts0      int64
	started  bool // a command has been written
	argHoles []rawHoleAt
	resHoles []rawHoleAt
	holes    *[]rawHoleAt
}

// rawHoleAt is an id the emitter wrote into a tree's text.
type rawHoleAt struct {
	at, n int
	id    int64
}

// sig describes which of ts share ids and storages: for each tensor, the
// first one with the same id, and the first whose id or storage is its
// storage (coded as 2j or 2j+1), so that two input lists with equal
// signatures code every id alike.
func sig(tab *sigTable, dst []int32, ts []values.Tensor) []int32 {
	dst = dst[:0]
	if len(ts) > maxSigHashed {
		return sigPairs(dst, ts)
	}
	// A small open-addressed table of the ids and storage ids seen so
	// far, each with the first tensor whose id (fid) or storage (fst) it
	// is: one probe a tensor instead of a scan of those before it (a
	// backward pass has some 40 inputs, and this runs before each).
	// The table is emptied by moving to its next generation, not by
	// clearing its 6 KiB, which showed in profiles of every pass.
	tab.gen++
	if tab.gen == 0 {
		clear(tab.slots[:])
		tab.gen = 1
	}
	gen := tab.gen
	mask := uint64(len(tab.slots) - 1)
	at := func(v int64) *sigSlot {
		for s := uint64(v) * 0x9e3779b97f4a7c15 >> 40 & mask; ; s = (s + 1) & mask {
			if sl := &tab.slots[s]; sl.gen != gen || sl.key == v {
				if sl.gen != gen {
					*sl = sigSlot{key: v, gen: gen, fid: -1, fst: -1}
				}
				return sl
			}
		}
	}
	for k := range ts {
		id := at(ts[k].ID)
		if id.fid < 0 {
			id.fid = int32(k)
		}
		first := id.fid
		// Most tensors are their storage's base: one probe finds both.
		so := id
		if ts[k].Storage != ts[k].ID {
			so = at(ts[k].Storage)
		}
		if so.fst < 0 {
			so.fst = int32(k)
		}
		// The first tensor, in order, whose id is the storage (2j) or
		// whose storage is (2j+1); tensor k's own storage bounds it.
		st := 2*so.fst + 1
		if so.fid >= 0 && so.fid <= so.fst {
			st = 2 * so.fid
		}
		dst = append(dst, first, st)
	}
	return dst
}

// maxSigHashed is the most tensors sig codes with its table; longer lists
// are compared pair by pair.
const maxSigHashed = 64

// sigSlot is a place of sig's table: a value (an id or a storage id) and
// the first tensor with that id and with that storage (-1: none yet); in
// use when gen is the table's.
type sigSlot struct {
	key      int64
	fid, fst int32
	gen      uint32
}

// sigTable is sig's table, kept between calls by its caller.
type sigTable struct {
	slots [4 * maxSigHashed]sigSlot
	gen   uint32
}

// sigPairs is sig by comparing every pair.
func sigPairs(dst []int32, ts []values.Tensor) []int32 {
	for k := range ts {
		first := int32(k)
		for j := 0; j < k; j++ {
			if ts[j].ID == ts[k].ID {
				first = int32(j)
				break
			}
		}
		st := int32(-1)
		for j := 0; j <= k && st < 0; j++ {
			switch {
			case ts[j].ID == ts[k].Storage:
				st = int32(2 * j)
			case ts[j].Storage == ts[k].Storage:
				st = int32(2*j + 1)
			}
		}
		dst = append(dst, first, st)
	}
	return dst
}

// sameFields reports whether a and b agree in everything but their ids.
func sameFields(a, b *values.Tensor) bool {
	return a.NBytes == b.NBytes && a.CPU == b.CPU && (a.ID == 0) == (b.ID == 0) &&
		sameString(a.Dtype, b.Dtype) && sameShape(a.Shape, b.Shape)
}

// sameString compares interned strings (dtypes) by their bytes' address
// first.
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// sameShape compares shapes; a replayed result shares its recording's
// shape slice, so the address answers first.
func sameShape(a, b []int64) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0] || slices.Equal(a, b))
}

// templatesOn reports whether layer passes may be recorded and replayed.
// State a pass takes from the passes before it or leaves to those after
// it is among its inputs and results: with ZeRO 2 and 3 the gradient
// bucket a backward pass makes, with ZeRO 3 the matrices gathered for the
// layer before, which the pass gives back, and its own.
func (g *generator) templatesOn() bool {
	return !g.noTemplates && !g.tplBusy
}

// inKey is what matches compares of a recorded input, in 32 bytes
// rather than a whole values.Tensor: a pass reads its template's keys once
// per replay, and a 1T model's templates, one pass of every stage after
// another, do not stay in the cache between two replays of one.
type inKey struct {
	nbytes int64
	dtype  *byte  // the dtype string's bytes (unsafe.StringData)
	shape  *int64 // the shape's first element (nil: no elements)
	rank   int32  // the shape's length
	dlen   uint8  // the dtype's length
	flags  uint8  // keyCPU, keyID, keySeen
}

const (
	keyCPU  = 1 << iota // the input is on the CPU
	keyID               // it has an id
	keySeen             // its id was mentioned before the pass
)

// keyOf is input in's key; false if the key cannot hold it (a dtype name
// longer than 255 bytes), when the pass is never replayed.
func keyOf(in *values.Tensor, seen bool) (inKey, bool) {
	k := inKey{nbytes: in.NBytes, dtype: unsafe.StringData(in.Dtype), rank: int32(len(in.Shape)), dlen: uint8(len(in.Dtype))}
	if len(in.Shape) > 0 {
		k.shape = &in.Shape[0]
	}
	if in.CPU {
		k.flags |= keyCPU
	}
	if in.ID != 0 {
		k.flags |= keyID
		if seen {
			k.flags |= keySeen
		}
	}
	return k, len(in.Dtype) <= math.MaxUint8 && len(in.Shape) <= math.MaxInt32
}

// matches reports whether the recording can be replayed with inputs ins.
func (t *template) matches(e *emitter, ins []values.Tensor, insB []int64, scratch *[]int32) bool {
	if t.never || len(ins) != len(t.keys) || len(insB) != len(t.insB) || e.sameTs {
		return false
	}
	keys := t.keys[:len(ins)]
	for k := range ins {
		// The fields sameFields compares, against the key: the recorded
		// tensor itself (t.ins) is read only for a dtype or shape equal
		// in value but not in address.
		a, b := &ins[k], &keys[k]
		f := uint8(0)
		if a.CPU {
			f |= keyCPU
		}
		if a.ID != 0 {
			f |= keyID
			if e.isSeen(a.ID) {
				f |= keySeen
			}
		}
		if a.NBytes != b.nbytes || f != b.flags || len(a.Dtype) != int(b.dlen) || len(a.Shape) != int(b.rank) {
			return false
		}
		if unsafe.StringData(a.Dtype) != b.dtype && a.Dtype != t.ins[k].Dtype {
			return false
		}
		if len(a.Shape) > 0 && &a.Shape[0] != b.shape && !slices.Equal(a.Shape, t.ins[k].Shape) {
			return false
		}
	}
	*scratch = sig(&e.sigTab, *scratch, ins)
	return sameSig(*scratch, t.insSig)
}

// sameSig compares two signatures as bytes: one vectorized comparison
// (a backward pass's is some 80 numbers), not a loop over them.
func sameSig(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 {
		return true
	}
	return bytes.Equal(unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), 4*len(a)), unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), 4*len(b)))
}

// isSeen reports whether tensor id has been mentioned.
func (e *emitter) isSeen(id int64) bool {
	w := id >> 6
	return w < int64(len(e.seen)) && e.seen[w]&(uint64(1)<<(id&63)) != 0
}

// startRecording begins recording a pass with inputs ins and input
// borrows insB.
func (e *emitter) startRecording(ctx passCtx, ins []values.Tensor, insB []int64) *recording {
	e.flushDel()
	t := &template{ins: append([]values.Tensor(nil), ins...), insB: append([]int64(nil), insB...)}
	t.insSig = sig(&e.sigTab, nil, ins)
	t.keys = make([]inKey, len(ins))
	for k := range ins {
		key, ok := keyOf(&t.ins[k], ins[k].ID != 0 && e.isSeen(ins[k].ID))
		t.keys[k] = key
		if !ok {
			t.never = true
		}
	}
	if e.sameTs || len(e.extra) > 0 {
		t.never = true
	}
	r := &recording{t: t, ctx: ctx, next0: e.next, borrow0: e.borrow, ts0: e.ts}
	r.holes = &r.argHoles
	e.recd = r
	return r
}

// codeOf codes id in the recording, or reports that it cannot.
func (r *recording) codeOf(id int64) (code, bool) {
	if id == 0 {
		return codeZero, true
	}
	if id >= r.next0 {
		return code(id - r.next0), true
	}
	for k := range r.t.ins {
		if r.t.ins[k].ID == id {
			return codeInput - code(2*k), true
		}
	}
	for k := range r.t.ins {
		if r.t.ins[k].Storage == id {
			return codeInput - code(2*k+1), true
		}
	}
	return 0, false
}

// borrowOf codes borrow id.
func (r *recording) borrowOf(id int64) bcode {
	if id > r.borrow0 {
		return bcode(id - r.borrow0 - 1)
	}
	for k, b := range r.t.insB {
		if b == id {
			return bcode(-1 - k)
		}
	}
	r.t.never = true
	return 0
}

// stream codes a stream: the stage's compute stream as mainRef.
func (r *recording) stream(x values.Stream) values.Stream {
	if x.HasName || x.Name != "" || x.Idx != 0 || x.Ref <= 0 {
		r.t.never = true
	}
	if x.Ref == r.ctx.main {
		x.Ref = mainRef
	}
	return x
}

// ranks codes a command's ranks as places in the stage's slices.
func (r *recording) ranks(rs []values.Slice) []int32 {
	out := make([]int32, len(rs))
	for i := range rs {
		out[i] = r.ctx.place(&rs[i])
		if out[i] < 0 {
			r.t.never = true
		}
	}
	return out
}

// tensor codes a tensor mention.
func (r *recording) tensor(x *values.Tensor) tplTensor {
	for k := range r.t.ins {
		in := &r.t.ins[k]
		if in.ID == x.ID && x.ID != 0 {
			if in.Storage != x.Storage || !sameFields(in, x) {
				r.t.never = true
			}
			return tplTensor{input: k, isInput: true}
		}
	}
	id, ok1 := r.codeOf(x.ID)
	st, ok2 := r.codeOf(x.Storage)
	if !ok1 || !ok2 || (x.ID != 0 && x.ID < r.next0) {
		r.t.never = true
	}
	return tplTensor{id: id, st: st, nbytes: x.NBytes, dtype: x.Dtype, shape: x.Shape, cpu: x.CPU}
}

func (r *recording) tensors(xs []values.Tensor) []tplTensor {
	out := make([]tplTensor, len(xs))
	for i := range xs {
		out[i] = r.tensor(&xs[i])
	}
	return out
}

// protos are the tensors ts with their ids left out.
func protos(ts []tplTensor) []values.Tensor {
	out := make([]values.Tensor, len(ts))
	for i, t := range ts {
		if !t.isInput {
			out[i] = values.Tensor{NBytes: t.nbytes, Dtype: t.dtype, Shape: t.shape, CPU: t.cpu}
		}
	}
	return out
}

func (r *recording) raw(text []byte, holes []rawHoleAt) tplRaw {
	out := tplRaw{text: append([]byte(nil), text...)}
	for _, h := range holes {
		c, ok := r.codeOf(h.id)
		if !ok {
			r.t.never = true
		}
		out.holes = append(out.holes, tplHole{at: h.at, n: h.n, id: c})
	}
	return out
}

// capture records the command the emitter is writing.
func (r *recording) capture(e *emitter) {
	t := r.t
	rec := &e.rec
	m := &rec.Msg
	tr := tplRec{kind: m.Kind, name: m.TypeName, dts: rec.Ts - r.ts0, ranks: r.ranks(rec.Ranks)}
	switch m.Kind {
	case gen.MsgCallFunction:
		c := &m.CallFunction
		tr.fn, tr.stream = c.Function, r.stream(c.Stream)
		var ok bool
		if tr.ident, ok = r.codeOf(c.Ident); !ok {
			t.never = true
		}
		tr.args = r.raw(c.Args.Raw, r.argHoles)
		tr.res = r.raw(c.Result.Raw, r.resHoles)
		tr.argLv, tr.resLv, tr.mutates = r.tensors(c.Args.Leaves), r.tensors(c.Result.Leaves), r.tensors(c.Mutates)
		tr.argProto, tr.resProto, tr.mutProto = protos(tr.argLv), protos(tr.resLv), protos(tr.mutates)
		if len(c.Kwargs.Leaves) > 0 {
			t.never = true
		}
		tr.kwargsRaw = c.Kwargs.Raw
	case gen.MsgReduce:
		x := &m.Reduce
		if x.HasOut {
			t.never = true
		}
		tr.result, tr.local = r.tensor(&x.Result), r.tensor(&x.LocalTensor)
		tr.stream, tr.dims, tr.reduction, tr.scatter, tr.inpl = r.stream(x.Stream), x.Dims, x.Reduction, x.Scatter, x.Inplace
	case gen.MsgDeleteRefs:
		for _, id := range m.DeleteRefs.Refs {
			c, ok := r.codeOf(id)
			if !ok {
				t.never = true
			}
			tr.refs = append(tr.refs, c)
		}
	case gen.MsgBorrowCreate:
		x := &m.BorrowCreate
		tr.result, tr.local = r.tensor(&x.Result), r.tensor(&x.Tensor)
		tr.borrow, tr.from, tr.to = r.borrowOf(x.Borrow), r.stream(x.FromStream), r.stream(x.ToStream)
	case gen.MsgBorrowFirstUse:
		tr.borrow = r.borrowOf(m.BorrowFirstUse.Borrow)
	case gen.MsgBorrowLastUse:
		tr.borrow = r.borrowOf(m.BorrowLastUse.Borrow)
	case gen.MsgBorrowDrop:
		tr.borrow = r.borrowOf(m.BorrowDrop.Borrow)
	default:
		t.never = true
	}
	if len(m.Extra.Keys) > 0 || len(m.Extra.Order) > 0 || len(rec.Extra.Keys) > 0 {
		t.never = true
	}
	if n := len(t.recs); n > 0 && t.recs[n-1].repeatedBy(&tr) {
		t.recs[n-1].more++
		e.repeats++
		return
	}
	t.recs = append(t.recs, tr)
	r.started = true
}

// repeatedBy reports whether tr is p's next copy: the same Reduce at the
// same time to the slice after p's last.
func (p *tplRec) repeatedBy(tr *tplRec) bool {
	return p.kind == gen.MsgReduce && tr.kind == gen.MsgReduce && len(p.ranks) == 1 && len(tr.ranks) == 1 &&
		p.ranks[0] >= 0 && tr.ranks[0] == p.ranks[0]+p.more+1 && p.more < math.MaxInt32 &&
		p.dts == tr.dts && p.name == tr.name && p.stream == tr.stream && slices.Equal(p.dims, tr.dims) &&
		p.reduction == tr.reduction && p.scatter == tr.scatter && p.inpl == tr.inpl &&
		p.result.same(&tr.result) && p.local.same(&tr.local)
}

// same reports whether two recorded tensor mentions are one.
func (x *tplTensor) same(y *tplTensor) bool {
	return x.input == y.input && x.isInput == y.isInput && x.id == y.id && x.st == y.st && x.nbytes == y.nbytes &&
		x.dtype == y.dtype && slices.Equal(x.shape, y.shape) && x.cpu == y.cpu
}

// noteDel is called when a deletion is queued: one before the pass's
// first command could join deletions queued before the pass.
func (r *recording) noteDel() {
	if !r.started {
		r.t.never = true
	}
}

// stopRecording ends the recording; outs and outsB are the pass's
// results.
func (e *emitter) stopRecording(r *recording, outs []values.Tensor, outsB []int64) *template {
	e.recd = nil
	t := r.t
	if e.sameTs || !r.started {
		t.never = true
	}
	t.made, t.madeB = e.next-r.next0, e.borrow-r.borrow0
	for _, b := range outsB {
		t.outsB = append(t.outsB, r.borrowOf(b))
	}
	t.dts = e.ts - r.ts0
	for i := range t.recs {
		t.maxDts = max(t.maxDts, t.recs[i].dts)
	}
	for id := r.next0; id < e.next; id++ {
		if !e.isSeen(id) {
			continue
		}
		c := id - r.next0
		if n := len(t.madeSeen); n > 0 && t.madeSeen[n-1][1] == c {
			t.madeSeen[n-1][1]++
		} else {
			t.madeSeen = append(t.madeSeen, [2]int64{c, c + 1})
		}
	}
	for k := range t.ins {
		if t.ins[k].ID != 0 && e.isSeen(t.ins[k].ID) {
			t.seenOut = append(t.seenOut, k)
		}
	}
	for _, id := range e.delRefs {
		c, ok := r.codeOf(id)
		if !ok {
			t.never = true
		}
		t.delRefs = append(t.delRefs, c)
	}
	if len(e.delRefs) > 0 {
		t.delRanks = r.ranks([]values.Slice{e.delRanks})[0]
	}
	for i := range outs {
		t.outs = append(t.outs, r.tensor(&outs[i]))
	}
	return t
}

// stream decodes a recorded stream on the stage.
func (c *passCtx) stream(x values.Stream) values.Stream {
	if x.Ref == mainRef {
		x.Ref = c.main
	}
	return x
}

// replayer decodes a recording with new ids. It is the emitter's, reused
// from pass to pass.
type replayer struct {
	ins   []values.Tensor
	insB  []int64
	baseB int64 // the last borrow id before the pass
	base  int64 // the first id made
	made  int64
	// The ids' digits, each written once per pass: spans[slot(c)] is
	// where code c's digits lie in digits (n 0: not written yet).
	digits []byte
	spans  []span
}

type span struct{ at, n int32 }

// start readies p for a pass of t with inputs ins, its ids made from base.
func (p *replayer) start(t *template, ins []values.Tensor, base int64) {
	p.ins, p.base, p.made = ins, base, t.made
	p.digits = p.digits[:0]
	n := int(t.made) + 2*len(ins)
	if cap(p.spans) < n {
		p.spans = make([]span, n)
	}
	p.spans = p.spans[:n]
	clear(p.spans)
}

func (p *replayer) borrow(c bcode) int64 {
	if c >= 0 {
		return p.baseB + 1 + int64(c)
	}
	return p.insB[-1-c]
}

func (p *replayer) id(c code) int64 {
	switch {
	case c >= 0:
		return p.base + int64(c)
	case c == codeZero:
		return 0
	}
	k := int(codeInput - c)
	if k&1 == 0 {
		return p.ins[k/2].ID
	}
	return p.ins[k/2].Storage
}

func (p *replayer) tensor(t *tplTensor) values.Tensor {
	if t.isInput {
		return p.ins[t.input]
	}
	id := p.id(t.id)
	return values.Tensor{ID: id, Idx: idx(id), Storage: p.id(t.st), NBytes: t.nbytes, Dtype: t.dtype, Shape: t.shape, CPU: t.cpu}
}

// tensorInto is tensor written into *d.
func (p *replayer) tensorInto(d *values.Tensor, t *tplTensor) {
	if t.isInput {
		*d = p.ins[t.input]
		return
	}
	id := p.id(t.id)
	*d = values.Tensor{ID: id, Idx: idx(id), Storage: p.id(t.st), NBytes: t.nbytes, Dtype: t.dtype, Shape: t.shape, CPU: t.cpu}
}

// fill writes tensors ts into dst: their prototypes, with the ids filled in.
func (p *replayer) fill(dst []values.Tensor, proto []values.Tensor, ts []tplTensor) []values.Tensor {
	dst = append(dst[:0], proto...)
	for i := range ts {
		t := &ts[i]
		if t.isInput {
			dst[i] = p.ins[t.input]
			continue
		}
		d := &dst[i]
		d.ID = p.id(t.id)
		d.Idx, d.Storage = idx(d.ID), p.id(t.st)
	}
	return dst
}

// appendID appends the digits of code c's id (never codeZero).
func (p *replayer) appendID(dst []byte, c code) []byte {
	s := int(c)
	if c < 0 {
		s = int(p.made) + int(codeInput-c)
	}
	sp := p.spans[s]
	if sp.n == 0 {
		at := len(p.digits)
		p.digits = strconv.AppendInt(p.digits, p.id(c), 10)
		sp = span{at: int32(at), n: int32(len(p.digits) - at)}
		p.spans[s] = sp
	}
	return append(dst, p.digits[sp.at:sp.at+sp.n]...)
}

func (p *replayer) raw(dst []byte, r *tplRaw) []byte {
	dst = dst[:0]
	at := 0
	for _, h := range r.holes {
		dst = append(dst, r.text[at:h.at]...)
		dst = p.appendID(dst, h.id)
		at = h.at + h.n
	}
	return append(dst, r.text[at:]...)
}

// replay writes the recorded pass with inputs ins (matches is true) and
// returns its results.
func (e *emitter) replay(t *template, ctx passCtx, ins []values.Tensor, insB []int64, outs []values.Tensor, outsB []int64) ([]values.Tensor, []int64) {
	e.flushDel()
	p := &e.rp
	p.start(t, ins, e.next)
	p.insB, p.baseB = insB, e.borrow
	ts0 := e.ts
	// A sink that can apply the pass as one step (a replay) is told where
	// it begins and ends; a pass with loans is always written.
	ps, _ := e.w.(PassSink)
	if len(insB) > 0 || t.madeB > 0 || t.id == 0 || e.callErr != nil {
		ps = nil // after a failure no pass begins (and writePass writes nothing)
	}
	applied := false
	if ps != nil {
		lo, _ := ctx.slices[0].Bounds()
		e.pass = sched.Pass{Key: sched.PassKey{Tpl: t.id, Stage: ctx.stage}, Rank: lo, Ins: ins, Base: e.next, Made: t.made, MaxTs: ts0 + t.maxDts}
		if pw, ok := e.w.(*pipeWriter); ok {
			// The pass goes to the engine's goroutine as one item, which
			// writes its records there if the engine does not apply it.
			pw.pass(t, ctx, &e.pass, ts0, e.borrow, e.rec.Step)
			applied = true
		} else {
			applied = ps.BeginPass(&e.pass)
		}
	}
	if !applied {
		e.writePass(t, ctx, ts0)
	}
	if ps != nil && !applied {
		ps.EndPass()
	}
	e.ts = ts0 + t.dts
	e.next += t.made
	e.borrow += t.madeB
	for _, r := range t.madeSeen {
		e.markSeen(p.base+r[0], p.base+r[1])
	}
	for _, k := range t.seenOut {
		e.seenBefore(ins[k].ID)
	}
	for _, c := range t.delRefs {
		e.delRefs = append(e.delRefs, p.id(c))
	}
	if len(t.delRefs) > 0 {
		e.delRanks = ctx.slices[t.delRanks]
	}
	// Written in place: a tensor is 88 bytes, and a pass gives some
	// forty, each copied twice through a return value before.
	outs = slices.Grow(outs[:0], len(t.outs))[:len(t.outs)]
	for i := range t.outs {
		p.tensorInto(&outs[i], &t.outs[i])
	}
	outsB = outsB[:0]
	for _, c := range t.outsB {
		outsB = append(outsB, p.borrow(c))
	}
	p.ins, p.insB = nil, nil
	return outs, outsB
}

// reduce is recorded Reduce tr as the pass on ctx's stage writes it.
func (p *replayer) reduce(tr *tplRec, ctx passCtx) gen.Reduce {
	return gen.Reduce{
		Result:      p.tensor(&tr.result),
		LocalTensor: p.tensor(&tr.local),
		Stream:      ctx.stream(tr.stream),
		Dims:        tr.dims,
		Reduction:   tr.reduction,
		Scatter:     tr.scatter,
		Inplace:     tr.inpl,
	}
}

// writePass writes the records of recorded pass t on ctx's stage, its
// first at ts0 plus its offset, with the ids e.rp was started with.
func (e *emitter) writePass(t *template, ctx passCtx, ts0 int64) {
	p := &e.rp
	for i := range t.recs {
		if e.callErr != nil {
			break // the sink failed or was stopped: the rest is for nothing
		}
		tr := &t.recs[i]
		m := &e.rec.Msg
		m.Kind, m.TypeName = tr.kind, tr.name
		m.Extra.Reset()
		switch tr.kind {
		case gen.MsgCallFunction:
			e.argBuf = p.raw(e.argBuf, &tr.args)
			e.resBuf = p.raw(e.resBuf, &tr.res)
			e.argLv = p.fill(e.argLv, tr.argProto, tr.argLv)
			e.resLv = p.fill(e.resLv, tr.resProto, tr.resLv)
			e.mutBuf = p.fill(e.mutBuf, tr.mutProto, tr.mutates)
			var mut []values.Tensor
			if len(tr.mutates) > 0 {
				mut = e.mutBuf
			}
			m.CallFunction = gen.CallFunction{
				Ident:    p.id(tr.ident),
				Function: tr.fn,
				Args:     values.Tree{Raw: e.argBuf, Leaves: e.argLv},
				Kwargs:   values.Tree{Raw: tr.kwargsRaw},
				Result:   values.Tree{Raw: e.resBuf, Leaves: e.resLv},
				Mutates:  mut,
				Stream:   ctx.stream(tr.stream),
			}
		case gen.MsgReduce:
			m.Reduce = p.reduce(tr, ctx)
		case gen.MsgDeleteRefs:
			refs := m.DeleteRefs.Refs[:0]
			for _, c := range tr.refs {
				refs = append(refs, p.id(c))
			}
			m.DeleteRefs.Refs = refs
		case gen.MsgBorrowCreate:
			m.BorrowCreate = gen.BorrowCreate{Result: p.tensor(&tr.result), Borrow: p.borrow(tr.borrow), Tensor: p.tensor(&tr.local),
				FromStream: ctx.stream(tr.from), ToStream: ctx.stream(tr.to)}
		case gen.MsgBorrowFirstUse:
			m.BorrowFirstUse.Borrow = p.borrow(tr.borrow)
		case gen.MsgBorrowLastUse:
			m.BorrowLastUse.Borrow = p.borrow(tr.borrow)
		case gen.MsgBorrowDrop:
			m.BorrowDrop.Borrow = p.borrow(tr.borrow)
		}
		e.ts = ts0 + tr.dts
		e.rec.Ts = e.ts
		e.rec.Ranks = e.rec.Ranks[:0]
		for _, k := range tr.ranks {
			e.rec.Ranks = append(e.rec.Ranks, ctx.slices[k])
		}
		if err := e.w.Write(&e.rec, nil); err != nil && e.callErr == nil {
			e.callErr = err
		}
		if tr.more == 0 {
			continue
		}
		// The Reduce again to each next slice. The message is set anew
		// each time (a sink may have changed the record it was given),
		// from one copy: at a world of a million ranks a pass writes
		// millions of them.
		r := p.reduce(tr, ctx)
		for k := int32(1); k <= tr.more && e.callErr == nil; k++ {
			m.Reduce = r
			e.rec.Ts = e.ts
			e.rec.Ranks = append(e.rec.Ranks[:0], ctx.slices[tr.ranks[0]+k])
			if err := e.w.Write(&e.rec, nil); err != nil && e.callErr == nil {
				e.callErr = err
			}
		}
	}
}

// maxTemplates bounds the recordings kept per key: a stage's first layer
// may take its input in another form than the others (a view of the
// embedding's storage on the first stage, say), ZeRO 3's gathered
// matrices may come from another kind of layer, each a recording of its
// own.
const maxTemplates = 8

// fields lists a layer's saved tensors in a fixed order (held whole).
func (sv *saved) fields() [nSaved]*values.Tensor {
	return [...]*values.Tensor{&sv.x, &sv.mu1, &sv.rs1, &sv.ln1, &sv.qkv, &sv.q, &sv.k, &sv.v, &sv.p, &sv.pd, &sv.amask,
		&sv.o, &sv.lse, &sv.ctx, &sv.m1, &sv.x2, &sv.mu2, &sv.rs2, &sv.ln2, &sv.m2, &sv.h1, &sv.act, &sv.gate, &sv.up, &sv.sg}
}

// compact keeps outs[1:], the saved tensors a replay of recording t
// returned, as ids (saved); false, and nothing kept, if more of them are
// the pass's inputs than a compact set holds.
func (sv *saved) compact(t *template, outs []values.Tensor) bool {
	n := 0
	for i := range nSaved {
		o, r := &t.outs[1+i], &outs[1+i]
		if o.isInput {
			if n == maxSavedInputs {
				return false
			}
			sv.in[n] = *r
			n++
			continue
		}
		sv.ids[i] = [2]int64{r.ID, r.Storage}
	}
	sv.from = t
	return true
}

// appendTensors appends sv's tensors, in fields' order, to dst: a
// compact set's as the replay that returned them wrote them
// (replayer.tensorInto).
func (sv *saved) appendTensors(dst []values.Tensor) []values.Tensor {
	if sv.savedTensors != nil {
		for _, f := range sv.fields() {
			dst = append(dst, *f)
		}
		return dst
	}
	n := 0
	for i := range nSaved {
		o := &sv.from.outs[1+i]
		if o.isInput {
			dst = append(dst, sv.in[n])
			n++
			continue
		}
		id := sv.ids[i][0]
		dst = append(dst, values.Tensor{ID: id, Idx: idx(id), Storage: sv.ids[i][1], NBytes: o.nbytes, Dtype: o.dtype, Shape: o.shape, CPU: o.cpu})
	}
	return dst
}

// expand holds a compact set's tensors whole, for a backward generated.
func (sv *saved) expand() {
	if sv.savedTensors != nil {
		return
	}
	var buf [nSaved]values.Tensor
	ts := sv.appendTensors(buf[:0])
	sv.savedTensors = &savedTensors{}
	for i, f := range sv.fields() {
		*f = ts[i]
	}
	sv.from = nil
}

// pass writes one recorded or recordable layer pass: gen writes it anew
// (and returns its results); otherwise a recording of key whose inputs
// match ins and insB is replayed.
func (g *generator) pass(st *stage, key tplKey, ins []values.Tensor, insB []int64, gen func() ([]values.Tensor, []int64)) (outs []values.Tensor, outsB []int64, t *template) {
	list := g.tpls[key]
	ctx := passCtx{slices: st.slices, main: st.main, stage: int32(st.idx)}
	if !g.j.StageCollectives {
		ctx.off, ctx.dp, ctx.tp = st.all.Offset, int64(g.j.DP), int64(g.j.TP)
	}
	for _, t := range list {
		if t.matches(&g.e, ins, insB, &g.tplSig) {
			g.tplOuts, g.tplOutsB = g.e.replay(t, ctx, ins, insB, g.tplOuts, g.tplOutsB)
			g.tplReplays++
			g.setGathered(st, g.tplOuts[len(g.tplOuts)-2*len(g.tplOutsB):], g.tplOutsB)
			return g.tplOuts, g.tplOutsB, t
		}
	}
	// A key's first pass is generated without recording it: a job that
	// runs a kind of pass once (a search's small probe jobs) pays nothing
	// for recordings it would never replay.
	if len(list) >= maxTemplates || !g.tplSeen[key] {
		if g.tplSeen == nil {
			g.tplSeen = make(map[tplKey]bool)
		}
		g.tplSeen[key] = true
		outs, outsB = gen()
		return outs, outsB, nil
	}
	r := g.e.startRecording(ctx, ins, insB)
	g.tplBusy = true
	outs, outsB = gen()
	g.tplBusy = false
	t = g.e.stopRecording(r, outs, outsB)
	if g.tpls == nil {
		g.tpls = make(map[tplKey][]*template)
	}
	if !t.never {
		g.tplN++
		t.id = int32(g.tplN)
		g.tpls[key] = append(list, t)
	}
	return outs, outsB, t
}

// The matrices ZeRO 3 gathered for the last layer used and not given back
// yet (stage.pendingRelease) are an input of the next pass, which gives
// them back, and its own are among its results: gatheredIn appends the
// former to a pass's inputs, gatheredOut the latter to its results, and
// setGathered sets them from a replayed pass's results.

func gatheredIn(st *stage, ins []values.Tensor, insB []int64) ([]values.Tensor, []int64) {
	if h := st.pendingRelease; h != nil {
		ins = append(append(ins, h.full...), h.lent...)
		insB = append(insB, h.borrows...)
	}
	return ins, insB
}

func gatheredOut(st *stage, outs []values.Tensor) ([]values.Tensor, []int64) {
	h := st.pendingRelease
	if h == nil {
		return outs, nil
	}
	return append(append(outs, h.full...), h.lent...), append([]int64(nil), h.borrows...)
}

func (g *generator) setGathered(st *stage, ts []values.Tensor, borrows []int64) {
	if len(borrows) == 0 {
		st.pendingRelease = nil
		return
	}
	n := len(borrows)
	st.pendingRelease = &gathered{
		full:    append([]values.Tensor(nil), ts[:n]...),
		lent:    append([]values.Tensor(nil), ts[n:2*n]...),
		borrows: append([]int64(nil), borrows...),
	}
}

// passEnd writes the deletions a layer pass leaves pending (the last
// temporaries it frees) as its own last record, inside its recording, so
// that a pass applied as one step applies them too instead of leaving a
// DeleteRefs to be replayed alone after it (about one a pass). It is
// called at the same place with recordings on or off, so the history is
// the same either way. Pending deletions go out before the next message
// anyway, so the records are those written without passEnd unless what
// follows a pass deletes first; TestPassEndChangesNoRecord checks that
// nothing does.
func (g *generator) passEnd() {
	if !g.noPassEnd {
		g.e.flushDel()
	}
}

// layerForward is forward, replayed from a recording where one fits.
func (g *generator) layerForward(st *stage, w *layerW, x values.Tensor, keep bool) (values.Tensor, *saved) {
	if !g.templatesOn() {
		y, sv := g.forward(st, w, g.takeGather(st, x), keep)
		g.passEnd()
		sv.kept = sv.bytes()
		return y, sv
	}
	// x is the received shard when the pass begins with its all-gather:
	// generated, the pass takes it (takeGather); replayed, it is done.
	gather := st.gather.pending()
	defer st.gather.clear()
	// w.small holds the QKV bias the pass views (qkvBias).
	ins := append(append(append(g.tplIns[:0], x), w.w...), w.pshard, w.small)
	ins, insB := gatheredIn(st, ins, g.tplInsB[:0])
	g.tplIns, g.tplInsB = ins, insB
	var sv *saved
	outs, _, t := g.pass(st, tplKey{fwd: true, keep: keep, gather: gather}, ins, insB, func() ([]values.Tensor, []int64) {
		var y values.Tensor
		y, sv = g.forward(st, w, g.takeGather(st, x), keep)
		g.passEnd()
		out := []values.Tensor{y}
		for _, f := range sv.fields() {
			out = append(out, *f)
		}
		return gatheredOut(st, out)
	})
	if sv != nil { // generated
		sv.kept = sv.bytes()
		if t != nil {
			t.core, t.kept = sv.core, sv.kept
		}
		return outs[0], sv
	}
	// A replay's saved tensors have the recording's sizes, and share
	// storages as its did (the inputs' signature matched), so they
	// keep the same bytes.
	sv = g.newSaved()
	sv.core, sv.kept = t.core, t.kept
	if sv.compact(t, outs) {
		g.compacted++
	} else {
		sv.savedTensors = &savedTensors{}
		for i, f := range sv.fields() {
			*f = outs[1+i]
		}
	}
	return outs[0], sv
}

// layerBackward is backward, replayed from a recording where one fits.
func (g *generator) layerBackward(st *stage, w *layerW, dy values.Tensor, sv *saved) values.Tensor {
	if !g.templatesOn() || w.bucket.ID != 0 {
		sv.expand()
		dx := g.backward(st, w, g.takeGather(st, dy), sv)
		g.passEnd()
		return dx
	}
	// dy is the received shard when the pass begins with its all-gather,
	// as in layerForward.
	gather := st.gather.pending()
	defer st.gather.clear()
	ins := sv.appendTensors(append(g.tplIns[:0], dy))
	ins = append(append(append(append(ins, w.wt...), w.w...), w.gv...), w.grad, w.pshard, w.small)
	ins, insB := gatheredIn(st, ins, g.tplInsB[:0])
	g.tplIns, g.tplInsB = ins, insB
	nb := len(w.shapes)
	fresh := g.j.FP16Grads && w.has == 0
	outs, _, _ := g.pass(st, tplKey{keep: sv.core, fresh: fresh, gather: gather}, ins, insB, func() ([]values.Tensor, []int64) {
		sv.expand()
		dx := g.backward(st, w, g.takeGather(st, dy), sv)
		g.passEnd()
		out := append([]values.Tensor{dx, w.bucket}, w.bv...)
		for len(out) < 2+nb { // no bucket: its views' places
			out = append(out, values.Tensor{})
		}
		// The 16-bit gradient and its views, which a fresh pass makes
		// (ensureGrad).
		out = append(append(out, w.grad), w.gv...)
		for len(out) < 3+2*nb {
			out = append(out, values.Tensor{})
		}
		return gatheredOut(st, out)
	})
	if g.j.FP16Grads { // a replayed pass took or added every matrix's gradient
		w.has = 1<<uint(nb) - 1
		w.grad = outs[2+nb]
		w.gv = append(w.gv[:0], outs[3+nb:3+2*nb]...)
	}
	// The gradient bucket the pass made (ZeRO 2 and 3), for layerDone.
	w.bucket = outs[1]
	w.bv = w.bv[:0]
	if w.bucket.ID != 0 {
		w.bv = append(w.bv, outs[2:2+nb]...)
	}
	return outs[0]
}
