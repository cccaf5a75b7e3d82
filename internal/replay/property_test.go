package replay

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/golden"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/synth"
	"github.com/fastsim/fastsim/internal/values"
)

// replayBytes replays a history held in memory and returns the result, the
// trace's normal form and the trace bytes.
func replayBytes(t *testing.T, hist []byte, opt Options) (*Result, *golden.Normal, []byte) {
	t.Helper()
	opt.TracePath = filepath.Join(t.TempDir(), "trace.json")
	res, err := Reader(bytes.NewReader(hist), "random.hist", opt)
	if err != nil {
		t.Fatalf("replay (grouped %v, jobs %d): %v", opt.Grouped, opt.Jobs, err)
	}
	raw, err := os.ReadFile(opt.TracePath)
	if err != nil {
		t.Fatal(err)
	}
	ctrl, devices, err := golden.FromTrace(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("reading our own trace: %v", err)
	}
	n := &golden.Normal{ExecTimeS: res.Final.ExecSeconds(), PeakMemoryMB: res.Final.PeakMB(), Controller: ctrl, Devices: devices}
	for _, st := range res.Steps {
		n.Steps = append(n.Steps, [2]float64{st.ExecSeconds(), st.PeakMB()})
	}
	return res, n, raw
}

// TestGroupedEqualsUngroupedRandom replays random valid histories grouped
// and ungrouped and compares every device's timeline and memory series, the
// exec time and the peak memory.
func TestGroupedEqualsUngroupedRandom(t *testing.T) {
	worlds := []int{4, 5, 6, 8, 12, 16, 31, 32, 48, 64}
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	for _, world := range worlds {
		for seed := 0; seed < seeds; seed++ {
			t.Run(fmt.Sprintf("world%d/seed%d", world, seed), func(t *testing.T) {
				var hist bytes.Buffer
				if err := synth.Random(&hist, uint64(seed*1000+world), world, 300); err != nil {
					t.Fatal(err)
				}
				for _, mode := range []sched.Mode{sched.Everything, sched.StreamOnly} {
					ur, un, _ := replayBytes(t, hist.Bytes(), Options{Mode: mode})
					gr, gn, _ := replayBytes(t, hist.Bytes(), Options{Mode: mode, Grouped: true})
					if diffs := golden.Compare(un, gn); len(diffs) > 0 {
						t.Fatalf("%v: grouped differs from ungrouped:\n  %s", mode, strings.Join(diffs, "\n  "))
					}
					if ur.Final != gr.Final {
						t.Fatalf("%v: reports differ: ungrouped %+v, grouped %+v", mode, ur.Final, gr.Final)
					}
					if gr.Groups > ur.Groups {
						t.Fatalf("%d groups for %d workers", gr.Groups, ur.Groups)
					}
					// Without a trace the engine settles and drops memory
					// events as it goes: the reports must not change.
					for _, grouped := range []bool{false, true} {
						rr, err := Reader(bytes.NewReader(hist.Bytes()), "random.hist", Options{Mode: mode, Grouped: grouped})
						if err != nil {
							t.Fatal(err)
						}
						if rr.Final != ur.Final || fmt.Sprint(rr.Steps) != fmt.Sprint(ur.Steps) {
							t.Fatalf("%v grouped %v: report-only replay differs: %+v %v, traced %+v %v", mode, grouped, rr.Final, rr.Steps, ur.Final, ur.Steps)
						}
					}
				}
			})
		}
	}
}

// TestWholeMeshOneGroup replays random histories whose commands all
// address the whole world: grouped, the world stays one group, and the
// results equal the ungrouped replay's.
func TestWholeMeshOneGroup(t *testing.T) {
	for _, world := range []int{2, 16, 64} {
		var hist bytes.Buffer
		if err := synth.RandomMesh(&hist, uint64(world), world, 300); err != nil {
			t.Fatal(err)
		}
		ur, un, _ := replayBytes(t, hist.Bytes(), Options{})
		gr, gn, _ := replayBytes(t, hist.Bytes(), Options{Grouped: true})
		if gr.Groups != 1 {
			t.Errorf("world %d: %d groups, want 1", world, gr.Groups)
		}
		if diffs := golden.Compare(un, gn); len(diffs) > 0 {
			t.Fatalf("world %d: grouped differs from ungrouped:\n  %s", world, strings.Join(diffs, "\n  "))
		}
		if ur.Final != gr.Final {
			t.Fatalf("world %d: reports differ: ungrouped %+v, grouped %+v", world, ur.Final, gr.Final)
		}
	}
}

// TestTrainGroupedAndSettled replays synthetic training histories
// (pipeline stages, borrows, sends between stages) grouped and ungrouped,
// traced and report-only, and compares them.
func TestTrainGroupedAndSettled(t *testing.T) {
	for _, c := range []synth.Train{
		{PP: 2, DP: 2, TP: 2, Layers: 4, Hidden: 64, Seq: 16, Batch: 8, Micro: 2, Steps: 3},
		{PP: 4, DP: 3, TP: 1, Layers: 8, Hidden: 32, Seq: 8, Batch: 6, Micro: 2, Steps: 2},
	} {
		var hist bytes.Buffer
		if err := synth.WriteTrain(&hist, c); err != nil {
			t.Fatal(err)
		}
		ur, un, _ := replayBytes(t, hist.Bytes(), Options{})
		gr, gn, _ := replayBytes(t, hist.Bytes(), Options{Grouped: true, Jobs: 2})
		if diffs := golden.Compare(un, gn); len(diffs) > 0 {
			t.Fatalf("%+v: grouped differs:\n  %s", c, strings.Join(diffs, "\n  "))
		}
		if gr.Groups != c.PP {
			t.Errorf("%+v: %d groups, want one per stage (%d)", c, gr.Groups, c.PP)
		}
		rr, err := Reader(bytes.NewReader(hist.Bytes()), "train.hist", Options{Grouped: true})
		if err != nil {
			t.Fatal(err)
		}
		if rr.Final != ur.Final || fmt.Sprint(rr.Steps) != fmt.Sprint(ur.Steps) {
			t.Fatalf("%+v: report-only %+v, traced %+v", c, rr.Final, ur.Final)
		}
		if ur.Final.PeakBytes == 0 || len(ur.Steps) != c.Steps {
			t.Fatalf("%+v: a training history with no memory or %d steps", c, len(ur.Steps))
		}
	}
}

// TestJobsDoNotChangeOutput checks that the parallel schedule writes the
// same bytes as the serial one, grouped and not.
func TestJobsDoNotChangeOutput(t *testing.T) {
	var hist bytes.Buffer
	if err := synth.Random(&hist, 7, 64, 600); err != nil {
		t.Fatal(err)
	}
	for _, grouped := range []bool{false, true} {
		r1, _, t1 := replayBytes(t, hist.Bytes(), Options{Grouped: grouped, Jobs: 1})
		r8, _, t8 := replayBytes(t, hist.Bytes(), Options{Grouped: grouped, Jobs: 8})
		if !bytes.Equal(t1, t8) {
			t.Errorf("grouped %v: traces differ between --jobs 1 and --jobs 8", grouped)
		}
		if r1.Final != r8.Final || fmt.Sprint(r1.Steps) != fmt.Sprint(r8.Steps) {
			t.Errorf("grouped %v: reports differ: %+v vs %+v", grouped, r1, r8)
		}
	}
}

// TestRegistryStaysSmall replays a long training history and checks that
// the tensor registry holds about the tensors alive at once, not every
// tensor the history named: rows of tensors gone from every worker are
// reused.
func TestRegistryStaysSmall(t *testing.T) {
	for _, grouped := range []bool{false, true} {
		var hist bytes.Buffer
		c := synth.Train{PP: 2, DP: 2, TP: 1, Layers: 4, Hidden: 32, Seq: 8, Batch: 4, Micro: 2, Steps: 30}
		if err := synth.WriteTrain(&hist, c); err != nil {
			t.Fatal(err)
		}
		r, err := history.NewReader(bytes.NewReader(hist.Bytes()), "train.hist")
		if err != nil {
			t.Fatal(err)
		}
		maxID, borrows := int64(0), 0
		sim, err := New(r.Header(), "train.hist", Options{Grouped: grouped, EachCommand: func(rec *history.Record) {
			if rec.Msg.Kind == gen.MsgBorrowCreate {
				borrows++
			}
			for _, ts := range [][]values.Tensor{rec.Msg.CallFunction.Result.Leaves, rec.Msg.CallFunction.Args.Leaves} {
				for _, x := range ts {
					maxID = max(maxID, x.ID)
				}
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		if err := sim.Run(r); err != nil {
			t.Fatal(err)
		}
		sim.Close()
		// Synth numbers tensors 1, 2, 3, ...: maxID is how many it named.
		if n := int64(r.Registry().Len()); n*10 > maxID {
			t.Errorf("grouped %v: the registry has %d rows for %d tensors named: it does not forget", grouped, n, maxID)
		}
		// A storage's index lives while a tensor row names it; a borrow's
		// while a worker has the borrow.
		if n := int64(r.Registry().Storages()); n*10 > maxID {
			t.Errorf("grouped %v: the registry has %d storage indexes for %d tensors named: it does not forget", grouped, n, maxID)
		}
		if n := r.Registry().Borrows(); borrows < 100 || n*10 > borrows {
			t.Errorf("grouped %v: the registry has %d borrow indexes for %d borrows created: it does not forget", grouped, n, borrows)
		}
	}
}
