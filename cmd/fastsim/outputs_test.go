package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fastsim/fastsim/internal/synth"
)

const example = "../../examples/train_step.hist"

// TestTraceToDevice: --trace /dev/null writes into the device, which stays a
// device.
func TestTraceToDevice(t *testing.T) {
	if st, err := os.Stat("/dev/null"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Skip("no /dev/null device")
	}
	code, _, stderr := runCLI("replay", "--trace", "/dev/null", "--summary-json", "/dev/null", example)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if st, err := os.Stat("/dev/null"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatal("/dev/null was replaced")
	}
}

// TestTraceToStdout: --trace - writes the trace to standard output and the
// report to standard error.
func TestTraceToStdout(t *testing.T) {
	cmd := child("replay", "--trace", "-", "--trace-mode", "everything", example)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	var doc struct {
		TraceEvents []json.RawMessage `json:"traceEvents"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.TraceEvents) == 0 {
		t.Fatalf("stdout is not a trace (%v): %.200q", err, out.String())
	}
	if !strings.Contains(errb.String(), "simulated time") {
		t.Errorf("no report on stderr: %q", errb.String())
	}
}

// TestDestinationsCheckedFirst: an unwritable destination fails before the
// replay (no report printed), naming its own flag.
func TestDestinationsCheckedFirst(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing", "x.json")
	for _, flagName := range []string{"--trace", "--summary-json", "--cpuprofile", "--memprofile"} {
		code, stdout, stderr := runCLI("replay", flagName, missing, example)
		if code != exitInput || stdout != "" {
			t.Errorf("%s: exit %d, stdout %q; want %d and no report", flagName, code, stdout, exitInput)
		}
		if !strings.HasPrefix(stderr, "fastsim replay: "+flagName+":") || (flagName != "--trace" && strings.Contains(stderr, "trace:")) {
			t.Errorf("%s: message %q", flagName, stderr)
		}
	}
}

// TestProfilesWritten writes both profiles; only the profiles remain in
// the directory (no temporary files).
func TestProfilesWritten(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	code, _, stderr := runCLI("replay", "--report-only", "--cpuprofile", cpu, "--memprofile", mem, example)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("directory holds %v", ents)
	}
	for _, p := range []string{cpu, mem} {
		// A pprof profile is gzip-compressed protobuf.
		if data, err := os.ReadFile(p); err != nil || len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
			t.Errorf("%s: not a profile (%v)", p, err)
		}
	}
}

// TestTermRemovesTemps sends SIGTERM while the trace is being written:
// the process exits 143 and leaves neither a temporary file nor a trace.
func TestTermRemovesTemps(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a large history")
	}
	cmd, dir, dest := replayWritingTrace(t)
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	tmp, _ := filepath.Glob(filepath.Join(dir, ".out.json.fastsim-tmp-*"))
	if len(tmp) > 0 {
		t.Errorf("SIGTERM left %v", tmp)
	}
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == exitTerminated {
		if _, err := os.Stat(dest); err == nil {
			t.Error("a terminated replay left a trace")
		}
		return
	}
	// It may have finished in the instant before the signal; then the
	// trace must be whole.
	data, _ := os.ReadFile(dest)
	if err != nil || !json.Valid(data) {
		t.Fatalf("exit %v, trace valid %v", err, json.Valid(data))
	}
	t.Log("the replay finished before SIGTERM landed")
}

// feedInterrupted writes the first half of lines to the child's input w,
// interrupts the child, and writes the rest a little at a time, so that the
// child, however loaded the machine, notices the interrupt before the
// history ends; then it closes w.
func feedInterrupted(cmd *exec.Cmd, w *os.File, lines []string) {
	feedInterruptedN(cmd, w, lines, 1)
}

// feedInterruptedN is feedInterrupted sending SIGINT n times, 5 ms apart,
// as `timeout -s INT` does twice (to the process, then to its group).
func feedInterruptedN(cmd *exec.Cmd, w *os.File, lines []string, n int) {
	bw := bufio.NewWriter(w)
	half := len(lines) / 2
	for _, l := range lines[:half] {
		bw.WriteString(l)
	}
	bw.Flush()
	time.Sleep(300 * time.Millisecond) // the child replays the first half
	for k := range n {
		if k > 0 {
			time.Sleep(5 * time.Millisecond)
		}
		cmd.Process.Signal(os.Interrupt)
	}
	for i := half; i < len(lines); i += 64 {
		time.Sleep(10 * time.Millisecond)
		for _, l := range lines[i:min(i+64, len(lines))] {
			bw.WriteString(l)
		}
		if bw.Flush() != nil {
			break // the child stopped reading
		}
	}
	w.Close()
}

// interruptReplay replays a training history through a named pipe and
// sends SIGINT halfway; it returns both outputs and the exit error.
func interruptReplay(t *testing.T, dir string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var hist bytes.Buffer
	if err := synth.WriteTrain(&hist, synth.Train{PP: 2, DP: 2, TP: 1, Layers: 8, Hidden: 64, Seq: 16, Batch: 8, Micro: 2, Steps: 40}); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(hist.String(), "\n")
	fifo := filepath.Join(dir, "in.hist")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	cmd := child(append(append([]string{"replay", "--report-only"}, args...), fifo)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	feedInterrupted(cmd, w, lines)
	err = cmd.Wait()
	return out.String(), errb.String(), err
}

// TestPartialSummary: Ctrl-C writes a summary marked partial where there
// was none, keeps a complete one (saying so), and replaces it with
// --overwrite-summary.
func TestPartialSummary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	const complete = `{"exec_time_s":1,"peak_memory_mb":2,"steps":[],"commands":3,"world_size":4,"warnings":0}` + "\n"
	for _, tc := range []struct {
		name        string
		existing    string // "" = no file
		overwrite   bool
		wantPartial bool
	}{
		{"none", "", false, true},
		{"complete kept", complete, false, false},
		{"complete overwritten", complete, true, true},
		{"partial replaced", `{"exec_time_s":0.5,"partial":true}`, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sum := filepath.Join(dir, "sum.json")
			if tc.existing != "" {
				os.WriteFile(sum, []byte(tc.existing), 0o644)
			}
			args := []string{"--summary-json", sum}
			if tc.overwrite {
				args = append(args, "--overwrite-summary")
			}
			_, stderr, err := interruptReplay(t, dir, args...)
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
				t.Fatalf("%v, want exit %d: %s", err, exitInterrupted, stderr)
			}
			data, _ := os.ReadFile(sum)
			var doc struct {
				Partial bool `json:"partial"`
			}
			json.Unmarshal(data, &doc)
			if tc.wantPartial != doc.Partial {
				t.Errorf("summary %q, want partial %v", data, tc.wantPartial)
			}
			if !tc.wantPartial {
				if string(data) != tc.existing {
					t.Errorf("the complete summary changed to %q", data)
				}
				if !strings.Contains(stderr, "holds a complete summary") {
					t.Errorf("no note on stderr: %q", stderr)
				}
			}
		})
	}
}

// TestCompleteSummaryNotPartial: an uninterrupted replay's summary has no
// "partial" key.
func TestCompleteSummaryNotPartial(t *testing.T) {
	sum := filepath.Join(t.TempDir(), "sum.json")
	if code, _, stderr := runCLI("replay", "--report-only", "--summary-json", sum, example); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, _ := os.ReadFile(sum)
	if bytes.Contains(data, []byte("partial")) {
		t.Errorf("summary %s", data)
	}
}

// TestTermRemovesSynthTemps sends SIGTERM to a long synth: its temporary
// file goes, and nothing appears at the destination.
func TestTermRemovesSynthTemps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	dir := t.TempDir()
	dest := filepath.Join(dir, "big.hist")
	cmd := child("synth", "--pp", "2", "--dp", "4", "--layers", "16", "--hidden", "256", "--seq", "128", "--batch", "16", "--micro", "4", "--steps", "65536", dest)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if tmp, _ := filepath.Glob(filepath.Join(dir, ".big.hist.fastsim-tmp-*")); len(tmp) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("synth never started writing")
		}
		time.Sleep(time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitTerminated {
		t.Fatalf("%v, want exit %d", err, exitTerminated)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("SIGTERM left %v", ents)
	}
}

// TestSecondInterruptRemovesTemps: Ctrl-C twice while the trace is being
// written exits 130 at once, without a temporary file or a trace left;
// unless the trace was complete (renamed into place) before the second
// landed, and then it is whole, whether the process was still exiting
// (130) or had ended.
func TestSecondInterruptRemovesTemps(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a large history")
	}
	cmd, dir, dest := replayWritingTrace(t)
	cmd.Process.Signal(os.Interrupt)
	time.Sleep(2 * sameInterrupt) // closer, the two are one (TestInterrupt)
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".out.json.fastsim-tmp-*")); len(tmp) > 0 {
		t.Errorf("two interrupts left %v", tmp)
	}
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == exitInterrupted {
		if data, err := os.ReadFile(dest); err == nil {
			if !json.Valid(data) {
				t.Fatal("an interrupted replay left a half-written trace")
			}
			t.Log("the trace was complete before the second interrupt landed, as the process exited")
		}
		return
	}
	data, _ := os.ReadFile(dest)
	if err != nil || !json.Valid(data) {
		t.Fatalf("exit %v, trace valid %v", err, json.Valid(data))
	}
	t.Log("the trace was complete before the second interrupt landed")
}

// TestOutputOverInputRefused: an output whose path is a file the command
// reads (the history, a costs file, a model file) is refused before any
// work, with exit status 2 and one line naming the output's flag, and the
// input is left as it was; so are two outputs given one path.
func TestOutputOverInputRefused(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "h.hist")
	data, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hist, data, 0o644); err != nil {
		t.Fatal(err)
	}
	costs := filepath.Join(dir, "costs.json")
	if err := os.WriteFile(costs, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "model.json")
	modelJSON := []byte(`{"layers":2,"hidden":128,"heads":2,"vocab":1024,"seq":64}` + "\n")
	if err := os.WriteFile(model, modelJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	// The same file by another spelling of its path.
	other := filepath.Join(dir, ".", "h.hist")
	out := filepath.Join(dir, "out.json")
	for _, c := range []struct {
		flag string
		args []string
	}{
		{"--trace", []string{"replay", "--trace", hist, hist}},
		{"--trace", []string{"replay", "--trace", other, hist}},
		{"--summary-json", []string{"replay", "--report-only", "--summary-json", hist, hist}},
		{"--html", []string{"replay", "--report-only", "--html", hist, hist}},
		{"--memory-snapshot", []string{"replay", "--report-only", "--memory-snapshot", hist, hist}},
		{"--cpuprofile", []string{"replay", "--report-only", "--cpuprofile", hist, hist}},
		{"--summary-json", []string{"replay", "--report-only", "--costs", costs, "--summary-json", costs, hist}},
		{"--html", []string{"replay", "--report-only", "--summary-json", out, "--html", out, hist}},
		{"--json", []string{"ops", "--json", hist, hist}},
		{"OUT", []string{"convert", hist, other}},
		{"OUT", []string{"synth", "--model", model, "--pp", "1", "--dp", "1", "--global-batch", "1", model}},
		{"--json", []string{"predict", "--model", model, "--world", "1", "--global-batch", "1", "--json", model}},
		{"--csv", []string{"search", "--model", model, "--world", "1", "--global-batch", "1", "--json", out, "--csv", out}},
		{"--json", []string{"search", "merge", "--json", costs, costs}},
	} {
		code, stdout, stderr := runCLI(c.args...)
		if code != exitInput || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, ": "+c.flag+": ") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and one line naming %s", c.args, code, stdout, stderr, exitInput, c.flag)
		}
	}
	// Two outputs through a symbolic link to their directory, before
	// either exists, are one file.
	real, alias := filepath.Join(dir, "real"), filepath.Join(dir, "alias")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", alias); err != nil {
		t.Fatal(err)
	}
	args := []string{"replay", "--report-only", "--summary-json", filepath.Join(real, "o.json"), "--cpuprofile", filepath.Join(alias, "o.json"), hist}
	if code, _, stderr := runCLI(args...); code != exitInput || !strings.Contains(stderr, "--cpuprofile: "+filepath.Join(alias, "o.json")+" is also the path of --summary-json") {
		t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
	}
	if _, err := os.Stat(filepath.Join(real, "o.json")); err == nil {
		t.Errorf("%s was written", filepath.Join(real, "o.json"))
	}
	// "-" reads standard input, which the shell may have opened on the
	// file an output names.
	for _, c := range []struct {
		flag string
		args []string
	}{
		{"--trace", []string{"replay", "--trace", hist, "-"}},
		{"OUT", []string{"convert", "-", hist}},
	} {
		in, err := os.Open(hist)
		if err != nil {
			t.Fatal(err)
		}
		cmd := child(c.args...)
		var errb bytes.Buffer
		cmd.Stdin, cmd.Stderr = in, &errb
		err = cmd.Run()
		in.Close()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInput || !strings.Contains(errb.String(), ": "+c.flag+": "+hist+" is this command's standard input") {
			t.Errorf("%q < %s: %v, stderr %q", c.args, hist, err, errb.String())
		}
	}
	for path, want := range map[string][]byte{hist: data, costs: []byte("{}\n"), model: modelJSON} {
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s was changed (%v)", path, err)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was written", out)
	}
}

// TestWriterDestinationsCheckedFirst: synth, convert and search merge
// check their outputs before writing: a missing directory or a directory
// is refused with exit status 2 and one line naming OUT (or the flag), and
// nothing is left behind.
func TestWriterDestinationsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"synth", filepath.Join(dir, "missing", "x.hist")},
		{"synth", dir},
		{"convert", example, filepath.Join(dir, "missing", "x.fhist")},
		{"search", "merge", "--csv", dir, "shard.json"},
	} {
		code, stdout, stderr := runCLI(args...)
		what := "OUT"
		if args[0] == "search" {
			what = "--csv"
		}
		if code != exitInput || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, ": "+what+": ") || strings.Contains(stderr, "fastsim-tmp") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in the directory: %v", ents)
	}
}

// TestBadFlagOneLine: a flag that does not parse is reported in one line
// naming it, with exit status 2, by every command; --help still prints the
// usage.
func TestBadFlagOneLine(t *testing.T) {
	for _, args := range [][]string{
		{"replay", "--jobs", "99999999999999999999", example},
		{"replay", "--nosuch", example},
		{"synth", "--world", "x", "out.hist"},
		{"convert", "--quiet=maybe", example, "out.hist"},
		{"search", "--world", "1e3"},
		{"search", "merge", "--top", "x", "a.json"},
		{"predict", "--tp"},
		{"ops", "--top", "-", example},
		{"hardware", "--nosuch"},
	} {
		code, stdout, stderr := runCLI(args...)
		if code != exitInput || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "(see fastsim ") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and one line", args, code, stdout, stderr, exitInput)
		}
	}
	if code, help, _ := runCLI("replay", "--help"); code != exitOK || !strings.Contains(help, "Usage: fastsim replay") || !strings.Contains(help, "-trace-steps") {
		t.Errorf("--help: exit %d, %.200q", code, help)
	}
}

// TestSynthFlagRanges: synth names the one flag that is out of range.
func TestSynthFlagRanges(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.hist")
	for flagName, args := range map[string][]string{
		"--gpus-per-host 0": {"synth", "--gpus-per-host", "0", out},
		"--world 1":         {"synth", "--random", "1", "--world", "1", out},
		"--commands -1":     {"synth", "--random", "1", "--commands", "-1", out},
	} {
		code, _, stderr := runCLI(args...)
		if code != exitInput || !strings.HasPrefix(stderr, "fastsim synth: "+flagName+": ") {
			t.Errorf("%q: exit %d, %q", args, code, stderr)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a history was written")
	}
}

// TestInterruptPredictRemovesTemps sends SIGINT to a prediction writing a
// CPU profile: it exits 130 with one line saying why, and neither the
// profile's temporary file nor the profile is left (predict had no
// handler: Ctrl-C killed it and left the temporary file).
func TestInterruptPredictRemovesTemps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.pprof")
	cmd := child("predict", "--model", "megatron-1t", "--world", "512", "--tp", "8", "--pp", "64", "--global-batch", "512",
		"--cpuprofile", prof, "--json", filepath.Join(dir, "p.json"))
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if tmp, _ := filepath.Glob(filepath.Join(dir, ".cpu.pprof.fastsim-tmp-*")); len(tmp) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("predict never started its profile")
		}
		time.Sleep(time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("%v, want exit %d", err, exitInterrupted)
	}
	if errb.String() != "fastsim predict: stopped by SIGINT; the outputs not yet complete were removed\n" {
		t.Errorf("stderr %q", errb.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("SIGINT left %v", ents)
	}
}

// TestDecodeOnlyOutputs: --decode-only writes no report, trace or memory,
// so an output flag beside it is a contradiction (it was silently not
// written), and its --cpuprofile is checked like any destination.
func TestDecodeOnlyOutputs(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.json")
	for _, flagName := range []string{"--trace", "--summary-json", "--html", "--memory-snapshot", "--memprofile"} {
		code, stdout, stderr := runCLI("replay", "--decode-only", flagName, out, example)
		if code != exitInput || stdout != "" || !strings.HasPrefix(stderr, "fastsim replay: "+flagName+" and --decode-only contradict") {
			t.Errorf("%s: exit %d, %q, %q", flagName, code, stdout, stderr)
		}
	}
	code, _, stderr := runCLI("replay", "--decode-only", "--cpuprofile", filepath.Join(filepath.Dir(out), "missing", "cpu.pprof"), example)
	if code != exitInput || !strings.HasPrefix(stderr, "fastsim replay: --cpuprofile: ") {
		t.Errorf("unwritable --cpuprofile: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was written", out)
	}
}

// TestExactDecimal: integer nanoseconds and bytes written as exact
// decimals of seconds (9 digits) and megabytes (6), by hand.
func TestExactDecimal(t *testing.T) {
	for _, c := range []struct {
		v      int64
		digits int
		want   string
	}{
		{12626201, 9, "0.012626201"}, // ns/1000/1e6 in floating point: 0.012626200999999998
		{4889029, 9, "0.004889029"},  // and 0.0048890290000000005
		{0, 9, "0"},
		{1500, 9, "0.0000015"},
		{12000, 9, "0.000012"},
		{1000000000, 9, "1"},
		{1234567890123456789, 9, "1234567890.123456789"},
		{4000000, 6, "4"},
		{60630007808, 6, "60630.007808"},
		{1, 6, "0.000001"},
		{-1500, 6, "-0.0015"},
		{-9223372036854775808, 9, "-9223372036.854775808"},
	} {
		if got := exactDecimal(c.v, c.digits); string(got) != c.want {
			t.Errorf("exactDecimal(%d, %d) = %s, want %s", c.v, c.digits, got, c.want)
		}
	}
}

// TestSummaryExactNumbers: the summary's seconds have at most 9 decimals
// (whole nanoseconds) and its megabytes at most 6 (whole bytes), with no
// floating-point noise: priced by examples/costs.json, the reference's
// ns / 1000 / 1e6 wrote exec_time_s 0.012626200999999998.
func TestSummaryExactNumbers(t *testing.T) {
	sum := filepath.Join(t.TempDir(), "s.json")
	for _, args := range [][]string{
		{"replay", "--report-only", "--costs", "../../examples/costs.json", "--summary-json", sum, example},
		{"replay", "--report-only", "--summary-json", sum, example},
	} {
		if code, _, stderr := runCLI(args...); code != exitOK {
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
		data, err := os.ReadFile(sum)
		if err != nil {
			t.Fatal(err)
		}
		var s summaryJSON
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatal(err)
		}
		check := func(what string, n json.Number, digits int) {
			whole, frac, _ := strings.Cut(string(n), ".")
			if whole == "" || len(frac) > digits || strings.HasSuffix(frac, "0") || strings.ContainsAny(string(n), "eE") {
				t.Errorf("%q: %s %s is not an exact decimal of at most %d places", args, what, n, digits)
			}
		}
		check("exec_time_s", s.ExecTimeS, 9)
		check("peak_memory_mb", s.PeakMemoryMB, 6)
		if len(s.Steps) != 2 {
			t.Fatalf("%q: %d steps, want 2", args, len(s.Steps))
		}
		for _, st := range s.Steps {
			check("a step's seconds", st[0], 9)
			check("a step's megabytes", st[1], 6)
		}
	}
}
