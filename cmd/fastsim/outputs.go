package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/trace"
)

// startCPUProfile starts a CPU profile written to path as an output (a
// regular file appears only when complete); stop ends and commits it.
func startCPUProfile(path string) (stop func() error, err error) {
	o, err := trace.CreateOutput(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(o.W); err != nil {
		o.Abort()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return o.Commit()
	}, nil
}

// dest is an output flag and the path it was given ("" when not given).
type dest struct{ flag, path string }

// checkDests checks, before any work, that each given output path can be
// written, that it is none of the files the command reads (inputs: a
// history replaced by its own trace would be lost) and that no two outputs
// share a file (the later would replace the earlier) or standard output
// ("-": two documents run together there, which no reader can take apart). A failure is
// reported on stderr for command cmd ("fastsim search"), naming the flag,
// and ok is false: a destination is part of the command line, so the
// caller exits with exitInput.
func checkDests(cmd string, stderr io.Writer, inputs []string, ds ...dest) (ok bool) {
	if err := destsErr(inputs, ds); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return false
	}
	return true
}

// destsErr is checkDests' check; its error starts with the flag.
func destsErr(inputs []string, ds []dest) error {
	for i, d := range ds {
		if d.path == "" {
			continue
		}
		if err := trace.CheckDest(d.path); err != nil {
			return fmt.Errorf("%s: %w", d.flag, err)
		}
		if toStdout(d.path) {
			for _, e := range ds[:i] {
				if e.path != "" && toStdout(e.path) {
					return fmt.Errorf("%s and %s both write to standard output (\"-\"); one output at most may: give the other a file", stdoutName(e), stdoutName(d))
				}
			}
		}
		if !replaceable(d.path) {
			continue
		}
		for _, in := range inputs {
			if in != "" && in != trace.Stdout && existingSameFile(in, d.path) {
				return fmt.Errorf("%s: %s is an input of this command: writing there would destroy it (pick another path)", d.flag, d.path)
			}
			if in == trace.Stdout && stdinIs(d.path) {
				// "-" as an input is standard input, which the shell may
				// have opened on the very file the output names.
				return fmt.Errorf("%s: %s is this command's standard input, which it reads as its input (\"-\"): writing there would destroy it (pick another path)", d.flag, d.path)
			}
		}
		for _, e := range ds[:i] {
			if e.path != "" && sameFile(e.path, d.path) {
				return fmt.Errorf("%s: %s is also the path of %s; give each output its own", d.flag, d.path, e.flag)
			}
		}
	}
	return nil
}

// reportTo is where a command's human report (and its notes) go: stderr
// when one of its outputs ds is standard output ("-"), which that output
// then owns alone, so that what it writes there can be read back (`--json -
// | jq`); stdout otherwise.
func reportTo(stdout, stderr io.Writer, ds ...dest) io.Writer {
	for _, d := range ds {
		if d.path != "" && toStdout(d.path) {
			return stderr
		}
	}
	return stdout
}

// stdoutName is d's flag, with its path when that is another name of
// standard output than "-" (a file the shell redirected it to).
func stdoutName(d dest) string {
	if d.path == trace.Stdout {
		return d.flag
	}
	return fmt.Sprintf("%s (%s is standard output)", d.flag, d.path)
}

// toStdout reports whether an output at path goes to this process's
// standard output: "-", or another name of the same pipe, terminal or
// file (/dev/stdout, /proc/self/fd/1). /dev/null, where any number of
// outputs may go, is not counted even when standard output is it too.
func toStdout(path string) bool {
	if path == trace.Stdout {
		return true
	}
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(st, null) {
		return false
	}
	out, err := os.Stdout.Stat()
	return err == nil && os.SameFile(st, out)
}

// replaceable reports whether path is a file an output replaces (a
// regular file or none yet), not standard output, a device or a pipe,
// which are written directly and may be shared.
func replaceable(path string) bool {
	if path == trace.Stdout {
		return false
	}
	st, err := os.Stat(path)
	return err != nil || st.Mode().IsRegular()
}

// existingSameFile reports whether paths a and b name one existing file.
func existingSameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// stdinIs reports whether path names the file this process's standard
// input reads.
func stdinIs(path string) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	in, err := os.Stdin.Stat()
	return err == nil && in.Mode().IsRegular() && os.SameFile(st, in)
}

// sameFile reports whether paths a and b name one file: the same file if
// both exist, else the same path once made absolute with the symbolic
// links of its directory resolved (real/out.json and alias/out.json, alias
// a link to real, are one file before either exists).
func sameFile(a, b string) bool {
	if existingSameFile(a, b) {
		return true
	}
	ra, errA := resolved(a)
	rb, errB := resolved(b)
	return errA == nil && errB == nil && ra == rb
}

// resolved is path made absolute, its directory's symbolic links
// resolved where that directory exists.
func resolved(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs)), nil
	}
	return abs, nil
}

// profileCPU starts a CPU profile to path for command cmd ("fastsim
// replay"); a failure is reported on stderr and ok is false. The profile
// is written when stop is called, which reports its own failure.
func profileCPU(path, cmd string, stderr io.Writer) (stop func(), ok bool) {
	stopProfile, err := startCPUProfile(path)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --cpuprofile: %v\n", cmd, err)
		return nil, false
	}
	return func() {
		if err := stopProfile(); err != nil {
			fmt.Fprintf(stderr, "%s: --cpuprofile: %v\n", cmd, err)
		}
	}, true
}

// writeHeapProfile writes a heap profile to path as an output.
func writeHeapProfile(path string) error {
	o, err := trace.CreateOutput(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(o.W); err != nil {
		o.Abort()
		return err
	}
	return o.Commit()
}

// summaryJSON is the --summary-json document. Its seconds and megabytes
// are written exactly, as decimals of the engine's integer nanoseconds and
// bytes (exactDecimal): 12,626,201 ns is 0.012626201, where the reference's
// floating-point ns / 1000 / 1e6 would print 0.012626200999999998.
type summaryJSON struct {
	ExecTimeS    json.Number      `json:"exec_time_s"`
	PeakMemoryMB json.Number      `json:"peak_memory_mb"`
	PeakDevice   int64            `json:"peak_device"` // the lowest rank that reaches the peak, as everywhere; -1: no device held memory
	Steps        [][2]json.Number `json:"steps"`
	Commands     int64            `json:"commands"`
	WorldSize    int64            `json:"world_size"`
	Warnings     int64            `json:"warnings"`
	// UnknownOps counts calls the hardware model's op table did not know
	// (with --hardware only).
	UnknownOps int64 `json:"unknown_ops,omitempty"`
	// Partial marks the summary of an interrupted replay; absent otherwise.
	Partial bool `json:"partial,omitempty"`
}

// writeSummary writes the summary of res to path. The summary of an
// interrupted replay says "partial": true, and does not replace a file
// holding a complete summary unless overwrite is set: a Ctrl-C must not
// destroy the result of an earlier full run. It reports whether it wrote.
func writeSummary(path string, res *replay.Result, model *costs.Model, overwrite bool) (bool, error) {
	s := summaryJSON{
		ExecTimeS:    exactDecimal(res.Final.ExecNs, 9),
		PeakMemoryMB: exactDecimal(res.Final.PeakBytes, 6),
		PeakDevice:   res.Final.PeakDevice,
		Steps:        make([][2]json.Number, 0, len(res.Steps)),
		Commands:     res.Commands,
		WorldSize:    res.Header.WorldSize,
		Warnings:     res.Warnings,
		Partial:      res.Partial,
	}
	for _, st := range res.Steps {
		s.Steps = append(s.Steps, [2]json.Number{exactDecimal(st.ExecNs, 9), exactDecimal(st.PeakBytes, 6)})
	}
	if model != nil && model.Roofline() != nil {
		s.UnknownOps, _ = model.Roofline().Unknown()
	}
	if res.Partial && !overwrite && holdsCompleteSummary(path) {
		return false, nil
	}
	data, err := json.Marshal(s)
	if err != nil {
		return false, err
	}
	return true, trace.WriteFileAtomic(path, append(data, '\n'))
}

// exactDecimal writes v / 10^digits exactly, as a JSON number: the integer
// part, then the fraction without trailing zeros (12626201, 9 is
// 0.012626201; 4000000, 6 is 4; -1500, 6 is -0.0015).
func exactDecimal(v int64, digits int) json.Number {
	neg := v < 0
	u := uint64(v)
	if neg {
		u = -u // two's complement: the magnitude, MinInt64 included
	}
	text := strconv.FormatUint(u, 10)
	if len(text) <= digits {
		text = strings.Repeat("0", digits-len(text)+1) + text
	}
	whole, frac := text[:len(text)-digits], strings.TrimRight(text[len(text)-digits:], "0")
	if frac != "" {
		whole += "." + frac
	}
	if neg {
		whole = "-" + whole
	}
	return json.Number(whole)
}

// holdsCompleteSummary reports whether path is a regular file holding a
// summary without "partial": true.
func holdsCompleteSummary(path string) bool {
	if path == trace.Stdout {
		return false // standard output holds nothing to keep
	}
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() > 1<<30 {
		return false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var doc struct {
		ExecTimeS *float64 `json:"exec_time_s"`
		Partial   bool     `json:"partial"`
	}
	return json.Unmarshal(data, &doc) == nil && doc.ExecTimeS != nil && !doc.Partial
}
