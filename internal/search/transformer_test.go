package search

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/workload"
)

func transformerSpace() Space {
	m := workload.Model{Name: "t", Layers: 2, Hidden: 64, Heads: 2, Vocab: 128, Seq: 16, Bias: true, Tied: true, Dtype: "bfloat16"}
	return Space{Model: m, Layers: 2, Hidden: 64, Seq: 16, Batch: 4, World: 4, GPUsPerHost: 2, MemoryBytes: 1e9, Steps: 2}
}

// TestEnumerateTransformer checks a transformer space by hand: world 4, 2
// layers, 2 heads (tp divides 2), batch 4.
//
//	pp=1: dp=1 tp=4 no (4 does not divide 2 heads); dp=2 tp=2, micro | 2: 1 2;
//	      dp=4 tp=1, micro | 1: 1
//	pp=2: dp=1 tp=2, micro | 4: 1 2 4; dp=2 tp=1, micro | 2: 1 2
func TestEnumerateTransformer(t *testing.T) {
	got, err := Enumerate(transformerSpace())
	if err != nil {
		t.Fatal(err)
	}
	want := []Layout{lay(1, 2, 2, 1), lay(1, 2, 2, 2), lay(1, 4, 1, 1), lay(2, 1, 2, 1), lay(2, 1, 2, 2), lay(2, 1, 2, 4), lay(2, 2, 1, 1), lay(2, 2, 1, 2)}
	if !slices.Equal(got, want) {
		t.Errorf("Enumerate:\n got %v\nwant %v", got, want)
	}
}

// TestRunTransformer searches the space with the communication model:
// every layout replays, and an unknown workload is refused.
func TestRunTransformer(t *testing.T) {
	model, err := costs.Parse([]byte(`{"comm":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := transformerSpace()
	rs, n, err := Run(context.Background(), s, Options{Model: model, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if n != 8 || len(rs) != 8 {
		t.Fatalf("%d results of %d layouts, want 8", len(rs), n)
	}
	for _, r := range rs {
		if r.StepTimeNs <= 0 || r.PeakBytes <= 0 || !r.Fits {
			t.Errorf("layout %+v: %+v", r.Layout, r)
		}
	}
	s.Workload = "other"
	if _, _, err := Run(context.Background(), s, Options{}); err == nil {
		t.Error("an unknown workload searched")
	}
}

// TestSpaceRefusesOneValueTwice: a list value given twice in another
// spelling is refused as the same spelling twice is; each would search its
// layouts twice.
func TestSpaceRefusesOneValueTwice(t *testing.T) {
	m := workload.Model{Name: "g", Layers: 4, Hidden: 128, Heads: 4, Vocab: 256, Seq: 64, Bias: true, Tied: true, Dtype: "bfloat16"}
	base := Space{Model: m, Batch: 8, World: 4, GPUsPerHost: 4, MemoryBytes: 80e9, Steps: 2}
	for _, edit := range []func(*Space){
		func(s *Space) { s.Zeros = "0,00" },
		func(s *Space) { s.SequenceParallels = "true,TRUE" },
		func(s *Space) { s.Recomputes = "none,full,none" },
		func(s *Space) { s.Schedules = "interleaved:2,1f1b,interleaved:02" },
	} {
		s := base
		edit(&s)
		if err := s.Check(); !errors.Is(err, ErrSpace) || !strings.Contains(err.Error(), "one value given twice") {
			t.Errorf("%+v: %v, want ErrSpace naming the value given twice", s, err)
		}
	}
	ok := base
	ok.Zeros, ok.SequenceParallels = "0,1", "false,true"
	if err := ok.Check(); err != nil {
		t.Errorf("distinct values: %v", err)
	}
}
