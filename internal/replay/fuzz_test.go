package replay

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/synth"
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
	spec, err := hardware.Preset("h100-sxm")
	if err != nil {
		f.Fatal(err)
	}
	hw, err := costs.NewWithHardware(costs.Config{}, spec)
	if err != nil {
		f.Fatal(err)
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
		// Priced on hardware, where collectives depend on the hosts their
		// ranks occupy, grouping must not change anything either.
		hu, err := Reader(bytes.NewReader(data), "fuzz.hist", Options{MaxWorld: 64, Model: hw})
		if err != nil {
			t.Fatalf("on hardware: %v", err)
		}
		hg, err := Reader(bytes.NewReader(data), "fuzz.hist", Options{MaxWorld: 64, Model: hw, Grouped: true, Jobs: 2})
		if err != nil {
			t.Fatalf("on hardware, grouped: %v", err)
		}
		if hu.Final != hg.Final || fmt.Sprint(hu.Steps) != fmt.Sprint(hg.Steps) {
			t.Fatalf("on hardware: ungrouped %+v, grouped %+v", hu.Final, hg.Final)
		}
	})
}

// FuzzReplayBigWorld is FuzzReplay's big-world mode: the fuzzer picks a
// seed, a world past 65,536 ranks (on a container edge, one past it, or in
// between) and a few commands, and a random valid history of that world,
// whose rank sets gather at the edges of the bitmaps' containers, must
// replay identically grouped and ungrouped: reports, steps and every rank's
// peak. Each run replays a world of over 65,536 ranks ungrouped, so it is
// slow: run it for minutes, not seconds.
func FuzzReplayBigWorld(f *testing.F) {
	f.Add(uint64(1), uint32(1), uint8(20))
	f.Add(uint64(7), uint32(65536), uint8(10))
	f.Fuzz(func(t *testing.T, seed uint64, extra uint32, commands uint8) {
		if testing.Short() {
			t.Skip("replays a world past 65,536 ranks ungrouped")
		}
		world := 1<<16 + int(extra%(1<<17)) // 65,536 to 196,607 ranks
		var hist bytes.Buffer
		if err := synth.Random(&hist, seed, world, int(commands%32)); err != nil {
			t.Fatal(err)
		}
		compareBigOutcomes(t, bigReplayOutcome(t, hist.Bytes(), false), bigReplayOutcome(t, hist.Bytes(), true))
	})
}
