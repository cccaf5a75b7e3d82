package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSynthRefusesUnreadFlags: a flag the chosen workload does not read is
// refused, naming it, instead of being silently ignored (the random
// history wrote world 16 and 8 GPUs per host whatever --tp or
// --gpus-per-host said; a training job ignored --world).
func TestSynthRefusesUnreadFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "w.hist")
	for _, c := range []struct {
		flag string
		args []string
	}{
		{"--world", []string{"--model", "llama3-8b", "--world", "64", "--tp", "8", "--pp", "1", "--dp", "1", "--global-batch", "8", "--steps", "1"}},
		{"--world", []string{"--layers", "8", "--world", "64"}},
		{"--commands", []string{"--commands", "50"}},
		{"--whole-mesh", []string{"--model", "toy", "--whole-mesh"}},
		{"--tp", []string{"--random", "1", "--tp", "8"}},
		{"--model", []string{"--random", "1", "--model", "llama3-8b"}},
		{"--gpus-per-host", []string{"--random", "1", "--world", "16", "--gpus-per-host", "2"}},
		{"--steps", []string{"--random", "1", "--steps", "3"}},
		{"--hidden", []string{"--random", "1", "--hidden", "64"}},
		{"--global-batch", []string{"--random", "1", "--global-batch", "64"}},
	} {
		code, _, stderr := runCLI(append(append([]string{"synth"}, c.args...), out)...)
		if code != exitInput || !strings.HasPrefix(stderr, "fastsim synth: "+c.flag+": ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, %q; want 2 and one line naming %s", c.args, code, stderr, c.flag)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a history was written")
	}
	// What each workload does read is still accepted.
	for _, args := range [][]string{
		{"--random", "2", "--world", "8", "--commands", "50", "--whole-mesh"},
		{"--layers", "4", "--pp", "2", "--steps", "1", "--gpus-per-host", "4"},
	} {
		if code, _, stderr := runCLI(append(append([]string{"synth"}, args...), out)...); code != exitOK {
			t.Errorf("%q: exit %d, %q", args, code, stderr)
		}
	}
}
