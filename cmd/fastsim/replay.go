package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"unicode"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/memlimit"
	"github.com/fastsim/fastsim/internal/monarch"
	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/trace"
)

const replayUsage = `Usage: fastsim replay [flags] HISTORY

Replays HISTORY (a command history: JSON lines, plain or zstd- or
S2-compressed, or the binary form, detected by its magic bytes; "-" reads
standard input)
and prints the simulated step time, the peak memory and on which device it
happens.

By default the trace goes to NAME.trace.json.gz in the current directory,
where NAME is HISTORY's file name without .hist/.fhist/.zst/.s2. Perfetto
(ui.perfetto.dev) and chrome://tracing open .json and .json.gz traces as
they are; a .zst one is smaller but must be decompressed first (zstd -d).

Any one output (--trace, --summary-json, --html, --memory-snapshot, the
profiles) may be "-", standard output; the report then goes to standard
error, so the output reads back whole. Two outputs on "-" are refused.

Exit status: 0 ok; 1 a failure not caused by the input (I/O, an internal
error); 2 bad input (one line FILE:LINE: what is wrong) or usage; 3 the
replay outgrew --max-memory (after a partial report, unless the world was
refused before it began); 130 interrupted by Ctrl-C (after a partial
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
	traceSteps string

	overwriteSummary bool
	extra            extraOutputs
	maxMemory        string
}

func replayCmd(args []string, stdout, stderr io.Writer) int {
	var f replayFlags
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.trace, "trace", "", "write the Chrome trace to `PATH`: a name ending in .json.gz is gzip-compressed (Perfetto opens it),\n.zst zstd-compressed (smallest; decompress before opening), anything else plain JSON\n(default NAME.trace.json.gz)")
	fs.StringVar(&f.traceSteps, "trace-steps", "", "trace only the commands of steps `A:B` (counted from 0, both included; A, A: and :B work too);\nthe report still covers the whole history")
	fs.StringVar(&f.traceMode, "trace-mode", "everything", "what to simulate and trace, `MODE` one of: everything (controller and streams),\nstream-only (streams; the controller clock stays 0), controller-only")
	fs.BoolVar(&f.reportOnly, "report-only", false, "compute the report only; write no trace")
	fs.StringVar(&f.summary, "summary-json", "", "also write the report as JSON to `PATH`: exec_time_s, peak_memory_mb,\npeak_device (the rank), steps [[exec_s, peak_mb], ...], commands, world_size, warnings,\nand partial when interrupted or stopped by --max-memory")
	fs.BoolVar(&f.strict, "strict", false, "treat message types the format does not know as errors instead of warnings")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a Go CPU profile of the replay (with --decode-only, of the decoding) to `PATH`")
	fs.StringVar(&f.memprofile, "memprofile", "", "write a Go heap profile, taken at the end of the replay, to `PATH`")
	fs.BoolVar(&f.grouped, "group-workers", false, "simulate ranks that receive exactly the same commands once, as a group\n(results are identical; this is what makes very large worlds replayable). When the\nhistory's rank sets cut the world into 65,536 groups or more, of 16 ranks or fewer\non average, one note on stderr says so (not with --quiet): grouping then gains little")
	fs.IntVar(&f.jobs, "jobs", 1, "replay on up to `N` goroutines, capped at the "+strconv.Itoa(runtime.GOMAXPROCS(0))+" cores Go uses here (GOMAXPROCS);\nresults do not depend on it. With 2 or more, one goroutine decodes the history while\nthe engine runs, and the engine runs the groups (workers, ungrouped) a command touches\non the other N-1 (with --hardware, or a --costs FILE that prices ops by their arguments or is\na Monarch timing file, the decoding stays on the engine's goroutine: such models read the\ncommands' raw text). On the 2-core machine measured it is slower than --jobs 1 (0.72x\nto 0.73x of the speed with nothing else running): the records crossing between the\ncores' caches cost more than the overlap saves. bench/RESULTS.md (\"Two cores\") says why")
	mf := registerPricingFlags(fs)
	f.extra.register(fs)
	fs.BoolVar(&f.overwriteSummary, "overwrite-summary", false, "when interrupted or stopped by --max-memory, write the partial summary (marked \"partial\": true) even over a file\nholding a complete one (by default a complete summary is kept); needs --summary-json")
	fs.BoolVar(&f.partial, "partial-trace", false, "when interrupted (Ctrl-C) or stopped by --max-memory, still write the trace, --html and --memory-snapshot of what was replayed\n(not with --decode-only, nor with --report-only unless --html or --memory-snapshot is given)")
	fs.BoolVar(&f.decodeOnly, "decode-only", false, "only decompress and decode every record (no simulation), then print\nthe records read and the wall time; no output but --cpuprofile is written")
	fs.BoolVar(&f.quiet, "quiet", false, "print nothing on success (errors still go to stderr)")
	fs.StringVar(&f.maxMemory, "max-memory", "", "memory budget `SIZE` (512M, 8G, ...; 0 or off: none): Go's soft memory limit is\nset to it, a world whose ranks cannot fit is refused up front, and a replay that\noutgrows it stops there as Ctrl-C stops it (the report and --summary-json cover what was\nreplayed, marked partial; the trace only with --partial-trace), then the error, exit status 3 (default "+strconv.Itoa(int(memlimit.DefaultShare*100))+"% of the machine's memory, here "+memlimit.Format(memlimit.Default())+")")
	positional, code := parseArgs(fs, stdout, replayUsage, args, 1, "exactly one HISTORY file")
	if code >= 0 {
		return code
	}
	f.costs = *mf.costs
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
	// A flag that changes an output that is not written would be ignored
	// in silence: refuse it, as --memory-device without --memory-snapshot.
	if f.overwriteSummary && f.summary == "" {
		fmt.Fprintln(stderr, "fastsim replay: --overwrite-summary needs --summary-json")
		return exitInput
	}
	// --partial-trace also has an interrupted replay write --html and
	// --memory-snapshot, which --report-only leaves: refused only where it
	// would change nothing.
	if f.partial && (f.decodeOnly || f.reportOnly && !f.extra.wanted()) {
		other := "--report-only"
		if f.decodeOnly {
			other = "--decode-only"
		}
		fmt.Fprintf(stderr, "fastsim replay: --partial-trace and %s contradict each other (%s writes no trace); pick one\n", other, other)
		return exitInput
	}
	if f.decodeOnly {
		// Decoding alone has no report, trace or memory to write: an
		// output asked for beside it would silently not appear.
		for _, d := range append([]dest{{"--trace", f.trace}, {"--trace-steps", f.traceSteps}, {"--summary-json", f.summary}, {"--memprofile", f.memprofile}}, f.extra.dests()...) {
			if d.path != "" {
				fmt.Fprintf(stderr, "fastsim replay: %s and --decode-only contradict each other (decoding alone writes nothing but --cpuprofile); pick one\n", d.flag)
				return exitInput
			}
		}
		if !checkDests("fastsim replay", stderr, []string{path}, dest{"--cpuprofile", f.cpuprofile}) {
			return exitInput
		}
		stdout = reportTo(stdout, stderr, dest{"--cpuprofile", f.cpuprofile})
		if f.cpuprofile != "" {
			stop, ok := profileCPU(f.cpuprofile, "fastsim replay", stderr)
			if !ok {
				return exitError
			}
			defer stop()
		}
		return decodeOnlyCmd(path, f.quiet, stdout, stderr)
	}
	mode, err := sched.ParseMode(f.traceMode)
	if err != nil {
		fmt.Fprintf(stderr, "fastsim replay: --trace-mode: %v\n", err)
		return exitInput
	}
	if mode == sched.ControllerOnly {
		// No stream runs, so no device allocates or runs a task: the
		// snapshot would be empty and the page's memory, busy time and
		// operations would be missing, so both are refused alike.
		for _, d := range f.extra.dests() {
			if d.path != "" {
				fmt.Fprintf(stderr, "fastsim replay: %s and --trace-mode controller-only contradict each other (controller-only simulates no device memory or stream); pick one\n", d.flag)
				return exitInput
			}
		}
	}
	if f.jobs < 1 {
		fmt.Fprintf(stderr, "fastsim replay: --jobs %d: want at least 1\n", f.jobs)
		return exitInput
	}
	f.jobs = min(f.jobs, runtime.GOMAXPROCS(0)) // more goroutines than cores only wait for one
	model, cm, _, ctl, err := mf.pricing()
	if err != nil {
		fmt.Fprintf(stderr, "fastsim replay: %v\n", oneLine(err))
		return exitInput
	}
	opt := replay.Options{Mode: mode, Strict: f.strict, Grouped: f.grouped, Jobs: f.jobs, Controller: ctl, Memory: watch}
	if model != nil {
		opt.Model = model
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
	if f.traceSteps != "" {
		r, err := parseStepRange(f.traceSteps)
		if err != nil {
			fmt.Fprintf(stderr, "fastsim replay: --trace-steps: %v\n", err)
			return exitInput
		}
		if f.reportOnly {
			fmt.Fprintln(stderr, "fastsim replay: --trace-steps and --report-only contradict each other; pick one")
			return exitInput
		}
		opt.TraceSteps = r
	}
	progress := progressTo(stderr, f.quiet)
	// A --memory-device outside the world is refused once the header
	// gives the world, before the replay: found at its end, it would
	// throw away a long replay for a typo. The refusal stops the replay
	// (refuse, merged into the stop below) and is reported alone.
	var headerErr error
	var stopAll <-chan struct{} // opt.Stop: a Ctrl-C or the refusal
	refuse := make(chan struct{})
	opt.Header = func(h history.Header) {
		if f.extra.memSnapshot != "" && f.extra.memDevice >= h.WorldSize {
			headerErr = &flagError{"--memory-device", fmt.Errorf("rank %d is outside the world of %d", f.extra.memDevice, h.WorldSize), true}
			close(refuse)
			<-stopAll // closed before the replay looks for a stop: no record is applied
			return
		}
		if !f.grouped && !f.quiet && h.WorldSize > largeWorld {
			fmt.Fprintf(stderr, "fastsim replay: hint: %d workers; --group-workers simulates the ranks that receive the same commands once (same results, far less time and memory)\n", h.WorldSize)
		}
	}
	if f.grouped && !f.quiet {
		opt.ManyGroups = func(line int64, groups int, world int64) {
			if progress != nil {
				fmt.Fprint(progress, clearLine)
			}
			fmt.Fprintf(stderr, "fastsim replay: note: by line %d the commands' rank sets have cut the %d workers into %d groups (%.1f ranks a group on average): --group-workers gains little for this history, whose replay time and memory grow with its groups\n",
				line, world, groups, float64(world)/float64(groups))
		}
	}
	// Every destination is checked now, so an unwritable one fails before
	// the replay rather than after it.
	if err := f.extra.check(); err != nil {
		fmt.Fprintf(stderr, "fastsim replay: %v\n", err)
		return exitInput
	}
	outs := append([]dest{
		{"--trace", opt.TracePath}, {"--summary-json", f.summary},
		{"--cpuprofile", f.cpuprofile}, {"--memprofile", f.memprofile},
	}, f.extra.dests()...)
	if !checkDests("fastsim replay", stderr, []string{path, f.costs, *mf.hardware}, outs...) {
		return exitInput
	}
	stdout = reportTo(stdout, stderr, outs...)
	var notes bytes.Buffer // lines about the extra outputs, printed after the report
	f.extra.costs, f.extra.history = f.costs, path
	if f.extra.wanted() {
		opt.KeepTrace = true
		opt.Inspect = f.extra.inspect(&notes)
	}
	if f.cpuprofile != "" {
		stop, ok := profileCPU(f.cpuprofile, "fastsim replay", stderr)
		if !ok {
			return exitError
		}
		defer stop()
	}

	// The first Ctrl-C stops the replay at the next record, or while it
	// waits for input from a pipe or a terminal, and reports what was
	// replayed; a second one, or SIGTERM, removes the temporary files of
	// the outputs being written and exits.
	stop, release := handleSignals()
	defer release()
	stopAll = eitherClosed(stop, refuse)
	opt.Stop = stopAll
	opt.PartialTrace = f.partial

	if f.memprofile != "" {
		runtime.MemProfileRate = heapSampleRate
	}
	res, err := replayInput(path, opt, progress)
	if f.memprofile != "" {
		if err := writeHeapProfile(f.memprofile); err != nil {
			fmt.Fprintf(stderr, "fastsim replay: --memprofile: %v\n", err)
			return exitError
		}
	}
	if progress != nil {
		fmt.Fprint(progress, clearLine)
	}
	if headerErr != nil {
		return outputErr(stderr, headerErr)
	}
	// A replay that outgrew --max-memory is reported as an interrupted
	// one is, up to where it stopped; its error line comes after the
	// report and sets the exit status.
	var limitErr error
	if res != nil && errors.Is(err, memlimit.ErrLimit) {
		limitErr, err = splitLimit(err)
	}
	// An output that failed after the replay succeeded (the trace, the
	// snapshot, the HTML page) is reported after the report, which is
	// still whole: a full disk must not throw away a long replay's result.
	// A flag's value the history showed to be wrong is a usage error,
	// reported alone.
	var outErr error
	if fe := (*flagError)(nil); errors.As(err, &fe) && fe.usage {
		return outputErr(stderr, err)
	}
	if err != nil && res != nil {
		outErr, err = err, nil
		if te := (*replay.TraceError)(nil); errors.As(outErr, &te) {
			opt.TracePath = "" // not written: the report must not name it
		}
	}
	if err != nil && res == nil && closed(stop) && cutShort(err) {
		// Stopped while the header was awaited (the input's read was
		// cut short; the error is that): no replay began.
		fmt.Fprintln(stderr, "fastsim replay: interrupted (Ctrl-C) before the history's header was read; nothing was replayed")
		return exitInterrupted
	}
	if err != nil {
		return runErr(stderr, err)
	}
	if f.summary != "" {
		wrote, err := writeSummary(f.summary, res, cm, f.overwriteSummary)
		if err != nil {
			fmt.Fprintf(stderr, "fastsim replay: --summary-json: %v\n", err)
			return exitError
		}
		if !wrote {
			fmt.Fprintf(stderr, "fastsim replay: --summary-json: %s holds a complete summary; the partial one was not written (--overwrite-summary writes it anyway)\n", f.summary)
		}
	}
	if res.Partial {
		why := "interrupted"
		if limitErr != nil {
			why = "the replay outgrew --max-memory"
		}
		if res.LastLine > 0 {
			fmt.Fprintf(stdout, "PARTIAL: %s after line %d; the report covers the commands replayed until then\n", why, res.LastLine)
		} else {
			fmt.Fprintf(stdout, "PARTIAL: %s after the header, before any command; the report covers none\n", why)
		}
		if !f.partial {
			opt.TracePath = "" // none written
		}
	}
	if !f.quiet || res.Partial {
		// Gathered and written at once: printed straight to standard
		// output, the report took a write system call per piece (16).
		var report bytes.Buffer
		printSummary(&report, res, opt.TracePath)
		report.ReadFrom(&notes)
		report.WriteTo(stdout)
	}
	if tm, ok := opt.Model.(*monarch.Model); ok && !f.quiet {
		if missed := tm.Missed(); len(missed) > 0 {
			fmt.Fprintf(stderr, "fastsim replay: --costs: %s has no time for %d command kind(s) (the fixed runtimes priced them), e.g. %s; fastsim ops lists them all\n", f.costs, len(missed), missed[0])
		}
	}
	if !f.quiet {
		printUnknownOps(stderr, cm)
		printHostMismatch(stderr, cm, res.Header.GPUsPerHost)
		// Commands after the last step line are a step of their own.
		if r := opt.TraceSteps; r != nil && opt.TracePath != "" && r.First > len(res.Steps) {
			fmt.Fprintf(stderr, "fastsim replay: --trace-steps %s: the history has steps 0 to %d; the trace holds none of its commands\n", f.traceSteps, len(res.Steps))
		}
	}
	code = exitOK
	if outErr != nil {
		code = outputErr(stderr, outErr)
	}
	if limitErr != nil {
		return max(code, runErr(stderr, limitErr))
	}
	if code == exitOK && res.Partial {
		return exitInterrupted
	}
	return code
}

// splitLimit parts the error of a replay that outgrew its memory budget
// into the *replay.LimitError and the outputs' errors joined to it (nil
// when none failed).
func splitLimit(err error) (limit, outputs error) {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err, nil
	}
	var rest []error
	for _, e := range j.Unwrap() {
		if limit == nil && errors.Is(e, memlimit.ErrLimit) {
			limit = e
		} else {
			rest = append(rest, e)
		}
	}
	return limit, errors.Join(rest...)
}

// outputErr prints the failure of an output written after a replay that
// succeeded, named by its flag, and returns its exit status: 2 when the
// history showed the flag's value to be wrong (a rank outside its world),
// 1 otherwise (the trace's device is full, ...).
func outputErr(stderr io.Writer, err error) int {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		// Several outputs failed (the page, then the trace): each is
		// named, and the status is the worst.
		code := exitOK
		for _, e := range j.Unwrap() {
			code = max(code, outputErr(stderr, e))
		}
		return code
	}
	if fe := (*flagError)(nil); errors.As(err, &fe) {
		fmt.Fprintf(stderr, "fastsim replay: %v\n", oneLine(fe))
		if fe.usage {
			return exitInput
		}
		return exitError
	}
	if te := (*replay.TraceError)(nil); errors.As(err, &te) {
		// The system's own words name the failure; the file named is the
		// trace's, not the temporary file it was being written to.
		if pe := (*os.PathError)(nil); errors.As(err, &pe) {
			err = &os.PathError{Op: pe.Op, Path: te.Path, Err: pe.Err}
		}
		fmt.Fprintf(stderr, "fastsim replay: --trace: %v\n", oneLine(err))
		return exitError
	}
	return runErr(stderr, err)
}

// cutShort reports whether err is a read of the input given up for a
// stop (a read deadline set in the past, or a stopReader's), not a
// failure of its own that came after the stop (a memory limit, a bad
// record).
func cutShort(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, errInterrupted)
}

// closed reports whether c is closed.
// eitherClosed returns a channel closed once a or b is; the goroutine
// that waits for them ends with the process, which ends with the command.
func eitherClosed(a, b <-chan struct{}) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		select {
		case <-a:
		case <-b:
		}
		close(c)
	}()
	return c
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// defaultTracePath is NAME.trace.json.gz in the current directory: gzip,
// because the trace viewers open it as it is.
func defaultTracePath(history string) string {
	if history == "-" {
		return "stdin.trace.json.gz"
	}
	base := filepath.Base(history)
	for _, ext := range []string{".zst", ".s2", ".hist", ".fhist", ".jsonl"} {
		base = strings.TrimSuffix(base, ext)
	}
	return base + ".trace.json.gz"
}

// runErr prints a failed run's error on one line and returns its exit
// status: 3 for a resource limit, 1 for an internal error (never blamed on
// the input) or another failure, 2 for bad input.
func runErr(stderr io.Writer, err error) int {
	switch {
	case errors.Is(err, memlimit.ErrLimit):
		line := oneLine(err)
		var le *replay.LimitError
		if errors.As(err, &le) {
			// The replay's advice names the flags that change it here.
			line = strings.Replace(line, le.Error(), le.Advise("--max-memory", "--group-workers"), 1)
		}
		fmt.Fprintln(stderr, line)
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
	return printable(strings.ReplaceAll(err.Error(), "\n", " "))
}

// printable is s with its control characters (a history's function name
// may hold any: an escape sequence, a newline) written as Go escapes
// ("\x1b", "\n"), so that what fastsim prints of it stays on its line and
// cannot drive the terminal.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if unicode.IsControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r) // '\x1b', '\n', '\u0085'
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// plural is n and noun, in the plural unless n is 1: "1 step", "2 steps".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}

func printSummary(w io.Writer, res *replay.Result, tracePath string) {
	// Reports are cumulative (docs/SEMANTICS.md): a step's own time is the
	// difference between its report and the previous one, taken in
	// nanoseconds, and every time is rounded from them (sched.SecondsText).
	fmt.Fprintf(w, "simulated time       %s s", sched.SecondsText(res.Final.ExecNs))
	if n := len(res.Steps); n > 0 {
		var prev int64
		if n > 1 {
			prev = res.Steps[n-2].ExecNs
		}
		fmt.Fprintf(w, " (%s; the last took %s s)", plural(int64(n), "step"), sched.SecondsText(res.Steps[n-1].ExecNs-prev))
	}
	fmt.Fprintln(w)
	if res.Final.PeakDevice >= 0 {
		fmt.Fprintf(w, "peak memory          %.6f MB on device %d\n", res.Final.PeakMB(), res.Final.PeakDevice)
	} else {
		fmt.Fprintf(w, "peak memory          %.6f MB\n", res.Final.PeakMB())
	}
	const shown = 8
	var prev int64
	for i, st := range res.Steps {
		if i == shown && len(res.Steps) > shown+1 {
			fmt.Fprintf(w, "  ... %s more (--summary-json lists them all)\n", plural(int64(len(res.Steps)-shown-1), "step"))
			i, prev, st = len(res.Steps)-1, res.Steps[len(res.Steps)-2].ExecNs, res.Steps[len(res.Steps)-1]
			fmt.Fprintf(w, "  step %-4d          %s s (ends at %s s), peak so far %.6f MB\n", i, sched.SecondsText(st.ExecNs-prev), sched.SecondsText(st.ExecNs), st.PeakMB())
			break
		}
		fmt.Fprintf(w, "  step %-4d          %s s (ends at %s s), peak so far %.6f MB\n", i, sched.SecondsText(st.ExecNs-prev), sched.SecondsText(st.ExecNs), st.PeakMB())
		prev = st.ExecNs
	}
	secs := res.Wall.Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(res.Commands) / secs
	}
	fmt.Fprintf(w, "commands replayed    %d on %s (%s)\n", res.Commands, plural(res.Header.WorldSize, "worker"), plural(int64(res.Groups), "simulated group"))
	fmt.Fprintf(w, "wall time            %.3f s (%.0f commands/s, %.0f worker-tasks/s)\n", secs, rate, float64(res.WorkerTasks)/max(secs, 1e-9))
	if res.Warnings > 0 {
		fmt.Fprintf(w, "warnings             %d (first: %s)\n", res.Warnings, res.FirstWarning)
	}
	if tracePath != "" {
		fmt.Fprintf(w, "trace                %s\n", tracePath)
		fmt.Fprintf(w, "                     %s\n", trace.OpenHint(tracePath))
	}
}
