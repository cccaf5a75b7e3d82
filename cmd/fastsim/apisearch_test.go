package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/fastsim/fastsim"
	"github.com/fastsim/fastsim/internal/search"
)

// TestSearchJSONEqualsAPI runs the search command in process with --json
// and the API's Search on the same space and hardware: the same layouts,
// ranked alike, with the same step times, peaks and fit.
func TestSearchJSONEqualsAPI(t *testing.T) {
	hw, err := fastsim.LoadHardware("a100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	m, err := fastsim.LoadModel("megatron-1.7b")
	if err != nil {
		t.Fatal(err)
	}
	m.Layers, m.Seq = 8, 256
	dir := t.TempDir()
	mfile := filepath.Join(dir, "model.json")
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mfile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	doc := searchDoc(t, "--model", mfile, "--hardware", "a100-80gb", "--controller", "none", "--world", "8", "--global-batch", "16",
		"--zeros", "0,1", "--recomputes", "none,full")
	rs, _, err := fastsim.Search(context.Background(), fastsim.SearchSpace{Model: m, World: 8, Batch: 16, Zeros: "0,1", Recomputes: "none,full",
		// The command line's defaults for the dimensions not pinned above.
		Schedules: "1f1b,interleaved:2,interleaved:4", SequenceParallels: "false,true", Prune: true}, hw, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(doc.Results) || len(rs) == 0 {
		t.Fatalf("API: %d results, --json: %d", len(rs), len(doc.Results))
	}
	for i, r := range rs {
		c := doc.Results[i]
		if r.Layout != c.Layout || r.StepTimeNs != c.StepTimeNs || r.PeakBytes != c.PeakBytes || r.Fits != c.Fits || r.MFU != c.MFU {
			t.Errorf("result %d: API %v %d ns %d B fits %v MFU %v; --json %v %d ns %d B fits %v MFU %v",
				i, r.Layout, r.StepTimeNs, r.PeakBytes, r.Fits, r.MFU, c.Layout, c.StepTimeNs, c.PeakBytes, c.Fits, c.MFU)
		}
	}
}

// searchDoc runs the search command in process with args, --quiet and
// --json, and reads the JSON back.
func searchDoc(t *testing.T, args ...string) *search.Doc {
	t.Helper()
	out := filepath.Join(t.TempDir(), "s.json")
	args = append(append([]string{}, args...), "--quiet", "--json", out)
	var stdout, stderr bytes.Buffer
	if code := searchCmd(args, &stdout, &stderr); code != exitOK {
		t.Fatalf("search %q: exit %d: %s", args, code, stderr.String())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := search.ReadDoc(f, out)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestSearchControllerDefault: a transformer search prices its layouts as
// an SPMD program, with no controller cost, as predict and the API's
// Search do, unless --controller says otherwise; the toy workload, a
// Monarch micro-benchmark, keeps the Monarch controller. On this small
// model the controller's 20 µs a command is most of a step, so the two
// controllers rank differently and the comparison can tell them apart.
func TestSearchControllerDefault(t *testing.T) {
	m, err := fastsim.LoadModel("megatron-1.7b")
	if err != nil {
		t.Fatal(err)
	}
	m.Layers, m.Seq = 8, 256
	mfile := filepath.Join(t.TempDir(), "model.json")
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mfile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	same := func(a, b *search.Doc) bool {
		if a.Costs != b.Costs || len(a.Results) != len(b.Results) {
			return false
		}
		for i := range a.Results {
			x, y := a.Results[i], b.Results[i]
			if x.Layout != y.Layout || x.StepTimeNs != y.StepTimeNs || x.PeakBytes != y.PeakBytes {
				return false
			}
		}
		return true
	}
	for _, c := range []struct {
		name  string
		args  []string
		want  string // the controller the default must equal
		other string // the one it must not
	}{
		{"transformer", []string{"--model", mfile, "--hardware", "a100-80gb", "--world", "8", "--global-batch", "16", "--zeros", "0", "--recomputes", "none"}, "none", "monarch"},
		{"toy", []string{"--workload", "toy", "--world", "8", "--layers", "4", "--batch", "8"}, "monarch", "none"},
	} {
		def := searchDoc(t, c.args...)
		want := searchDoc(t, append(c.args, "--controller", c.want)...)
		other := searchDoc(t, append(c.args, "--controller", c.other)...)
		if !same(def, want) {
			t.Errorf("%s: the default search differs from --controller %s", c.name, c.want)
		}
		if same(def, other) {
			t.Errorf("%s: --controller %s gives the default's results: the test cannot tell the controllers apart", c.name, c.other)
		}
	}
}
