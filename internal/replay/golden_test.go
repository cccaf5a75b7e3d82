package replay

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/golden"
	"github.com/fastsim/fastsim/internal/sched"
)

// goldenDir holds the reference simulator's own results (a copy of
// shared/golden, checked against the original by TestGoldenCopyIsCurrent).
const goldenDir = "../../testdata/golden"

// sharedGolden is where the development tree keeps the originals.
const sharedGolden = "../../../shared/golden"

// replayNormal replays hist with opt in the trace mode its expected file
// names and returns the result in the golden normal form.
func replayNormal(t *testing.T, hist string, want *golden.Normal, opt Options) *golden.Normal {
	t.Helper()
	mode, err := sched.ParseMode(want.TraceMode)
	if err != nil {
		t.Fatal(err)
	}
	opt.Mode = mode
	opt.TracePath = filepath.Join(t.TempDir(), "trace.json.zst")
	res, err := File(hist, opt)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	f, err := os.Open(opt.TracePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctrl, devices, err := golden.FromTrace(f)
	if err != nil {
		t.Fatalf("reading our own trace: %v", err)
	}
	got := &golden.Normal{
		ExecTimeS:    res.Final.ExecSeconds(),
		PeakMemoryMB: res.Final.PeakMB(),
		TraceMode:    want.TraceMode,
		Controller:   ctrl,
		Devices:      devices,
	}
	for _, st := range res.Steps {
		got.Steps = append(got.Steps, [2]float64{st.ExecSeconds(), st.PeakMB()})
	}
	return got
}

// checkGolden replays every golden case with opt and compares it with what
// the reference simulator reported.
func checkGolden(t *testing.T, opt Options) {
	cases, err := golden.Cases(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			got := replayNormal(t, c.Hist, c.Want, opt)
			if diffs := golden.Compare(c.Want, got); len(diffs) > 0 {
				t.Errorf("%s differs from the reference:\n  %s", c.Name, strings.Join(diffs, "\n  "))
			}
		})
	}
}

// TestGolden replays every golden history ungrouped.
func TestGolden(t *testing.T) { checkGolden(t, Options{}) }

// TestGoldenWithEmptyCosts replays every golden history priced by the cost
// model {}: it must be the reference's runtimes exactly.
func TestGoldenWithEmptyCosts(t *testing.T) {
	m, err := costs.Parse([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, Options{Model: m})
}

// TestGoldenGrouped replays every golden history with grouped workers (in
// parallel rounds): group processes expand to ranks and must match too.
func TestGoldenGrouped(t *testing.T) { checkGolden(t, Options{Grouped: true, Jobs: 4}) }

// TestGoldenCopyIsCurrent checks the repository's copy of the golden files
// against shared/golden when the development tree has it. The README is the
// repository's own (its links point inside the repository), so only the
// histories and expected results are compared.
func TestGoldenCopyIsCurrent(t *testing.T) {
	orig, err := filepath.Glob(filepath.Join(sharedGolden, "*"))
	if err != nil || len(orig) == 0 {
		t.Skip("shared/golden is not beside this checkout")
	}
	for _, p := range orig {
		if filepath.Base(p) == "README.md" {
			continue
		}
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(goldenDir, filepath.Base(p)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: the copy in testdata/golden is missing or differs from %s; copy it again", filepath.Base(p), p)
		}
	}
}
