package main

import (
	"strings"
	"testing"
)

// TestSearchFlagValidation: each bad search flag is refused in one line
// that names it and says what is wrong with its value: a negative world
// is not "required", an empty list is not a silent search of one value,
// a value listed twice is not searched twice,
// --batch beside --global-batch is not "last wins", and a negative
// --max-tp is not described as "no limit", which 0 is not (0 is the GPUs
// of a host, as --help says).
func TestSearchFlagValidation(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--world", "-4"}, "fastsim search: --world -4: want 1..16777216 GPUs"},
		{[]string{"--world", "0"}, "fastsim search: --world 0: want 1..16777216 GPUs"},
		{[]string{"--layers", "4"}, "fastsim search: --world is required"},
		{[]string{"--world", "8", "--layers", "4", "--recomputes", ""}, `fastsim search: --recomputes "": an empty list`},
		{[]string{"--world", "8", "--layers", "4", "--schedules", ""}, `fastsim search: --schedules "": an empty list`},
		{[]string{"--world", "8", "--layers", "4", "--schedules", "1f1b,interleaved:2,1f1b"}, `fastsim search: --schedules "1f1b,interleaved:2,1f1b": "1f1b" given twice`},
		{[]string{"--world", "8", "--layers", "4", "--zeros", ""}, `fastsim search: --zeros "": an empty list`},
		{[]string{"--world", "8", "--layers", "4", "--sequence-parallels", " "}, `fastsim search: --sequence-parallels " ": an empty list`},
		{[]string{"--world", "8", "--layers", "4", "--batch", "8", "--global-batch", "16"}, "fastsim search: --batch and --global-batch: give one"},
		{[]string{"--world", "8", "--layers", "4", "--max-tp", "-1"}, "fastsim search: --max-tp -1: want 1 or more, or 0 for the GPUs of a host"},
	} {
		code, _, stderr := runCLI(append([]string{"search", "--quiet"}, c.args...)...)
		if code != exitInput || !strings.HasPrefix(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestSearchHelpDefaults: search tries every schedule and recomputation
// unless one is given, so its help shows no single default for them
// (predict's 1f1b and none), and says what it searches instead.
func TestSearchHelpDefaults(t *testing.T) {
	_, stdout, stderr := runCLI("search", "--help")
	help := stdout + stderr
	for _, bad := range []string{`(default "none")`, `(default "1f1b")`} {
		if strings.Contains(help, bad) {
			t.Errorf("search --help shows %s", bad)
		}
	}
	for _, want := range []string{"default: each of --schedules", "default: each of --recomputes", "default: each of --zeros", "default: off and on"} {
		if !strings.Contains(help, want) {
			t.Errorf("search --help lacks %q", want)
		}
	}
}
