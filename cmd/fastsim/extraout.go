package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/fastsim/fastsim/internal/htmlout"
	"github.com/fastsim/fastsim/internal/memsnap"
	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
)

// extraOutputs are the replay's outputs read off the kept timeline once the
// history is replayed: the memory snapshot and the HTML report.
type extraOutputs struct {
	memSnapshot string
	memDevice   int64
	html        string
	costs       string // the --costs file, named on the HTML page
	history     string // the history's path, the page's title
}

func (x *extraOutputs) register(fs *flag.FlagSet) {
	fs.StringVar(&x.memSnapshot, "memory-snapshot", "", "write one device's memory as a PyTorch CUDA memory snapshot to `PATH` (a .pickle that\npytorch.org/memory_viz opens: every allocation and release, and what is alive at the end;\nnot with --trace-mode controller-only, which simulates no device memory)")
	fs.Int64Var(&x.memDevice, "memory-device", -1, "the `RANK` whose memory --memory-snapshot writes (-1: the device that peaks)")
	fs.StringVar(&x.html, "html", "", "write a self-contained HTML report to `PATH`: summary, steps, memory over time, busy time\nper stream, the most expensive operations and the command mix (plots inline; no network needed;\nnot with --trace-mode controller-only, which simulates no device memory or stream)")
}

// dests lists the destinations to check before the replay.
func (x *extraOutputs) dests() []dest {
	return []dest{{"--memory-snapshot", x.memSnapshot}, {"--html", x.html}}
}

// wanted reports whether any of these outputs was asked for.
func (x *extraOutputs) wanted() bool { return x.memSnapshot != "" || x.html != "" }

// check validates the flags against nothing but themselves.
func (x *extraOutputs) check() error {
	if x.memDevice < -1 {
		return fmt.Errorf("--memory-device %d: want a rank (0 or more)", x.memDevice)
	}
	if x.memDevice >= 0 && x.memSnapshot == "" {
		return errors.New("--memory-device needs --memory-snapshot")
	}
	return nil
}

// flagError labels an error with the flag whose output failed, or whose
// value the history showed to be wrong (usage: a rank outside its world).
type flagError struct {
	flag  string
	err   error
	usage bool
}

func (e *flagError) Error() string { return e.flag + ": " + e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

// Is makes a usage error stop the replay's other outputs (the trace).
func (e *flagError) Is(target error) bool { return e.usage && target == replay.ErrOutputsRefused }

// inspect writes the outputs from the engine after the replay.
func (x *extraOutputs) inspect(note io.Writer) func(eng *sched.Engine, res *replay.Result) error {
	return func(eng *sched.Engine, res *replay.Result) error {
		var failed error
		if x.memSnapshot != "" {
			rank := x.memDevice
			if rank < 0 {
				rank = max(res.Final.PeakDevice, 0)
			}
			if rank >= res.Header.WorldSize {
				return &flagError{"--memory-device", fmt.Errorf("rank %d is outside the world of %d", rank, res.Header.WorldSize), true}
			}
			err := writeAtomic(x.memSnapshot, func(w io.Writer) error {
				st, err := memsnap.Write(w, eng, rank, res.Header.GPUsPerHost)
				if err == nil {
					fmt.Fprintf(note, "memory snapshot      %s: rank %d (CUDA device %d of its host), %s, %s; open it in pytorch.org/memory_viz\n", x.memSnapshot, rank, st.Device, plural(st.Allocs, "allocation"), plural(st.Frees, "release"))
				}
				return err
			})
			if err != nil {
				// The page is still written: one failed output does not
				// keep the next from being written.
				failed = &flagError{"--memory-snapshot", err, false}
			}
		}
		if x.html != "" {
			costs := "the reference's fixed runtimes (placeholders, not a hardware model)"
			if x.costs != "" {
				costs = x.costs
			}
			err := writeAtomic(x.html, func(w io.Writer) error {
				return htmlout.Write(w, htmlout.Input{Title: filepath.Base(x.history), Costs: costs, Res: res, Eng: eng})
			})
			if err != nil {
				return errors.Join(failed, &flagError{"--html", err, false})
			}
			fmt.Fprintf(note, "html report          %s\n", x.html)
		}
		return failed
	}
}
