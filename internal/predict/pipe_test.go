package predict

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/workload"
)

// TestPipedChangesNothing: a prediction whose workload is written on a
// goroutine of its own (workload.EmitStatsPiped) replays to the result
// of one written inline: every step's time and peak, the peak device and
// its final memory, every device's peak and final memory, the commands,
// records by kind, tasks and passes applied as steps; with passes applied
// as steps and command by command.
func TestPipedChangesNothing(t *testing.T) {
	spec, err := hardware.Preset("a100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	all := workload.FeatureLayouts()
	if testing.Short() { // the race detector's run: every fourth layout
		for i := 0; 4*i < len(all); i++ {
			all[i] = all[4*i]
		}
		all = all[:(len(all)+3)/4]
	}
	steps := int64(0)
	for i, j := range all {
		name := fmt.Sprintf("%s tp%d pp%d dp%d %v zero%d recompute%d sp%v", j.Model.Name, j.TP, j.PP, j.DP, j.Schedule, j.Zero, j.Recompute, j.SequenceParallel)
		perCommand := i%4 == 3
		inline := replayOutcomePiped(t, j, spec, perCommand, false)
		piped := replayOutcomePiped(t, j, spec, perCommand, true)
		steps += piped.res.PassSteps
		a, b := inline.res, piped.res
		a.Wall, b.Wall = 0, 0
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s: results differ:\ninline %+v\npiped  %+v", name, a, b)
		}
		if fmt.Sprint(inline.peaks) != fmt.Sprint(piped.peaks) {
			t.Errorf("%s: devices differ:\ninline %v\npiped  %v", name, inline.peaks, piped.peaks)
		}
	}
	if steps == 0 {
		t.Error("no pass was applied as a step")
	}
}

// TestPipedStopsPromptly: a piped prediction stopped mid-way (its context
// cancelled once some records are replayed) returns the context's error
// well before the whole replay would end, and leaves no goroutine behind.
func TestPipedStopsPromptly(t *testing.T) {
	spec, err := hardware.Preset("a100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	model, err := costs.NewWithHardware(costs.Config{}, spec)
	if err != nil {
		t.Fatal(err)
	}
	j := workload.FeatureLayouts()[0]
	j.Steps = 6
	j.CommandNs = -1
	j.GPUsPerHost = spec.Host.GPUsPerHost
	whole, _, err := replayJob(context.Background(), j, model, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	for _, at := range []int64{1, whole.Records / 10, whole.Records / 2} {
		ctx, cancel := context.WithCancel(context.Background())
		n := int64(0)
		res, _, err := replayJob(ctx, j, model, true, func(o *replay.Options) {
			// Called with every command record before it is applied (which
			// applies passes command by command: every record counts).
			o.EachCommand = func(*history.Record) {
				if n++; n == at {
					cancel()
				}
			}
		})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("stopped at record %d: %v, want the context's error", at, err)
			continue
		}
		// The stop is noticed within a record or so of the cancellation
		// (a goroutine watches the context); what matters is that the
		// replay does not run on to its end.
		if res == nil || !res.Partial || res.Records >= whole.Records*3/4 {
			t.Errorf("stopped at record %d of %d: result %+v", at, whole.Records, res)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the runs, %d before", n, before)
	}
}
