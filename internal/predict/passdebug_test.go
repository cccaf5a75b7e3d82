package predict

import (
	"fmt"
	"testing"

	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/sched"
)

func TestPassDebug(t *testing.T) {
	spec, _ := hardware.Preset("a100-80gb")
	n, calls := 0, 0
	sched.PassDebug = func(k sched.PassKey, a, b any) {
		calls++
		sa, sb := fmt.Sprintf("%+v", a), fmt.Sprintf("%+v", b)
		if sa != sb && n < 3 {
			n++
			t.Logf("key %v:\nrec  %s\nseen %s", k, sa, sb)
		}
	}
	o1 := replayOutcome(t, passLayouts()[1], spec, false)
	sched.PassDebug = nil
	o2 := replayOutcome(t, passLayouts()[1], spec, true)
	t.Logf("%d calls %+v\n%+v", calls, o1.res.Final, o2.res.Final)
}
