package main

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestREADMEPredictExamples runs the `fastsim predict` commands of the
// README's "Choose a layout" section, read from the README itself, and
// checks the figures the prose after each quotes: its step time, MFU and
// peak memory, and for the second the step with `--recompute full` in
// place of `--recompute selective --sequence-parallel`. The README's
// figures are the program's own, so this does not check their truth
// (bench/VALIDATION.md and internal/predict do); it keeps the front door
// from going stale when the model moves.
func TestREADMEPredictExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("three predictions of a 64-GPU layout")
	}
	text, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```sh\ngo run ./cmd/fastsim predict (.*?)\n```\n\n(.*?)\n\n")
	found := block.FindAllSubmatch(text, -1)
	if len(found) < 2 {
		t.Fatalf("README: %d predict examples followed by prose, want 2", len(found))
	}
	for i, m := range found[:2] {
		args := strings.Fields(strings.ReplaceAll(string(m[1]), "\\\n", " "))
		prose := strings.Join(strings.Fields(string(m[2])), " ")
		out := predictOut(t, args)
		step, mfu, gib := figure(t, out, `step time +([0-9.]+) s`), figure(t, out, `MFU ([0-9.]+%)`), figure(t, out, `peak ([0-9.]+ GiB)`)
		for _, want := range []string{"prints `step time " + step + " s`", "MFU " + mfu, gib} {
			if !strings.Contains(prose, want) {
				t.Errorf("README example %d (%s): the prose after it lacks %q:\n%s", i+1, strings.Join(args, " "), want, prose)
			}
		}
		if i != 1 {
			continue
		}
		full := strings.Replace(strings.Join(args, " "), "--recompute selective --sequence-parallel", "--recompute full", 1)
		if full == strings.Join(args, " ") {
			t.Fatalf("README example 2 has no --recompute selective --sequence-parallel")
		}
		step = figure(t, predictOut(t, strings.Fields(full)), `step time +([0-9.]+) s`)
		if want := "--sequence-parallel`, " + step + " s"; !strings.Contains(prose, want) {
			t.Errorf("README example 2 with --recompute full: the prose lacks %q:\n%s", want, prose)
		}
	}
}

// predictOut runs `fastsim predict` with args in process and returns what
// it printed.
func predictOut(t *testing.T, args []string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"predict"}, args...), &stdout, &stderr); code != exitOK {
		t.Fatalf("predict %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
	}
	return stdout.String()
}

// figure is the first submatch of pattern in out.
func figure(t *testing.T, out, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %q in the output:\n%s", pattern, out)
	}
	return m[1]
}

// TestREADMEValidationTable: the README's validation table quotes
// bench/VALIDATION.md's predictions table, which
// TestValidationDevelopmentPoints (internal/predict) holds to what this
// tree predicts. Each timed row of the README (step times, the 7.5B
// row's TFLOP/s) must give the fastsim value and error of its point.
func TestREADMEValidationTable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	validation, err := os.ReadFile("../../bench/VALIDATION.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| ([a-z0-9-]+) \| (step_time_s|tflops_per_gpu) \| measured \| [0-9.]+ \| ([0-9.]+) \| ([+-][0-9.]+%) \|$`)
	want := row.FindAllStringSubmatch(string(validation), -1)
	readmeRow := regexp.MustCompile(`(?m)^\| [^|]+ \| (step time|TFLOP/s per GPU[^|]*) \| [^|]+ \| ([0-9.]+)( s)? \| ([+-][0-9.]+%) \|$`)
	got := readmeRow.FindAllStringSubmatch(string(readme), -1)
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("README has %d timed validation rows, bench/VALIDATION.md %d", len(got), len(want))
	}
	for i := range want {
		// The README may write more digits (1.460 for 1.46): compare at
		// the table's.
		r, _ := strconv.ParseFloat(got[i][2], 64)
		digits := 0
		if k := strings.IndexByte(want[i][3], '.'); k >= 0 {
			digits = len(want[i][3]) - k - 1
		}
		if strconv.FormatFloat(r, 'f', digits, 64) != want[i][3] || got[i][4] != want[i][4] {
			t.Errorf("README row %d (%s): %s, error %s; bench/VALIDATION.md's %s: %s, error %s", i+1, got[i][1], got[i][2], got[i][4], want[i][1], want[i][3], want[i][4])
		}
	}
}
