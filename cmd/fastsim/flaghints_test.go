package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestFlagHints: a flag that predict or search does not define, but a
// sibling command does, is refused in one line that says where that choice
// lives; every hint is for a flag the command lacks and another defines.
func TestFlagHints(t *testing.T) {
	helps := map[string]string{}
	for _, c := range []string{"synth", "predict", "search", "replay"} {
		code, out, _ := runCLI("help", c)
		if code != exitOK {
			t.Fatalf("help %s: exit %d", c, code)
		}
		helps[c] = out
	}
	for cmd, hints := range flagHints {
		for name, hint := range hints {
			if strings.Contains(helps[cmd], "\n  -"+name+" ") || strings.Contains(helps[cmd], "\n  -"+name+"\n") {
				t.Errorf("%s defines --%s: its hint is never shown", cmd, name)
			}
			sibling := false
			for c, h := range helps {
				sibling = sibling || (c != cmd && (strings.Contains(h, "\n  -"+name+" ") || strings.Contains(h, "\n  -"+name+"\n")))
			}
			if !sibling {
				t.Errorf("%s --%s: no other command defines it", cmd, name)
			}
			code, stdout, stderr := runCLI(cmd, "--"+name, "1")
			want := fmt.Sprintf("fastsim %s: flag provided but not defined: -%s: %s (see fastsim %s --help)\n", cmd, name, hint, cmd)
			if code != exitInput || stdout != "" || stderr != want {
				t.Errorf("%s --%s: exit %d, stderr %q, want %q", cmd, name, code, stderr, want)
			}
		}
	}
	// A flag no command defines gets no hint.
	if _, _, stderr := runCLI("predict", "--nosuch"); stderr != "fastsim predict: flag provided but not defined: -nosuch (see fastsim predict --help)\n" {
		t.Errorf("--nosuch: %q", stderr)
	}
}
