package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestContradictoryReplayFlags: a flag about an output that the other
// flags say is not written is refused in one line naming both, with exit
// status 2 and nothing written (each was accepted and ignored: a
// controller-only replay wrote a snapshot of 0 allocations).
func TestContradictoryReplayFlags(t *testing.T) {
	dir := t.TempDir()
	snap, sum := filepath.Join(dir, "s.pickle"), filepath.Join(dir, "s.json")
	for _, c := range []struct {
		args []string
		want []string // in the message
	}{
		{[]string{"replay", "--trace-mode", "controller-only", "--report-only", "--memory-snapshot", snap, example}, []string{"--memory-snapshot", "controller-only"}},
		{[]string{"replay", "--partial-trace", "--report-only", example}, []string{"--partial-trace", "--report-only"}},
		{[]string{"replay", "--partial-trace", "--decode-only", example}, []string{"--partial-trace", "--decode-only"}},
		{[]string{"replay", "--overwrite-summary", "--report-only", example}, []string{"--overwrite-summary", "--summary-json"}},
	} {
		code, stdout, stderr := runCLI(c.args...)
		ok := code == exitInput && stdout == "" && strings.Count(stderr, "\n") == 1 && strings.HasPrefix(stderr, "fastsim replay: ")
		for _, w := range c.want {
			ok = ok && strings.Contains(stderr, w)
		}
		if !ok {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and one line naming %q", c.args, code, stdout, stderr, exitInput, c.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("refused replays wrote %v", ents)
	}
	// The same flags where they do apply are accepted.
	for _, args := range [][]string{
		{"replay", "--report-only", "--memory-snapshot", snap, example},
		{"replay", "--report-only", "--summary-json", sum, "--overwrite-summary", example},
		{"replay", "--partial-trace", "--trace", filepath.Join(dir, "t.json"), example},
	} {
		if code, _, stderr := runCLI(args...); code != exitOK {
			t.Errorf("%q: exit %d, %q", args, code, stderr)
		}
	}
}
