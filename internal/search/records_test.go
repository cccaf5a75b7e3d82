package search

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/workload"
)

// TestJSONRecordsComplete: every --json record of a transformer search
// has every field the CSV has, whether the layout's values are zero or
// not (omitempty left out sequence_parallel false, zero 0 and mfu 0, and
// micro_batch was never written), in a space that prunes or pins every
// dimension; the MFU is null without a GPU peak, a number with one.
func TestJSONRecordsComplete(t *testing.T) {
	m := workload.Model{Name: "g", Layers: 4, Hidden: 128, Heads: 4, Vocab: 256, Seq: 64, Bias: true, Tied: true, Dtype: "bfloat16"}
	base := Space{Model: m, Batch: 8, World: 4, GPUsPerHost: 4, MemoryBytes: 80e9, Steps: 2}
	pruned := base
	pruned.Prune, pruned.Schedules, pruned.Zeros, pruned.PeakTFLOPS = true, "1f1b", "0,1", 312
	results := []Result{
		{Index: 0, Layout: Layout{PP: 1, DP: 2, TP: 2, Micro: 2}, StepTimeNs: 1e9, PeakBytes: 1e9},
		{Index: 1, Layout: Layout{PP: 1, DP: 4, TP: 1, Micro: 1, Training: Training{Schedule: "1f1b", Recompute: "full", SequenceParallel: false, Zero: 1}}, StepTimeNs: 2e9, PeakBytes: 2e9},
	}
	cols := strings.Split(CSVFullHeader, ",")
	for _, c := range []struct {
		s   Space
		rs  []Result
		mfu bool
	}{{base, results[:1], false}, {pruned, results, true}} {
		for i := range c.rs {
			fill(&c.rs[i], c.s)
		}
		var b bytes.Buffer
		if err := NewDoc(c.s, "x", Shard{}, len(c.rs), c.rs).WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Results []map[string]any `json:"results"`
		}
		if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Results) != len(c.rs) {
			t.Fatalf("%d records, want %d", len(doc.Results), len(c.rs))
		}
		for i, rec := range doc.Results {
			for _, col := range cols {
				if _, ok := rec[col]; !ok {
					t.Errorf("prune %t, record %d: no %q in %v", c.s.Prune, i, col, rec)
				}
			}
			// Batch 8 over dp x micro: 8/(2x2) = 2 and 8/(4x1) = 2.
			if rec["micro_batch"] != 2.0 {
				t.Errorf("record %d: micro_batch %v, want 2", i, rec["micro_batch"])
			}
			if mfu, ok := rec["mfu"].(float64); ok != c.mfu || c.mfu && mfu <= 0 {
				t.Errorf("record %d: mfu %v (peak %g)", i, rec["mfu"], c.s.PeakTFLOPS)
			}
		}
		// What was written reads back, as search merge reads it.
		if _, err := ReadDoc(&b, "x.json"); err != nil {
			t.Error(err)
		}
	}
}

// TestTableMFUUnknown: without a GPU peak the table's MFU column says
// "–", not a "0.0%" that reads as a measurement; with one it is a
// percentage.
func TestTableMFUUnknown(t *testing.T) {
	m := workload.Model{Name: "g", Layers: 4, Hidden: 128, Heads: 4, Vocab: 256, Seq: 64, Bias: true, Tied: true, Dtype: "bfloat16"}
	s := Space{Model: m, Batch: 8, World: 4, GPUsPerHost: 4, MemoryBytes: 80e9, Steps: 2, Prune: true}
	for _, peak := range []float64{0, 312} {
		s.PeakTFLOPS = peak
		r := Result{Layout: Layout{PP: 1, DP: 2, TP: 2, Micro: 2}, StepTimeNs: 1e9, PeakBytes: 1e9}
		fill(&r, s)
		var b bytes.Buffer
		if err := NewDoc(s, "x", Shard{}, 1, []Result{r}).WriteTable(&b, 0); err != nil {
			t.Fatal(err)
		}
		row := strings.Split(b.String(), "\n")[1]
		if strings.Contains(row, "–") != (peak == 0) || strings.Contains(row, "%") != (peak > 0) {
			t.Errorf("peak %g: row %q", peak, row)
		}
	}
}

// TestReadDocLines: what search merge finds wrong in a shard's file is
// reported at its line, FILE:LINE, as for every other JSON file.
func TestReadDocLines(t *testing.T) {
	for _, c := range []struct {
		text string
		line int
	}{
		{"{\n  \"fastsim\": \"search\",\n  \"version\": 1,\n  \"layouts\": x\n}", 4},                  // syntax
		{"{\n  \"fastsim\": \"search\",\n  \"version\": 1,\n  \"colour\": 1\n}", 4},                   // unknown field
		{"{\n  \"version\": 1,\n  \"fastsim\": \"replay\"\n}", 3},                                     // not a search
		{"{\n  \"fastsim\": \"search\",\n  \"version\": 1,\n  \"shard\": {\"k\": 0, \"n\": 0}\n}", 4}, // bad shard
		{"{\n  \"fastsim\": \"search\",\n  \"version\": 1,\n  \"shard\": {\"k\": 0, \"n\": 1},\n  \"layouts\": -1\n}", 5},
		{"{\n  \"fastsim\": \"search\",\n  \"version\": 1,\n  \"shard\": {\"k\": 0, \"n\": 1}\n}\n\n{}", 7}, // trailing
		{"{\n  \"fastsim\": \"search\",\n  \"version\": 1,", 3},                                             // ends early
		{"{\n  \"fastsim\": \"search\",\n  \"version\": 1,\n  \"shard\": {\"k\": 0, \"n\": 1},\n  \"layouts\": 2,\n  \"results\": [{\"pp\": 1, \"step_time_ns\": 5},\n    {\"pp\": 2,\n     \"step_time_ns\": -5}]\n}", 8}, // a negative time
	} {
		_, err := ReadDoc(strings.NewReader(c.text), "s.json")
		want := "s.json:" + strconv.Itoa(c.line) + ": shards do not merge: "
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v; want it to start %q", c.text, err, want)
		}
	}
}
