package search

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/sched"
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

// TestReadDocRefusesImpossibleShards: a shard's file edited into what no
// search writes is refused at its line, before a merge would enumerate
// its space or prune by its figures: a model of no heads (which a merge
// would have divided by), and a result whose step is under its own lower
// bound (which would prune the layouts that beat it).
func TestReadDocRefusesImpossibleShards(t *testing.T) {
	s := prunedSpace()
	s.Prune = true
	rs, n, err := Run(context.Background(), s, Options{Model: a100(t), Controller: sched.ControllerNone, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := NewDoc(s, "x", Shard{K: 0, N: 1}, n, rs).WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDoc(bytes.NewReader(buf.Bytes()), "s.json"); err != nil {
		t.Fatalf("the search's own document: %v", err)
	}
	edit := func(change func(doc map[string]any)) string {
		var doc map[string]any
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		change(doc)
		out, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	lineOf := func(text, key string) int { return strings.Count(text[:strings.Index(text, key)], "\n") + 1 }
	noHeads := edit(func(doc map[string]any) { doc["space"].(map[string]any)["model"].(map[string]any)["heads"] = 0 })
	underBound := edit(func(doc map[string]any) {
		r := doc["results"].([]any)[0].(map[string]any)
		if r["time_bound_ns"].(float64) <= 0 {
			t.Fatalf("result 0 has no time bound: %v", r)
		}
		r["step_time_ns"] = 0
	})
	for _, c := range []struct{ name, text, key, says string }{
		{"no heads", noHeads, `"space"`, "the space: "},
		{"under its bound", underBound, `"step_time_ns"`, "results[0].step_time_ns is 0, under its time_bound_ns"},
	} {
		_, err := ReadDoc(strings.NewReader(c.text), "s.json")
		want := fmt.Sprintf("s.json:%d: shards do not merge: ", lineOf(c.text, c.key))
		if !errors.Is(err, ErrMerge) || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v; want it to start %q and say %q", c.name, err, want, c.says)
		}
	}
}
