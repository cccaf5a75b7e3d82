package workload

import (
	"fmt"
	"testing"

	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
)

// commOutcome replays j as a prediction does (grouped, hardware model, no
// controller cost, FixedStreams) and says what it reports: the result's
// step and final reports and every device's peak and final bytes.
func commOutcome(t *testing.T, j Job, fixed bool) (string, int64) {
	t.Helper()
	spec, err := hardware.Preset("a100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	j.CommandNs, j.GPUsPerHost = -1, spec.Host.GPUsPerHost
	model, err := costs.NewWithHardware(costs.Config{}, spec)
	if err != nil {
		t.Fatal(err)
	}
	h, err := HeaderOf(j)
	if err != nil {
		t.Fatal(err)
	}
	var devices []string
	opt := replay.Options{Model: model, Grouped: true, Jobs: 1, Controller: sched.ControllerNone, FixedStreams: fixed,
		Inspect: func(eng *sched.Engine, _ *replay.Result) error {
			eng.DevicePeaks(func(low, ranks, peak int64) {
				_, final := eng.DeviceBytes(low)
				devices = append(devices, fmt.Sprintf("%d+%d: %d %d", low, ranks, peak, final))
			})
			return nil
		}}
	res, err := replay.Typed(h, "layout", func(s *replay.Sim) error { return Emit(j, s) }, opt)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(res.Steps, res.Final, res.PeakDeviceFinalBytes, devices), res.Commands
}

// TestCommOnlyWhereUsed: a stage makes "comm" only where it runs a task
// there (usesComm), and FixedStreams lets a replay's memory events go as
// it runs; neither changes what a replay of any feature layout reports,
// against every stage making the stream and no promise. A stage that
// needed the stream and lacked it would fail the replay (unknown stream).
func TestCommOnlyWhereUsed(t *testing.T) {
	fewer := 0
	t.Cleanup(func() { commEverywhere = false })
	for _, j := range FeatureLayouts() {
		name := fmt.Sprintf("%s tp%d pp%d dp%d %v zero%d", j.Model.Name, j.TP, j.PP, j.DP, j.Schedule, j.Zero)
		commEverywhere = true
		want, all := commOutcome(t, j, false)
		commEverywhere = false
		got, pruned := commOutcome(t, j, true)
		if got != want {
			t.Errorf("%s: reports differ:\n got %s\nwant %s", name, got, want)
		}
		if pruned < all {
			fewer++
		}
	}
	if fewer == 0 {
		t.Error("no layout left out a stage's unused comm stream")
	}
}
