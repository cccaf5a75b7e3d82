package sched

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The engine takes shortcuts that are exact only under conditions it
// checks: settled memory events, groups split lazily, runs of Reduces
// applied together, events dropped when no trace is kept. The histories
// here are built to press on those conditions (streams created late and
// idle, borrows alive across settlements, deletes on idle streams, ties
// across streams, splits after settlements, collectives on parts of the
// world), and every way of replaying one must give the same answer.

// xslice is a block of ranks: a strided run, so a history can address it
// as one SLICE.
type xslice struct{ offset, size, stride int }

func (s xslice) json() string {
	return fmt.Sprintf(`{"offset":%d,"sizes":[%d],"strides":[%d]}`, s.offset, s.size, s.stride)
}

// xtensor is a tensor alive on the blocks of mask, on stream ref.
type xtensor struct {
	id, storage, nbytes int
	stream              int
	mask                uint8
	lent                bool
}

// xborrow is a loan in progress; step says which of its commands comes
// next.
type xborrow struct {
	id, from, to int
	mask         uint8
	src          *xtensor
	res          *xtensor
	step         int
}

// xgen writes a random valid history over a world cut into blocks: every
// command goes to a union of blocks, so the generator knows what each rank
// holds by knowing what each block holds.
type xgen struct {
	r       *rand.Rand
	blocks  []xslice
	ts      int
	lines   []string
	streams []uint8 // by ref - 1: the blocks it exists on
	ran     []uint8 // by ref - 1: the blocks it has queued a task on
	used    []int   // by ref - 1: the command that last queued a task on it
	live    []*xtensor
	loans   []*xborrow
	next    int // the next tensor id
	borrow  int
	steps   int
	cmds    int
	parts   bool // Reduce runs may address parts of blocks
	faults  bool // rarely, a history the replay must refuse
	fixed   bool // every stream is created first (Options.FixedStreams)
}

// layout cuts world into n blocks, contiguous or interleaved.
func layout(world, n int, interleaved bool) []xslice {
	var bs []xslice
	for i := range n {
		if interleaved {
			bs = append(bs, xslice{i, (world - i + n - 1) / n, n})
			continue
		}
		lo, hi := i*world/n, (i+1)*world/n
		bs = append(bs, xslice{lo, hi - lo, 1})
	}
	return bs
}

// Lines name blocks by placeholders, @b<i>@ for block i and @p<i>.<j>.<q>@
// for part j of q of it, so one history can be written for several
// layouts of the same blocks (render).
func block(i int) string { return fmt.Sprintf("@b%d@", i) }

func (g *xgen) ranks(mask uint8) string {
	var parts []string
	for i := range g.blocks {
		if mask&(1<<i) != 0 {
			parts = append(parts, block(i))
		}
	}
	// Now and then a block twice, or a part of one it has: the receivers
	// are the slices' union.
	if g.r.IntN(30) == 0 {
		k := g.r.IntN(len(parts))
		if g.parts {
			parts = append(parts, fmt.Sprintf("@p%s.0.2@", parts[k][2:len(parts[k])-1]))
		} else {
			parts = append(parts, parts[k])
		}
		g.r.Shuffle(len(parts), func(a, b int) { parts[a], parts[b] = parts[b], parts[a] })
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func (g *xgen) emit(mask uint8, msg string) {
	g.emitTo(g.ranks(mask), msg)
}

func (g *xgen) emitTo(ranks, msg string) {
	g.lines = append(g.lines, fmt.Sprintf(`{"ts":%d,"ranks":%s,"msg":%s}`, g.ts, ranks, msg))
	g.cmds++
}

var placeholder = regexp.MustCompile(`@[bp][0-9.]+@`)

// render writes the history for world ranks cut into blocks.
func (g *xgen) render(world int, blocks []xslice) string {
	body := placeholder.ReplaceAllStringFunc(strings.Join(g.lines, "\n"), func(m string) string {
		var i, j, q int
		if m[1] == 'b' {
			fmt.Sscanf(m, "@b%d@", &i)
			return blocks[i].json()
		}
		fmt.Sscanf(m, "@p%d.%d.%d@", &i, &j, &q)
		b := blocks[i]
		chunk := (b.size + q - 1) / q
		lo := min(j*chunk, b.size)
		return xslice{b.offset + lo*b.stride, min(chunk, b.size-lo), b.stride}.json()
	})
	return fmt.Sprintf(`{"fastsim":"history","version":1,"world_size":%d}`, world) + "\n" + body + "\n"
}

// tick moves the controller clock: often not at all (ties), sometimes
// far (streams fall idle behind the clock).
func (g *xgen) tick() {
	switch g.r.IntN(10) {
	case 0, 1, 2:
	case 3:
		g.ts += 250_000 + g.r.IntN(4)*500
	default:
		g.ts += g.r.IntN(8) * 500
	}
}

func (g *xgen) all() uint8 { return uint8(1<<len(g.blocks) - 1) }

// use notes a task queued on stream s on the blocks of mask.
func (g *xgen) use(s int, mask uint8) {
	g.ran[s-1] |= mask
	g.used[s-1] = g.cmds
}

// sub is a random non-empty subset of mask (0 if mask is 0).
func (g *xgen) sub(mask uint8) uint8 {
	if mask == 0 {
		return 0
	}
	if g.r.IntN(3) == 0 {
		return mask
	}
	for {
		if s := mask & uint8(g.r.Uint32()); s != 0 {
			return s
		}
	}
}

// tjson mentions t with every field: a DeleteRefs on some ranks ends the
// id for the reader, and a later mention on the others begins it again.
func tjson(t *xtensor) string {
	return fmt.Sprintf(`{"tensor":%d,"storage":%d,"nbytes":%d,"dtype":"float32","shape":[%d],"device":"cuda"}`, t.id, t.storage, t.nbytes, t.nbytes/4)
}

// fresh is a new tensor on stream s and the blocks of mask, on a new
// storage or, when view is given, on view's.
func (g *xgen) fresh(s int, mask uint8, view *xtensor) *xtensor {
	g.next++
	t := &xtensor{id: g.next, storage: g.next, nbytes: 4 * (1 + g.r.IntN(4)) * []int{1, 1000, 1 << 20}[g.r.IntN(3)], stream: s, mask: mask}
	if view != nil {
		t.storage, t.nbytes = view.storage, view.nbytes
	}
	return t
}

// avail lists the tensors on stream s alive on every block of mask.
func (g *xgen) avail(s int, mask uint8, lendable bool) []*xtensor {
	var out []*xtensor
	for _, t := range g.live {
		if t.stream == s && t.mask&mask == mask && !(lendable && t.lent) {
			out = append(out, t)
		}
	}
	return out
}

// stream picks a stream and the blocks to use it on (0: none). The later
// streams are picked less often: they fall idle, holding memory, behind
// the clock, and then lend it (lend picks its streams evenly).
func (g *xgen) stream() (int, uint8) {
	s := 1 + g.r.IntN(len(g.streams))
	for s > 1 && g.r.IntN(2) == 0 {
		s--
	}
	return s, g.sub(g.streams[s-1])
}

func (g *xgen) createStream() {
	g.addStream(len(g.streams) < 5 && g.r.IntN(2) == 0)
}

// addStream creates a stream on blocks that lack it: a new one if grow.
func (g *xgen) addStream(grow bool) {
	if grow {
		g.streams = append(g.streams, 0)
		g.ran = append(g.ran, 0)
		g.used = append(g.used, 0)
	}
	s := 1 + g.r.IntN(len(g.streams))
	mask := g.sub(g.all() &^ g.streams[s-1])
	if mask == 0 {
		return
	}
	g.streams[s-1] |= mask
	g.emit(mask, fmt.Sprintf(`{"type":"CreateStream","result":{"ref":%d,"name":"s%d"},"default":%v}`, s, s, s == 1))
}

func (g *xgen) call() {
	s, mask := g.stream()
	if mask == 0 {
		return
	}
	var args []string
	ins := g.avail(s, mask, false)
	var view *xtensor
	for range g.r.IntN(3) {
		if len(ins) == 0 {
			break
		}
		t := ins[g.r.IntN(len(ins))]
		args = append(args, tjson(t))
		if g.r.IntN(4) == 0 {
			view = t
		}
	}
	fn := "torch.ops.aten.mm.default"
	if view != nil && g.r.IntN(2) == 0 {
		fn = "torch.ops.aten.view.default" // ends where it starts
	}
	if view != nil && len(args) == 1 && g.r.IntN(8) == 0 {
		// In place: the result is the input, no new tensor.
		g.emit(mask, fmt.Sprintf(`{"type":"CallFunction","ident":0,"function":"torch.ops.aten.add_.Tensor","args":[%[1]s],"kwargs":{},"result":[%[1]s],"mutates":[%[1]s],"stream":{"ref":%d}}`,
			tjson(view), s))
		return
	}
	if g.faults && g.r.IntN(20000) == 0 {
		// Rarely a view of another stream's storage: when its release
		// comes on this stream, the history is at fault, and every
		// replay must say so at the same command.
		for _, t := range g.live {
			if t.stream != s && t.mask&mask == mask {
				view = t
				break
			}
		}
	}
	out := g.fresh(s, mask, view)
	g.emit(mask, fmt.Sprintf(`{"type":"CallFunction","ident":0,"function":%q,"args":[%s],"kwargs":{},"result":[%s],"mutates":[],"stream":{"ref":%d}}`,
		fn, strings.Join(args, ","), tjson(out), s))
	g.live = append(g.live, out)
	g.use(s, mask)
}

// reduceOperands picks a Reduce's stream, ranks and local tensor and
// makes its result; ok is false when the stream has nothing to reduce.
func (g *xgen) reduceOperands() (s int, mask uint8, t, out *xtensor, ok bool) {
	s, mask = g.stream()
	ins := g.avail(s, mask, false)
	if mask == 0 || len(ins) == 0 {
		return s, mask, nil, nil, false
	}
	t = ins[g.r.IntN(len(ins))]
	return s, mask, t, g.fresh(s, mask, nil), true
}

func (g *xgen) reduce() {
	s, mask, t, out, ok := g.reduceOperands()
	if !ok {
		return
	}
	g.emit(mask, fmt.Sprintf(`{"type":"Reduce","result":%s,"local_tensor":%s,"stream":{"ref":%d},"dims":["x"],"reduction":"sum","scatter":%v,"inplace":false,"out":null}`,
		tjson(out), tjson(t), s, g.r.IntN(2) == 0))
	g.live = append(g.live, out)
	g.use(s, mask)
}

// reduceRun sends one Reduce to each part of some blocks, the same
// message at the same time, as a mesh dimension's collective is sent:
// grouped, the engine may hold such a run and apply it as one collective.
func (g *xgen) reduceRun() {
	s, mask, t, out, ok := g.reduceOperands()
	if !ok {
		return
	}
	var parts []string
	size, across := -1, g.parts && bits.OnesCount8(mask) > 1 && g.r.IntN(2) == 0
	for i, b := range g.blocks {
		if mask&(1<<i) != 0 {
			across = across && (size < 0 || size == b.size)
			size = b.size
		}
	}
	if across {
		// Across the blocks: peer set j holds rank j of each block, so
		// every peer set meets every block (a data-parallel gradient
		// reduction over replicas).
		for j := range size {
			var rs []string
			for i := range g.blocks {
				if mask&(1<<i) != 0 {
					rs = append(rs, fmt.Sprintf("@p%d.%d.%d@", i, j, size))
				}
			}
			parts = append(parts, "["+strings.Join(rs, ",")+"]")
		}
	}
	for i, b := range g.blocks {
		if mask&(1<<i) == 0 || across {
			continue
		}
		q := 1
		// Rarely: a block once split into parts stays split, grouped,
		// and runs across blocks then no longer go together.
		if g.parts && b.size > 1 && g.r.IntN(30) == 0 {
			q = []int{2, b.size}[g.r.IntN(2)]
		}
		for j := range q {
			if j*((b.size+q-1)/q) < b.size {
				parts = append(parts, fmt.Sprintf("[@p%d.%d.%d@]", i, j, q))
			}
		}
	}
	// Rarely out of order: a run whose first command lacks a group's
	// lowest rank is applied one by one, which splits the blocks for good.
	if g.r.IntN(20) == 0 {
		g.r.Shuffle(len(parts), func(a, b int) { parts[a], parts[b] = parts[b], parts[a] })
	}
	msg := fmt.Sprintf(`{"type":"Reduce","result":%s,"local_tensor":%s,"stream":{"ref":%d},"dims":["x"],"reduction":"avg","scatter":false,"inplace":false,"out":null}`,
		tjson(out), tjson(t), s)
	for _, p := range parts {
		g.emitTo(p, msg)
	}
	g.live = append(g.live, out)
	g.use(s, mask)
}

// group sends a few calls and a delete as one CommandGroup: its
// sub-commands happen at one instant.
func (g *xgen) group() {
	s, mask := g.stream()
	ins := g.avail(s, mask, false)
	if mask == 0 || len(ins) == 0 {
		return
	}
	var subs []string
	x := ins[g.r.IntN(len(ins))]
	var made []*xtensor
	for range 1 + g.r.IntN(3) {
		out := g.fresh(s, mask, nil)
		subs = append(subs, fmt.Sprintf(`{"type":"CallFunction","ident":0,"function":"torch.ops.aten.relu.default","args":[%s],"kwargs":{},"result":[%s],"mutates":[],"stream":{"ref":%d}}`,
			tjson(x), tjson(out), s))
		made = append(made, out)
		x = out
	}
	// The intermediate results go at once, the last one stays.
	var ids []string
	for _, u := range made[:len(made)-1] {
		ids = append(ids, fmt.Sprint(u.id))
	}
	if len(ids) > 0 {
		subs = append(subs, fmt.Sprintf(`{"type":"DeleteRefs","refs":[%s]}`, strings.Join(ids, ",")))
	}
	g.emit(mask, fmt.Sprintf(`{"type":"CommandGroup","commands":[%s]}`, strings.Join(subs, ",")))
	g.cmds += len(subs) - 1
	g.live = append(g.live, made[len(made)-1])
	g.use(s, mask)
}

// send copies a tensor within a block or to another block of the same
// size (blocks are disjoint, so no rank sends to itself).
// sendable picks a tensor that stream s holds on the blocks of ma to
// send to those of mb, or nil when s is not on both or holds none there.
func (g *xgen) sendable(s int, ma, mb uint8) *xtensor {
	if g.streams[s-1]&(ma|mb) != ma|mb {
		return nil
	}
	ins := g.avail(s, ma, false)
	if len(ins) == 0 {
		return nil
	}
	return ins[g.r.IntN(len(ins))]
}

func (g *xgen) send() {
	s := 1 + g.r.IntN(len(g.streams))
	a, b := g.r.IntN(len(g.blocks)), g.r.IntN(len(g.blocks))
	if g.blocks[a].size != g.blocks[b].size {
		return
	}
	ma, mb := uint8(1)<<a, uint8(1)<<b
	t := g.sendable(s, ma, mb)
	if t == nil {
		return
	}
	out := g.fresh(s, mb, nil)
	g.emit(ma|mb, fmt.Sprintf(`{"type":"SendTensor","result":%s,"tensor":%s,"from_ranks":%s,"to_ranks":%s,"from_stream":{"ref":%d},"to_stream":{"ref":%d}}`,
		tjson(out), tjson(t), block(a), block(b), s, s))
	g.live = append(g.live, out)
	g.use(s, ma|mb)
}

// del deletes a few tensors on some of the blocks they live on; the
// streams holding them may be idle far behind the clock.
func (g *xgen) del() {
	if len(g.live) == 0 {
		return
	}
	t := g.live[g.r.IntN(len(g.live))]
	// Often a lent tensor: the loan then holds its last reference, and
	// its drop releases it at the lender's now.
	if i := slices.IndexFunc(g.live, func(u *xtensor) bool { return u.lent }); i >= 0 && g.r.IntN(2) == 0 {
		t = g.live[i]
	}
	mask := g.sub(t.mask)
	ids := []string{fmt.Sprint(t.id)}
	gone := []*xtensor{t}
	for _, u := range g.live {
		if u != t && u.mask&mask == mask && g.r.IntN(8) == 0 {
			ids = append(ids, fmt.Sprint(u.id))
			gone = append(gone, u)
		}
	}
	g.emit(mask, fmt.Sprintf(`{"type":"DeleteRefs","refs":[%s]}`, strings.Join(ids, ",")))
	// The id ends with the record, on every rank (internal/values,
	// forget.go): the rows left on the other blocks are never named again.
	g.live = slices.DeleteFunc(g.live, func(u *xtensor) bool { return slices.Contains(gone, u) })
}

// lend starts a loan of a tensor between two streams on some blocks.
func (g *xgen) lend() {
	if len(g.streams) < 2 {
		return
	}
	from, to := 1+g.r.IntN(len(g.streams)), 1+g.r.IntN(len(g.streams))
	if g.r.IntN(2) == 0 {
		// The stream idle the longest: its now lags the clock, and a
		// loan's drop returns the tensor there.
		for s := range g.streams {
			if g.ran[s] != 0 && g.used[s] < g.used[from-1] {
				from = s + 1
			}
		}
	}
	if from == to {
		return
	}
	mask := g.sub(g.streams[from-1] & g.streams[to-1] & g.ran[from-1])
	ins := g.avail(from, mask, true)
	if mask == 0 || len(ins) == 0 {
		return
	}
	t := ins[g.r.IntN(len(ins))]
	t.lent = true
	g.borrow++
	res := g.fresh(to, mask, nil)
	b := &xborrow{id: g.borrow, from: from, to: to, mask: mask, src: t, res: res}
	g.emit(mask, fmt.Sprintf(`{"type":"BorrowCreate","result":%s,"borrow":%d,"tensor":%s,"from_stream":{"ref":%d},"to_stream":{"ref":%d}}`,
		tjson(res), b.id, tjson(t), from, to))
	g.loans = append(g.loans, b)
}

// idleLoan lends a tensor of the stream idle the longest right after a
// settlement (a step), with its own delete before: the stream's now lags
// the clock, and the drop returns the tensor, deleted meanwhile, there.
func (g *xgen) idleLoan() {
	from := 1
	for s := range g.streams {
		if g.ran[s] != 0 && g.used[s] < g.used[from-1] {
			from = s + 1
		}
	}
	to := 1 + g.r.IntN(len(g.streams))
	mask := g.sub(g.streams[from-1] & g.ran[from-1] & g.ran[to-1])
	ins := g.avail(from, mask, true)
	if from == to || mask == 0 || len(ins) == 0 {
		return
	}
	t := ins[g.r.IntN(len(ins))]
	if len(ins) > 1 && g.r.IntN(2) == 0 {
		// Another of its tensors goes at the clock, ahead of the stream.
		u := ins[g.r.IntN(len(ins))]
		if u != t {
			g.emit(mask, fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d]}`, u.id))
			g.live = slices.DeleteFunc(g.live, func(x *xtensor) bool { return x == u })
		}
	}
	g.steps++
	g.lines = append(g.lines, fmt.Sprintf(`{"step":%d}`, g.steps-1))
	g.tick()
	g.borrow++
	res := g.fresh(to, mask, nil)
	g.emit(mask, fmt.Sprintf(`{"type":"BorrowCreate","result":%s,"borrow":%d,"tensor":%s,"from_stream":{"ref":%d},"to_stream":{"ref":%d}}`,
		tjson(res), g.borrow, tjson(t), from, to))
	g.emit(mask, fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d]}`, t.id))
	g.live = slices.DeleteFunc(g.live, func(x *xtensor) bool { return x == t })
	g.tick()
	g.emit(mask, fmt.Sprintf(`{"type":"BorrowLastUse","borrow":%d}`, g.borrow))
	g.emit(mask, fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d]}`, res.id))
	g.emit(mask, fmt.Sprintf(`{"type":"BorrowDrop","borrow":%d}`, g.borrow))
}

// advance moves a loan one command on: first use, a use on the borrowing
// stream, last use, the result's delete, the drop.
func (g *xgen) advance() {
	if len(g.loans) == 0 {
		return
	}
	i := g.r.IntN(len(g.loans))
	b := g.loans[i]
	switch b.step {
	case 0:
		g.emit(b.mask, fmt.Sprintf(`{"type":"BorrowFirstUse","borrow":%d}`, b.id))
	case 1:
		out := g.fresh(b.to, b.mask, nil)
		g.emit(b.mask, fmt.Sprintf(`{"type":"CallFunction","ident":0,"function":"torch.ops.aten.mul.Tensor","args":[%s],"kwargs":{},"result":[%s],"mutates":[],"stream":{"ref":%d}}`,
			tjson(b.res), tjson(out), b.to))
		g.live = append(g.live, out)
		g.use(b.to, b.mask)
	case 2:
		g.emit(b.mask, fmt.Sprintf(`{"type":"BorrowLastUse","borrow":%d}`, b.id))
	case 3:
		g.emit(b.mask, fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d]}`, b.res.id))
	case 4:
		g.emit(b.mask, fmt.Sprintf(`{"type":"BorrowDrop","borrow":%d}`, b.id))
		b.src.lent = false
		g.loans = slices.Delete(g.loans, i, i+1)
		return
	}
	b.step++
}

// xhistory is a random history of about n commands over world ranks cut
// into nb blocks.
func xhistory(seed uint64, world, nb int, interleaved bool, n int) string {
	bs := layout(world, nb, interleaved)
	g := xgenerate(seed, bs, true, n)
	return g.render(world, bs)
}

// xgenerate writes a random history of about n commands over blocks (only
// their sizes matter here); local says it is written for these blocks
// alone, so Reduce runs may address parts of blocks and a rare fault may
// be made (its message names ranks).
func xgenerate(seed uint64, blocks []xslice, local bool, n int) *xgen {
	g := xstart(seed, 7, blocks, local)
	g.run(n)
	return g
}

// xstart begins a random history over blocks with one stream everywhere;
// the others come later (op), on parts of the world.
func xstart(seed, stream uint64, blocks []xslice, local bool) *xgen {
	g := &xgen{r: rand.New(rand.NewPCG(seed, stream)), blocks: blocks, parts: local, faults: local, ts: 1000}
	g.streams, g.ran, g.used = []uint8{0}, []uint8{0}, []int{0}
	g.streams[0] = g.all()
	g.emit(g.all(), `{"type":"CreateStream","result":{"ref":1,"name":"s1"},"default":true}`)
	return g
}

// run writes commands until there are about n, then ends every loan, so
// that no stream waits for ever.
func (g *xgen) run(n int) {
	for g.cmds < n {
		g.tick()
		g.op(g.r.IntN(100))
	}
	for len(g.loans) > 0 {
		g.tick()
		g.advance()
	}
}

// op writes the command the draw k (0 <= k < 100) picks.
func (g *xgen) op(k int) {
	switch {
	case k < 3 && !g.fixed:
		g.createStream()
	case k < 37:
		g.call()
	case k < 45:
		g.reduce()
	case k < 48:
		g.reduceRun()
	case k < 50:
		g.group()
	case k < 56:
		g.send()
	case k < 70:
		g.del()
	case k < 77:
		g.lend()
	case k < 78:
		g.idleLoan()
	case k < 98:
		g.advance()
	default:
		g.steps++
		g.lines = append(g.lines, fmt.Sprintf(`{"step":%d}`, g.steps-1))
	}
}

// xrun is one way of replaying a history.
type xrun struct {
	name       string
	grouped    bool
	keep       bool // keep events, as a trace does
	settle     bool
	batch      bool
	jobs       int
	mode       Mode
	controller Controller
	fixed      bool // Options.FixedStreams
}

// xoutcome is what a replay says, rank by rank.
type xoutcome struct {
	err    string
	steps  []Report
	final  Report
	peaks  []string // by rank: peak and final bytes
	series []string // by rank: the merged memory series and the stream events (kept events only)
}

// xreplay replays text one way; ranks lists the ranks whose device
// results are compared.
func xreplay(t *testing.T, text string, c xrun, ranks []int64) xoutcome {
	t.Helper()
	SetSettle(c.settle)
	SetBatch(c.batch)
	defer SetSettle(true)
	defer SetBatch(true)
	// A command's error is an outcome to compare: the engine is kept.
	e, err := replayWith(t, Options{Mode: c.mode, Controller: c.controller, KeepEvents: c.keep, Grouped: c.grouped, Jobs: c.jobs, FixedStreams: c.fixed}, text)
	var o xoutcome
	if err != nil {
		o.err = err.Error()
	}
	defer e.Close()
	if o.err == "" {
		if err := e.Finish(); err != nil {
			o.err = err.Error()
		}
	}
	o.steps, o.final = e.Steps(), e.Report()
	for _, rk := range ranks {
		p, f := e.DeviceBytes(rk)
		o.peaks = append(o.peaks, fmt.Sprintf("peak %d final %d", p, f))
		if !c.keep {
			continue
		}
		var b strings.Builder
		g := e.gs[e.part.GroupOf(rk)]
		e.mergeAll(g, func(ns, running int64) { fmt.Fprintf(&b, "%d:%d ", ns, running) })
		// The memory snapshot's walk of the same events, merged apart.
		_ = e.DeviceMemory(rk, func(_ int, sname string, ns, delta, running int64) {
			fmt.Fprintf(&b, "| %s %d%+d=%d ", sname, ns, delta, running)
		})
		_ = e.DeviceEvents(rk, func(_ int, sname, name string, start, end int64) {
			fmt.Fprintf(&b, "| %s %s %d-%d ", sname, name, start, end)
		})
		o.series = append(o.series, b.String())
	}
	return o
}

// xcompare fails t where got differs from want.
func xcompare(t *testing.T, what string, want, got xoutcome) {
	t.Helper()
	if want.err != got.err {
		t.Fatalf("%s: error %q, want %q", what, got.err, want.err)
	}
	if want.err != "" {
		// A failed command may have reached some devices and not
		// others: only the reports before it are results.
		got.final, want.final, got.peaks, want.peaks, got.series, want.series = Report{}, Report{}, nil, nil, nil, nil
	}
	if len(want.steps) != len(got.steps) {
		t.Fatalf("%s: %d steps, want %d", what, len(got.steps), len(want.steps))
	}
	for i := range want.steps {
		if want.steps[i] != got.steps[i] {
			t.Fatalf("%s: step %d reports %+v, want %+v", what, i, got.steps[i], want.steps[i])
		}
	}
	if want.final != got.final {
		t.Fatalf("%s: final report %+v, want %+v", what, got.final, want.final)
	}
	for i := range want.peaks {
		if want.peaks[i] != got.peaks[i] {
			t.Fatalf("%s: device %d of those compared: %s, want %s", what, i, got.peaks[i], want.peaks[i])
		}
	}
	if want.series != nil && got.series != nil {
		for i := range want.series {
			if want.series[i] != got.series[i] {
				t.Fatalf("%s: device %d of those compared: series differ:\n got %.600s\nwant %.600s", what, i, got.series[i], want.series[i])
			}
		}
	}
}

// xagree replays text (over world ranks) every way of runs, under mode and
// ctrl, and fails t where one differs from the reference, the replay that
// settles nothing; it returns the reference's error, if any.
func xagree(t *testing.T, text string, world int, mode Mode, ctrl Controller, runs []xrun, what string) string {
	t.Helper()
	ref := xrun{name: "unsettled", keep: true, jobs: 1, controller: ctrl, mode: mode}
	want := xreplay(t, text, ref, allRanks(world))
	for _, c := range runs {
		c.controller, c.mode = ctrl, mode
		got := xreplay(t, text, c, allRanks(world))
		xcompare(t, fmt.Sprintf("%s world %d %v %v: %s", what, world, mode, ctrl, c.name), want, got)
	}
	return want.err
}

// allRanks lists 0..world-1.
func allRanks(world int) []int64 {
	rs := make([]int64, world)
	for i := range rs {
		rs[i] = int64(i)
	}
	return rs
}

// TestShortcutsExactRandom replays random histories made to stress the
// memory settlement, the group splits and the held Reduces every way the
// engine can: unsettled and ungrouped is the reference, and settled,
// grouped, traced or not, serial or parallel must all agree with it, rank
// by rank.
func TestShortcutsExactRandom(t *testing.T) {
	seeds := 8
	if testing.Short() {
		seeds = 3
	}
	runs := []xrun{
		{name: "settled", settle: true, batch: true, jobs: 1},
		{name: "settled traced", settle: true, keep: true, batch: true, jobs: 1},
		{name: "grouped settled", grouped: true, settle: true, batch: true, jobs: 2},
		{name: "grouped settled one by one", grouped: true, settle: true, jobs: 1},
		{name: "grouped unsettled", grouped: true, batch: true, jobs: 1},
		{name: "grouped settled traced", grouped: true, settle: true, keep: true, batch: true, jobs: 2},
	}
	errs := 0
	for seed := range seeds {
		world := []int{4, 6, 8, 12}[seed%4]
		nb := 2 + seed%3
		text := xhistory(uint64(seed), world, nb, seed%2 == 1, 4500)
		for _, how := range []struct {
			mode Mode
			ctrl Controller
		}{{Everything, ControllerMonarch}, {Everything, ControllerNone}, {StreamOnly, ControllerMonarch}} {
			if xagree(t, text, world, how.mode, how.ctrl, runs, fmt.Sprintf("seed %d", seed)) != "" {
				errs++
			}
		}
	}
	if errs > seeds/2 {
		t.Errorf("%d of %d random replays failed: the generator should make valid histories", errs, 3*seeds)
	}
}

// edgeLayout cuts world at the ranks around 65,536, where a roaring
// bitmap's containers meet, into contiguous blocks.
func edgeLayout(world int) []xslice {
	var bs []xslice
	lo := 0
	for _, cut := range []int{1<<16 - 1, 1 << 16, 1<<16 + 1, world} {
		if cut > lo && cut <= world {
			bs = append(bs, xslice{lo, cut - lo, 1})
			lo = cut
		}
	}
	return bs
}

// TestBigWorldEqualsOneRankABlock replays, grouped, histories over worlds
// around 65,536 ranks cut into a few blocks (contiguous, interleaved, or
// cut at the container edge), settled and not, and the same history over
// a world of one rank a block, ungrouped and unsettled: with fixed costs a
// block's ranks all do what its one rank does, so every block's results,
// and the reports, must be the same.
func TestBigWorldEqualsOneRankABlock(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 1000
	}
	seed := uint64(0)
	for _, world := range []int{1<<16 - 1, 1 << 16, 1<<16 + 1} {
		for _, bs := range [][]xslice{layout(world, 2, false), layout(world, 3, true), edgeLayout(world)} {
			seed++
			g := xgenerate(seed, bs, false, n)
			one := make([]xslice, len(bs))
			var small, big []int64
			for i, b := range bs {
				one[i] = xslice{i, 1, 1}
				small = append(small, int64(i), int64(i))
				big = append(big, int64(b.offset), int64(b.offset+(b.size-1)*b.stride))
			}
			want := xreplay(t, g.render(len(bs), one), xrun{jobs: 1}, small)
			if want.err != "" {
				t.Fatalf("world %d blocks %v: %s", world, bs, want.err)
			}
			// The report names a device by its lowest rank: block i's.
			for i := range want.steps {
				if d := want.steps[i].PeakDevice; d >= 0 {
					want.steps[i].PeakDevice = int64(bs[d].offset)
				}
			}
			if d := want.final.PeakDevice; d >= 0 {
				want.final.PeakDevice = int64(bs[d].offset)
			}
			text := g.render(world, bs)
			for _, c := range []xrun{
				{name: "grouped settled", grouped: true, settle: true, batch: true, jobs: 2},
				{name: "grouped unsettled one by one", grouped: true, jobs: 1},
			} {
				got := xreplay(t, text, c, big)
				xcompare(t, fmt.Sprintf("world %d blocks %v: %s", world, bs, c.name), want, got)
			}
		}
	}
}
