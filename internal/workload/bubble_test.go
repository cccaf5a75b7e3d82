package workload_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/fastsim/fastsim"
	"github.com/fastsim/fastsim/internal/workload"
)

// opNs is the cost of every layer GEMM and elementwise operator in the
// bubble test.
const opNs = 1_000_000

// equalCosts prices each GEMM and elementwise operator of a GPT layer at
// opNs, every other function (norms, gradient accumulation, the
// embedding, the loss, the output layer's GEMMs, the optimizer) at 1 ns
// (0 would free some tensors at the instant they are made, which the
// memory model forbids) and transfers and event waits at 0, so every
// pipeline stage costs the same up to a few nanoseconds. Per layer the
// forward runs 13 operators at opNs (QKV, QK^T, softmax, dropout, AV,
// projection, dropout, add, fc1, GELU, fc2, dropout, add) and 4 at 1 ns
// (the norms, the QKV bias add_, the context's copy); the backward 19 at
// opNs (dropout, fc2 dX and dW, GELU, fc1 dX and dW, add, dropout,
// projection dX and dW, dS V^T, P^T dO, dropout, softmax, dQ, dK, QKV dX
// and dW, add) and 11 at 1 ns (the norms' backward, four gradient
// accumulations, four bias-gradient sums, the QKV gradient's cat).
func equalCosts(t *testing.T, m workload.Model) *fastsim.Costs {
	sb, h, v := m.Seq, m.Hidden, m.PaddedVocab(1)
	js := fmt.Sprintf(`{"fixed": {"call_function_ns": 1, "reduce_ns": 0, "send_local_ns": 0, "send_remote_ns": 0, "event_wait_ns": 0},
  "runtimes_ns": {"aten.mm": %[1]d, "aten.bmm": %[1]d, "aten._softmax": %[1]d, "aten.native_dropout": %[1]d,
    "aten.gelu": %[1]d, "aten.add.Tensor": %[1]d, "aten.native_dropout_backward": %[1]d, "aten.gelu_backward": %[1]d,
    "aten._softmax_backward_data": %[1]d,
    "aten.mm:(%[2]dx%[3]d)x(%[3]dx%[4]d):bfloat16": 1, "aten.mm:(%[2]dx%[4]d)x(%[4]dx%[3]d):bfloat16": 1,
    "aten.mm:(%[4]dx%[2]d)x(%[2]dx%[3]d):bfloat16": 1}}`, opNs, sb, h, v)
	c, err := fastsim.ParseCosts([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPipelineBubble replays one step with equal-cost stages and checks
// the bubble Narayanan et al., SC'21, §2.2 derive: with p stages, m
// microbatches and per-stage forward and backward times F and B, GPipe
// and 1F1B take (m + p - 1)(F + B), a bubble fraction of (p-1)/m; the
// interleaved schedule with v chunks per stage takes m(F + B) +
// (p-1)(F + B)/v, a fraction of (p-1)/(v*m).
func TestPipelineBubble(t *testing.T) {
	m := tiny
	m.Layers = 12
	cases := []struct {
		sched   workload.Schedule
		p, v, m int
	}{
		{workload.GPipe, 2, 1, 4},
		{workload.GPipe, 4, 1, 8},
		{workload.OneFOneB, 2, 1, 4},
		{workload.OneFOneB, 4, 1, 8},
		{workload.OneFOneB, 3, 1, 5},
		{workload.Interleaved, 3, 2, 6},
		{workload.Interleaved, 3, 4, 3},
		{workload.Interleaved, 4, 3, 8},
	}
	costs := equalCosts(t, m)
	if testing.Short() { // one case of each schedule
		cases = []struct {
			sched   workload.Schedule
			p, v, m int
		}{cases[0], cases[2], cases[5]}
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d-p%d-v%d-m%d", c.sched, c.p, c.v, c.m), func(t *testing.T) {
			j := workload.Job{Model: m, TP: 1, PP: c.p, DP: 1, MicroBatch: 1, GlobalBatch: c.m,
				Schedule: c.sched, Chunks: c.v, Steps: 1, CommandNs: -1}
			var b bytes.Buffer
			if err := workload.Write(&b, j); err != nil {
				t.Fatal(err)
			}
			sim, err := fastsim.Replay(&b, fastsim.Options{Grouped: true, Costs: costs})
			if err != nil {
				t.Fatal(err)
			}
			got := sim.Steps()[0].ExecNs
			layers := int64(m.Layers / c.p)
			F, B := layers*(13*opNs+4), layers*(19*opNs+11)
			ideal := int64(c.m) * (F + B)
			want := ideal + int64(c.p-1)*(F+B)/int64(c.v)
			if got < want || got > want+200 {
				t.Errorf("step %d ns, want %d: bubble %d/%d of the ideal, want (p-1)/(v*m) = %d/%d",
					got, want, got-ideal, ideal, c.p-1, c.v*c.m)
			}
		})
	}
}
