package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/memlimit"
	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/trace"
)

const replayUsage = `Usage: fastsim replay [flags] HISTORY

Replays HISTORY (a command history: JSON lines, plain or zstd-compressed,
detected by its magic bytes) and prints the simulated step time, the peak
memory and on which device it happens.

By default the trace goes to NAME.trace.json.zst in the current directory,
where NAME is HISTORY's file name without .hist/.hist.zst. Open it in
Perfetto (ui.perfetto.dev) or chrome://tracing.

Exit status: 0 ok; 1 a failure not caused by the input (I/O, an internal
error); 2 bad input (one line FILE:LINE: what is wrong) or usage; 3 the
replay outgrew --max-memory; 130 interrupted by Ctrl-C (after a partial
report).

Flags:
`

type replayFlags struct {
	trace      string
	traceMode  string
	reportOnly bool
	summary    string
	strict     bool
	cpuprofile string
	memprofile string
	quiet      bool
	decodeOnly bool
	grouped    bool
	jobs       int
	partial    bool
	costs      string
	maxMemory  string
}

func replayCmd(args []string, stdout, stderr io.Writer) int {
	var f replayFlags
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.trace, "trace", "", "write the Chrome trace to `PATH`; a name ending in .zst is zstd-compressed, else plain JSON\n(default NAME.trace.json.zst)")
	fs.StringVar(&f.traceMode, "trace-mode", "everything", "what to simulate and trace, `MODE` one of: everything (controller and streams),\nstream-only (streams; the controller clock stays 0), controller-only")
	fs.BoolVar(&f.reportOnly, "report-only", false, "compute the report only; write no trace")
	fs.StringVar(&f.summary, "summary-json", "", "also write the report as JSON to `PATH`: exec_time_s, peak_memory_mb,\nsteps [[exec_s, peak_mb], ...], commands, world_size, warnings")
	fs.BoolVar(&f.strict, "strict", false, "treat message types the format does not know as errors instead of warnings")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a Go CPU profile of the replay to `PATH`")
	fs.StringVar(&f.memprofile, "memprofile", "", "write a Go heap profile, taken at the end of the replay, to `PATH`")
	fs.BoolVar(&f.grouped, "group-workers", false, "simulate ranks that receive exactly the same commands once, as a group\n(results are identical; this is what makes very large worlds replayable)")
	fs.IntVar(&f.jobs, "jobs", 1, "run the groups (workers, ungrouped) touched by a command on up to `N` goroutines\n(at most "+strconv.Itoa(runtime.GOMAXPROCS(0))+" here); results do not depend on it. A command's work per group is\nsmall, so on the histories measured (bench/RESULTS.md) more than 1 is slower")
	costsPath := costsFlag(fs)
	fs.BoolVar(&f.partial, "partial-trace", false, "when interrupted (Ctrl-C), still write the trace of what was replayed")
	fs.BoolVar(&f.decodeOnly, "decode-only", false, "only decompress and decode every record (no simulation), then print\nthe records read and the wall time")
	fs.BoolVar(&f.quiet, "quiet", false, "print nothing on success (errors still go to stderr)")
	fs.StringVar(&f.maxMemory, "max-memory", "", "memory budget `SIZE` (512M, 8G, ...; 0 or off: none): Go's soft memory limit is\nset to it, a world whose ranks cannot fit is refused up front, and a replay that\noutgrows it ends with exit status 3 (default "+strconv.Itoa(int(memlimit.DefaultShare*100))+"% of the machine's memory, here "+memlimit.Format(memlimit.Default())+")")
	positional, code := parseArgs(fs, replayUsage, args, 1, "exactly one HISTORY file")
	f.costs = *costsPath
	if code >= 0 {
		return code
	}
	path := positional[0]
	var err error
	limit := memlimit.Default()
	if f.maxMemory != "" {
		if limit, err = memlimit.Parse(f.maxMemory); err != nil {
			fmt.Fprintf(stderr, "fastsim replay: --max-memory: %v\n", err)
			return exitInput
		}
	}
	watch := memlimit.Watch(limit)
	defer watch.Stop()
	if f.decodeOnly {
		return decodeOnlyCmd(path, stdout, stderr)
	}
	mode, err := sched.ParseMode(f.traceMode)
	if err != nil {
		fmt.Fprintf(stderr, "fastsim replay: --trace-mode: %v\n", err)
		return exitInput
	}
	if f.jobs < 1 {
		fmt.Fprintf(stderr, "fastsim replay: --jobs %d: want at least 1\n", f.jobs)
		return exitInput
	}
	opt := replay.Options{Mode: mode, Strict: f.strict, Grouped: f.grouped, Jobs: f.jobs, Memory: watch}
	if f.costs != "" {
		m, err := costs.Load(f.costs)
		if err != nil {
			fmt.Fprintf(stderr, "fastsim replay: --costs: %v\n", err)
			return exitInput
		}
		opt.Model = m
	}
	if !f.reportOnly {
		opt.TracePath = f.trace
		if opt.TracePath == "" {
			opt.TracePath = defaultTracePath(path)
		}
	} else if f.trace != "" {
		fmt.Fprintln(stderr, "fastsim replay: --trace and --report-only contradict each other; pick one")
		return exitInput
	}
	if isTerminal(os.Stderr) && !f.quiet {
		opt.Progress = func(records int64) {
			fmt.Fprintf(stderr, "\rfastsim: %d records replayed...", records)
		}
	}
	if f.cpuprofile != "" {
		pf, err := os.Create(f.cpuprofile)
		if err != nil {
			fmt.Fprintf(stderr, "fastsim replay: --cpuprofile: %v\n", err)
			return exitError
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			fmt.Fprintf(stderr, "fastsim replay: --cpuprofile: %v\n", err)
			return exitError
		}
		defer pprof.StopCPUProfile()
	}

	// The first Ctrl-C stops the replay at the next record and reports what
	// was replayed; a second one kills the process as usual.
	stop := make(chan struct{})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	go func() {
		if _, ok := <-sig; ok {
			signal.Stop(sig)
			close(stop)
		}
	}()
	defer func() { signal.Stop(sig); close(sig) }()
	opt.Stop = stop
	opt.PartialTrace = f.partial

	res, err := replay.File(path, opt)
	if f.memprofile != "" {
		if err := writeHeapProfile(f.memprofile); err != nil {
			fmt.Fprintf(stderr, "fastsim replay: --memprofile: %v\n", err)
			return exitError
		}
	}
	if opt.Progress != nil {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		return runErr(stderr, err)
	}
	if f.summary != "" {
		if err := writeSummary(f.summary, res); err != nil {
			fmt.Fprintf(stderr, "fastsim replay: --summary-json: %v\n", err)
			return exitError
		}
	}
	if res.Partial {
		fmt.Fprintf(stdout, "PARTIAL: interrupted after line %d; the report covers the commands replayed until then\n", res.LastLine)
		if !f.partial {
			opt.TracePath = "" // none written
		}
	}
	if !f.quiet || res.Partial {
		printSummary(stdout, res, opt.TracePath)
	}
	if res.Partial {
		return exitInterrupted
	}
	return exitOK
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// defaultTracePath is NAME.trace.json.zst in the current directory.
func defaultTracePath(history string) string {
	base := filepath.Base(history)
	for _, ext := range []string{".zst", ".hist", ".jsonl"} {
		base = strings.TrimSuffix(base, ext)
	}
	return base + ".trace.json.zst"
}

// runErr prints a failed run's error on one line and returns its exit
// status: 3 for a resource limit, 1 for an internal error (never blamed on
// the input) or another failure, 2 for bad input.
func runErr(stderr io.Writer, err error) int {
	switch {
	case errors.Is(err, memlimit.ErrLimit):
		fmt.Fprintln(stderr, oneLine(err))
		return exitLimit
	case errors.Is(err, sched.ErrInternal):
		fmt.Fprintf(stderr, "fastsim: %s (a bug in fastsim, not in the input)\n", oneLine(err))
		return exitError
	}
	fmt.Fprintln(stderr, oneLine(err))
	var he *history.Error
	if errors.As(err, &he) || errors.Is(err, os.ErrNotExist) {
		return exitInput
	}
	return exitError
}

func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// summaryJSON is the --summary-json document.
type summaryJSON struct {
	ExecTimeS    float64      `json:"exec_time_s"`
	PeakMemoryMB float64      `json:"peak_memory_mb"`
	Steps        [][2]float64 `json:"steps"`
	Commands     int64        `json:"commands"`
	WorldSize    int64        `json:"world_size"`
	Warnings     int64        `json:"warnings"`
}

func writeSummary(path string, res *replay.Result) error {
	s := summaryJSON{
		ExecTimeS:    res.Final.ExecSeconds(),
		PeakMemoryMB: res.Final.PeakMB(),
		Steps:        make([][2]float64, 0, len(res.Steps)),
		Commands:     res.Commands,
		WorldSize:    res.Header.WorldSize,
		Warnings:     res.Warnings,
	}
	for _, st := range res.Steps {
		s.Steps = append(s.Steps, [2]float64{st.ExecSeconds(), st.PeakMB()})
	}
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return trace.WriteFileAtomic(path, append(data, '\n'))
}

func printSummary(w io.Writer, res *replay.Result, tracePath string) {
	// Reports are cumulative (SEMANTICS.md): a step's own time is the
	// difference between its report and the previous one.
	fmt.Fprintf(w, "simulated time       %.6f s", res.Final.ExecSeconds())
	if n := len(res.Steps); n > 0 {
		prev := 0.0
		if n > 1 {
			prev = res.Steps[n-2].ExecSeconds()
		}
		fmt.Fprintf(w, " (%d steps; the last took %.6f s)", n, res.Steps[n-1].ExecSeconds()-prev)
	}
	fmt.Fprintln(w)
	if res.Final.PeakDevice >= 0 {
		fmt.Fprintf(w, "peak memory          %.6f MB on device %d\n", res.Final.PeakMB(), res.Final.PeakDevice)
	} else {
		fmt.Fprintf(w, "peak memory          %.6f MB\n", res.Final.PeakMB())
	}
	const shown = 8
	prev := 0.0
	for i, st := range res.Steps {
		if i == shown && len(res.Steps) > shown+1 {
			fmt.Fprintf(w, "  ... %d more steps (--summary-json lists them all)\n", len(res.Steps)-shown-1)
			i, prev, st = len(res.Steps)-1, res.Steps[len(res.Steps)-2].ExecSeconds(), res.Steps[len(res.Steps)-1]
			fmt.Fprintf(w, "  step %-4d          %.6f s (ends at %.6f s), peak so far %.6f MB\n", i, st.ExecSeconds()-prev, st.ExecSeconds(), st.PeakMB())
			break
		}
		fmt.Fprintf(w, "  step %-4d          %.6f s (ends at %.6f s), peak so far %.6f MB\n", i, st.ExecSeconds()-prev, st.ExecSeconds(), st.PeakMB())
		prev = st.ExecSeconds()
	}
	secs := res.Wall.Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(res.Commands) / secs
	}
	fmt.Fprintf(w, "commands replayed    %d on %d workers (%d simulated groups)\n", res.Commands, res.Header.WorldSize, res.Groups)
	fmt.Fprintf(w, "wall time            %.3f s (%.0f commands/s, %.0f worker-tasks/s)\n", secs, rate, float64(res.WorkerTasks)/max(secs, 1e-9))
	if res.Warnings > 0 {
		fmt.Fprintf(w, "warnings             %d (first: %s)\n", res.Warnings, res.FirstWarning)
	}
	if tracePath != "" {
		fmt.Fprintf(w, "trace                %s\n", tracePath)
	}
}
