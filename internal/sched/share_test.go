package sched_test

import (
	"testing"

	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/workload"
)

// TestSharedEffectsChangeNothing: replaying the feature layouts with
// passes applied as steps gives the same results, every device's peak and
// final memory included, whether the effects recorded alike on different
// pipeline stages share one body or each keeps its own; and with several
// stages they do share (fewer bodies than effects).
func TestSharedEffectsChangeNothing(t *testing.T) {
	type outcome struct {
		res, devices    string
		effects, bodies int
		applied         int64
	}
	run := func(j workload.Job, share bool) outcome {
		sched.SetShare(share)
		defer sched.SetShare(true)
		var o outcome
		o.res, o.devices = replayFeature(t, j, func(eng *sched.Engine) {
			o.effects, o.bodies = eng.EffectBodies()
			o.applied, _ = eng.PassSteps()
		})
		return o
	}
	shared, applied := 0, int64(0)
	for i, j := range workload.FeatureLayouts() {
		on, off := run(j, true), run(j, false)
		if on.res != off.res || on.devices != off.devices || on.applied != off.applied {
			t.Errorf("layout %d: results differ:\nshared %s %s (%d passes as steps)\nown %s %s (%d)", i, on.res, on.devices, on.applied, off.res, off.devices, off.applied)
		}
		applied += on.applied
		if off.bodies != off.effects {
			t.Errorf("layout %d: sharing off, yet %d effects have %d bodies", i, off.effects, off.bodies)
		}
		if j.PP > 1 && on.bodies < on.effects {
			shared++
		}
	}
	if applied == 0 {
		t.Error("no pass applied as a step")
	}
	if shared == 0 {
		t.Error("no layout of several stages shared an effect's slices")
	}
}
