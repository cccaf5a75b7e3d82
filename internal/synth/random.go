// Package synth writes synthetic command histories. It builds every
// record as a typed message (gen.Msg) and writes it through history.Writer,
// the generated JSON writer behind it, as the transformer workload does:
// no line of JSON is formatted by hand. The toy training job can also go
// straight to a replay as typed records, with no text at all (EmitTrain),
// as the layout search replays it.
//
// Random writes random valid histories: every command refers only to
// tensors and streams that exist on every rank it is sent to, so a replay
// never fails, yet the histories use every simulated message (streams,
// views, in-place ops, reductions on sub-slices including strided ones,
// borrows, sends between disjoint equal-size slices, CPU tensors, deletes,
// command groups, steps). The grouped-workers property tests replay them
// grouped and ungrouped and compare every device.
package synth

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/values"
)

// MaxRandomWorld is the largest world Random writes for.
const MaxRandomWorld = 1 << 24

// BigWorld is the world size from which Random draws its rank sets around
// the edges of roaring's 65,536-rank containers (runs ending on, before and
// after an edge, single ranks at an edge, strided sets and 2-d blocks
// crossing one, sends between halves and across edges), where a bitmap
// changes container and rank arithmetic is easiest to get wrong. Below it,
// rank sets are drawn uniformly over the world.
const BigWorld = 1 << 16

// slice is a strided block of ranks, the set of its ranks and the block
// as a history writes it. lo, hi and card (its least and greatest rank
// and how many it has) let within and sameRanks answer most questions
// without touching the bitmaps: a generator asks them of every live
// tensor for every command, and the live tensors grow with the history.
type slice struct {
	offset         int
	sizes, strides []int
	set            *roaring.Bitmap
	js             values.Slice
	lo, hi         int
	card           int
	mask           []uint64 // the ranks as bits, when all are below maskRanks
}

// maskRanks bounds the ranks of a slice kept as plain bits too: for the
// small worlds most tests use, within is then a few word operations.
const maskRanks = 1 << 12

// withMask adds s's bits when its ranks are all below maskRanks.
func (s slice) withMask() slice {
	if s.card == 0 || s.hi >= maskRanks {
		return s
	}
	s.mask = make([]uint64, s.hi/64+1)
	it := s.set.Iterator()
	for it.HasNext() {
		r := it.Next()
		s.mask[r/64] |= 1 << (r % 64)
	}
	return s
}

func int64s(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

func newSlice(offset int, sizes, strides []int) slice {
	s := slice{offset: offset, sizes: sizes, strides: strides,
		js: values.Slice{Offset: int64(offset), Sizes: int64s(sizes), Strides: int64s(strides)}}
	if len(sizes) == 1 && (strides[0] == 1 || strides[0] == -1) && sizes[0] > 0 {
		// A run: its bitmap is one range, without listing its ranks (a
		// whole world of 2^24 ranks would be 64 MiB of them).
		lo := min(offset, offset+(sizes[0]-1)*strides[0])
		s.set = roaring.New()
		s.set.AddRange(uint64(lo), uint64(lo+sizes[0]))
		s.set.RunOptimize()
		s.lo, s.hi, s.card = lo, lo+sizes[0]-1, sizes[0]
		return s.withMask()
	}
	var ranks []uint32
	var walk func(d, r int)
	walk = func(d, r int) {
		if d == len(sizes) {
			ranks = append(ranks, uint32(r))
			return
		}
		for i := 0; i < sizes[d]; i++ {
			walk(d+1, r+i*strides[d])
		}
	}
	walk(0, offset)
	slices.Sort(ranks)
	s.set = roaring.BitmapOf(ranks...)
	s.set.RunOptimize()
	if len(ranks) > 0 {
		s.lo, s.hi, s.card = int(ranks[0]), int(ranks[len(ranks)-1]), int(s.set.GetCardinality())
	} else {
		s.hi = -1
	}
	return s.withMask()
}

// within reports whether every rank of s is a rank of t.
func (s *slice) within(t *slice) bool {
	if s.card > t.card || s.lo < t.lo || s.hi > t.hi {
		return false
	}
	if t.card == t.hi-t.lo+1 { // t is every rank from its least to its greatest
		return true
	}
	if s.mask != nil && t.mask != nil { // s.hi <= t.hi: t's bits are as long
		for i, w := range s.mask {
			if w&^t.mask[i] != 0 {
				return false
			}
		}
		return true
	}
	return s.set.AndCardinality(t.set) == uint64(s.card)
}

// sameRanks reports whether s and t are the same set of ranks.
func (s *slice) sameRanks(t *slice) bool {
	return s.card == t.card && s.lo == t.lo && s.hi == t.hi && (s.card == s.hi-s.lo+1 || s.set.Equals(t.set))
}

type tensor struct {
	id, storage, nbytes int
	stream              int // 0 for CPU tensors
	where               slice
	lent                bool
}

// liveKey is a live tensor, when it was kept (seq, rising in live's
// order) and the bounds of its ranks.
type liveKey struct {
	t            *tensor
	seq          int64
	lo, hi, card int32
}

// keep adds t to the live tensors.
func (g *rgen) keep(t *tensor) {
	g.live = append(g.live, t)
	g.seq++
	for len(g.byStream) <= t.stream {
		g.byStream = append(g.byStream, nil)
	}
	g.byStream[t.stream] = append(g.byStream[t.stream], liveKey{t, g.seq, int32(t.where.lo), int32(t.where.hi), int32(t.where.card)})
}

// rgen writes one random history.
type rgen struct {
	r      *rand.Rand
	o      *out
	world  int
	ts     int
	next   int // next tensor / storage id
	borrow int
	live   []*tensor
	// byStream holds, per stream (0: CPU tensors) in live's order, what
	// avail asks of every live tensor before it looks at its ranks,
	// packed so that a scan of thousands of tensors stays in cache, and
	// only those of the streams a command may use are scanned.
	byStream [][]liveKey
	seq      int64
	// availBuf is avail's result, reused (the delete case fills it with
	// its candidates too): every caller picks from it before the next
	// call.
	availBuf []*tensor
	streams  []string
	mesh     bool // every command addresses the whole world
}

// Random writes a random valid history of about n commands for a world of
// world ranks (2..MaxRandomWorld), deterministic for a seed.
func Random(dst io.Writer, seed uint64, world, n int) error {
	return random(dst, seed, world, n, false)
}

// RandomMesh writes a random valid history like Random's in which every
// command addresses the whole world (sends are local copies on every rank),
// as an SPMD program's commands do: a grouped replay keeps one group.
func RandomMesh(dst io.Writer, seed uint64, world, n int) error {
	return random(dst, seed, world, n, true)
}

func random(dst io.Writer, seed uint64, world, n int, mesh bool) error {
	if world < 2 || world > MaxRandomWorld {
		return fmt.Errorf("synth: random histories need a world of 2..%d ranks, not %d", MaxRandomWorld, world)
	}
	o, err := newOut(dst, history.Header{Version: 1, WorldSize: int64(world), GPUsPerHost: int64(min(world, 8))})
	if err != nil {
		return err
	}
	g := &rgen{
		r:       rand.New(rand.NewPCG(seed, 0x5eed)),
		o:       o,
		world:   world,
		next:    1,
		streams: []string{"", "main", "comm", "aux"},
		mesh:    mesh,
	}
	all := newSlice(0, []int{world}, []int{1})
	o.msg(gen.MsgCreateDeviceMesh).Extra.Add("names", []byte(`["gpu"]`))
	g.cmd(all)
	for ref := 1; ref < len(g.streams); ref++ {
		m := o.msg(gen.MsgCreateStream)
		m.CreateStream = gen.CreateStream{Result: values.Stream{Ref: int64(ref), Name: g.streams[ref], HasName: true}, Default: ref == 1}
		g.cmd(all)
	}
	step := 0
	for i := 0; i < n; i++ {
		g.op()
		if g.r.IntN(40) == 0 {
			o.step(int64(step), int64(g.ts))
			step++
		}
	}
	return o.close()
}

// cmd writes the message built in g.o to the ranks of the slices, a random
// time after the last command.
func (g *rgen) cmd(ranks ...slice) {
	g.ts += g.r.IntN(5000)
	js := make([]values.Slice, len(ranks))
	for i := range ranks {
		js[i] = ranks[i].js
	}
	g.o.send(int64(g.ts), js...)
}

// randSlice is a random slice of distinct ranks: 1 or 2 dimensions, strides
// 1 to 3.
func (g *rgen) randSlice() slice {
	if g.mesh {
		return g.all()
	}
	if g.world >= BigWorld {
		return g.edgeSlice()
	}
	for {
		if g.r.IntN(3) > 0 {
			stride := 1 + g.r.IntN(3)
			size := 1 + g.r.IntN(max(1, (g.world-1)/stride+1))
			span := (size-1)*stride + 1
			if span > g.world {
				continue
			}
			off := g.r.IntN(g.world - span + 1)
			return newSlice(off, []int{size}, []int{stride})
		}
		s1 := 1 + g.r.IntN(2)
		n1 := 1 + g.r.IntN(3)
		s0 := n1*s1 + g.r.IntN(3)
		n0 := 1 + g.r.IntN(3)
		span := (n0-1)*s0 + (n1-1)*s1 + 1
		if span > g.world {
			continue
		}
		off := g.r.IntN(g.world - span + 1)
		return newSlice(off, []int{n0, n1}, []int{s0, s1})
	}
}

// all is the whole world as one slice.
func (g *rgen) all() slice { return newSlice(0, []int{g.world}, []int{1}) }

// fresh makes a new tensor on stream s for the ranks of where.
func (g *rgen) fresh(s int, where slice, cpu bool) *tensor {
	sizes := []int{0, 4, 4096, 40000, 1 << 20, 3 << 20}
	t := &tensor{id: g.next, storage: g.next, nbytes: sizes[g.r.IntN(len(sizes))], stream: s, where: where}
	if cpu {
		t.stream = 0
	}
	g.next++
	return t
}

// typed is the tensor as a history writes it (in full at its first
// mention, by id after).
func (t *tensor) typed() values.Tensor {
	return values.Tensor{ID: int64(t.id), Idx: idx(int64(t.id)), Storage: int64(t.storage), NBytes: int64(t.nbytes),
		Dtype: "float32", Shape: []int64{int64(t.nbytes / 4)}, CPU: t.stream == 0}
}

// avail returns tensors usable by a command on stream s for the ranks of
// where: on that stream (or CPU tensors, when cpu) on every one of them.
func (g *rgen) avail(s int, where slice, cpu bool) []*tensor {
	out := g.availBuf[:0]
	lo, hi, card := int32(where.lo), int32(where.hi), int32(where.card)
	var a, b []liveKey // stream s's and, when cpu, the CPU tensors
	if s < len(g.byStream) {
		a = g.byStream[s]
	}
	if cpu && s != 0 && len(g.byStream) > 0 {
		b = g.byStream[0]
	}
	// The two lists merged in live's order (by seq), as one scan of the
	// live tensors would meet them.
	for len(a) > 0 || len(b) > 0 {
		var k *liveKey
		if len(b) == 0 || len(a) > 0 && a[0].seq < b[0].seq {
			k, a = &a[0], a[1:]
		} else {
			k, b = &b[0], b[1:]
		}
		if k.lo <= lo && hi <= k.hi && card <= k.card && where.within(&k.t.where) {
			out = append(out, k.t)
		}
	}
	g.availBuf = out
	return out
}

func (g *rgen) pick(ts []*tensor) *tensor {
	if len(ts) == 0 {
		return nil
	}
	return ts[g.r.IntN(len(ts))]
}

var functions = []string{"torch.ops.aten.mm.default", "torch.ops.aten.relu.default", "torch.ops.aten.add.Tensor", "torch.ops.aten.randn.default", "torch.ops.aten.gelu.default"}

// call makes m a call of fn on stream s with tensor arguments args, and
// returns its new result.
func (g *rgen) call(m *gen.Msg, s int, where slice, args []*tensor, fn string) *tensor {
	out := g.fresh(s, where, false)
	ts := make([]values.Tensor, len(args))
	for i, a := range args {
		ts[i] = a.typed()
	}
	argRaw, argLv := tensorTree(nil, nil, ts, byID)
	res := out.typed()
	resRaw, resLv := tensorTree(nil, nil, []values.Tensor{res}, inFull)
	setKind(m, gen.MsgCallFunction)
	m.CallFunction = gen.CallFunction{Ident: int64(out.id), Function: fn,
		Args: values.Tree{Raw: argRaw, Leaves: argLv}, Kwargs: values.Tree{Raw: []byte("{}")},
		Result: values.Tree{Raw: resRaw, Leaves: resLv}, Stream: values.Stream{Ref: int64(s)}}
	return out
}

// callOn makes a call of fn on stream s applied to t and a constant (a
// view's shape, an in-place add's operand), with result res; mutates, when
// set, is the tensor it writes.
func (g *rgen) callOn(fn string, s int, t *tensor, constant string, res *tensor, mutates bool) {
	arg := t.typed()
	argRaw := append(appendTensor([]byte{'['}, &arg, false), ',')
	argRaw = append(append(argRaw, constant...), ']')
	r := res.typed()
	resRaw, resLv := tensorTree(nil, nil, []values.Tensor{r}, inFull)
	m := g.o.msg(gen.MsgCallFunction)
	m.CallFunction = gen.CallFunction{Function: fn,
		Args: values.Tree{Raw: argRaw, Leaves: []values.Tensor{arg}}, Kwargs: values.Tree{Raw: []byte("{}")},
		Result: values.Tree{Raw: resRaw, Leaves: resLv}, Stream: values.Stream{Ref: int64(s)}}
	if mutates {
		m.CallFunction.Mutates = []values.Tensor{arg}
	}
}

func (g *rgen) op() {
	s := 1 + g.r.IntN(len(g.streams)-1)
	where := g.randSlice()
	switch k := g.r.IntN(100); {
	case k < 30: // a function of 0-2 inputs, CPU tensors allowed
		var args []*tensor
		for i := g.r.IntN(3); i > 0; i-- {
			if t := g.pick(g.avail(s, where, true)); t != nil {
				args = append(args, t)
			}
		}
		out := g.call(&g.o.rec.Msg, s, where, args, functions[g.r.IntN(len(functions))])
		g.cmd(where)
		g.keep(out)
	case k < 37: // a view: no time, same storage
		t := g.pick(g.avail(s, where, false))
		if t == nil {
			return
		}
		v := &tensor{id: g.next, storage: t.storage, nbytes: t.nbytes, stream: s, where: where}
		g.next++
		g.callOn("torch.ops.aten.view.default", s, t, "[-1]", v, false)
		g.cmd(where)
		g.keep(v)
	case k < 45: // in place: mutates its input, the result shares its storage
		t := g.pick(g.avail(s, where, false))
		if t == nil {
			return
		}
		out := &tensor{id: g.next, storage: t.storage, nbytes: t.nbytes, stream: s, where: where}
		g.next++
		g.callOn("torch.ops.aten.add_.Tensor", s, t, "1.0", out, true)
		g.cmd(where)
		g.keep(out)
	case k < 55: // a reduction over the slice
		t := g.pick(g.avail(s, where, false))
		if t == nil {
			return
		}
		out := g.fresh(s, where, false)
		red := []string{"sum", "avg", "stack"}[g.r.IntN(3)]
		m := g.o.msg(gen.MsgReduce)
		m.Reduce = gen.Reduce{Result: out.typed(), LocalTensor: t.typed(), Stream: values.Stream{Ref: int64(s)},
			Dims: []string{"gpu"}, Reduction: red, Scatter: g.r.IntN(2) == 0}
		g.cmd(where)
		g.keep(out)
	case k < 63: // a send between disjoint slices of equal size, or a local copy
		g.send(s)
	case k < 70:
		g.borrowOp(where)
	case k < 75: // CPU tensors from a pipe
		t := g.fresh(0, where, true)
		raw, lv := tensorTree(nil, nil, []values.Tensor{t.typed()}, inFull)
		m := g.o.msg(gen.MsgPipeRecv)
		m.PipeRecv = gen.PipeRecv{Ident: int64(t.id), Result: values.Tree{Raw: raw, Leaves: lv}, Pipe: 1, Stream: values.Stream{Ref: int64(s)}}
		g.cmd(where)
		g.keep(t)
	case k < 82: // a command group
		n := 2 + g.r.IntN(2)
		m := g.o.msg(gen.MsgCommandGroup)
		m.CommandGroup.Commands.Reset()
		for i := 0; i < n; i++ {
			var args []*tensor
			if t := g.pick(g.avail(s, where, true)); t != nil {
				args = append(args, t)
			}
			out := g.call(&g.o.sub, s, where, args, functions[g.r.IntN(len(functions))])
			m.CommandGroup.Commands.Add(&g.o.sub)
			g.keep(out) // later sub-commands may use it
		}
		g.cmd(where)
	case k < 97: // delete where it was made
		cands := g.availBuf[:0]
		for _, t := range g.live {
			if !t.lent {
				cands = append(cands, t)
			}
		}
		g.availBuf = cands
		var del []*tensor
		if t := g.pick(cands); t != nil {
			del = append(del, t)
			for _, u := range cands { // others made on the same ranks go too
				if u != t && u.where.sameRanks(&t.where) && g.r.IntN(3) == 0 {
					del = append(del, u)
				}
			}
		}
		if len(del) == 0 {
			return
		}
		m := g.o.msg(gen.MsgDeleteRefs)
		m.DeleteRefs.Refs = m.DeleteRefs.Refs[:0]
		for _, t := range del {
			m.DeleteRefs.Refs = append(m.DeleteRefs.Refs, int64(t.id))
			g.drop(t)
		}
		g.cmd(del[0].where)
	default: // accepted, not simulated
		m := g.o.msg(gen.MsgRequestStatus)
		m.Extra.Add("ident", []byte("1"))
		m.Extra.Add("controller", []byte("false"))
		g.cmd(where)
	}
}

func (g *rgen) drop(t *tensor) {
	for i, u := range g.live {
		if u == t {
			g.live = append(g.live[:i], g.live[i+1:]...)
			ks := g.byStream[t.stream]
			for j := range ks {
				if ks[j].t == t {
					g.byStream[t.stream] = append(ks[:j], ks[j+1:]...)
					break
				}
			}
			return
		}
	}
}

func (g *rgen) send(s int) {
	if g.mesh {
		g.sendSlices(s, g.all(), g.all())
		return
	}
	if g.world >= BigWorld {
		g.sendAtEdges(s)
		return
	}
	stride := 1 + g.r.IntN(2)
	size := 1 + g.r.IntN(max(1, g.world/(2*stride)))
	span := (size-1)*stride + 1
	if 2*span > g.world {
		return
	}
	a := g.r.IntN(g.world - 2*span + 1)
	b := a + span + g.r.IntN(g.world-a-2*span+1)
	from := newSlice(a, []int{size}, []int{stride})
	to := newSlice(b, []int{size}, []int{stride})
	if g.r.IntN(2) == 0 {
		from, to = to, from
	}
	if g.r.IntN(4) == 0 {
		to = from // a local copy
	}
	g.sendSlices(s, from, to)
}

// sendSlices sends a tensor available on every rank of from to to.
func (g *rgen) sendSlices(s int, from, to slice) {
	t := g.pick(g.avail(s, from, false))
	if t == nil {
		return
	}
	out := g.fresh(s, to, false)
	ranks := []slice{from}
	if !to.sameRanks(&from) {
		ranks = append(ranks, to)
	}
	m := g.o.msg(gen.MsgSendTensor)
	m.SendTensor = gen.SendTensor{Result: out.typed(), Tensor: t.typed(), FromRanks: from.js, ToRanks: to.js,
		FromStream: values.Stream{Ref: int64(s)}, ToStream: values.Stream{Ref: int64(s)}}
	g.cmd(ranks...)
	g.keep(out)
}

// borrowOp lends a tensor to another stream, uses it there and gives it
// back, with other commands in between now and then.
func (g *rgen) borrowOp(where slice) {
	from := 1 + g.r.IntN(len(g.streams)-1)
	to := 1 + (from+g.r.IntN(len(g.streams)-2))%(len(g.streams)-1)
	if to == from {
		return
	}
	t := g.pick(g.avail(from, where, false))
	if t == nil || t.lent {
		return
	}
	g.borrow++
	id := g.borrow
	t.lent = true
	res := g.fresh(to, where, false)
	res.lent = true
	between := func() {
		if g.r.IntN(2) == 0 {
			g.op()
		}
	}
	m := g.o.msg(gen.MsgBorrowCreate)
	m.BorrowCreate = gen.BorrowCreate{Result: res.typed(), Borrow: int64(id), Tensor: t.typed(),
		FromStream: values.Stream{Ref: int64(from)}, ToStream: values.Stream{Ref: int64(to)}}
	g.cmd(where)
	between()
	g.o.msg(gen.MsgBorrowFirstUse).BorrowFirstUse.Borrow = int64(id)
	g.cmd(where)
	out := g.call(&g.o.rec.Msg, to, where, []*tensor{res}, "torch.ops.aten.mul.Tensor")
	g.cmd(where)
	g.keep(out)
	between()
	g.o.msg(gen.MsgBorrowLastUse).BorrowLastUse.Borrow = int64(id)
	g.cmd(where)
	m = g.o.msg(gen.MsgDeleteRefs)
	m.DeleteRefs.Refs = append(m.DeleteRefs.Refs[:0], int64(res.id))
	g.cmd(where)
	between()
	g.o.msg(gen.MsgBorrowDrop).BorrowDrop.Borrow = int64(id)
	g.cmd(where)
	t.lent = false
}

// edgeSlice is a random slice of distinct ranks near a container edge
// (an edge inside the world, or its end).
func (g *rgen) edgeSlice() slice {
	for {
		e := (1 + g.r.IntN(g.world/BigWorld)) * BigWorld
		e = min(e, g.world)
		d := g.r.IntN(3) - 1
		var s slice
		switch g.r.IntN(8) {
		case 0, 1: // a run ending on, before or after the edge
			n := []int{1, 2, 100, BigWorld / 2, BigWorld}[g.r.IntN(5)]
			s = slice{offset: e + d - n, sizes: []int{n}, strides: []int{1}}
		case 2: // a run starting there
			n := []int{1, 3, 1000, BigWorld}[g.r.IntN(4)]
			s = slice{offset: e + d, sizes: []int{n}, strides: []int{1}}
		case 3: // a single rank at the edge
			s = slice{offset: e + d}
		case 4: // strided across the edge
			st := 2 + g.r.IntN(4)
			n := 1 + g.r.IntN(3000)
			s = slice{offset: e + d - st*g.r.IntN(n), sizes: []int{n}, strides: []int{st}}
		case 5: // a 2-d block across the edge
			rows, cols := 1+g.r.IntN(200), 1+g.r.IntN(8)
			st := cols + g.r.IntN(8)
			s = slice{offset: e + d - st*g.r.IntN(rows), sizes: []int{rows, cols}, strides: []int{st, 1}}
		case 6: // the upper part of the world from an edge
			s = slice{offset: e + d, sizes: []int{g.world - e - d}, strides: []int{1}}
		default: // the whole world
			s = slice{offset: 0, sizes: []int{g.world}, strides: []int{1}}
		}
		if lo, hi := bounds(s); lo >= 0 && hi < g.world && hi >= lo {
			return newSlice(s.offset, s.sizes, s.strides)
		}
	}
}

// bounds is the smallest and largest rank of s.
func bounds(s slice) (lo, hi int) {
	lo, hi = s.offset, s.offset
	for k, n := range s.sizes {
		if n <= 0 {
			return 0, -1
		}
		if ext := (n - 1) * s.strides[k]; ext < 0 {
			lo += ext
		} else {
			hi += ext
		}
	}
	return lo, hi
}

// sendAtEdges sends between the halves of the world, or between equal runs
// on either side of an edge, either way round.
func (g *rgen) sendAtEdges(s int) {
	var from, to slice
	e := g.world / 2 // an edge strictly inside the world, if there is one
	if k := (g.world - 1) / BigWorld; k > 0 {
		e = (1 + g.r.IntN(k)) * BigWorld
	}
	switch g.r.IntN(3) {
	case 0: // halves
		h := g.world / 2
		from, to = newSlice(0, []int{h}, []int{1}), newSlice(g.world-h, []int{h}, []int{1})
	case 1: // n ranks just below the edge to n ranks from it, reversed
		n := 1 + g.r.IntN(min(e, g.world-e, 5000))
		from, to = newSlice(e-n, []int{n}, []int{1}), newSlice(e+n-1, []int{n}, []int{-1})
	default: // strided sets interleaved across the edge
		m := min(e/2, (g.world-e)/2, 3000)
		if m < 1 {
			return
		}
		n := 1 + g.r.IntN(m)
		from, to = newSlice(e-2*n+1, []int{2 * n}, []int{2}), newSlice(e-2*n, []int{2 * n}, []int{2})
		if lo, hi := bounds(from); lo < 0 || hi >= g.world {
			return
		}
		if lo, hi := bounds(to); lo < 0 || hi >= g.world {
			return
		}
	}
	if g.r.IntN(2) == 0 {
		from, to = to, from
	}
	g.sendSlices(s, from, to)
}
