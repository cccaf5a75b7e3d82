package replay

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/golden"
	"github.com/fastsim/fastsim/internal/sched"
)

// goldenDir holds the reference simulator's own results (a copy of
// shared/golden, checked against the original by TestGoldenCopyIsCurrent).
const goldenDir = "../../testdata/golden"

// sharedGolden is where the development tree keeps the originals.
const sharedGolden = "../../../shared/golden"

func goldenCases(t *testing.T) []string {
	t.Helper()
	hists, err := filepath.Glob(filepath.Join(goldenDir, "*.hist"))
	if err != nil || len(hists) == 0 {
		t.Fatalf("no golden histories in %s (%v)", goldenDir, err)
	}
	return hists
}

// replayNormal replays hist in the trace mode its expected file names and
// returns the result in the golden normal form.
func replayNormal(t *testing.T, hist string, want *golden.Normal) *golden.Normal {
	t.Helper()
	mode, err := sched.ParseMode(want.TraceMode)
	if err != nil {
		t.Fatal(err)
	}
	tracePath := filepath.Join(t.TempDir(), "trace.json.zst")
	res, err := File(hist, Options{Mode: mode, TracePath: tracePath})
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	f, err := os.Open(tracePath)
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

// TestGolden replays every golden history ungrouped and compares with what
// the reference simulator reported for it.
func TestGolden(t *testing.T) {
	for _, hist := range goldenCases(t) {
		name := strings.TrimSuffix(filepath.Base(hist), ".hist")
		t.Run(name, func(t *testing.T) {
			want, err := golden.LoadExpected(strings.TrimSuffix(hist, ".hist") + ".expected.json")
			if err != nil {
				t.Fatal(err)
			}
			got := replayNormal(t, hist, want)
			if diffs := golden.Compare(want, got); len(diffs) > 0 {
				t.Errorf("%s differs from the reference:\n  %s", name, strings.Join(diffs, "\n  "))
			}
		})
	}
}

// TestGoldenCopyIsCurrent checks the repository's copy of the golden files
// against shared/golden when the development tree has it.
func TestGoldenCopyIsCurrent(t *testing.T) {
	orig, err := filepath.Glob(filepath.Join(sharedGolden, "*"))
	if err != nil || len(orig) == 0 {
		t.Skip("shared/golden is not beside this checkout")
	}
	for _, p := range orig {
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
