package synth

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
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
	w      *bufio.Writer
	ts     int64
	next   int64 // next tensor id
	borrow int64
	buf    []byte
	stage  []string // each stage's slice as JSON
	params []int64  // per layer: the shard's tensor id
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
func WriteTrain(out io.Writer, c Train) error {
	if err := c.Check(); err != nil {
		return err
	}
	if c.GPUsPerHost < 1 {
		c.GPUsPerHost = 8
	}
	if c.CommandNs <= 0 {
		c.CommandNs = 20_000
	}
	t := &trainer{c: c, w: bufio.NewWriterSize(out, 1<<20), next: 1}
	per := int64(c.DP) * int64(c.TP)
	for p := 0; p < c.PP; p++ {
		t.stage = append(t.stage, fmt.Sprintf(`{"offset":%d,"sizes":[%d,%d],"strides":[%d,1]}`, int64(p)*per, c.DP, c.TP, c.TP))
	}
	fmt.Fprintf(t.w, `{"fastsim":"history","version":1,"world_size":%d,"gpus_per_host":%d}`+"\n", c.World(), c.GPUsPerHost)
	all := fmt.Sprintf(`{"offset":0,"sizes":[%d],"strides":[1]}`, c.World())
	t.cmd(all, `{"type":"CreateDeviceMesh","names":["pp","dp","tp"]}`)
	t.cmd(all, `{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}`)
	t.cmd(all, `{"type":"CreateStream","result":{"ref":2,"name":"comm"},"default":false}`)
	// Parameter shards live on "comm": each layer's full weight is
	// Hidden x 4*Hidden, split over tp and sharded over dp.
	perStage := c.Layers / c.PP
	for l := 0; l < c.Layers; l++ {
		id := t.id()
		t.params = append(t.params, id)
		t.cmd(t.stage[l/perStage], t.call("torch.ops.aten.empty.memory_format", 2, nil, id, t.shardBytes()))
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
			t.cmd(t.stage[last], t.call("torch.ops.aten.nll_loss_backward.default", 1, []int64{x}, dx, act))
			t.cmd(t.stage[last], t.del(x))
			for p := last; p >= 0; p-- {
				for l := (p+1)*perStage - 1; l >= p*perStage; l-- {
					dx = t.backward(p, l, dx, saved[l], act, wide)
				}
				if p > 0 {
					dx = t.send(p, p-1, dx, act)
				}
			}
			t.cmd(t.stage[0], t.del(dx))
		}
		fmt.Fprintf(t.w, `{"step":%d}`+"\n", step)
	}
	return t.w.Flush()
}

func (t *trainer) id() int64 { v := t.next; t.next++; return v }

func (t *trainer) shardBytes() int64 {
	full := int64(t.c.Hidden) * int64(4*t.c.Hidden/t.c.TP) * bf16
	return max(full/int64(t.c.DP), 1)
}

func (t *trainer) fullBytes() int64 {
	return int64(t.c.Hidden) * int64(4*t.c.Hidden/t.c.TP) * bf16
}

func (t *trainer) cmd(ranks, msg string) {
	t.ts += int64(t.c.CommandNs)
	t.buf = append(t.buf[:0], `{"ts":`...)
	t.buf = strconv.AppendInt(t.buf, t.ts, 10)
	t.buf = append(t.buf, `,"ranks":[`...)
	t.buf = append(t.buf, ranks...)
	t.buf = append(t.buf, `],"msg":`...)
	t.buf = append(t.buf, msg...)
	t.buf = append(t.buf, "}\n"...)
	t.w.Write(t.buf)
}

// bf16Tensor is a first mention: its own storage of n bytes.
func bf16Tensor(id, n int64, device string) string {
	return fmt.Sprintf(`{"tensor":%d,"storage":%d,"nbytes":%d,"dtype":"bfloat16","shape":[%d],"device":%q}`, id, id, n, n/bf16, device)
}

func refs(ids []int64) string {
	b := []byte{}
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, `{"tensor":%d}`, id)
	}
	return string(b)
}

func (t *trainer) call(fn string, stream int, args []int64, out, n int64) string {
	return fmt.Sprintf(`{"type":"CallFunction","ident":%d,"function":%q,"args":[%s],"kwargs":{},"result":[%s],"mutates":[],"stream":{"ref":%d}}`,
		out, fn, refs(args), bf16Tensor(out, n, "cuda"), stream)
}

func (t *trainer) del(ids ...int64) string {
	b := []byte(`{"type":"DeleteRefs","refs":[`)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, "]}"...))
}

// input: stage 0 receives a CPU batch of token ids and copies it to the GPU.
func (t *trainer) input(b int64) int64 {
	cpu := t.id()
	tokens := b * int64(t.c.Seq) * 8
	t.cmd(t.stage[0], fmt.Sprintf(`{"type":"PipeRecv","ident":%d,"result":[%s],"pipe":1,"stream":{"ref":1}}`, cpu, bf16Tensor(cpu, tokens, "cpu")))
	gpu := t.id()
	t.cmd(t.stage[0], t.call("torch.ops.aten._to_copy.default", 1, []int64{cpu}, gpu, tokens))
	t.cmd(t.stage[0], t.del(cpu))
	x := t.id()
	t.cmd(t.stage[0], t.call("torch.ops.aten.embedding.default", 1, []int64{gpu}, x, b*int64(t.c.Seq)*int64(t.c.Hidden)*bf16))
	t.cmd(t.stage[0], t.del(gpu))
	return x
}

// gather all-gathers layer l's shard on "comm" and borrows the full weight
// into "main"; it returns the full weight, the borrowed one and the borrow.
func (t *trainer) gather(p, l int) (full, borrowed, borrow int64) {
	s := t.stage[p]
	full = t.id()
	t.cmd(s, fmt.Sprintf(`{"type":"Reduce","result":%s,"local_tensor":{"tensor":%d},"stream":{"ref":2},"dims":["dp"],"reduction":"stack","scatter":false,"inplace":false,"out":null}`,
		bf16Tensor(full, t.fullBytes(), "cuda"), t.params[l]))
	borrowed = t.id()
	t.borrow++
	borrow = t.borrow
	t.cmd(s, fmt.Sprintf(`{"type":"BorrowCreate","result":%s,"borrow":%d,"tensor":{"tensor":%d},"from_stream":{"ref":2},"to_stream":{"ref":1}}`,
		bf16Tensor(borrowed, t.fullBytes(), "cuda"), borrow, full))
	t.cmd(s, fmt.Sprintf(`{"type":"BorrowFirstUse","borrow":%d}`, borrow))
	return full, borrowed, borrow
}

// release ends a borrow of a full weight and frees it.
func (t *trainer) release(p int, full, borrowed, borrow int64) {
	s := t.stage[p]
	t.cmd(s, fmt.Sprintf(`{"type":"BorrowLastUse","borrow":%d}`, borrow))
	t.cmd(s, t.del(borrowed))
	t.cmd(s, fmt.Sprintf(`{"type":"BorrowDrop","borrow":%d}`, borrow))
	t.cmd(s, t.del(full))
}

// forward runs layer l on stage p: y = x W, a = gelu(y), x' = a W^T. It
// returns x' and y; x and y are kept for backward.
func (t *trainer) forward(p, l int, x, act, wide int64) (next, y int64) {
	s := t.stage[p]
	full, w, borrow := t.gather(p, l)
	y = t.id()
	t.cmd(s, t.call("torch.ops.aten.mm.default", 1, []int64{x, w}, y, wide))
	a := t.id()
	t.cmd(s, t.call("torch.ops.aten.gelu.default", 1, []int64{y}, a, wide))
	next = t.id()
	t.cmd(s, t.call("torch.ops.aten.mm.default", 1, []int64{a, w}, next, act))
	t.cmd(s, t.del(a))
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
	t.cmd(s, t.call("torch.ops.aten.mm.default", 1, []int64{dOut, w}, da, wide))
	dy := t.id()
	t.cmd(s, t.call("torch.ops.aten.gelu_backward.default", 1, []int64{da, saved[1]}, dy, wide))
	dx := t.id()
	t.cmd(s, t.call("torch.ops.aten.mm.default", 1, []int64{dy, w}, dx, act))
	dw := t.id()
	t.cmd(s, t.call("torch.ops.aten.mm.default", 1, []int64{saved[0], dy}, dw, t.fullBytes()))
	t.cmd(s, t.del(da, dy, dOut, saved[0], saved[1]))
	t.release(p, full, w, borrow)
	// The weight gradient goes to "comm" to be reduce-scattered.
	lent := t.id()
	t.borrow++
	gb := t.borrow
	t.cmd(s, fmt.Sprintf(`{"type":"BorrowCreate","result":%s,"borrow":%d,"tensor":{"tensor":%d},"from_stream":{"ref":1},"to_stream":{"ref":2}}`,
		bf16Tensor(lent, t.fullBytes(), "cuda"), gb, dw))
	t.cmd(s, fmt.Sprintf(`{"type":"BorrowFirstUse","borrow":%d}`, gb))
	g := t.id()
	t.cmd(s, fmt.Sprintf(`{"type":"Reduce","result":%s,"local_tensor":{"tensor":%d},"stream":{"ref":2},"dims":["dp"],"reduction":"sum","scatter":true,"inplace":false,"out":null}`,
		bf16Tensor(g, t.shardBytes(), "cuda"), lent))
	t.cmd(s, fmt.Sprintf(`{"type":"BorrowLastUse","borrow":%d}`, gb))
	t.cmd(s, t.del(lent))
	t.cmd(s, fmt.Sprintf(`{"type":"BorrowDrop","borrow":%d}`, gb))
	t.cmd(s, t.del(dw))
	// The optimizer: the shard updated in place (its result shares the
	// shard's storage), then the gradient shard freed.
	upd := t.id()
	shard := t.params[l]
	t.cmd(s, fmt.Sprintf(`{"type":"CallFunction","ident":%d,"function":"torch.ops.aten.add_.Tensor","args":[{"tensor":%d},{"tensor":%d}],"kwargs":{},"result":[{"tensor":%d,"storage":%d,"nbytes":%d,"dtype":"bfloat16","shape":[%d],"device":"cuda"}],"mutates":[{"tensor":%d}],"stream":{"ref":2}}`,
		upd, shard, g, upd, shard, t.shardBytes(), t.shardBytes()/bf16, shard))
	t.cmd(s, t.del(upd, g))
	return dx
}

// send moves an activation (or its gradient) from stage a to stage b.
func (t *trainer) send(a, b int, x, n int64) int64 {
	out := t.id()
	t.cmd(t.stage[a]+","+t.stage[b], fmt.Sprintf(`{"type":"SendTensor","result":%s,"tensor":{"tensor":%d},"from_ranks":%s,"to_ranks":%s,"from_stream":{"ref":1},"to_stream":{"ref":1}}`,
		bf16Tensor(out, n, "cuda"), x, t.stage[a], t.stage[b]))
	t.cmd(t.stage[a], t.del(x))
	return out
}
