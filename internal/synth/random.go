// Package synth writes synthetic command histories.
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
	"bufio"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"strings"
)

// MaxRandomWorld is the largest world Random writes for: rank sets are
// 64-bit masks.
const MaxRandomWorld = 64

// slice is a strided block of ranks and its mask.
type slice struct {
	offset         int
	sizes, strides []int
	mask           uint64
}

func (s slice) json() string {
	return fmt.Sprintf(`{"offset":%d,"sizes":%s,"strides":%s}`, s.offset, ints(s.sizes), ints(s.strides))
}

func ints(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func newSlice(offset int, sizes, strides []int) slice {
	s := slice{offset: offset, sizes: sizes, strides: strides}
	var walk func(d, r int)
	walk = func(d, r int) {
		if d == len(sizes) {
			s.mask |= 1 << r
			return
		}
		for i := 0; i < sizes[d]; i++ {
			walk(d+1, r+i*strides[d])
		}
	}
	walk(0, offset)
	return s
}

type tensor struct {
	id, storage, nbytes int
	stream              int // 0 for CPU tensors
	where               slice
	lent                bool
}

type gen struct {
	r       *rand.Rand
	w       *bufio.Writer
	world   int
	ts      int
	next    int // next tensor / storage id
	borrow  int
	live    []*tensor
	streams []string
}

// Random writes a random valid history of about n commands for a world of
// world ranks (2..MaxRandomWorld), deterministic for a seed.
func Random(out io.Writer, seed uint64, world, n int) error {
	if world < 2 || world > MaxRandomWorld {
		return fmt.Errorf("synth: random histories need a world of 2..%d ranks, not %d", MaxRandomWorld, world)
	}
	g := &gen{
		r:       rand.New(rand.NewPCG(seed, 0x5eed)),
		w:       bufio.NewWriter(out),
		world:   world,
		next:    1,
		streams: []string{"", "main", "comm", "aux"},
	}
	fmt.Fprintf(g.w, `{"fastsim":"history","version":1,"world_size":%d,"gpus_per_host":%d}`+"\n", world, min(world, 8))
	all := newSlice(0, []int{world}, []int{1})
	g.cmd([]slice{all}, `{"type":"CreateDeviceMesh","names":["gpu"]}`)
	for ref := 1; ref < len(g.streams); ref++ {
		g.cmd([]slice{all}, fmt.Sprintf(`{"type":"CreateStream","result":{"ref":%d,"name":%q},"default":%v}`, ref, g.streams[ref], ref == 1))
	}
	step := 0
	for i := 0; i < n; i++ {
		g.op()
		if g.r.IntN(40) == 0 {
			fmt.Fprintf(g.w, `{"step":%d}`+"\n", step)
			step++
		}
	}
	return g.w.Flush()
}

func (g *gen) cmd(ranks []slice, msg string) {
	g.ts += g.r.IntN(5000)
	parts := make([]string, len(ranks))
	for i, s := range ranks {
		parts[i] = s.json()
	}
	fmt.Fprintf(g.w, `{"ts":%d,"ranks":[%s],"msg":%s}`+"\n", g.ts, strings.Join(parts, ","), msg)
}

// randSlice is a random slice of distinct ranks: 1 or 2 dimensions, strides
// 1 to 3.
func (g *gen) randSlice() slice {
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

// fresh makes a new tensor on stream s for the ranks of where.
func (g *gen) fresh(s int, where slice, cpu bool) *tensor {
	sizes := []int{0, 4, 4096, 40000, 1 << 20, 3 << 20}
	t := &tensor{id: g.next, storage: g.next, nbytes: sizes[g.r.IntN(len(sizes))], stream: s, where: where}
	if cpu {
		t.stream = 0
	}
	g.next++
	return t
}

func (t *tensor) first() string {
	dev := "cuda"
	if t.stream == 0 {
		dev = "cpu"
	}
	return fmt.Sprintf(`{"tensor":%d,"storage":%d,"nbytes":%d,"dtype":"float32","shape":[%d],"device":%q}`, t.id, t.storage, t.nbytes, t.nbytes/4, dev)
}

func ref(t *tensor) string { return fmt.Sprintf(`{"tensor":%d}`, t.id) }

// avail returns tensors usable by a command on stream s for the ranks of
// where: on that stream (or CPU tensors, when cpu) on every one of them.
func (g *gen) avail(s int, where slice, cpu bool) []*tensor {
	var out []*tensor
	for _, t := range g.live {
		if t.where.mask&where.mask == where.mask && (t.stream == s || cpu && t.stream == 0) {
			out = append(out, t)
		}
	}
	return out
}

func (g *gen) pick(ts []*tensor) *tensor {
	if len(ts) == 0 {
		return nil
	}
	return ts[g.r.IntN(len(ts))]
}

var functions = []string{"torch.ops.aten.mm.default", "torch.ops.aten.relu.default", "torch.ops.aten.add.Tensor", "torch.ops.aten.randn.default", "torch.ops.aten.gelu.default"}

func (g *gen) call(s int, where slice, args []*tensor, fn string) (string, *tensor) {
	out := g.fresh(s, where, false)
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = ref(a)
	}
	return fmt.Sprintf(`{"type":"CallFunction","ident":%d,"function":%q,"args":[%s],"kwargs":{},"result":[%s],"mutates":[],"stream":{"ref":%d}}`,
		out.id, fn, strings.Join(parts, ","), out.first(), s), out
}

func (g *gen) op() {
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
		msg, out := g.call(s, where, args, functions[g.r.IntN(len(functions))])
		g.cmd([]slice{where}, msg)
		g.live = append(g.live, out)
	case k < 37: // a view: no time, same storage
		t := g.pick(g.avail(s, where, false))
		if t == nil {
			return
		}
		v := &tensor{id: g.next, storage: t.storage, nbytes: t.nbytes, stream: s, where: where}
		g.next++
		g.cmd([]slice{where}, fmt.Sprintf(`{"type":"CallFunction","ident":0,"function":"torch.ops.aten.view.default","args":[%s,[-1]],"kwargs":{},"result":[%s],"mutates":[],"stream":{"ref":%d}}`,
			ref(t), v.first(), s))
		g.live = append(g.live, v)
	case k < 45: // in place: mutates its input, the result shares its storage
		t := g.pick(g.avail(s, where, false))
		if t == nil {
			return
		}
		out := &tensor{id: g.next, storage: t.storage, nbytes: t.nbytes, stream: s, where: where}
		g.next++
		g.cmd([]slice{where}, fmt.Sprintf(`{"type":"CallFunction","ident":0,"function":"torch.ops.aten.add_.Tensor","args":[%s,1.0],"kwargs":{},"result":[%s],"mutates":[%s],"stream":{"ref":%d}}`,
			ref(t), out.first(), ref(t), s))
		g.live = append(g.live, out)
	case k < 55: // a reduction over the slice
		t := g.pick(g.avail(s, where, false))
		if t == nil {
			return
		}
		out := g.fresh(s, where, false)
		red := []string{"sum", "avg", "stack"}[g.r.IntN(3)]
		g.cmd([]slice{where}, fmt.Sprintf(`{"type":"Reduce","result":%s,"local_tensor":%s,"stream":{"ref":%d},"dims":["gpu"],"reduction":%q,"scatter":%v,"inplace":false,"out":null}`,
			out.first(), ref(t), s, red, g.r.IntN(2) == 0))
		g.live = append(g.live, out)
	case k < 63: // a send between disjoint slices of equal size, or a local copy
		g.send(s)
	case k < 70:
		g.borrowOp(where)
	case k < 75: // CPU tensors from a pipe
		t := g.fresh(0, where, true)
		g.cmd([]slice{where}, fmt.Sprintf(`{"type":"PipeRecv","ident":%d,"result":[%s],"pipe":1,"stream":{"ref":%d}}`, t.id, t.first(), s))
		g.live = append(g.live, t)
	case k < 82: // a command group
		n := 2 + g.r.IntN(2)
		var subs []string
		var outs []*tensor
		for i := 0; i < n; i++ {
			var args []*tensor
			if t := g.pick(g.avail(s, where, true)); t != nil {
				args = append(args, t)
			}
			msg, out := g.call(s, where, args, functions[g.r.IntN(len(functions))])
			subs = append(subs, msg)
			outs = append(outs, out)
			g.live = append(g.live, out) // later sub-commands may use it
		}
		g.cmd([]slice{where}, `{"type":"CommandGroup","commands":[`+strings.Join(subs, ",")+`]}`)
		_ = outs
	case k < 97: // delete where it was made
		var cands []*tensor
		for _, t := range g.live {
			if !t.lent {
				cands = append(cands, t)
			}
		}
		var del []*tensor
		if t := g.pick(cands); t != nil {
			del = append(del, t)
			for _, u := range cands { // others made on the same ranks go too
				if u != t && u.where.mask == t.where.mask && g.r.IntN(3) == 0 {
					del = append(del, u)
				}
			}
		}
		if len(del) == 0 {
			return
		}
		ids := make([]int, len(del))
		for i, t := range del {
			ids[i] = t.id
			g.drop(t)
		}
		g.cmd([]slice{del[0].where}, fmt.Sprintf(`{"type":"DeleteRefs","refs":%s}`, ints(ids)))
	default: // accepted, not simulated
		g.cmd([]slice{where}, `{"type":"RequestStatus","ident":1,"controller":false}`)
	}
}

func (g *gen) drop(t *tensor) {
	for i, u := range g.live {
		if u == t {
			g.live = append(g.live[:i], g.live[i+1:]...)
			return
		}
	}
}

func (g *gen) send(s int) {
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
	t := g.pick(g.avail(s, from, false))
	if t == nil {
		return
	}
	out := g.fresh(s, to, false)
	ranks := []slice{from}
	if to.mask != from.mask {
		ranks = append(ranks, to)
	}
	g.cmd(ranks, fmt.Sprintf(`{"type":"SendTensor","result":%s,"tensor":%s,"from_ranks":%s,"to_ranks":%s,"from_stream":{"ref":%d},"to_stream":{"ref":%d}}`,
		out.first(), ref(t), from.json(), to.json(), s, s))
	g.live = append(g.live, out)
}

// borrowOp lends a tensor to another stream, uses it there and gives it
// back, with other commands in between now and then.
func (g *gen) borrowOp(where slice) {
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
	g.cmd([]slice{where}, fmt.Sprintf(`{"type":"BorrowCreate","result":%s,"borrow":%d,"tensor":%s,"from_stream":{"ref":%d},"to_stream":{"ref":%d}}`,
		res.first(), id, ref(t), from, to))
	between()
	g.cmd([]slice{where}, fmt.Sprintf(`{"type":"BorrowFirstUse","borrow":%d}`, id))
	msg, out := g.call(to, where, []*tensor{res}, "torch.ops.aten.mul.Tensor")
	g.cmd([]slice{where}, msg)
	g.live = append(g.live, out)
	between()
	g.cmd([]slice{where}, fmt.Sprintf(`{"type":"BorrowLastUse","borrow":%d}`, id))
	g.cmd([]slice{where}, fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d]}`, res.id))
	between()
	g.cmd([]slice{where}, fmt.Sprintf(`{"type":"BorrowDrop","borrow":%d}`, id))
	t.lent = false
}

var _ = bits.OnesCount64
