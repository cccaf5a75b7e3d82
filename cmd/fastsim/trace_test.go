package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/replay"
)

// TestTraceForms writes the example's trace in each form and checks the
// file's first bytes and the hint printed after the summary.
func TestTraceForms(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, magic, hint string
	}{
		{"t.json", `{"traceEvents":[`, "Perfetto"},
		{"t.json.gz", "\x1f\x8b", "Perfetto"},
		{"t.json.zst", "\x28\xb5\x2f\xfd", "zstd -d"},
	} {
		dest := filepath.Join(dir, tc.name)
		code, stdout, stderr := runCLI("replay", "--trace", dest, "../../examples/train_step.hist")
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", tc.name, code, stderr)
		}
		data, err := os.ReadFile(dest)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(data), tc.magic) {
			t.Errorf("%s starts with %q, want %q", tc.name, data[:min(len(data), 16)], tc.magic)
		}
		if !strings.Contains(stdout, tc.hint) {
			t.Errorf("%s: no %q hint in %q", tc.name, tc.hint, stdout)
		}
	}
}

func TestParseStepRange(t *testing.T) {
	const end = int(^uint(0) >> 1)
	for in, want := range map[string]replay.StepRange{
		"2:5": {First: 2, Last: 5},
		"3":   {First: 3, Last: 3},
		"4:":  {First: 4, Last: end},
		":1":  {First: 0, Last: 1},
	} {
		got, err := parseStepRange(in)
		if err != nil || *got != want {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "5:2", "1:y", "1:2:3"} {
		if _, err := parseStepRange(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
		if bad == "" {
			continue // an empty flag is no flag
		}
		if code, _, stderr := runCLI("replay", "--trace-steps", bad, "../../examples/train_step.hist"); code != exitInput || !strings.Contains(stderr, "--trace-steps") {
			t.Errorf("--trace-steps %q: exit %d, %q", bad, code, stderr)
		}
	}
}

// TestDefaultTracePath: the default trace is gzip JSON, which the viewers
// open as it is, named after the history.
func TestDefaultTracePath(t *testing.T) {
	for in, want := range map[string]string{
		"runs/train.hist.zst": "train.trace.json.gz",
		"train.hist":          "train.trace.json.gz",
		"big.fhist.zst":       "big.trace.json.gz",
		"big.fhist.s2":        "big.trace.json.gz",
		"-":                   "stdin.trace.json.gz",
	} {
		if got := defaultTracePath(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// TestTraceStepsPastTheEnd: --trace-steps beyond the history's steps (the
// example has 2 step lines and commands after the last: steps 0 to 2)
// still replays, and says that the trace holds no command.
func TestTraceStepsPastTheEnd(t *testing.T) {
	out := filepath.Join(t.TempDir(), "t.json")
	code, _, stderr := runCLI("replay", "--trace-steps", "5:9", "--trace", out, example)
	if code != exitOK || !strings.Contains(stderr, "--trace-steps 5:9: the history has steps 0 to 2; the trace holds none of its commands") {
		t.Errorf("exit %d, %q", code, stderr)
	}
	code, _, stderr = runCLI("replay", "--trace-steps", "2", "--trace", out, example)
	if code != exitOK || strings.Contains(stderr, "--trace-steps") {
		t.Errorf("step 2: exit %d, %q", code, stderr)
	}
}
