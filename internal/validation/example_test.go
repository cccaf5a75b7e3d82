package validation_test

import (
	"fmt"

	"github.com/fastsim/fastsim/internal/validation"
)

// ExampleLoad lists the development points that carry a measured step time,
// with their layout.
func ExampleLoad() {
	points, err := validation.Load()
	if err != nil {
		panic(err)
	}
	for _, p := range points {
		m, ok := p.Get("step_time_s", validation.KindMeasured)
		if p.Role != validation.RoleDevelopment || !ok {
			continue
		}
		l := p.Layout
		fmt.Printf("%s: t%d p%d d%d, batch %d/%d, %s, recompute %s, sequence parallel %v: %s\n",
			p.ID, l.TP, l.PP, l.DP, l.GlobalBatch, l.MicroBatch, l.Schedule, l.Recompute, l.SequenceParallel, m.AsPublished)
	}
	// Output:
	// korthikanti-22b-full: t8 p1 d1, batch 4/4, 1f1b, recompute full, sequence parallel false: 1.42 seconds
	// korthikanti-22b-seqsel: t8 p1 d1, batch 4/4, 1f1b, recompute selective, sequence parallel true: 1.10 seconds
	// korthikanti-175b-full: t8 p8 d1, batch 64/1, interleaved:3, recompute full, sequence parallel false: 18.13 seconds
	// korthikanti-175b-seqsel: t8 p8 d1, batch 64/1, interleaved:3, recompute selective, sequence parallel true: 13.75 seconds
}
