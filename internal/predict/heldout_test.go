package predict

import (
	"context"
	"flag"
	"testing"

	"github.com/fastsim/fastsim/internal/validation"
)

var heldOut = flag.Bool("held-out", false, "predict the held-out points too (reporting only: nothing was tuned on them, and nothing is asserted)")

// TestHeldOutPoints, with -args -held-out, predicts the validation set's
// held-out points of at most 1,024 GPUs (all of them with -all-points)
// and logs each published value beside its prediction. It reports; it
// checks nothing: the held-out points are for scoring the model, not for
// tuning it, so no bound here may follow their errors.
func TestHeldOutPoints(t *testing.T) {
	if !*heldOut {
		t.Skip("reporting only: run with -args -held-out")
	}
	pts, err := validation.Load()
	if err != nil {
		t.Fatal(err)
	}
	for i := range pts {
		p := &pts[i]
		if p.Role == validation.RoleDevelopment || (!*allPoints && p.Layout.GPUs > 1024) {
			continue
		}
		_, cs, err := Validate(context.Background(), p)
		if err != nil {
			t.Logf("%-24s not predicted: %v", p.ID, err)
			continue
		}
		for _, c := range cs {
			t.Logf("%-24s %-16s %-10s published %10.4f predicted %10.4f error %+6.1f%%", c.Point, c.Quantity, c.Kind, c.Published, c.Predicted, c.ErrorPct)
		}
	}
}
