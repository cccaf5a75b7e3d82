package workload

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// bigJob is one GPU training a one-layer GPT of the given shape, one
// sequence a step.
func bigJob(hidden, heads, seq int) Job {
	return Job{
		Model: Model{Name: "big", Layers: 1, Hidden: hidden, Heads: heads, Vocab: 51200, Seq: seq, Bias: true, Tied: true, Dtype: "bfloat16"},
		TP:    1, PP: 1, DP: 1, MicroBatch: 1, GlobalBatch: 1, Schedule: OneFOneB, Steps: 1,
	}
}

// TestCheckSizeOverflow: hidden 2^20 in 65,536 heads with sequences of
// 2^24 tokens passes every per-field limit, but its attention scores are
// 1 x 65,536 x 2^24 x 2^24 = 2^64 elements (2^65 bytes in bf16), which
// wrapped in int64 to a wrong size. Check must refuse it and say what
// overflows.
func TestCheckSizeOverflow(t *testing.T) {
	j := bigJob(1<<20, 1<<16, 1<<24)
	err := j.Check()
	if !errors.Is(err, ErrJob) || !strings.Contains(err.Error(), "attention scores") || !strings.Contains(err.Error(), "seq 16777216") {
		t.Fatalf("Check = %v, want ErrJob naming the attention scores and seq", err)
	}
	// With FlashAttention nothing is seq^2, but the logits are 2^24 x
	// 51,200 x 4 bytes = 3.4e12 and a hidden state 2^24 x 2^20 x 4 =
	// 2^46 bytes: those fit, and the rank's memory bound does too
	// (model state about 18 x 2^42 bytes, activations 2 x 32 x 2^47).
	j.FlashAttention = true
	if err := j.Check(); err != nil {
		t.Fatalf("flash attention: Check = %v, want nil", err)
	}
	// Logits of seq x micro-batch x vocab x 4 = 2^24 x 2^24 x 2^24 x 4 =
	// 2^74 bytes.
	j = bigJob(1024, 16, 1<<24)
	j.Model.Vocab, j.FlashAttention, j.MicroBatch, j.GlobalBatch = 1<<24, true, 1<<24, 1<<24
	if err := j.Check(); !errors.Is(err, ErrJob) || !strings.Contains(err.Error(), "logits") {
		t.Fatalf("huge logits: Check = %v, want ErrJob naming the logits", err)
	}
}

// TestCheckDeviceMemoryOverflow: every tensor fits but one device would
// hold more than 2^57 bytes: 65,536 layers of hidden 2^20 (about 12 x
// 2^40 x 2^16 = 12 x 2^56 parameters) at 18 bytes each.
func TestCheckDeviceMemoryOverflow(t *testing.T) {
	j := bigJob(1<<20, 1<<10, 1024)
	j.Model.Layers = 1 << 16
	if err := j.Check(); !errors.Is(err, ErrJob) || !strings.Contains(err.Error(), "memory") {
		t.Fatalf("Check = %v, want ErrJob about one device's memory", err)
	}
}

// TestCheckBatchOverflow: micro-batch 2^40 times 2^24 replicas is 2^64,
// which wrapped to 0 and Check then divided by it.
func TestCheckBatchOverflow(t *testing.T) {
	j := bigJob(1024, 16, 1024)
	j.DP, j.MicroBatch = 1<<24, 1<<40
	if err := j.Check(); !errors.Is(err, ErrJob) {
		t.Fatalf("Check = %v, want ErrJob", err)
	}
	j = bigJob(1024, 16, 1024)
	j.PP, j.Model.Layers, j.Schedule, j.Chunks = 4, 4, Interleaved, 1<<62
	if err := j.Check(); !errors.Is(err, ErrJob) {
		t.Fatalf("chunks 2^62: Check = %v, want ErrJob", err)
	}
}

// TestCheckBatchNamesItsTerms: a global batch that the microbatches of
// every data-parallel replica do not divide is refused naming the terms
// the flags set and their product: 64 over micro-batch 3 x dp 1 leaves
// 1; 65 over 1 x 2 leaves 1; 8 is less than 1 x 16.
func TestCheckBatchNamesItsTerms(t *testing.T) {
	for _, c := range []struct {
		global, micro, dp int
		want              string
	}{
		{64, 3, 1, "bad training layout: global batch 64 is not a multiple of micro-batch 3 x dp 1 = 3 (each data-parallel replica runs whole microbatches)"},
		{65, 1, 2, "bad training layout: global batch 65 is not a multiple of micro-batch 1 x dp 2 = 2 (each data-parallel replica runs whole microbatches)"},
		{8, 1, 16, "bad training layout: global batch 8 is less than micro-batch 1 x dp 16 (one microbatch on each data-parallel replica)"},
	} {
		j := bigJob(1024, 16, 1024)
		j.GlobalBatch, j.MicroBatch, j.DP = c.global, c.micro, c.dp
		if err := j.Check(); err == nil || err.Error() != c.want || !errors.Is(err, ErrJob) {
			t.Errorf("batch %d, micro-batch %d, dp %d: %v, want %q", c.global, c.micro, c.dp, err, c.want)
		}
	}
}

func TestMulSize(t *testing.T) {
	for _, c := range []struct {
		fs   []int64
		want int64
		ok   bool
	}{
		{nil, 1, true},
		{[]int64{3, 0, math.MaxInt64}, 0, true},
		{[]int64{1 << 31, 1 << 31}, 1 << 62, true},
		{[]int64{1 << 32, 1 << 31}, 0, false}, // 2^63
		{[]int64{math.MaxInt64, 1}, math.MaxInt64, true},
		{[]int64{-1, 2}, 0, false},
	} {
		got, ok := mulSize(c.fs...)
		if got != c.want || ok != c.ok {
			t.Errorf("mulSize(%v) = %d, %v; want %d, %v", c.fs, got, ok, c.want, c.ok)
		}
	}
}
