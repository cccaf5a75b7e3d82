package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestQuietSynthAndOps: synth and ops take --quiet, as every other
// command does: on a terminal (util-linux script gives them one) they
// write nothing to it, and ops prints no table. Without --quiet, synth on
// a terminal writes at least the escape that clears its progress line
// when it ends, so the check can fail; whether a run lasts past the
// second after which a progress line is drawn depends on the machine.
func TestQuietSynthAndOps(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "long.hist")
	long := []string{"synth", "--quiet", "--pp", "2", "--dp", "4", "--layers", "16", "--hidden", "256", "--seq", "128", "--batch", "16", "--micro", "4", "--steps", "120", hist}
	if code, stdout, stderr := runCLI(long...); code != exitOK || stdout != "" || stderr != "" {
		t.Fatalf("synth --quiet: exit %d, %q, %q", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI("ops", "--quiet", hist); code != exitOK || stdout != "" || stderr != "" {
		t.Fatalf("ops --quiet: exit %d, %q, %q", code, stdout, stderr)
	}
	if testing.Short() {
		return
	}
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("no script(1) to give the child a terminal")
	}
	for _, args := range [][]string{long, {"ops", "--quiet", hist}} {
		cmd := exec.Command("script", "-q", "-e", "-c", os.Args[0]+" -test.run=^$", "/dev/null")
		cmd.Env = append(os.Environ(), "FASTSIM_CHILD="+strings.Join(args, "\x1f"))
		began := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v: %s", args, err, out)
		}
		t.Logf("%s --quiet on a terminal: %v", args[0], time.Since(began))
		if len(bytes.TrimSpace(out)) != 0 {
			t.Errorf("%s --quiet wrote %q", args[0], out)
		}
	}
}
