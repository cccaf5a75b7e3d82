package workload

import (
	"math"
	"slices"
	"strconv"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/jsonl"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/values"
)

// Dtypes as the history names them, and their sizes in bytes.
const (
	bf16  = "bfloat16"
	f32   = "float32"
	i64   = "int64"
	boolT = "bool"
)

func dtypeBytes(d string) int64 {
	switch d {
	case bf16:
		return 2
	case f32:
		return 4
	case i64:
		return 8
	case boolT:
		return 1
	}
	return 0
}

// emitter sends typed messages to a Sink (the history writer, or a replay
// directly). Every tensor is written in full at its first mention, in a
// tree (args, results) or a typed field, and by id after: trees through
// the emitter's own record of mentions, typed fields through the writer's
// (Idx = ID), both kept in step.
type emitter struct {
	w       Sink
	repeats int      // Reduces recorded as copies of the one before (tplRec.more), for tests
	sigTab  sigTable // sig's table, kept between passes
	shapes  shapeTable
	rec     history.Record
	ts      int64
	cmdNs   int64
	next    int64 // next tensor id
	borrow  int64 // last borrow id
	seen    []uint64
	argBuf  []byte
	resBuf  []byte
	leaves  []values.Tensor // tensors of the tree being built
	argLv   []values.Tensor
	resLv   []values.Tensor
	extra   []values.Slice // more ranks for the message being written (write2)
	sameTs  bool           // the next command is sent at the same time as the last
	// deletes not written yet, all on delRanks
	delRefs  []int64
	delRanks values.Slice
	callErr  error
	// recd, when set, records the commands written (see template.go).
	recd   *recording
	rp     replayer
	pass   sched.Pass // the pass told to a PassSink
	mutBuf []values.Tensor
}

// tensor makes a new tensor of its own storage.
func (e *emitter) tensor(dtype string, shape ...int64) values.Tensor {
	id := e.next
	e.next++
	n := dtypeBytes(dtype)
	for _, d := range shape {
		n *= d
	}
	return values.Tensor{ID: id, Idx: idx(id), Storage: id, NBytes: n, Dtype: dtype, Shape: e.shapes.of(shape)}
}

// shapeTable holds one slice for each shape the emitter's tensors have
// (a job has a few hundred), so that tensors of one shape share it: a
// recording's inputs are then mostly compared with a pass's by the
// address of their shapes (template.matches), the weights of every layer
// alike, not element by element. Shapes are never written.
var emptyShape = []int64{}

type shapeTable struct {
	slots [1024][]int64
}

// of returns the table's slice equal to dims (a copy of dims the first
// time; nil for nil, and an empty slice for an empty one: a scalar).
// dims itself is never kept, so a caller's variadic arguments stay on
// its stack.
func (t *shapeTable) of(dims []int64) []int64 {
	if len(dims) == 0 {
		if dims == nil {
			return nil
		}
		return emptyShape
	}
	h := uint64(len(dims))
	for _, d := range dims {
		h = (h ^ uint64(d)) * 0x9e3779b97f4a7c15
	}
	s := h >> 54 // 10 bits: the table's length
	for range 8 {
		sl := t.slots[s]
		if sl == nil {
			t.slots[s] = slices.Clone(dims)
			return t.slots[s]
		}
		if slices.Equal(sl, dims) {
			return sl
		}
		s = (s + 1) & (uint64(len(t.slots)) - 1)
	}
	return slices.Clone(dims) // a crowded neighbourhood: not shared
}

// cpuTensor makes a new CPU tensor.
func (e *emitter) cpuTensor(dtype string, shape ...int64) values.Tensor {
	t := e.tensor(dtype, shape...)
	t.CPU = true
	return t
}

// alias makes a new tensor of src's storage (a view, an in-place result,
// a borrowed or reduced-in-place tensor) with the given shape.
func (e *emitter) alias(src values.Tensor, dtype string, shape ...int64) values.Tensor {
	t := values.Tensor{ID: e.next, Idx: idx(e.next), Storage: src.Storage, NBytes: src.NBytes, Dtype: dtype, Shape: e.shapes.of(shape), CPU: src.CPU}
	e.next++
	return t
}

// idx is the writer's index of tensor id: the id itself (ids are dense
// from 1), so the writer writes a tensor in full at its first mention in
// a typed field and by id after; -1 (always in full) past int32.
func idx(id int64) int32 {
	if id > math.MaxInt32 {
		return -1
	}
	return int32(id)
}

// typed notes tensors written in typed fields, so that a later mention in
// a tree is by id.
func (e *emitter) typed(ts ...values.Tensor) {
	for _, t := range ts {
		e.seenBefore(t.ID)
	}
}

func (e *emitter) seenBefore(id int64) bool {
	w, b := id>>6, uint64(1)<<(id&63)
	if w >= int64(len(e.seen)) {
		// At least doubled: ids only count up, so the bitmap grows all
		// run long, and append's growth by a quarter copied it some
		// twenty times.
		e.seen = append(e.seen, make([]uint64, max(w+1, 2*int64(len(e.seen)))-int64(len(e.seen)))...)
	}
	old := e.seen[w]&b != 0
	e.seen[w] |= b
	return old
}

// markSeen notes ids lo..hi-1 as mentioned, a word at a time: a
// replayed pass marks its made ids in runs.
func (e *emitter) markSeen(lo, hi int64) {
	if hi <= lo {
		return
	}
	if w := (hi - 1) >> 6; w >= int64(len(e.seen)) {
		e.seen = append(e.seen, make([]uint64, max(w+1, 2*int64(len(e.seen)))-int64(len(e.seen)))...)
	}
	for lo < hi {
		w := lo >> 6
		end := min(hi, (w+1)<<6)
		e.seen[w] |= ^uint64(0) >> (64 - (end - lo)) << (lo & 63)
		lo = end
	}
}

// tlist is a list of tensors (an ATen Tensor[] argument).
type tlist []values.Tensor

// appendValue appends one argument or result value as JSON: tensors,
// tensor lists, nil (None), bools, integers, floats, strings and integer
// lists (int[] and SymInt[]).
func (e *emitter) appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case values.Tensor:
		e.leaves = append(e.leaves, x)
		b = append(b, `{"tensor":`...)
		at := len(b)
		b = strconv.AppendInt(b, x.ID, 10)
		e.hole(at, len(b), x.ID)
		if !e.seenBefore(x.ID) {
			b = append(b, `,"storage":`...)
			at = len(b)
			b = strconv.AppendInt(b, x.Storage, 10)
			e.hole(at, len(b), x.Storage)
			b = append(b, `,"nbytes":`...)
			b = strconv.AppendInt(b, x.NBytes, 10)
			b = append(b, `,"dtype":`...)
			b = jsonl.AppendString(b, x.Dtype)
			b = append(b, `,"shape":`...)
			b = jsonl.AppendInts(b, x.Shape)
			if x.CPU {
				b = append(b, `,"device":"cpu"`...)
			} else {
				b = append(b, `,"device":"cuda"`...)
			}
		}
		return append(b, '}')
	case tlist:
		b = append(b, '[')
		for i, t := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.appendValue(b, t)
		}
		return append(b, ']')
	case bool:
		return strconv.AppendBool(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.AppendFloat(b, x, 'f', 1, 64)
		}
		return strconv.AppendFloat(b, x, 'g', -1, 64)
	case string:
		return jsonl.AppendString(b, x)
	case []int64:
		return jsonl.AppendInts(b, x)
	case []any:
		b = append(b, '[')
		for i, y := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.appendValue(b, y)
		}
		return append(b, ']')
	}
	panic("workload: unsupported argument type")
}

// hole notes, when recording, that b[at:end] of the tree being written
// are the digits of id.
func (e *emitter) hole(at, end int, id int64) {
	if r := e.recd; r != nil {
		*r.holes = append(*r.holes, rawHoleAt{at: at, n: end - at, id: id})
	}
}

func (e *emitter) list(b []byte, vals []any) []byte {
	b = append(b[:0], '[')
	for i, v := range vals {
		if i > 0 {
			b = append(b, ',')
		}
		b = e.appendValue(b, v)
	}
	return append(b, ']')
}

// write sends the message in e.rec.Msg to ranks. After the sink failed
// (or was stopped) it sends nothing: the generator finishes its action
// before it looks at callErr, and at a world of a million ranks one
// action is millions of records.
func (e *emitter) write(ranks ...values.Slice) {
	if e.callErr != nil {
		return
	}
	if e.cmdNs > 0 && !e.sameTs {
		e.ts += e.cmdNs
	}
	e.rec.Ts = e.ts
	e.rec.Ranks = append(append(e.rec.Ranks[:0], ranks...), e.extra...)
	if e.recd != nil {
		e.recd.capture(e)
	}
	if err := e.w.Write(&e.rec, nil); err != nil && e.callErr == nil {
		e.callErr = err
	}
}

func (e *emitter) setMsg(k gen.MsgKind, name string) *gen.Msg {
	e.flushDel()
	m := &e.rec.Msg
	m.Kind = k
	m.TypeName = name
	m.Extra.Reset()
	return m
}

// kwargsNone is the keyword arguments of every call: none. Readers of a
// record do not modify its trees; its capacity is its length, so that an
// append to it copies.
var kwargsNone = []byte("{}")[:2:2]

// call runs ATen function fn on stream with positional args (ATen schema
// order) and the given results; mutated tensors are listed in mutates.
func (e *emitter) call(ranks values.Slice, stream int64, fn string, args []any, results []any, mutates ...values.Tensor) {
	m := e.setMsg(gen.MsgCallFunction, "CallFunction")
	e.leaves = e.leaves[:0]
	if r := e.recd; r != nil {
		r.argHoles, r.resHoles = r.argHoles[:0], r.resHoles[:0]
		r.holes = &r.argHoles
	}
	e.argBuf = e.list(e.argBuf, args)
	e.argLv = append(e.argLv[:0], e.leaves...)
	e.leaves = e.leaves[:0]
	if r := e.recd; r != nil {
		r.holes = &r.resHoles
	}
	e.resBuf = e.list(e.resBuf, results)
	e.resLv = append(e.resLv[:0], e.leaves...)
	e.typed(mutates...)
	m.CallFunction = gen.CallFunction{
		Function: fn,
		Args:     values.Tree{Raw: e.argBuf, Leaves: e.argLv},
		Kwargs:   values.Tree{Raw: kwargsNone},
		Result:   values.Tree{Raw: e.resBuf, Leaves: e.resLv},
		Mutates:  mutates,
		Stream:   values.Stream{Ref: stream},
	}
	if len(results) > 0 {
		if t, ok := results[0].(values.Tensor); ok {
			m.CallFunction.Ident = t.ID
		}
	}
	e.write(ranks)
}

// del deletes tensor references on ranks. Consecutive deletes on the same
// ranks are sent as one DeleteRefs, written before the next other message.
func (e *emitter) del(ranks values.Slice, ts ...values.Tensor) {
	if e.recd != nil {
		e.recd.noteDel()
	}
	if len(e.delRefs) > 0 && !e.delRanks.Equal(&ranks) {
		e.flushDel()
	}
	if len(e.delRefs) == 0 {
		e.delRanks = ranks
	}
	for _, t := range ts {
		e.delRefs = append(e.delRefs, t.ID)
	}
}

// flushDel writes the pending deletes.
func (e *emitter) flushDel() {
	if len(e.delRefs) == 0 {
		return
	}
	// Pending deletes are flushed by the next message, which may be one
	// write2 sends to more ranks: they go to their own ranks only.
	extra := e.extra
	e.extra = nil
	e.writeDel(e.delRanks)
	e.extra = extra
}

// writeDel writes the pending deletes as one DeleteRefs to ranks (and
// e.extra).
func (e *emitter) writeDel(ranks values.Slice) {
	m := &e.rec.Msg
	m.Kind, m.TypeName = gen.MsgDeleteRefs, "DeleteRefs"
	m.Extra.Reset()
	m.DeleteRefs.Refs = append(m.DeleteRefs.Refs[:0], e.delRefs...)
	e.delRefs = e.delRefs[:0]
	e.write(ranks)
}

// del2 deletes ts on the ranks of a and b in one record: a tensor both
// hold under one id (a tied embedding's copies) must end in one
// DeleteRefs, since a history's deletion of an id ends it on every rank.
func (e *emitter) del2(a, b values.Slice, ts ...values.Tensor) {
	e.flushDel()
	e.del(a, ts...)
	e.delRefs = slices.DeleteFunc(e.delRefs, func(id int64) bool { return id == 0 })
	if len(e.delRefs) > 0 {
		e.write2(func() { e.writeDel(a) }, b)
	}
}

// The mesh dimensions a collective reduces over.
var (
	dimTP = []string{"tp"}
	dimDP = []string{"dp"}
	dimPP = []string{"pp"}
)

// write2 runs emit, which writes one message to ranks a, with the
// message sent to ranks b as well.
func (e *emitter) write2(emit func(), b values.Slice) {
	e.extra = append(e.extra[:0], b)
	emit()
	e.extra = e.extra[:0]
}

// reduce2 is one all-reduce (sum) over the ranks of a and b together.
func (e *emitter) reduce2(a, b values.Slice, dims []string, stream int64, result, local values.Tensor) {
	e.write2(func() { e.reduce(a, dims, stream, result, local, "sum", false) }, b)
}

// reduce is a collective over the ranks of one group: reduction "sum" or
// "stack", scattered or not. The result is a new tensor unless it aliases
// the local tensor (an in-place all-reduce).
func (e *emitter) reduce(ranks values.Slice, dims []string, stream int64, result, local values.Tensor, reduction string, scatter bool) {
	m := e.setMsg(gen.MsgReduce, "Reduce")
	e.typed(result, local)
	m.Reduce = gen.Reduce{
		Result:      result,
		LocalTensor: local,
		Stream:      values.Stream{Ref: stream},
		Dims:        dims,
		Reduction:   reduction,
		Scatter:     scatter,
		Inplace:     result.Storage == local.Storage,
	}
	e.write(ranks)
}

// reduceEach is one collective per group, as one controller command
// would be: the per-group commands share the controller's clock (the
// format gives a Reduce command one peer set, so a collective over a mesh
// dimension is written once per group).
func (e *emitter) reduceEach(groups []values.Slice, dims []string, stream int64, result, local values.Tensor, reduction string, scatter bool) {
	for i := range groups {
		if e.callErr != nil {
			break // one collective per group: up to a million of them
		}
		e.reduce(groups[i], dims, stream, result, local, reduction, scatter)
		e.sameTs = true
	}
	e.sameTs = false
}

// borrowCreate lends src from one stream to another as result.
func (e *emitter) borrowCreate(ranks values.Slice, src values.Tensor, from, to int64) (id int64, lent values.Tensor) {
	e.borrow++
	lent = e.alias(src, src.Dtype, src.Shape...)
	e.typed(lent, src)
	m := e.setMsg(gen.MsgBorrowCreate, "BorrowCreate")
	m.BorrowCreate = gen.BorrowCreate{Result: lent, Borrow: e.borrow, Tensor: src,
		FromStream: values.Stream{Ref: from}, ToStream: values.Stream{Ref: to}}
	e.write(ranks)
	return e.borrow, lent
}

func (e *emitter) borrowFirstUse(ranks values.Slice, id int64) {
	m := e.setMsg(gen.MsgBorrowFirstUse, "BorrowFirstUse")
	m.BorrowFirstUse.Borrow = id
	e.write(ranks)
}

func (e *emitter) borrowLastUse(ranks values.Slice, id int64) {
	m := e.setMsg(gen.MsgBorrowLastUse, "BorrowLastUse")
	m.BorrowLastUse.Borrow = id
	e.write(ranks)
}

func (e *emitter) borrowDrop(ranks values.Slice, id int64) {
	m := e.setMsg(gen.MsgBorrowDrop, "BorrowDrop")
	m.BorrowDrop.Borrow = id
	e.write(ranks)
}

// sendTensor moves src (held by the senders' stream) to a new tensor on
// the receivers' stream of the same ref.
func (e *emitter) sendTensor(from, to values.Slice, stream int64, result, src values.Tensor) {
	m := e.setMsg(gen.MsgSendTensor, "SendTensor")
	e.typed(result, src)
	m.SendTensor = gen.SendTensor{Result: result, Tensor: src, FromRanks: from, ToRanks: to,
		FromStream: values.Stream{Ref: stream}, ToStream: values.Stream{Ref: stream}}
	e.write(from, to)
}

// pipeRecv receives CPU tensors from the controller's data pipe.
func (e *emitter) pipeRecv(ranks values.Slice, stream int64, ts ...values.Tensor) {
	m := e.setMsg(gen.MsgPipeRecv, "PipeRecv")
	vals := make([]any, len(ts))
	for i, t := range ts {
		vals[i] = t
	}
	e.leaves = e.leaves[:0]
	e.resBuf = e.list(e.resBuf, vals)
	e.resLv = append(e.resLv[:0], e.leaves...)
	m.PipeRecv = gen.PipeRecv{Ident: ts[0].ID, Result: values.Tree{Raw: e.resBuf, Leaves: e.resLv}, Pipe: 1, Stream: values.Stream{Ref: stream}}
	e.write(ranks)
}

// createStream creates stream ref named name on ranks.
func (e *emitter) createStream(ranks values.Slice, ref int64, name string, def bool) {
	m := e.setMsg(gen.MsgCreateStream, "CreateStream")
	m.CreateStream = gen.CreateStream{Result: values.Stream{Ref: ref, Name: name, HasName: true}, Default: def}
	e.write(ranks)
}

// createMesh names the mesh's dimensions (accepted, not simulated).
func (e *emitter) createMesh(ranks values.Slice, names []byte) {
	m := e.setMsg(gen.MsgCreateDeviceMesh, "CreateDeviceMesh")
	m.Extra.Add("names", names)
	e.write(ranks)
}

// step writes a step line.
func (e *emitter) step(n int64) {
	e.flushDel()
	e.rec.IsStep = true
	e.rec.Step = n
	e.rec.Ts = e.ts
	e.rec.Ranks = e.rec.Ranks[:0]
	e.rec.Msg.Kind = gen.MsgInvalid
	if err := e.w.Write(&e.rec, nil); err != nil && e.callErr == nil {
		e.callErr = err
	}
	e.rec.IsStep = false
}

// slice1 is a one-dimensional strided block of ranks.
func slice1(offset, size, stride int64) values.Slice {
	return values.Slice{Offset: offset, Sizes: []int64{size}, Strides: []int64{stride}}
}
