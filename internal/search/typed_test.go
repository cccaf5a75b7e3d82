package search

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/synth"
	"github.com/fastsim/fastsim/internal/workload"
)

// textResult is layout l's result the way the search once found it: the
// history written out as JSON text, read back and replayed grouped.
func textResult(t *testing.T, s Space, l Layout, model sched.CostModel) Result {
	t.Helper()
	var text bytes.Buffer
	var err error
	if s.toy() {
		err = synth.WriteTrain(&text, s.Train(l))
	} else {
		err = workload.Write(&text, s.Job(l))
	}
	if err != nil {
		t.Fatal(err)
	}
	res, err := replay.Reader(&text, "layout.hist", replay.Options{Model: model, Grouped: true, Jobs: 1})
	if err != nil {
		t.Fatalf("layout %+v: %v", l, err)
	}
	return resultOf(s, l, res)
}

// costModels are the ways a search prices commands: the reference's fixed
// runtimes, the example cost table (per-op runtimes keyed by the
// arguments' shapes and dtypes) and a hardware roofline (FLOPs and bytes
// from the shapes), so that a tensor whose fields a typed record failed
// to carry would be priced differently from its text.
func costModels(t *testing.T) map[string]sched.CostModel {
	t.Helper()
	table, err := costs.Load("../../examples/costs.json")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := hardware.Preset("a100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	roof, err := costs.Default().WithHardware(spec)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]sched.CostModel{"reference": nil, "table": table, "a100-80gb": roof}
}

// TestTypedEqualsJSON: a search, whose layouts go from the workload to the
// engine as typed records, ranks the same layouts with the same numbers
// as replaying each layout's history from its JSON text, for both
// workloads and every kind of cost model. The typed path skips the text,
// not a rule.
func TestTypedEqualsJSON(t *testing.T) {
	toy := Space{Workload: WorkloadToy, Layers: 2, Hidden: 1024, Seq: 512, Batch: 4, World: 4, GPUsPerHost: 2, MemoryBytes: 30e6, Steps: 2}
	tr := transformerSpace()
	tr.Schedules, tr.Recomputes, tr.SequenceParallels, tr.Zeros = "gpipe", "selective", "false,true", "0,3"
	for name, model := range costModels(t) {
		for _, s := range []Space{toy, tr} {
			if testing.Short() && !s.toy() {
				continue // the slow part; replay's TestTypedEqualsJSON covers the transformer's records
			}
			label := fmt.Sprintf("%q %s", s.Workload, name)
			typed, n, err := Run(context.Background(), s, Options{Model: model, Jobs: 2})
			if err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			all, err := Enumerate(s)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(all) || len(typed) != n || n < 8 {
				t.Fatalf("%s: %d results of %d layouts (%d enumerated)", label, len(typed), n, len(all))
			}
			text := make([]Result, len(all))
			for i, l := range all {
				text[i] = textResult(t, s, l, model)
				text[i].Index = i
			}
			Rank(text)
			if !reflect.DeepEqual(typed, text) {
				for i := range typed {
					if typed[i] != text[i] {
						t.Errorf("%s: rank %d: typed %+v, text %+v", label, i+1, typed[i], text[i])
						break
					}
				}
				t.Fatalf("%s: the typed search differs from the text one", label)
			}
			// The toy's memory capacity is set so that some layouts fit and
			// some do not: the ranking's first key is exercised too.
			fits := 0
			for _, r := range typed {
				if r.Fits {
					fits++
				}
			}
			if s.toy() && (fits == 0 || fits == len(typed)) {
				t.Errorf("%s: %d of %d layouts fit; want a mix", label, fits, len(typed))
			}
		}
	}
}

// TestToyTypedEqualsJSON replays toy training jobs from the JSON text
// WriteTrain writes and from the typed records EmitTrain sends, grouped
// and ungrouped, and requires the same reports, steps, peak device
// holdings and command counts.
func TestToyTypedEqualsJSON(t *testing.T) {
	jobs := []synth.Train{
		{PP: 2, DP: 2, TP: 2, Layers: 4, Hidden: 64, Seq: 16, Batch: 8, Micro: 2, Steps: 2},
		{PP: 4, DP: 1, TP: 2, Layers: 4, Hidden: 32, Seq: 8, Batch: 4, Micro: 4, Steps: 3, GPUsPerHost: 2},
		{PP: 1, DP: 4, TP: 1, Layers: 2, Hidden: 16, Seq: 4, Batch: 8, Micro: 1, Steps: 1, CommandNs: 7},
	}
	for name, model := range costModels(t) {
		for i, c := range jobs {
			var text bytes.Buffer
			if err := synth.WriteTrain(&text, c); err != nil {
				t.Fatal(err)
			}
			h, err := synth.TrainHeader(c)
			if err != nil {
				t.Fatal(err)
			}
			for _, grouped := range []bool{false, true} {
				opt := replay.Options{Model: model, Grouped: grouped}
				fromJSON, err := replay.Reader(bytes.NewReader(text.Bytes()), "job.hist", opt)
				if err != nil {
					t.Fatalf("job %d: %v", i, err)
				}
				typed, err := replay.Typed(h, "job", func(s *replay.Sim) error { return synth.EmitTrain(s, c) }, opt)
				if err != nil {
					t.Fatalf("job %d: %v", i, err)
				}
				if fromJSON.Final != typed.Final || fmt.Sprint(fromJSON.Steps) != fmt.Sprint(typed.Steps) ||
					fromJSON.PeakDeviceFinalBytes != typed.PeakDeviceFinalBytes || fromJSON.Commands != typed.Commands ||
					fromJSON.Kinds != typed.Kinds {
					t.Fatalf("%s job %d grouped %v: JSON %+v %v %d %d, typed %+v %v %d %d", name, i, grouped,
						fromJSON.Final, fromJSON.Steps, fromJSON.PeakDeviceFinalBytes, fromJSON.Commands,
						typed.Final, typed.Steps, typed.PeakDeviceFinalBytes, typed.Commands)
				}
				if len(typed.Steps) != c.Steps || typed.Final.PeakBytes == 0 || typed.Final.ExecNs == 0 {
					t.Fatalf("job %d: %d steps, peak %d, exec %d", i, len(typed.Steps), typed.Final.PeakBytes, typed.Final.ExecNs)
				}
			}
		}
	}
}
