package search

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/predict"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/workload"
)

// mechanismSets are ways Megatron-LM trains that the bounds must hold
// for: its fp16 runs of 2021 (16-bit gradients, local DDP or PyTorch
// DDP, apex's layer norm), its bf16 runs of 2022 (fused gradient
// accumulation into fp32 main gradients) and a mix with ZeRO.
var mechanismSets = []struct {
	name string
	set  func(*Space)
}{
	{"fp16-2021-local", func(s *Space) {
		s.GradReduce, s.HalfGradReduce, s.FP16Grads, s.ApexLayerNorm, s.BlockingP2P, s.FP32CrossEntropy = gradAfterBackward, true, true, true, true, true
		s.Zeros = "0"
	}},
	{"fp16-2021-torch", func(s *Space) {
		s.HalfGradReduce, s.FP16Grads, s.ApexLayerNorm, s.NoScatterGather = true, true, true, true
		s.Zeros = "0"
	}},
	{"bf16-2022", func(s *Space) {
		s.GradReduce, s.FuseGradAccumulation, s.BlockingP2P, s.FP32CrossEntropy = gradAfterBackward, true, true, true
		s.Zeros = "0"
	}},
	{"fused-zero", func(s *Space) {
		s.FuseGradAccumulation, s.HalfGradReduce = true, true
	}},
}

// TestBoundsBelowReplayMechanisms: the pruning's property (every bound at
// most its layout's replay) with each set of mechanisms, which change a
// layer's own work (fused accumulation takes kernels away, apex's norms
// and 16-bit gradients change them) and what a device holds.
func TestBoundsBelowReplayMechanisms(t *testing.T) {
	for _, ms := range mechanismSets {
		t.Run(ms.name, func(t *testing.T) {
			s := prunedSpace()
			ms.set(&s)
			boundsBelowEveryReplay(t, s, a100(t), sched.ControllerNone)
		})
	}
}

// TestJobHasMechanisms: every layout's job, and every probe its bounds
// come from, trains with the space's mechanisms.
func TestJobHasMechanisms(t *testing.T) {
	s := prunedSpace()
	mechanismSets[0].set(&s)
	all, err := Enumerate(s)
	if err != nil {
		t.Fatal(err)
	}
	want := func(j workload.Job) bool {
		return j.GradReduce == workload.GradAfterBackward && j.HalfGradReduce && j.FP16Grads && j.ApexLayerNorm && j.BlockingP2P && j.FP32CrossEntropy &&
			!j.FuseGradAccumulation && !j.NoScatterGather && !j.FlashAttention
	}
	for _, l := range all {
		if j := s.Job(l); !want(j) {
			t.Fatalf("layout %v: job %+v lacks the space's mechanisms", l, j)
		}
	}
	b := &bounder{s: s}
	if j := b.probeJob(2, 1, 1, 1, 1, 0, workload.RecomputeNone, false); !want(j) {
		t.Fatalf("probe job %+v lacks the space's mechanisms", j)
	}
}

// TestSpaceRefusesMechanisms: a space whose mechanisms cannot train every
// way it searches is refused with what to change, not searched with
// layouts left out unsaid.
func TestSpaceRefusesMechanisms(t *testing.T) {
	for _, c := range []struct {
		set  func(*Space)
		want string
	}{
		{func(s *Space) { s.GradReduce = "later" }, `gradient reduction "later"`},
		{func(s *Space) { s.GradReduce = gradAfterBackward }, "without ZeRO"}, // prunedSpace searches ZeRO 0, 1, 3
		{func(s *Space) { s.FP16Grads, s.HalfGradReduce = true, true }, "need ZeRO 0"},
		{func(s *Space) { s.Zeros, s.FP16Grads = "0", true }, "give the half-precision"},
		{func(s *Space) { s.Zeros, s.FP16Grads, s.HalfGradReduce, s.FuseGradAccumulation = "0", true, true, true }, "exclude each other"},
		{func(s *Space) { s.Zeros, s.Zero, s.FP16Grads, s.HalfGradReduce = "", 2, true, true }, "need ZeRO 0"},
		{func(s *Space) { *s = toySpace(); s.BlockingP2P = true }, "transformer workload's"},
		{func(s *Space) { *s = toySpace(); s.FlashAttention = true }, "transformer workload's"},
	} {
		s := prunedSpace()
		c.set(&s)
		err := s.Check()
		if !errors.Is(err, ErrSpace) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: Check = %v, want ErrSpace saying %q", s, err, c.want)
		}
		if _, _, err := Run(context.Background(), s, Options{}); !errors.Is(err, ErrSpace) {
			t.Errorf("Run = %v, want ErrSpace", err)
		}
	}
	// The same mechanisms where they apply are a space.
	s := prunedSpace()
	s.Zeros, s.GradReduce, s.FP16Grads, s.HalfGradReduce = "0", gradAfterBackward, true, true
	if err := s.Check(); err != nil {
		t.Errorf("ZeRO 0 with local DDP and 16-bit gradients: %v", err)
	}
}

// toySpace is a space of the toy micro-benchmark.
func toySpace() Space {
	return Space{Workload: WorkloadToy, Layers: 2, Hidden: 64, Seq: 8, Batch: 4, World: 4, GPUsPerHost: 4, MemoryBytes: 80e9, Steps: 1}
}

// TestBoundsBelowReplayFP16Wide: 16-bit gradients on a wide, gated model
// with short sequences, where a layer's gradient addition outweighs the
// rest and one microbatch's backward runs none.
func TestBoundsBelowReplayFP16Wide(t *testing.T) {
	m, err := workload.LoadModel("llama2-70b")
	if err != nil {
		t.Fatal(err)
	}
	m.Layers, m.Seq = 8, 8
	s := Space{Model: m, Layers: m.Layers, Hidden: m.Hidden, Seq: m.Seq, Batch: 1, World: 8, GPUsPerHost: 8, MemoryBytes: 1e15, Steps: 2, MaxTP: 2,
		Schedules: "1f1b", Recomputes: "none", Zeros: "0", FP16Grads: true, HalfGradReduce: true}
	boundsBelowEveryReplay(t, s, a100(t), sched.ControllerNone)
}

// TestSpaceCoversMechanisms: every mechanism predict names has a Space
// field that sets it, so a search can train every way predict can, but
// per-group collective pricing, which search refuses (it prices
// collectives per group).
func TestSpaceCoversMechanisms(t *testing.T) {
	s := Space{GradReduce: gradAfterBackward, FlashAttention: true, HalfGradReduce: true, FuseGradAccumulation: true,
		BlockingP2P: true, FP32CrossEntropy: true, ApexLayerNorm: true, FP16Grads: true, NoScatterGather: true}
	var j workload.Job
	s.SetMechanisms(&j)
	for _, m := range predict.Mechanisms {
		if m.Flag == "--stage-collectives" {
			continue
		}
		if !m.On(&j) {
			t.Errorf("mechanism %s: no Space field sets it", m.Flag)
		}
	}
}
