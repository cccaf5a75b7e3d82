// Command fastsim replays recorded command histories of distributed PyTorch
// programs and reports simulated step time and peak memory per device,
// without a GPU.
//
//	fastsim replay [flags] HISTORY
//
// Run `fastsim help COMMAND` (or `fastsim COMMAND --help`) for a command's
// flags.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // the run failed for a reason other than its input (I/O, ...)
	exitInput = 2 // bad input or usage: the message says what to fix
	exitLimit = 3 // a resource limit (--max-memory) ended the run cleanly

	exitInterrupted = 130 // stopped by Ctrl-C (SIGINT), after a partial report
)

const usage = `fastsim simulates distributed PyTorch programs (Monarch-style) from a
recorded command history: how long a training step takes and how much memory
each device peaks at, with a Chrome/Perfetto trace of the timeline.

Usage:
  fastsim replay [flags] HISTORY   replay a history (.hist, .hist.zst or binary .fhist, .fhist.zst, .fhist.s2)
  fastsim synth [flags] OUT        write a synthetic training history (or a random one)
  fastsim convert IN OUT           convert a history between forms (.hist, .hist.zst, binary .fhist)
  fastsim search [flags]           rank the parallel layouts of a training job (and 'search merge')
  fastsim predict [flags]          predict one training layout: step time, MFU, memory
  fastsim ops [flags] HISTORY      list the command kinds with Monarch's timing keys and predicted times
  fastsim hardware [NAME|FILE]     list the hardware presets, or print one spec
  fastsim help [COMMAND]           show this text, or COMMAND's flags

Run 'fastsim help COMMAND' (the same as 'fastsim COMMAND --help') for a
command's flags, e.g. 'fastsim help replay'. Help goes to standard output.

When an output is standard output ("-"), the human report goes to standard
error instead; at most one output of a command may be "-".

Exit status: 0 ok; 1 a failure not caused by the input (I/O, an internal
error); 2 bad input or usage (one line FILE:LINE: what is wrong); 3 a
resource limit (--max-memory) ended the run; 130 interrupted (Ctrl-C).
`

// heapSampleRate is the Go runtime's default MemProfileRate, one sample
// per 512 KiB allocated on average (the runtime package's documentation of
// MemProfileRate), set back for a replay that writes --memprofile.
const heapSampleRate = 512 * 1024

func init() {
	// The heap is sampled for a profile only when --memprofile asks for
	// one: each sample unwinds the allocating goroutine's stack and the
	// first sets up the profile's tables, about 0.2 M instructions of a
	// short replay's 45 M spent on a profile nobody writes.
	runtime.MemProfileRate = 0
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the one boundary where a panic is recovered: a bug inside
// fastsim becomes a one-line "internal error" and exit status 1, never a
// stack dump that looks like the input's fault.
func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "fastsim: internal error (a bug in fastsim, not in the input): %v\n", r)
			code = exitError
		}
	}()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitInput
	}
	// A report that could not be written is a failure, whichever command
	// wrote it: `fastsim hardware a100-80gb > spec.json` on a full disk
	// must not leave an empty file and exit 0.
	out := &stdoutWriter{w: stdout}
	stdout = out
	defer func() {
		if code == exitOK && out.err != nil {
			fmt.Fprintf(stderr, "fastsim %s: write standard output: %v\n", args[0], out.err)
			code = exitError
		}
	}()
	switch args[0] {
	case "synth", "convert", "search", "predict", "ops":
		cmd := "fastsim " + args[0]
		if args[0] == "search" {
			if len(args) == 1 || args[1] != "merge" {
				break // a search reports the layouts simulated when interrupted
			}
			cmd += " merge"
		}
		defer removeTempsOnSignal(cmd, stderr)()
	}
	switch args[0] {
	case "replay":
		return replayCmd(args[1:], stdout, stderr)
	case "synth":
		return synthCmd(args[1:], stdout, stderr)
	case "convert":
		return convertCmd(args[1:], stdout, stderr)
	case "search":
		return searchCmd(args[1:], stdout, stderr)
	case "predict":
		return predictCmd(args[1:], stdout, stderr)
	case "ops":
		return opsCmd(args[1:], stdout, stderr)
	case "hardware":
		return hardwareCmd(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) == 1 {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		// help COMMAND is COMMAND --help ("help search merge" too).
		cmd := args[1:]
		if len(cmd) > 1 && !(cmd[0] == "search" && cmd[1] == "merge") {
			fmt.Fprintf(stderr, "fastsim help: want one command, got %q\n\n%s", cmd, usage)
			return exitInput
		}
		switch cmd[0] {
		case "replay", "synth", "convert", "search", "predict", "ops", "hardware":
			return run(append(append([]string(nil), cmd...), "--help"), stdout, stderr)
		case "help":
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		fmt.Fprintf(stderr, "fastsim help: unknown command %q\n\n%s", cmd[0], usage)
		return exitInput
	}
	fmt.Fprintf(stderr, "fastsim: unknown command %q\n\n%s", args[0], usage)
	return exitInput
}

// stdoutWriter remembers the first error of a write to standard output.
type stdoutWriter struct {
	w   io.Writer
	err error
}

func (s *stdoutWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n, err
}
