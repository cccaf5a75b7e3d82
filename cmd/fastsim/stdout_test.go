package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runChild runs the command line in a child process, whose standard output
// is its own (an output "-" writes to the process's standard output, not to
// run's writer), and returns the exit status and both outputs.
func runChild(t *testing.T, args ...string) (code int, stdout, stderr []byte) {
	t.Helper()
	cmd := child(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.Bytes(), errb.Bytes()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.Bytes(), errb.Bytes()
}

// TestOutputOnStdoutAlone: an output sent to standard output ("-") is all
// that goes there: the human report moves to stderr, so the output reads
// back whole (it ran into the report: `--summary-json - | jq` failed).
func TestOutputOnStdoutAlone(t *testing.T) {
	isJSON := func(b []byte) bool { return json.Valid(b) }
	isHTML := func(b []byte) bool {
		return bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) && bytes.HasSuffix(bytes.TrimSpace(b), []byte("</html>"))
	}
	// A pickle of protocol 2 starts with PROTO 2 and ends with STOP.
	isPickle := func(b []byte) bool {
		return bytes.HasPrefix(b, []byte{0x80, 2}) && bytes.HasSuffix(b, []byte("."))
	}
	isCSV := func(b []byte) bool {
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		return len(lines) > 1 && strings.HasPrefix(lines[0], "pp,dp,tp,") && strings.Count(lines[1], ",") == strings.Count(lines[0], ",")
	}
	for _, c := range []struct {
		args   []string
		valid  func([]byte) bool
		report string // a piece of the report, which must be on stderr
	}{
		{[]string{"replay", "--report-only", "--summary-json", "-", example}, isJSON, "simulated time"},
		{[]string{"replay", "--report-only", "--html", "-", example}, isHTML, "simulated time"},
		{[]string{"replay", "--report-only", "--memory-snapshot", "-", example}, isPickle, "simulated time"},
		{[]string{"ops", "--json", "-", example}, isJSON, "timing key"},
		{[]string{"predict", "--layers", "4", "--hidden", "1024", "--seq", "1024", "--world", "2", "--tp", "2", "--global-batch", "8", "--micro-batch", "2", "--json", "-"}, isJSON, "step time"},
		{[]string{"search", "--world", "8", "--layers", "4", "--json", "-"}, isJSON, "layouts enumerated"},
		{[]string{"search", "--world", "8", "--layers", "4", "--csv", "-"}, isCSV, "layouts enumerated"},
	} {
		code, stdout, stderr := runChild(t, c.args...)
		if code != exitOK {
			t.Errorf("%q: exit %d: %s", c.args, code, stderr)
			continue
		}
		if !c.valid(stdout) {
			t.Errorf("%q: standard output is not the output alone: %.300q", c.args, stdout)
		}
		if !bytes.Contains(stderr, []byte(c.report)) {
			t.Errorf("%q: the report (%q) is not on stderr: %.300q", c.args, c.report, stderr)
		}
	}
}

// TestTwoOutputsOnStdoutRefused: two outputs on "-" are a usage error
// naming both flags, in one line, before anything is written (they were
// written one after the other into one stream).
func TestTwoOutputsOnStdoutRefused(t *testing.T) {
	for _, c := range []struct {
		args       []string
		flag1, fl2 string
	}{
		{[]string{"replay", "--trace", "-", "--summary-json", "-", example}, "--trace", "--summary-json"},
		// /dev/stdout is another name of standard output.
		{[]string{"replay", "--trace", "/dev/stdout", "--summary-json", "-", example}, "--trace", "--summary-json"},
		{[]string{"replay", "--report-only", "--html", "-", "--memory-snapshot", "-", example}, "--memory-snapshot", "--html"},
		{[]string{"search", "--world", "8", "--layers", "4", "--json", "-", "--csv", "-"}, "--json", "--csv"},
		{[]string{"predict", "--layers", "4", "--hidden", "1024", "--world", "2", "--json", "-", "--cpuprofile", "-"}, "--json", "--cpuprofile"},
	} {
		code, stdout, stderr := runChild(t, c.args...)
		if code != exitInput || len(stdout) != 0 || bytes.Count(stderr, []byte("\n")) != 1 ||
			!bytes.Contains(stderr, []byte(c.flag1)) || !bytes.Contains(stderr, []byte(c.fl2)) {
			t.Errorf("%q: exit %d, stdout %.100q, stderr %q; want %d, nothing written, one line naming %s and %s",
				c.args, code, stdout, stderr, exitInput, c.flag1, c.fl2)
		}
	}
}

// TestConvertStdio: convert reads standard input for IN "-" and writes
// plain JSON lines to standard output for OUT "-" (both were refused, IN
// as a missing file named "-"); the line saying what it converted then
// goes to stderr. JSON lines to binary and back give the history's bytes.
func TestConvertStdio(t *testing.T) {
	want, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "e.fhist")
	cmd := child("convert", "-", bin)
	cmd.Stdin = bytes.NewReader(want)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("convert - %s: %v: %s", bin, err, errb.String())
	}
	code, stdout, stderr := runChild(t, "convert", bin, "-")
	if code != exitOK || !bytes.Equal(stdout, want) || !bytes.HasPrefix(stderr, []byte("standard output: ")) {
		t.Errorf("convert %s -: exit %d, stderr %q, stdout equals the history: %v", bin, code, stderr, bytes.Equal(stdout, want))
	}
	// A bad history on standard input is named as a replay names it.
	cmd = child("convert", "-", "-")
	cmd.Stdin = strings.NewReader("{\"x\":1}\n")
	errb.Reset()
	cmd.Stderr = &errb
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInput || !strings.HasPrefix(errb.String(), "stdin:1: ") {
		t.Errorf("bad standard input: %v, %q; want exit %d and stdin:1:", err, errb.String(), exitInput)
	}
}
