package synth

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/values"
)

// Train describes a training job to synthesize: a mesh of PP pipeline
// stages, DP data-parallel replicas and TP tensor-parallel shards (rank =
// (stage*DP + replica)*TP + shard), and a model of Layers blocks of width
// Hidden trained on Batch sequences of Seq tokens per step, in Micro
// microbatches.
type Train struct {
	PP, DP, TP  int
	Layers      int
	Hidden      int
	Seq         int
	Batch       int // sequences per step, across all replicas
	Micro       int // microbatches per step
	Steps       int
	GPUsPerHost int
	// CommandNs is the controller's time between two commands (default
	// 20 µs, about what a Python controller spends sending one).
	CommandNs int
}

// ErrTrain reports a training shape that does not divide.
var ErrTrain = errors.New("bad training shape")

// World is the number of ranks, PP*DP*TP.
func (c *Train) World() int64 { return int64(c.PP) * int64(c.DP) * int64(c.TP) }

// Check reports the first thing about c that does not fit.
func (c *Train) Check() error {
	switch {
	case c.PP < 1 || c.DP < 1 || c.TP < 1:
		return fmt.Errorf("%w: pp, dp and tp must be at least 1", ErrTrain)
	case c.World() > 1<<24:
		return fmt.Errorf("%w: world of %d ranks is over 2^24", ErrTrain, c.World())
	case c.Layers < c.PP || c.Layers%c.PP != 0:
		return fmt.Errorf("%w: %d layers do not split into %d stages", ErrTrain, c.Layers, c.PP)
	case c.Hidden < 1 || c.Hidden%c.TP != 0:
		return fmt.Errorf("%w: hidden size %d does not split into %d tensor-parallel shards", ErrTrain, c.Hidden, c.TP)
	case c.Seq < 1 || c.Micro < 1 || c.Steps < 0:
		return fmt.Errorf("%w: seq and micro must be at least 1, steps at least 0", ErrTrain)
	case c.Batch < 1 || c.Batch%(c.DP*c.Micro) != 0:
		return fmt.Errorf("%w: batch %d does not split into %d replicas x %d microbatches", ErrTrain, c.Batch, c.DP, c.Micro)
	}
	return nil
}

// Commands estimates how many command records WriteTrain writes, or
// math.MaxInt64 when the count does not fit in an int64.
func (c *Train) Commands() int64 {
	perLayer := 13.0 + 25 // forward + backward of one layer, one microbatch
	perMicro := float64(c.Layers)*perLayer + float64(c.PP)*8
	n := 5 + float64(c.Steps)*float64(c.Micro)*perMicro
	if n >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(n)
}

const bf16 = 2

// trainer writes one history; all its state is counters, so memory stays
// constant whatever the length.
type trainer struct {
	c      Train
	o      *out
	ts     int64
	next   int64 // next tensor id
	borrow int64
	stage  []values.Slice // each stage's ranks
	params []int64        // per layer: the shard's tensor id
}

// WriteTrain writes the training history c describes: per step and
// microbatch, stage 0 receives a CPU batch and copies it to the GPU; every
// layer all-gathers its parameter shard on stream "comm", borrows the full
// parameter into "main", runs its matmuls and activation and drops the
// borrow; activations go to the next stage with SendTensor. Backward runs
// the stages in reverse with input- and weight-gradient matmuls, borrows the
// weight gradient to "comm", reduce-scatters it into a gradient shard and
// updates the parameter shard in place. Tensors are deleted when a real
// program would free them; a step line ends each step. Sizes follow from
// the shapes in bf16.
func WriteTrain(dst io.Writer, c Train) error {
	if err := c.Check(); err != nil {
		return err
	}
	if c.GPUsPerHost < 1 {
		c.GPUsPerHost = 8
	}
	if c.CommandNs <= 0 {
		c.CommandNs = 20_000
	}
	o, err := newOut(dst, history.Header{Version: 1, WorldSize: c.World(), GPUsPerHost: int64(c.GPUsPerHost)})
	if err != nil {
		return err
	}
	t := &trainer{c: c, o: o, next: 1}
	per := int64(c.DP) * int64(c.TP)
	for p := 0; p < c.PP; p++ {
		t.stage = append(t.stage, values.Slice{Offset: int64(p) * per, Sizes: []int64{int64(c.DP), int64(c.TP)}, Strides: []int64{int64(c.TP), 1}})
	}
	all := slice1(0, c.World(), 1)
	o.msg(gen.MsgCreateDeviceMesh).Extra.Add("names", []byte(`["pp","dp","tp"]`))
	t.cmd(all)
	t.createStream(all, 1, "main", true)
	t.createStream(all, 2, "comm", false)
	// Parameter shards live on "comm": each layer's full weight is
	// Hidden x 4*Hidden, split over tp and sharded over dp.
	perStage := c.Layers / c.PP
	for l := 0; l < c.Layers; l++ {
		id := t.id()
		t.params = append(t.params, id)
		t.call(t.stage[l/perStage], "torch.ops.aten.empty.memory_format", 2, nil, id, t.shardBytes())
	}
	b := int64(c.Batch / (c.DP * c.Micro)) // sequences per microbatch per replica
	act := b * int64(c.Seq) * int64(c.Hidden) * bf16
	wide := b * int64(c.Seq) * int64(4*c.Hidden/c.TP) * bf16
	// Layer l's input and pre-activation, kept from forward for backward.
	saved := make([][2]int64, c.Layers)
	for step := 0; step < c.Steps; step++ {
		for m := 0; m < c.Micro; m++ {
			x := t.input(b)
			for p := 0; p < c.PP; p++ {
				for l := p * perStage; l < (p+1)*perStage; l++ {
					next, y := t.forward(p, l, x, act, wide)
					saved[l] = [2]int64{x, y}
					x = next
				}
				if p+1 < c.PP {
					x = t.send(p, p+1, x, act)
				}
			}
			// Backward: the loss gradient, then the stages in reverse.
			last := c.PP - 1
			dx := t.id()
			t.call(t.stage[last], "torch.ops.aten.nll_loss_backward.default", 1, []int64{x}, dx, act)
			t.del(t.stage[last], x)
			for p := last; p >= 0; p-- {
				for l := (p+1)*perStage - 1; l >= p*perStage; l-- {
					dx = t.backward(p, l, dx, saved[l], act, wide)
				}
				if p > 0 {
					dx = t.send(p, p-1, dx, act)
				}
			}
			t.del(t.stage[0], dx)
		}
		o.step(int64(step), t.ts)
	}
	return o.close()
}

func (t *trainer) id() int64 { v := t.next; t.next++; return v }

func (t *trainer) shardBytes() int64 {
	full := int64(t.c.Hidden) * int64(4*t.c.Hidden/t.c.TP) * bf16
	return max(full/int64(t.c.DP), 1)
}

func (t *trainer) fullBytes() int64 {
	return int64(t.c.Hidden) * int64(4*t.c.Hidden/t.c.TP) * bf16
}

// cmd writes the message built in t.o to ranks, one command later.
func (t *trainer) cmd(ranks ...values.Slice) {
	t.ts += int64(t.c.CommandNs)
	t.o.send(t.ts, ranks...)
}

// bf16Tensor is a new tensor of its own storage, n bytes of bf16.
func bf16Tensor(id, n int64, cpu bool) values.Tensor {
	return values.Tensor{ID: id, Idx: idx(id), Storage: id, NBytes: n, Dtype: "bfloat16", Shape: []int64{n / bf16}, CPU: cpu}
}

// ref is a mention of a tensor written before.
func ref(id int64) values.Tensor { return values.Tensor{ID: id, Idx: idx(id)} }

func (t *trainer) createStream(ranks values.Slice, r int64, name string, def bool) {
	m := t.o.msg(gen.MsgCreateStream)
	m.CreateStream = gen.CreateStream{Result: values.Stream{Ref: r, Name: name, HasName: true}, Default: def}
	t.cmd(ranks)
}

// call runs fn on stream with args, making tensor out of n bytes.
func (t *trainer) call(ranks values.Slice, fn string, stream int64, args []int64, out, n int64) {
	refs := make([]values.Tensor, len(args))
	for i, a := range args {
		refs[i] = ref(a)
	}
	t.callTensors(ranks, fn, stream, refs, bf16Tensor(out, n, false), nil)
}

// callTensors runs fn on stream with tensor arguments (mentioned by id),
// making result (in full), mutating mutates.
func (t *trainer) callTensors(ranks values.Slice, fn string, stream int64, args []values.Tensor, result values.Tensor, mutates []values.Tensor) {
	m := t.o.msg(gen.MsgCallFunction)
	argRaw, argLv := tensorTree(nil, nil, args, byID)
	resRaw, resLv := tensorTree(nil, nil, []values.Tensor{result}, inFull)
	m.CallFunction = gen.CallFunction{
		Ident:    result.ID,
		Function: fn,
		Args:     values.Tree{Raw: argRaw, Leaves: argLv},
		Kwargs:   values.Tree{Raw: []byte("{}")},
		Result:   values.Tree{Raw: resRaw, Leaves: resLv},
		Mutates:  mutates,
		Stream:   values.Stream{Ref: stream},
	}
	t.cmd(ranks)
}

func byID(int) bool   { return false }
func inFull(int) bool { return true }

func (t *trainer) del(ranks values.Slice, ids ...int64) {
	m := t.o.msg(gen.MsgDeleteRefs)
	m.DeleteRefs.Refs = append(m.DeleteRefs.Refs[:0], ids...)
	t.cmd(ranks)
}

func (t *trainer) borrowUse(k gen.MsgKind, ranks values.Slice, borrow int64) {
	m := t.o.msg(k)
	switch k {
	case gen.MsgBorrowFirstUse:
		m.BorrowFirstUse.Borrow = borrow
	case gen.MsgBorrowLastUse:
		m.BorrowLastUse.Borrow = borrow
	case gen.MsgBorrowDrop:
		m.BorrowDrop.Borrow = borrow
	}
	t.cmd(ranks)
}

func (t *trainer) borrowCreate(ranks values.Slice, result values.Tensor, borrow, src, from, to int64) {
	m := t.o.msg(gen.MsgBorrowCreate)
	m.BorrowCreate = gen.BorrowCreate{Result: result, Borrow: borrow, Tensor: ref(src),
		FromStream: values.Stream{Ref: from}, ToStream: values.Stream{Ref: to}}
	t.cmd(ranks)
}

// reduce is a collective over dp on "comm".
func (t *trainer) reduce(ranks values.Slice, result values.Tensor, local int64, reduction string, scatter bool) {
	m := t.o.msg(gen.MsgReduce)
	m.Reduce = gen.Reduce{Result: result, LocalTensor: ref(local), Stream: values.Stream{Ref: 2},
		Dims: []string{"dp"}, Reduction: reduction, Scatter: scatter}
	t.cmd(ranks)
}

// input: stage 0 receives a CPU batch of token ids and copies it to the GPU.
func (t *trainer) input(b int64) int64 {
	cpu := t.id()
	tokens := b * int64(t.c.Seq) * 8
	m := t.o.msg(gen.MsgPipeRecv)
	raw, lv := tensorTree(nil, nil, []values.Tensor{bf16Tensor(cpu, tokens, true)}, inFull)
	m.PipeRecv = gen.PipeRecv{Ident: cpu, Result: values.Tree{Raw: raw, Leaves: lv}, Pipe: 1, Stream: values.Stream{Ref: 1}}
	t.cmd(t.stage[0])
	gpu := t.id()
	t.call(t.stage[0], "torch.ops.aten._to_copy.default", 1, []int64{cpu}, gpu, tokens)
	t.del(t.stage[0], cpu)
	x := t.id()
	t.call(t.stage[0], "torch.ops.aten.embedding.default", 1, []int64{gpu}, x, b*int64(t.c.Seq)*int64(t.c.Hidden)*bf16)
	t.del(t.stage[0], gpu)
	return x
}

// gather all-gathers layer l's shard on "comm" and borrows the full weight
// into "main"; it returns the full weight, the borrowed one and the borrow.
func (t *trainer) gather(p, l int) (full, borrowed, borrow int64) {
	s := t.stage[p]
	full = t.id()
	t.reduce(s, bf16Tensor(full, t.fullBytes(), false), t.params[l], "stack", false)
	borrowed = t.id()
	t.borrow++
	borrow = t.borrow
	t.borrowCreate(s, bf16Tensor(borrowed, t.fullBytes(), false), borrow, full, 2, 1)
	t.borrowUse(gen.MsgBorrowFirstUse, s, borrow)
	return full, borrowed, borrow
}

// release ends a borrow of a full weight and frees it.
func (t *trainer) release(p int, full, borrowed, borrow int64) {
	s := t.stage[p]
	t.borrowUse(gen.MsgBorrowLastUse, s, borrow)
	t.del(s, borrowed)
	t.borrowUse(gen.MsgBorrowDrop, s, borrow)
	t.del(s, full)
}

// forward runs layer l on stage p: y = x W, a = gelu(y), x' = a W^T. It
// returns x' and y; x and y are kept for backward.
func (t *trainer) forward(p, l int, x, act, wide int64) (next, y int64) {
	s := t.stage[p]
	full, w, borrow := t.gather(p, l)
	y = t.id()
	t.call(s, "torch.ops.aten.mm.default", 1, []int64{x, w}, y, wide)
	a := t.id()
	t.call(s, "torch.ops.aten.gelu.default", 1, []int64{y}, a, wide)
	next = t.id()
	t.call(s, "torch.ops.aten.mm.default", 1, []int64{a, w}, next, act)
	t.del(s, a)
	t.release(p, full, w, borrow)
	return next, y
}

// backward runs layer l's backward on stage p from the output gradient dx:
// input- and weight-gradient matmuls, the weight gradient borrowed to
// "comm" and reduce-scattered into a shard, the shard applied in place.
func (t *trainer) backward(p, l int, dOut int64, saved [2]int64, act, wide int64) int64 {
	s := t.stage[p]
	full, w, borrow := t.gather(p, l)
	da := t.id()
	t.call(s, "torch.ops.aten.mm.default", 1, []int64{dOut, w}, da, wide)
	dy := t.id()
	t.call(s, "torch.ops.aten.gelu_backward.default", 1, []int64{da, saved[1]}, dy, wide)
	dx := t.id()
	t.call(s, "torch.ops.aten.mm.default", 1, []int64{dy, w}, dx, act)
	dw := t.id()
	t.call(s, "torch.ops.aten.mm.default", 1, []int64{saved[0], dy}, dw, t.fullBytes())
	t.del(s, da, dy, dOut, saved[0], saved[1])
	t.release(p, full, w, borrow)
	// The weight gradient goes to "comm" to be reduce-scattered.
	lent := t.id()
	t.borrow++
	gb := t.borrow
	t.borrowCreate(s, bf16Tensor(lent, t.fullBytes(), false), gb, dw, 1, 2)
	t.borrowUse(gen.MsgBorrowFirstUse, s, gb)
	g := t.id()
	t.reduce(s, bf16Tensor(g, t.shardBytes(), false), lent, "sum", true)
	t.borrowUse(gen.MsgBorrowLastUse, s, gb)
	t.del(s, lent)
	t.borrowUse(gen.MsgBorrowDrop, s, gb)
	t.del(s, dw)
	// The optimizer: the shard updated in place (its result shares the
	// shard's storage), then the gradient shard freed.
	upd := t.id()
	shard := t.params[l]
	res := bf16Tensor(upd, t.shardBytes(), false)
	res.Storage = shard
	t.callTensors(s, "torch.ops.aten.add_.Tensor", 2, []values.Tensor{ref(shard), ref(g)}, res, []values.Tensor{ref(shard)})
	t.del(s, upd, g)
	return dx
}

// send moves an activation (or its gradient) from stage a to stage b.
func (t *trainer) send(a, b int, x, n int64) int64 {
	out := t.id()
	m := t.o.msg(gen.MsgSendTensor)
	m.SendTensor = gen.SendTensor{Result: bf16Tensor(out, n, false), Tensor: ref(x), FromRanks: t.stage[a], ToRanks: t.stage[b],
		FromStream: values.Stream{Ref: 1}, ToStream: values.Stream{Ref: 1}}
	t.cmd(t.stage[a], t.stage[b])
	t.del(t.stage[a], x)
	return out
}
