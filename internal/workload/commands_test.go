package workload

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/fastsim/fastsim/internal/history"
)

// TestCommandBoundHolds writes every FeatureLayouts job with one
// nanosecond between commands, so that the last command's time is the
// number of commands that advanced the clock, and checks that
// commandBound is not below it.
func TestCommandBoundHolds(t *testing.T) {
	for i, j := range FeatureLayouts() {
		j.CommandNs = 1
		var b bytes.Buffer
		if err := Write(&b, j); err != nil {
			t.Fatal(err)
		}
		r, err := history.NewReader(&b, "job")
		if err != nil {
			t.Fatal(err)
		}
		var rec history.Record
		last := int64(0)
		for {
			err := r.Next(&rec)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			last = max(last, rec.Ts)
		}
		r.Close()
		if bound := j.commandBound(); float64(last) > bound {
			t.Errorf("job %d: %d commands advance the clock, over the bound %.0f", i, last, bound)
		}
	}
}

// TestCommandTimesBounded: a job whose commands would be sent past 2^63
// ns is refused, not written with times that wrap.
func TestCommandTimesBounded(t *testing.T) {
	m, ok := Preset("llama3-8b")
	if !ok {
		t.Fatal("no llama3-8b preset")
	}
	j := Job{Model: m, TP: 2, PP: 1, DP: 1, MicroBatch: 1, GlobalBatch: 2, Schedule: OneFOneB, Steps: 1}
	// 32 layers, m = 2 microbatches: the bound is 1,024 x (1+1) x (2+1) x
	// (32 + 2x1 + 3x1) = 227,328 commands; at 10^18 ns apart (what
	// wrapped to a time going backwards) they end past 2^63 ns.
	j.CommandNs = 1_000_000_000_000_000_000
	if err := j.Check(); !errors.Is(err, ErrJob) {
		t.Errorf("command-ns 1e18: Check = %v, want ErrJob", err)
	}
	j.CommandNs = 9_223_372_036_854_775_807
	if err := j.Check(); !errors.Is(err, ErrJob) {
		t.Errorf("command-ns 2^63-1: Check = %v, want ErrJob", err)
	}
	// 227,328 x 4e13 = 9.09e18 < 2^63 = 9.22e18: accepted.
	for _, ns := range []int64{0, -1, 20_000, 40_000_000_000_000} {
		j.CommandNs = ns
		if err := j.Check(); err != nil {
			t.Errorf("command-ns %d: %v", ns, err)
		}
	}
}
