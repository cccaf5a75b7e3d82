package sched_test

import (
	"fmt"
	"testing"

	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/workload"
)

// TestCarryChangesNothing: replaying the feature layouts with passes
// applied as steps gives the same results, every device's peak and final
// memory included, whether what the passes leave behind is carried
// undefined or defined at once; and carrying is used (a backward consumes
// what its forward saved, whole).
func TestCarryChangesNothing(t *testing.T) {
	type outcome struct {
		res                       string
		devices                   string
		consumed, release, define int64
	}
	run := func(j workload.Job, carry bool) outcome {
		sched.SetCarry(carry)
		defer sched.SetCarry(true)
		var o outcome
		o.res, o.devices = replayFeature(t, j, func(eng *sched.Engine) {
			o.consumed, o.release, o.define = eng.PassUnits()
			if counted, held := eng.CarriedTensors(); counted != held {
				t.Errorf("%d tensors carried, %d held against the registry's limit", counted, held)
			}
		})
		return o
	}
	consumed := int64(0)
	for i, j := range workload.FeatureLayouts() {
		on, off := run(j, true), run(j, false)
		if on.res != off.res || on.devices != off.devices {
			t.Errorf("layout %d: results differ:\ncarried %s %s\ndefined %s %s", i, on.res, on.devices, off.res, off.devices)
		}
		if off.consumed != 0 || off.define != 0 {
			t.Errorf("layout %d: carrying off, yet %d passes consumed carried tensors and %d were defined", i, off.consumed, off.define)
		}
		consumed += on.consumed
	}
	if consumed == 0 {
		t.Error("no pass consumed carried tensors")
	}
}

// replayFeature replays job j grouped, passes applied as steps, without
// a controller cost, calls inspect with the engine at the end, and
// returns the result (less its wall time) and every device's peak and
// final memory, as text.
func replayFeature(t *testing.T, j workload.Job, inspect func(*sched.Engine)) (res, devices string) {
	t.Helper()
	j.CommandNs = -1
	h, err := workload.HeaderOf(j)
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.Typed(h, "job", func(s *replay.Sim) error { return workload.Emit(j, s) },
		replay.Options{Grouped: true, Controller: sched.ControllerNone, Inspect: func(eng *sched.Engine, _ *replay.Result) error {
			inspect(eng)
			eng.DevicePeaks(func(low, ranks, peak int64) {
				_, final := eng.DeviceBytes(low)
				devices += fmt.Sprintf("device %d (%d ranks): peak %d, final %d; ", low, ranks, peak, final)
			})
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	out := *r
	out.Wall = 0
	return fmt.Sprintf("%+v", out), devices
}
