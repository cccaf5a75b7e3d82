package sched

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// More random histories for the shortcut tests, with what xgen does not
// write: zero-byte storages, up to eight streams created along the way,
// CommandGroups nested in CommandGroups, local copies and sends between
// single ranks, sends shifted along a block (a group's ranks then pair
// with ranks of the same group, and the groups split along the paths the
// send makes), loans dropped without a first use, calls that mutate a
// tensor besides their result, CPU tensors received from a pipe, message
// types that are only accepted or unknown, records with stack frames,
// steps with a ts, and idle periods of up to 2^40 ns.
type xmore struct {
	*xgen
	shifts int // shifted sends along a large block so far
}

// xmoreGenerate writes such a history of about n commands over blocks (as
// xgenerate).
func xmoreGenerate(seed uint64, blocks []xslice, local bool, n int) *xmore {
	g := &xmore{xgen: &xgen{r: rand.New(rand.NewPCG(seed, 9)), blocks: blocks, parts: local, faults: local, ts: 1000}}
	g.streams, g.ran, g.used = []uint8{0}, []uint8{0}, []int{0}
	g.streams[0] = g.all()
	g.emit(g.all(), `{"type":"CreateStream","result":{"ref":1,"name":"s1"},"default":true}`)
	for g.cmds < n {
		g.tick()
		if g.r.IntN(200) == 0 {
			g.ts += g.r.IntN(1 << 40)
		}
		switch k := g.r.IntN(128); {
		case k < 100:
			g.op(k)
		case k < 104:
			g.zeroBytes()
		case k < 108:
			g.lateStream()
		case k < 110:
			g.nested()
		case k < 114:
			g.copyOrSend()
		case k < 116:
			g.unusedLoan()
		case k < 118:
			g.mutate()
		case k < 122:
			g.shifted()
		case k < 124:
			g.fromPipe()
		default:
			g.other()
		}
	}
	for len(g.loans) > 0 {
		g.tick()
		g.advance()
	}
	return g
}

// zeroBytes makes a tensor on a storage of 0 bytes, or a view of one.
func (g *xmore) zeroBytes() {
	s, mask := g.stream()
	if mask == 0 {
		return
	}
	var args string
	var view *xtensor
	if ins := g.avail(s, mask, false); len(ins) > 0 && g.r.IntN(2) == 0 {
		t := ins[g.r.IntN(len(ins))]
		args = tjson(t)
		if t.nbytes == 0 || g.r.IntN(2) == 0 {
			view = t
		}
	}
	out := g.fresh(s, mask, view)
	if view == nil {
		out.nbytes = 0
	}
	fn := "torch.ops.aten.empty.default"
	if view != nil || g.r.IntN(3) == 0 {
		fn = "torch.ops.aten.view.default"
	}
	g.emit(mask, fmt.Sprintf(`{"type":"CallFunction","ident":0,"function":%q,"args":[%s],"kwargs":{},"result":[%s],"mutates":[],"stream":{"ref":%d}}`,
		fn, args, tjson(out), s))
	g.live = append(g.live, out)
	g.use(s, mask)
}

// lateStream creates a stream, up to eight, on blocks that lack it.
func (g *xmore) lateStream() { g.addStream(len(g.streams) < 8) }

// nested sends a CommandGroup holding a CommandGroup (a call and a view
// of its result), a Reduce of the view and, often, the call's result
// deleted.
func (g *xmore) nested() {
	s, mask := g.stream()
	ins := g.avail(s, mask, false)
	if mask == 0 || len(ins) == 0 {
		return
	}
	x := ins[g.r.IntN(len(ins))]
	a := g.fresh(s, mask, nil)
	b := g.fresh(s, mask, a)
	c := g.fresh(s, mask, nil)
	inner := fmt.Sprintf(`{"type":"CommandGroup","commands":[{"type":"CallFunction","ident":0,"function":"torch.ops.aten.relu.default","args":[%s],"kwargs":{},"result":[%s],"mutates":[],"stream":{"ref":%d}},{"type":"CallFunction","ident":0,"function":"torch.ops.aten.view.default","args":[%s],"kwargs":{},"result":[%s],"mutates":[],"stream":{"ref":%d}}]}`,
		tjson(x), tjson(a), s, tjson(a), tjson(b), s)
	subs := []string{inner, fmt.Sprintf(`{"type":"Reduce","result":%s,"local_tensor":%s,"stream":{"ref":%d},"dims":["x"],"reduction":"sum","scatter":false,"inplace":false,"out":null}`, tjson(c), tjson(b), s)}
	if g.r.IntN(2) == 0 {
		subs = append(subs, fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d]}`, a.id))
	} else {
		g.live = append(g.live, a)
	}
	g.emit(mask, fmt.Sprintf(`{"type":"CommandGroup","commands":[%s]}`, strings.Join(subs, ",")))
	g.cmds += len(subs) + 2 // the inner group and its two calls
	g.live = append(g.live, b, c)
	g.use(s, mask)
}

// copyOrSend copies a tensor on a block (from_ranks equal to_ranks), or
// sends it from one rank of a block to one rank of another of the same
// size; the received tensor, on one rank, is deleted on its block or
// never named again.
func (g *xmore) copyOrSend() {
	s := 1 + g.r.IntN(len(g.streams))
	a, b := g.r.IntN(len(g.blocks)), g.r.IntN(len(g.blocks))
	ma, mb := uint8(1)<<a, uint8(1)<<b
	t := g.sendable(s, ma, mb)
	if t == nil {
		return
	}
	if a == b || g.r.IntN(3) == 0 {
		out := g.fresh(s, ma, nil)
		g.emit(ma, fmt.Sprintf(`{"type":"SendTensor","result":%s,"tensor":%s,"from_ranks":%s,"to_ranks":%s,"from_stream":{"ref":%d},"to_stream":{"ref":%d}}`,
			tjson(out), tjson(t), block(a), block(a), s, s))
		g.live = append(g.live, out)
		g.use(s, ma)
		return
	}
	if !g.parts || g.blocks[a].size != g.blocks[b].size {
		return
	}
	q := g.blocks[a].size
	out := g.fresh(s, mb, nil)
	g.emit(ma|mb, fmt.Sprintf(`{"type":"SendTensor","result":%s,"tensor":%s,"from_ranks":@p%d.%d.%d@,"to_ranks":@p%d.%d.%d@,"from_stream":{"ref":%d},"to_stream":{"ref":%d}}`,
		tjson(out), tjson(t), a, g.r.IntN(q), q, b, g.r.IntN(q), q, s, s))
	g.use(s, ma|mb)
	if g.r.IntN(2) == 0 {
		g.emit(mb, fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d]}`, out.id))
	}
}

// shifted sends along a block or between two blocks of one size, rank i
// to rank i+k (or the other way), or from a block to another reversed:
// positions along each path the send makes differ in what they wait for.
// On a large block, k is large and such sends are few: each splits the
// groups further.
func (g *xmore) shifted() {
	s := 1 + g.r.IntN(len(g.streams))
	a, b := g.r.IntN(len(g.blocks)), g.r.IntN(len(g.blocks))
	A, B := g.blocks[a], g.blocks[b]
	ma, mb := uint8(1)<<a, uint8(1)<<b
	if A.size != B.size || A.size < 2 || g.streams[s-1]&(ma|mb) != ma|mb {
		return
	}
	ins := g.avail(s, ma|mb, false)
	if len(ins) == 0 {
		return
	}
	k := 1 + g.r.IntN(A.size-1)
	if A.size > 1000 {
		if g.shifts >= 2 {
			return
		}
		g.shifts++
		k = A.size/4 + g.r.IntN(A.size/2)
	}
	t := ins[g.r.IntN(len(ins))]
	from := xslice{A.offset, A.size - k, A.stride}.json()
	to := xslice{B.offset + k*B.stride, B.size - k, B.stride}.json()
	switch g.r.IntN(3) {
	case 0:
		from, to = to, from
	case 1:
		if a != b { // reversed on one block, pairs would wait for each other
			from = A.json()
			to = xslice{B.offset + (B.size-1)*B.stride, B.size, -B.stride}.json()
		}
	}
	out := g.fresh(s, mb, nil)
	g.emit(ma|mb, fmt.Sprintf(`{"type":"SendTensor","result":%s,"tensor":%s,"from_ranks":%s,"to_ranks":%s,"from_stream":{"ref":%d},"to_stream":{"ref":%d}}`,
		tjson(out), tjson(t), from, to, s, s))
	g.use(s, ma|mb)
	if g.r.IntN(3) != 0 {
		g.emit(ma|mb, fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d]}`, out.id))
	}
}

// unusedLoan lends a tensor and drops the loan without a first use,
// sometimes deleting the lent tensor meanwhile.
func (g *xmore) unusedLoan() {
	if len(g.streams) < 2 {
		return
	}
	from, to := 1+g.r.IntN(len(g.streams)), 1+g.r.IntN(len(g.streams))
	mask := g.sub(g.streams[from-1] & g.streams[to-1] & g.ran[from-1] & g.ran[to-1])
	ins := g.avail(from, mask, true)
	if from == to || mask == 0 || len(ins) == 0 {
		return
	}
	t := ins[g.r.IntN(len(ins))]
	g.borrow++
	res := g.fresh(to, mask, nil)
	g.emit(mask, fmt.Sprintf(`{"type":"BorrowCreate","result":%s,"borrow":%d,"tensor":%s,"from_stream":{"ref":%d},"to_stream":{"ref":%d}}`,
		tjson(res), g.borrow, tjson(t), from, to))
	if g.r.IntN(2) == 0 {
		g.emit(mask, fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d]}`, t.id))
		g.live = slices.DeleteFunc(g.live, func(x *xtensor) bool { return x == t })
	}
	g.tick()
	g.emit(mask, fmt.Sprintf(`{"type":"BorrowLastUse","borrow":%d}`, g.borrow))
	g.tick()
	g.emit(mask, fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d]}`, res.id))
	g.emit(mask, fmt.Sprintf(`{"type":"BorrowDrop","borrow":%d}`, g.borrow))
}

// mutate calls a function that mutates a tensor other than its result.
func (g *xmore) mutate() {
	s, mask := g.stream()
	ins := g.avail(s, mask, true)
	if mask == 0 || len(ins) < 2 {
		return
	}
	a, b := ins[g.r.IntN(len(ins))], ins[g.r.IntN(len(ins))]
	out := g.fresh(s, mask, nil)
	g.emit(mask, fmt.Sprintf(`{"type":"CallFunction","ident":0,"function":"torch.ops.aten.foo.default","args":[%s],"kwargs":{},"result":[%s],"mutates":[%s],"stream":{"ref":%d}}`,
		tjson(a), tjson(out), tjson(b), s))
	g.live = append(g.live, out)
	g.use(s, mask)
}

// fromPipe receives a CPU tensor, copies it to a stream and often deletes
// it.
func (g *xmore) fromPipe() {
	s, mask := g.stream()
	if mask == 0 {
		return
	}
	g.next++
	cpu := fmt.Sprintf(`{"tensor":%d,"storage":%d,"nbytes":64,"dtype":"float32","shape":[16],"device":"cpu"}`, g.next, g.next)
	id := g.next
	g.emit(mask, fmt.Sprintf(`{"type":"PipeRecv","ident":0,"result":[%s],"pipe":1,"stream":{"ref":%d}}`, cpu, s))
	out := g.fresh(s, mask, nil)
	g.emit(mask, fmt.Sprintf(`{"type":"CallFunction","ident":0,"function":"torch.ops.aten.copy.default","args":[%s],"kwargs":{},"result":[%s],"mutates":[],"stream":{"ref":%d}}`, cpu, tjson(out), s))
	g.live = append(g.live, out)
	g.use(s, mask)
	if g.r.IntN(2) == 0 {
		g.emit(mask, fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d]}`, id))
	}
}

// other writes a type only accepted, an unknown one, a record with a
// stack and a key of its own, or a step with a ts.
func (g *xmore) other() {
	mask := g.sub(g.all())
	switch g.r.IntN(4) {
	case 0:
		g.emit(mask, `{"type":"CreateDeviceMesh","result":3,"names":["x"],"ranks":{"offset":0,"sizes":[1],"strides":[1]}}`)
	case 1:
		g.emit(mask, `{"type":"Unheard","x":[1,{"tensor":5}]}`)
	case 2:
		g.lines = append(g.lines, fmt.Sprintf(`{"ts":%d,"ranks":%s,"msg":{"type":"SendValue","a":1},"tb":[{"file":"train.py","line":31,"name":"forward"}],"note":{"k":1}}`, g.ts, g.ranks(mask)))
		g.cmds++
	case 3:
		g.lines = append(g.lines, fmt.Sprintf(`{"step":%d,"ts":%d}`, g.steps, g.ts))
		g.steps++
	}
}

// TestShortcutsExactRandomMore is TestShortcutsExactRandom on xmore's
// histories, in the controller-only mode too: every way of replaying
// must agree with the ungrouped, unsettled one, rank by rank.
func TestShortcutsExactRandomMore(t *testing.T) {
	seeds, n := 12, 3000
	if testing.Short() {
		seeds, n = 4, 2000 // the race detector's run
	}
	runs := []xrun{
		{name: "settled", settle: true, batch: true, jobs: 1},
		{name: "settled parallel", settle: true, batch: true, jobs: 2},
		{name: "grouped settled", grouped: true, settle: true, batch: true, jobs: 2},
		{name: "grouped settled one by one", grouped: true, settle: true, jobs: 1},
		{name: "grouped unsettled", grouped: true, batch: true, jobs: 1},
		{name: "grouped settled traced", grouped: true, settle: true, keep: true, batch: true, jobs: 2},
	}
	errs := 0
	for seed := range seeds {
		// Blocks of up to 12 ranks: shifted sends make paths long enough
		// for ranks in the middle of one to differ.
		world := []int{4, 6, 8, 12, 9, 16, 24, 20}[seed%8]
		nb := 2 + seed%3
		bs := layout(world, nb, seed%2 == 1)
		text := xmoreGenerate(uint64(seed), bs, true, n).render(world, bs)
		for _, how := range []struct {
			mode Mode
			ctrl Controller
		}{{Everything, ControllerMonarch}, {Everything, ControllerNone}, {StreamOnly, ControllerMonarch}, {ControllerOnly, ControllerMonarch}} {
			if xagree(t, text, world, how.mode, how.ctrl, runs, fmt.Sprintf("seed %d", seed)) != "" {
				errs++
			}
		}
	}
	if errs > 2*seeds {
		t.Errorf("%d of %d random replays failed: the generator should make valid histories", errs, 4*seeds)
	}
}
