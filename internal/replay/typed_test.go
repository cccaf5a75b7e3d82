package replay

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/fastsim/fastsim/internal/workload"
)

// TestTypedEqualsJSON replays transformer training jobs twice, from the
// JSON text the workload writes and from the typed records it emits, and
// requires the same reports, steps and peak device holdings, grouped and
// ungrouped: the typed path skips the text, not a rule.
func TestTypedEqualsJSON(t *testing.T) {
	m := workload.Model{Name: "small", Layers: 4, Hidden: 256, Heads: 8, Vocab: 1024, Seq: 128, Bias: true, Tied: true, Dtype: "bfloat16"}
	jobs := []workload.Job{
		{Model: m, TP: 2, PP: 2, DP: 2, MicroBatch: 1, GlobalBatch: 8, Schedule: workload.OneFOneB, Steps: 2},
		{Model: workload.Model{Name: "small6", Layers: 6, Hidden: 256, Heads: 8, Vocab: 1024, Seq: 128, Bias: true, Tied: true, Dtype: "bfloat16"}, TP: 2, PP: 3, DP: 1, MicroBatch: 1, GlobalBatch: 6, Schedule: workload.Interleaved, Chunks: 2, Recompute: workload.RecomputeSelective, SequenceParallel: true, Steps: 2},
		{Model: m, TP: 1, PP: 1, DP: 4, MicroBatch: 2, GlobalBatch: 8, Schedule: workload.GPipe, Zero: 3, Recompute: workload.RecomputeFull, Steps: 2},
	}
	for i, j := range jobs {
		var text bytes.Buffer
		if err := workload.Write(&text, j); err != nil {
			t.Fatal(err)
		}
		h, err := workload.HeaderOf(j)
		if err != nil {
			t.Fatal(err)
		}
		for _, grouped := range []bool{false, true} {
			opt := Options{Grouped: grouped}
			fromJSON, err := Reader(bytes.NewReader(text.Bytes()), "job.hist", opt)
			if err != nil {
				t.Fatalf("job %d: %v", i, err)
			}
			typed, err := Typed(h, "job", func(s *Sim) error { return workload.Emit(j, s) }, opt)
			if err != nil {
				t.Fatalf("job %d: %v", i, err)
			}
			if fromJSON.Final != typed.Final || fmt.Sprint(fromJSON.Steps) != fmt.Sprint(typed.Steps) ||
				fromJSON.PeakDeviceFinalBytes != typed.PeakDeviceFinalBytes || fromJSON.Commands != typed.Commands {
				t.Fatalf("job %d grouped %v: JSON %+v %v %d, typed %+v %v %d", i, grouped,
					fromJSON.Final, fromJSON.Steps, fromJSON.PeakDeviceFinalBytes, typed.Final, typed.Steps, typed.PeakDeviceFinalBytes)
			}
			if len(typed.Steps) != 2 || typed.Final.PeakBytes == 0 {
				t.Fatalf("job %d: %d steps, peak %d", i, len(typed.Steps), typed.Final.PeakBytes)
			}
		}
	}
}
