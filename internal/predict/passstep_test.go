package predict

import (
	"context"
	"fmt"
	"testing"

	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/workload"
)

// outcome is everything a replay of a job reports, device by device.
type outcome struct {
	res   replay.Result
	peaks []string // per device: lowest rank, ranks, peak, final bytes
}

// replayOutcome replays j on spec, its passes applied command by command
// (perCommand) or as steps where they can be.
func replayOutcome(t *testing.T, j workload.Job, spec *hardware.Spec, perCommand bool) outcome {
	return replayOutcomePiped(t, j, spec, perCommand, false)
}

// replayOutcomePiped is replayOutcome with the workload written on a
// goroutine of its own (piped) or inline.
func replayOutcomePiped(t *testing.T, j workload.Job, spec *hardware.Spec, perCommand, piped bool) outcome {
	t.Helper()
	j.CommandNs = -1
	j.GPUsPerHost = spec.Host.GPUsPerHost
	if err := j.Check(); err != nil {
		t.Fatal(err)
	}
	model, err := costs.NewWithHardware(costs.Config{}, spec)
	if err != nil {
		t.Fatal(err)
	}
	var o outcome
	res, _, err := replayJob(context.Background(), j, model, piped, func(opt *replay.Options) {
		opt.PerCommand = perCommand
		opt.Inspect = func(eng *sched.Engine, _ *replay.Result) error {
			eng.DevicePeaks(func(low, ranks, peak int64) {
				_, final := eng.DeviceBytes(low)
				o.peaks = append(o.peaks, fmt.Sprintf("device %d (%d ranks): peak %d, final %d", low, ranks, peak, final))
			})
			return nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	o.res = *res
	return o
}

// TestPassStepsChangeNothing: replaying a layout's recorded layer passes
// as single steps gives what applying their commands one by one gives:
// every step's time and peak, the peak device and its final memory, every
// device's peak and final memory, the commands, records by kind and tasks
// counted.
func TestPassStepsChangeNothing(t *testing.T) {
	spec, err := hardware.Preset("a100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	steps := int64(0)
	for _, j := range workload.FeatureLayouts() {
		name := fmt.Sprintf("%s tp%d pp%d dp%d %v zero%d recompute%d sp%v", j.Model.Name, j.TP, j.PP, j.DP, j.Schedule, j.Zero, j.Recompute, j.SequenceParallel)
		one := replayOutcome(t, j, spec, true)
		fast := replayOutcome(t, j, spec, false)
		if one.res.PassSteps != 0 {
			t.Errorf("%s: %d passes applied as steps with PerCommand", name, one.res.PassSteps)
		}
		steps += fast.res.PassSteps
		a, b := one.res, fast.res
		a.Wall, b.Wall = 0, 0
		a.PassSteps, a.PassesRecorded, b.PassSteps, b.PassesRecorded = 0, 0, 0, 0
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s: results differ:\ncommand by command %+v\npasses as steps    %+v", name, a, b)
		}
		if fmt.Sprint(one.peaks) != fmt.Sprint(fast.peaks) {
			t.Errorf("%s: devices differ:\ncommand by command %v\npasses as steps    %v", name, one.peaks, fast.peaks)
		}
		// Passes that lend (ZeRO 3's gathered matrices) are written
		// command by command; every other layout applies its passes.
		if j.Zero < 3 && fast.res.PassSteps == 0 {
			t.Errorf("%s: no pass applied as a step", name)
		}
		t.Logf("%s: %d commands; %d passes applied as steps, %d recorded", name, b.Commands, fast.res.PassSteps, fast.res.PassesRecorded)
	}
	if steps == 0 {
		t.Error("no pass was applied as a step")
	}
}
