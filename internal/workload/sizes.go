package workload

import (
	"fmt"
	"math"
)

// mulSize multiplies non-negative sizes (element counts, bytes), reporting
// false when the product does not fit in an int64: the generator's shapes,
// byte counts and the replay's memory totals are int64s, and a product
// that wrapped would be a silently wrong tensor.
func mulSize(fs ...int64) (int64, bool) {
	p := int64(1)
	for _, f := range fs {
		if f < 0 || f > 0 && p > math.MaxInt64/f {
			return 0, false
		}
		p *= f
	}
	return p, true
}

// addSize adds non-negative sizes, reporting false on overflow.
func addSize(a, b int64) (int64, bool) {
	if a < 0 || b < 0 || a > math.MaxInt64-b {
		return 0, false
	}
	return a + b, true
}

// layerTensors is a bound on the tensors one transformer layer holds at
// once for one microbatch on one rank: the 25 it saves for its backward
// (saved) plus the backward's temporaries, each no bigger than the
// largest.
const layerTensors = 32

// checkSizes reports a job whose tensors, or one rank's memory, would not
// fit in an int64 of bytes. The rank's memory is bounded coarsely (model
// state at 18 bytes a parameter, and layerTensors tensors of the largest
// size per layer and microbatch in flight, plus the output layer's), so a
// job is refused only when it needs more than about 2^63/64 bytes
// (128 PiB) per device.
func (j *Job) checkSizes() error {
	d := dimsOf(j)
	type term struct {
		what string
		fs   []int64
	}
	// The largest tensors one rank makes, in bytes (dtype sizes: bf16 2,
	// fp32 4).
	terms := []term{
		{"the attention scores (micro-batch x heads/tp x seq x seq x 2 bytes)", []int64{d.b, d.at, d.s, d.s, 2}},
		{"the logits (seq x micro-batch x vocab/tp x 4 bytes)", []int64{d.s, d.b, d.vt, 4}},
		{"the MLP activations (seq x micro-batch x fc1 width/tp x 2 bytes)", []int64{d.s, d.b, d.fc1W, 2}},
		{"the QKV projection (seq x micro-batch x (heads+2 kv_heads)/tp x head width x 2 bytes)", []int64{d.s, d.b, d.qkvW, 2}},
		{"the hidden states (seq x micro-batch x hidden x 4 bytes)", []int64{d.s, d.b, d.h, 4}},
	}
	if d.flash {
		terms = terms[1:] // nothing of size seq^2
	}
	largest := int64(0)
	for _, t := range terms {
		n, ok := mulSize(t.fs...)
		if !ok {
			return fmt.Errorf("%w: %s: %s would take more than 2^63-1 bytes", ErrJob, j.sizesNamed(), t.what)
		}
		largest = max(largest, n)
	}
	// Every stage holds as many layers; only the first and the last hold
	// more.
	layers, other := stageParams(j, 0)
	_, last := stageParams(j, j.PP-1)
	other = max(other, last)
	state, ok1 := mulSize(layers+other, 18)
	acts, ok2 := mulSize(int64(j.Model.Layers/j.PP), int64(j.Micro())+1, layerTensors, largest)
	total, ok3 := addSize(state, acts)
	total, ok4 := addSize(total, largest)
	if !ok1 || !ok2 || !ok3 || !ok4 || total > math.MaxInt64/64 {
		return fmt.Errorf("%w: %s: one device's memory (model state and activations of layers/pp layers x microbatches) is over 2^57 bytes", ErrJob, j.sizesNamed())
	}
	return nil
}

// sizesNamed names the fields that size a job's tensors.
func (j *Job) sizesNamed() string {
	m := &j.Model
	return fmt.Sprintf("layers %d, hidden %d, heads %d, ffn %d, vocab %d, seq %d, micro-batch %d, tp %d, pp %d",
		m.Layers, m.Hidden, m.Heads, m.ffn(), m.Vocab, m.Seq, j.MicroBatch, j.TP, j.PP)
}
