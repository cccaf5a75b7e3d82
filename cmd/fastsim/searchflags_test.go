package main

import (
	"regexp"
	"strconv"
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

// TestSearchEmptySpaceNamesItsLimits: a space left without a layout by
// what it asks for, not by the sizes, says which limits did it. Llama-2 7B
// (32 layers, 32 heads) on 1 GPU has one layout, tp 1 and dp 1: ZeRO 3
// needs dp > 1. On 16 GPUs with tp at most 1, sequence parallelism needs
// tp > 1, and ZeRO 1 is no limit there (pp 1, dp 16 has it). On 2 GPUs
// every layout has tp or dp 2, not both: sequence parallelism with ZeRO 3
// leaves none, and so does either with tp at most 1 (pp 2, dp 1, tp 1 has
// neither). 15 GPUs divide neither the 32 layers nor the batch of 32 into
// more than one stage or replica, and tp 15 does not split 32 heads.
func TestSearchEmptySpaceNamesItsLimits(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--world", "1", "--global-batch", "1", "--zero", "3"},
			"fastsim search: no layout of 1 GPU that divides 32 layers, hidden 4096 (32 heads) and batch 1 trains as asked: a ZeRO stage above 0 needs dp > 1\n"},
		{[]string{"--world", "16", "--global-batch", "32", "--max-tp", "1", "--sequence-parallels", "true", "--zeros", "1"},
			"fastsim search: no layout of 16 GPUs that divides 32 layers, hidden 4096 (32 heads) and batch 32 trains as asked: sequence parallelism needs tp > 1 and tp is at most --max-tp 1\n"},
		{[]string{"--world", "2", "--global-batch", "2", "--zero", "3", "--max-tp", "1", "--sequence-parallel"},
			"fastsim search: no layout of 2 GPUs that divides 32 layers, hidden 4096 (32 heads) and batch 2 trains as asked: sequence parallelism needs tp > 1, a ZeRO stage above 0 needs dp > 1 and tp is at most --max-tp 1\n"},
		{[]string{"--world", "1", "--global-batch", "1", "--sequence-parallel", "--gpus-per-host", "1"},
			"fastsim search: no layout of 1 GPU that divides 32 layers, hidden 4096 (32 heads) and batch 1 trains as asked: sequence parallelism needs tp > 1\n"},
		{[]string{"--world", "15", "--global-batch", "32"},
			"fastsim search: no layout of 15 GPUs divides 32 layers, hidden 4096 (32 heads) and batch 32\n"},
	} {
		args := append([]string{"search", "--model", "llama2-7b", "--hardware", "a100-80gb", "--quiet"}, c.args...)
		if code, stdout, stderr := runCLI(args...); code != exitInput || stdout != "" || stderr != c.want {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, stderr, c.want)
		}
	}
}

// TestSearchNothingFitsSaysHowFar: when every layout is pruned by memory
// (Llama-2 7B's 18 bytes a parameter, over 100 GB, on one 85.1 GB GPU:
// three layouts, one per recomputation policy, all pp 1, dp 1, tp 1),
// the empty table is followed by the lowest memory bound and its layout,
// a bound above the GPU's memory; --quiet prints nothing, and a search
// with a layout that fits prints no such line.
func TestSearchNothingFitsSaysHowFar(t *testing.T) {
	args := []string{"search", "--model", "llama2-7b", "--hardware", "a100-80gb", "--world", "1", "--global-batch", "1"}
	code, stdout, stderr := runCLI(args...)
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	m := regexp.MustCompile(`(?m)^no layout fits in 85\.1 GB: the lowest memory bound is ([0-9.]+) GB, of pp 1, dp 1, tp 1, micro 1, 1f1b, recompute (none|selective|full)\n\z`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no line naming the lowest memory bound at the end of %q", stdout)
	}
	if gb, err := strconv.ParseFloat(m[1], 64); err != nil || gb <= 85.1 {
		t.Errorf("lowest bound %s GB: it would fit", m[1])
	}
	// A shard says it speaks for itself.
	if _, stdout, _ := runCLI(append(args, "--shard", "1/2")...); !strings.Contains(stdout, "\nno layout of shard 1/2 fits in 85.1 GB: the lowest memory bound is ") {
		t.Errorf("--shard 1/2: %q", stdout)
	}
	if code, stdout, _ := runCLI(append(args, "--quiet")...); code != exitOK || stdout != "" {
		t.Errorf("--quiet: exit %d, %q", code, stdout)
	}
	if _, stdout, _ := runCLI("search", "--model", "llama2-7b", "--hardware", "a100-80gb", "--world", "8", "--global-batch", "8", "--schedule", "1f1b", "--recompute", "full", "--zero", "1", "--sequence-parallel"); !strings.Contains(stdout, " yes\n") || strings.Contains(stdout, "no layout fits") {
		t.Errorf("a search with layouts that fit: %q", stdout)
	}
}
