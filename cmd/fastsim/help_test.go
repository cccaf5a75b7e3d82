package main

import (
	"strings"
	"testing"
)

// TestHelpToStdout: every command's --help goes to standard output with
// exit status 0 (so `fastsim replay --help | less` pages it), and
// `fastsim help COMMAND` prints exactly the same text.
func TestHelpToStdout(t *testing.T) {
	for _, cmd := range [][]string{{"replay"}, {"synth"}, {"convert"}, {"search"}, {"search", "merge"}, {"predict"}, {"ops"}, {"hardware"}} {
		name := strings.Join(cmd, " ")
		code, help, stderr := runCLI(append(cmd, "--help")...)
		if code != exitOK || stderr != "" || !strings.HasPrefix(help, "Usage: fastsim "+name+" ") {
			t.Errorf("%s --help: exit %d, stderr %q, stdout %.60q; want 0, nothing on stderr, the usage on stdout", name, code, stderr, help)
		}
		code, viaHelp, stderr := runCLI(append([]string{"help"}, cmd...)...)
		if code != exitOK || stderr != "" || viaHelp != help {
			t.Errorf("help %s: exit %d, stderr %q, stdout %.60q; want the text of %s --help", name, code, stderr, viaHelp, name)
		}
	}
	code, general, _ := runCLI("help")
	if code != exitOK || !strings.Contains(general, "fastsim help COMMAND") {
		t.Errorf("help: exit %d, %.100q; want the usage naming 'fastsim help COMMAND'", code, general)
	}
	if code, stdout, stderr := runCLI("help", "bogus"); code != exitInput || stdout != "" || !strings.HasPrefix(stderr, `fastsim help: unknown command "bogus"`) {
		t.Errorf("help bogus: exit %d, stdout %q, stderr %.80q", code, stdout, stderr)
	}
}

// TestSearchModelHelpComplete: the help of search's --model ends its first
// sentence (it said "(see README);" and stopped).
func TestSearchModelHelpComplete(t *testing.T) {
	_, stdout, stderr := runCLI("search", "--help")
	_, model, _ := strings.Cut(stdout+stderr, "  -model NAME\n")
	model, _, _ = strings.Cut(model, "\n  -")
	if model == "" || strings.Contains(model, ";\n") {
		t.Errorf("search --model help: %q", model)
	}
}
