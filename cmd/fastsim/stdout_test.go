package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fullWriter fails every write, as /dev/full does.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestReportWriteFailureFails: a command whose report cannot be written to
// standard output exits 1 and says so, instead of exiting 0 with nothing
// written (`fastsim hardware a100-80gb > spec.json` on a full disk).
func TestReportWriteFailureFails(t *testing.T) {
	for _, args := range [][]string{
		{"hardware", "a100-80gb"},
		{"help"},
		{"replay", "--report-only", "../../examples/train_step.hist"},
	} {
		var stderr bytes.Buffer
		code := run(args, fullWriter{}, &stderr)
		if code != exitError || !strings.Contains(stderr.String(), "fastsim "+args[0]+": write standard output: no space left on device") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming the failed write", args, code, stderr.String(), exitError)
		}
	}
}

// TestDoubledInterruptIsOne: GNU timeout -s INT signals the process and
// then its process group, so one interrupt arrives twice within
// microseconds; only a SIGINT sameInterrupt or more after the first is a
// second Ctrl-C, which exits at once without the report.
func TestDoubledInterruptIsOne(t *testing.T) {
	first := time.Unix(1000, 0)
	for _, c := range []struct {
		after  time.Duration
		second bool
	}{{0, false}, {50 * time.Microsecond, false}, {150 * time.Millisecond, false}, {200 * time.Millisecond, true}, {2 * time.Second, true}} {
		if got := secondInterrupt(first, first.Add(c.after)); got != c.second {
			t.Errorf("SIGINT %v after the first: second Ctrl-C %v, want %v", c.after, got, c.second)
		}
	}
}

// TestBadArgumentsNamed: an empty path, and a GPT's --layers or --hidden
// below 1 or missing, are refused (exit 2) by a line naming what is wrong;
// --quiet keeps --decode-only silent.
func TestBadArgumentsNamed(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"synth", ""}, "fastsim synth: an empty argument where a path goes"},
		{[]string{"replay", "--report-only", ""}, "fastsim replay: an empty argument where a path goes"},
		{[]string{"convert", "../../examples/train_step.hist", ""}, "fastsim convert: an empty argument where a path goes"},
		{[]string{"predict", "--world", "8", "--layers", "4", "--hidden", "0"}, "fastsim predict: --hidden 0: want at least 1"},
		{[]string{"predict", "--world", "8", "--layers", "-2", "--hidden", "64"}, "fastsim predict: --layers -2: want at least 1"},
		{[]string{"predict", "--world", "8", "--layers", "4"}, "fastsim predict: a GPT needs both --layers and --hidden"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != exitInput || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, %q; want %d and %q", c.args, code, stderr, exitInput, c.want)
		}
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"replay", "--report-only", dir}, {"replay", "--decode-only", dir}, {"convert", dir, dir + ".hist"}} {
		if code, _, stderr := runCLI(args...); code != exitInput || stderr != dir+": a directory, not a history\n" {
			t.Errorf("%q: exit %d, %q; want %d and the directory named, with no line", args, code, stderr, exitInput)
		}
	}
	if code, stdout, stderr := runCLI("replay", "--quiet", "--decode-only", "../../examples/train_step.hist"); code != exitOK || stdout != "" || stderr != "" {
		t.Errorf("--quiet --decode-only: exit %d, stdout %q, stderr %q; want 0 and nothing", code, stdout, stderr)
	}
}

// TestDuplicateKeysRefused: a key given twice in a model, hardware, costs
// or search-results file is refused at its second line, as in a history,
// not read as its last value.
func TestDuplicateKeysRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	model := write("m.json", "{\n \"layers\": 24,\n \"layers\": 2,\n \"hidden\": 64, \"heads\": 4, \"seq\": 16, \"vocab\": 100\n}\n")
	costs := write("c.json", "{\"runtimes_ns\": {\n \"aten.mm\": 5,\n \"aten.mm\": 6}}\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"predict", "--model", model, "--world", "8"}, model + ":3: bad model: key \"layers\" appears twice in one object"},
		{[]string{"replay", "--costs", costs, "../../examples/train_step.hist"}, costs + ":3: bad costs file: key \"aten.mm\" appears twice in one object"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != exitInput || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, %q; want %d and %q", c.args, code, stderr, exitInput, c.want)
		}
	}
}
