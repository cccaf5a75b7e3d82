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
	case c.Seq < 1:
		return fmt.Errorf("%w: seq %d: want 1 or more tokens", ErrTrain, c.Seq)
	case c.Micro < 1:
		return fmt.Errorf("%w: micro %d: want 1 or more microbatches", ErrTrain, c.Micro)
	case c.Steps < 0:
		return fmt.Errorf("%w: steps %d: want 0 or more", ErrTrain, c.Steps)
	case c.GPUsPerHost < 0:
		return fmt.Errorf("%w: gpus per host %d: want at least 1 (0: 8)", ErrTrain, c.GPUsPerHost)
	}
	for _, d := range []struct {
		name       string
		v, limit   int
		limitShown string
	}{
		{"layers", c.Layers, maxLayers, "65536"}, {"hidden", c.Hidden, maxHidden, "2^20"}, {"seq", c.Seq, maxSeq, "2^24"},
		{"batch", c.Batch, MaxBatch, "2^24"}, {"micro", c.Micro, maxMicro, "2^20"}, {"steps", c.Steps, maxSteps, "65536"},
	} {
		if d.v > d.limit {
			return fmt.Errorf("%w: %s %d is over its limit of %s", ErrTrain, d.name, d.v, d.limitShown)
		}
	}
	switch {
	case c.Batch < 1 || c.Batch%(c.DP*c.Micro) != 0:
		return fmt.Errorf("%w: batch %d does not split into %d replicas x %d microbatches", ErrTrain, c.Batch, c.DP, c.Micro)
	case float64(c.Batch/(c.DP*c.Micro))*float64(c.Seq)*float64(4*c.Hidden)*bf16 > maxTensorBytes:
		return fmt.Errorf("%w: a microbatch of %d sequences of %d tokens has activations of over 2^50 bytes", ErrTrain, c.Batch/(c.DP*c.Micro), c.Seq)
	case float64(c.Commands())*float64(max(c.CommandNs, 0)) > math.MaxInt64/2:
		return fmt.Errorf("%w: %d commands %d ns apart end past the largest time (2^63 ns)", ErrTrain, c.Commands(), c.CommandNs)
	}
	return nil
}

// The limits on a shape keep every size made from it an exact int64: a
// history is never written with a tensor size or a time that wrapped. The
// dimensions are a transformer's limits (workload.Model.Check); a tensor
// of 2^50 bytes (1 PiB) is far past any GPU's memory.
const (
	maxLayers      = 1 << 16
	maxHidden      = 1 << 20
	maxSeq         = 1 << 24
	maxMicro       = 1 << 20
	maxSteps       = 1 << 16
	maxTensorBytes = 1 << 50
)

// MaxBatch bounds a global batch, in sequences, for every workload: far
// past any published run (GPT-3 175B's 3.2M tokens were 1,536 sequences
// of 2,048; Brown et al. 2020, Table 2.1), and small enough that a batch
// times a world (2^24 ranks) stays an exact int64.
const MaxBatch = 1 << 24

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

// trainer writes one history; all its state is counters and the
// tensors alive, so memory stays constant whatever the length.
type trainer struct {
	c      Train
	o      *out
	ts     int64
	next   int64 // next tensor id
	borrow int64
	stage  []values.Slice  // each stage's ranks
	params []values.Tensor // per layer: the parameter shard
	shapes [][]int64       // the one-dimensional shapes made so far, shared by their tensors
}

// TrainHeader is the history header of the training job c describes.
func TrainHeader(c Train) (history.Header, error) {
	if err := c.Check(); err != nil {
		return history.Header{}, err
	}
	return history.Header{Version: 1, WorldSize: c.World(), GPUsPerHost: int64(gpusPerHost(c))}, nil
}

func gpusPerHost(c Train) int {
	if c.GPUsPerHost < 1 {
		return 8
	}
	return c.GPUsPerHost
}

// WriteTrain writes the training history c describes as JSON lines: per
// step and microbatch, stage 0 receives a CPU batch and copies it to the
// GPU; every layer all-gathers its parameter shard on stream "comm",
// borrows the full parameter into "main", runs its matmuls and activation
// and drops the borrow; activations go to the next stage with SendTensor.
// Backward runs the stages in reverse with input- and weight-gradient
// matmuls, borrows the weight gradient to "comm", reduce-scatters it into
// a gradient shard and updates the parameter shard in place. Tensors are
// deleted when a real program would free them; a step line ends each step.
// Sizes follow from the shapes in bf16.
func WriteTrain(dst io.Writer, c Train) error {
	h, err := TrainHeader(c)
	if err != nil {
		return err
	}
	o, err := newOut(dst, h)
	if err != nil {
		return err
	}
	return train(o, c)
}

// EmitTrain sends the records of the history WriteTrain writes (without
// its header: TrainHeader) to sink as typed values, with no text: every
// tensor carries its fields at every mention, trees are their leaves
// only. It stops at the first error sink returns.
func EmitTrain(sink Sink, c Train) error {
	if err := c.Check(); err != nil {
		return err
	}
	return train(&out{sink: sink}, c)
}

// train sends c's history to o.
func train(o *out, c Train) error {
	c.GPUsPerHost = gpusPerHost(c)
	if c.CommandNs <= 0 {
		c.CommandNs = 20_000
	}
	t := &trainer{c: c, o: o, next: 1}
	per := int64(c.DP) * int64(c.TP)
	for p := 0; p < c.PP; p++ {
		t.stage = append(t.stage, values.Slice{Offset: int64(p) * per, Sizes: []int64{int64(c.DP), int64(c.TP)}, Strides: []int64{int64(c.TP), 1}})
	}
	all := slice1(0, c.World(), 1)
	o.msg(gen.MsgCreateDeviceMesh).Extra.Add("names", meshNames)
	t.cmd(all)
	t.createStream(all, 1, "main", true)
	t.createStream(all, 2, "comm", false)
	// Parameter shards live on "comm": each layer's full weight is
	// Hidden x 4*Hidden, split over tp and sharded over dp.
	perStage := c.Layers / c.PP
	for l := 0; l < c.Layers; l++ {
		w := t.tensor(t.shardBytes(), false)
		t.params = append(t.params, w)
		t.call(t.stage[l/perStage], "torch.ops.aten.empty.memory_format", 2, w)
	}
	b := int64(c.Batch / (c.DP * c.Micro)) // sequences per microbatch per replica
	act := b * int64(c.Seq) * int64(c.Hidden) * bf16
	wide := b * int64(c.Seq) * int64(4*c.Hidden/c.TP) * bf16
	// Layer l's input and pre-activation, kept from forward for backward.
	saved := make([][2]values.Tensor, c.Layers)
	for step := 0; step < c.Steps; step++ {
		for m := 0; m < c.Micro; m++ {
			if o.err != nil {
				return o.err // a replay that stopped takes no more records
			}
			x := t.input(b)
			for p := 0; p < c.PP; p++ {
				for l := p * perStage; l < (p+1)*perStage; l++ {
					next, y := t.forward(p, l, x, act, wide)
					saved[l] = [2]values.Tensor{x, y}
					x = next
				}
				if p+1 < c.PP {
					x = t.send(p, p+1, x, act)
				}
			}
			// Backward: the loss gradient, then the stages in reverse.
			last := c.PP - 1
			dx := t.tensor(act, false)
			t.call(t.stage[last], "torch.ops.aten.nll_loss_backward.default", 1, dx, x)
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

// meshNames names the mesh's dimensions (accepted, not simulated).
var meshNames = []byte(`["pp","dp","tp"]`)

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

// tensor is a new tensor of its own storage, n bytes of bf16, with the
// next id.
func (t *trainer) tensor(n int64, cpu bool) values.Tensor {
	id := t.id()
	return values.Tensor{ID: id, Idx: idx(id), Storage: id, NBytes: n, Dtype: "bfloat16", Shape: t.shape(n / bf16), CPU: cpu}
}

// shape is the one-dimensional shape [n]: a job has a handful of tensor
// sizes, so their shapes are made once and shared (nothing writes to a
// tensor's shape; a registry copies it).
func (t *trainer) shape(n int64) []int64 {
	for _, s := range t.shapes {
		if s[0] == n {
			return s
		}
	}
	s := []int64{n}
	t.shapes = append(t.shapes, s)
	return s
}

func (t *trainer) createStream(ranks values.Slice, r int64, name string, def bool) {
	m := t.o.msg(gen.MsgCreateStream)
	m.CreateStream = gen.CreateStream{Result: values.Stream{Ref: r, Name: name, HasName: true}, Default: def}
	t.cmd(ranks)
}

// call runs fn on stream with args (mentioned by id in text), making
// result (in full).
func (t *trainer) call(ranks values.Slice, fn string, stream int64, result values.Tensor, args ...values.Tensor) {
	t.callTensors(ranks, fn, stream, args, result, nil)
}

// callTensors runs fn on stream with tensor arguments (mentioned by id in
// text), making result (in full), mutating mutates.
func (t *trainer) callTensors(ranks values.Slice, fn string, stream int64, args []values.Tensor, result values.Tensor, mutates []values.Tensor) {
	o := t.o
	m := o.msg(gen.MsgCallFunction)
	var argT, resT values.Tree
	o.argRaw, argT = o.tree(o.argRaw, o.argLv, args, byID)
	o.argLv = argT.Leaves
	o.resRaw, resT = o.tree(o.resRaw, o.resLv, []values.Tensor{result}, inFull)
	o.resLv = resT.Leaves
	o.mut = append(o.mut[:0], mutates...)
	m.CallFunction = gen.CallFunction{
		Ident:    result.ID,
		Function: fn,
		Args:     argT,
		Kwargs:   o.kwargs(),
		Result:   resT,
		Mutates:  o.mut,
		Stream:   values.Stream{Ref: stream},
	}
	t.cmd(ranks)
}

func byID(int) bool   { return false }
func inFull(int) bool { return true }

func (t *trainer) del(ranks values.Slice, ts ...values.Tensor) {
	m := t.o.msg(gen.MsgDeleteRefs)
	m.DeleteRefs.Refs = m.DeleteRefs.Refs[:0]
	for i := range ts {
		m.DeleteRefs.Refs = append(m.DeleteRefs.Refs, ts[i].ID)
	}
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

func (t *trainer) borrowCreate(ranks values.Slice, result values.Tensor, borrow int64, src values.Tensor, from, to int64) {
	m := t.o.msg(gen.MsgBorrowCreate)
	m.BorrowCreate = gen.BorrowCreate{Result: result, Borrow: borrow, Tensor: src,
		FromStream: values.Stream{Ref: from}, ToStream: values.Stream{Ref: to}}
	t.cmd(ranks)
}

// dimDP is the mesh dimension the toy's collectives reduce over.
var dimDP = []string{"dp"}

// reduce is a collective over dp on "comm".
func (t *trainer) reduce(ranks values.Slice, result, local values.Tensor, reduction string, scatter bool) {
	m := t.o.msg(gen.MsgReduce)
	m.Reduce = gen.Reduce{Result: result, LocalTensor: local, Stream: values.Stream{Ref: 2},
		Dims: dimDP, Reduction: reduction, Scatter: scatter}
	t.cmd(ranks)
}

// input: stage 0 receives a CPU batch of token ids and copies it to the GPU.
func (t *trainer) input(b int64) values.Tensor {
	tokens := b * int64(t.c.Seq) * 8
	cpu := t.tensor(tokens, true)
	o := t.o
	m := o.msg(gen.MsgPipeRecv)
	var res values.Tree
	o.resRaw, res = o.tree(o.resRaw, o.resLv, []values.Tensor{cpu}, inFull)
	o.resLv = res.Leaves
	m.PipeRecv = gen.PipeRecv{Ident: cpu.ID, Result: res, Pipe: 1, Stream: values.Stream{Ref: 1}}
	t.cmd(t.stage[0])
	gpu := t.tensor(tokens, false)
	t.call(t.stage[0], "torch.ops.aten._to_copy.default", 1, gpu, cpu)
	t.del(t.stage[0], cpu)
	x := t.tensor(b*int64(t.c.Seq)*int64(t.c.Hidden)*bf16, false)
	t.call(t.stage[0], "torch.ops.aten.embedding.default", 1, x, gpu)
	t.del(t.stage[0], gpu)
	return x
}

// gather all-gathers layer l's shard on "comm" and borrows the full weight
// into "main"; it returns the full weight, the borrowed one and the borrow.
func (t *trainer) gather(p, l int) (full, borrowed values.Tensor, borrow int64) {
	s := t.stage[p]
	full = t.tensor(t.fullBytes(), false)
	t.reduce(s, full, t.params[l], "stack", false)
	borrowed = t.tensor(t.fullBytes(), false)
	t.borrow++
	borrow = t.borrow
	t.borrowCreate(s, borrowed, borrow, full, 2, 1)
	t.borrowUse(gen.MsgBorrowFirstUse, s, borrow)
	return full, borrowed, borrow
}

// release ends a borrow of a full weight and frees it.
func (t *trainer) release(p int, full, borrowed values.Tensor, borrow int64) {
	s := t.stage[p]
	t.borrowUse(gen.MsgBorrowLastUse, s, borrow)
	t.del(s, borrowed)
	t.borrowUse(gen.MsgBorrowDrop, s, borrow)
	t.del(s, full)
}

// forward runs layer l on stage p: y = x W, a = gelu(y), x' = a W^T. It
// returns x' and y; x and y are kept for backward.
func (t *trainer) forward(p, l int, x values.Tensor, act, wide int64) (next, y values.Tensor) {
	s := t.stage[p]
	full, w, borrow := t.gather(p, l)
	y = t.tensor(wide, false)
	t.call(s, "torch.ops.aten.mm.default", 1, y, x, w)
	a := t.tensor(wide, false)
	t.call(s, "torch.ops.aten.gelu.default", 1, a, y)
	next = t.tensor(act, false)
	t.call(s, "torch.ops.aten.mm.default", 1, next, a, w)
	t.del(s, a)
	t.release(p, full, w, borrow)
	return next, y
}

// backward runs layer l's backward on stage p from the output gradient dx:
// input- and weight-gradient matmuls, the weight gradient borrowed to
// "comm" and reduce-scattered into a shard, the shard applied in place.
func (t *trainer) backward(p, l int, dOut values.Tensor, saved [2]values.Tensor, act, wide int64) values.Tensor {
	s := t.stage[p]
	full, w, borrow := t.gather(p, l)
	da := t.tensor(wide, false)
	t.call(s, "torch.ops.aten.mm.default", 1, da, dOut, w)
	dy := t.tensor(wide, false)
	t.call(s, "torch.ops.aten.gelu_backward.default", 1, dy, da, saved[1])
	dx := t.tensor(act, false)
	t.call(s, "torch.ops.aten.mm.default", 1, dx, dy, w)
	dw := t.tensor(t.fullBytes(), false)
	t.call(s, "torch.ops.aten.mm.default", 1, dw, saved[0], dy)
	t.del(s, da, dy, dOut, saved[0], saved[1])
	t.release(p, full, w, borrow)
	// The weight gradient goes to "comm" to be reduce-scattered.
	lent := t.tensor(t.fullBytes(), false)
	t.borrow++
	gb := t.borrow
	t.borrowCreate(s, lent, gb, dw, 1, 2)
	t.borrowUse(gen.MsgBorrowFirstUse, s, gb)
	g := t.tensor(t.shardBytes(), false)
	t.reduce(s, g, lent, "sum", true)
	t.borrowUse(gen.MsgBorrowLastUse, s, gb)
	t.del(s, lent)
	t.borrowUse(gen.MsgBorrowDrop, s, gb)
	t.del(s, dw)
	// The optimizer: the shard updated in place (its result shares the
	// shard's storage), then the gradient shard freed.
	shard := t.params[l]
	upd := t.tensor(t.shardBytes(), false)
	upd.Storage = shard.ID
	t.callTensors(s, "torch.ops.aten.add_.Tensor", 2, []values.Tensor{shard, g}, upd, []values.Tensor{shard})
	t.del(s, upd, g)
	return dx
}

// send moves an activation (or its gradient) from stage a to stage b.
func (t *trainer) send(a, b int, x values.Tensor, n int64) values.Tensor {
	out := t.tensor(n, false)
	m := t.o.msg(gen.MsgSendTensor)
	m.SendTensor = gen.SendTensor{Result: out, Tensor: x, FromRanks: t.stage[a], ToRanks: t.stage[b],
		FromStream: values.Stream{Ref: 1}, ToStream: values.Stream{Ref: 1}}
	t.cmd(t.stage[a], t.stage[b])
	t.del(t.stage[a], x)
	return out
}
