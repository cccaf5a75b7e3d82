package replay

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fastsim/fastsim/internal/history"
)

// FuzzReplay replays arbitrary bytes, grouped and ungrouped: no input may
// panic or hang, and when one replay succeeds the other must too, with the
// same report (grouping never changes a result), and when one fails the
// other must fail with the same message.
func FuzzReplay(f *testing.F) {
	// Small seeds only (a short run would spend its time minimizing a large
	// one); bench/fuzz.sh adds the golden histories for long runs.
	patterns := []string{"../../internal/history/testdata/fuzz-seed/*.hist", "../../testdata/bad/*"}
	if os.Getenv("FASTSIM_FUZZ_LARGE_SEEDS") != "" {
		patterns = append(patterns, "../../testdata/golden/*.hist")
	}
	for _, pattern := range patterns {
		files, _ := filepath.Glob(pattern)
		for _, p := range files {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Small worlds keep each run fast; a larger header is refused
		// before anything is allocated for it.
		opt := Options{MaxWorld: 64}
		u, uerr := Reader(bytes.NewReader(data), "fuzz.hist", opt)
		opt.Grouped, opt.Jobs = true, 2
		g, gerr := Reader(bytes.NewReader(data), "fuzz.hist", opt)
		if (uerr == nil) != (gerr == nil) {
			t.Fatalf("ungrouped error %v, grouped error %v", uerr, gerr)
		}
		if uerr != nil {
			var he *history.Error
			if !errors.As(uerr, &he) || !errors.As(gerr, &he) {
				t.Fatalf("errors without a file and line: %v / %v", uerr, gerr)
			}
			if uerr.Error() != gerr.Error() {
				t.Fatalf("ungrouped and grouped say different things:\n%v\n%v", uerr, gerr)
			}
			return
		}
		if u.Final != g.Final || len(u.Steps) != len(g.Steps) {
			t.Fatalf("ungrouped %+v, grouped %+v", u.Final, g.Final)
		}
		for i := range u.Steps {
			if u.Steps[i] != g.Steps[i] {
				t.Fatalf("step %d: ungrouped %+v, grouped %+v", i, u.Steps[i], g.Steps[i])
			}
		}
	})
}
