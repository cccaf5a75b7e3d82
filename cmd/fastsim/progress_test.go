package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestLogProgress checks the progress writer used where stderr is not a
// terminal: nothing in a run's first progressEvery, then a plain line (no
// escape codes, no trailing "...") at most once every progressEvery; the
// clear that ends a progress line writes nothing.
func TestLogProgress(t *testing.T) {
	var out bytes.Buffer
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	clock := t0
	l := newLogProgress(&out, func() time.Time { return clock })
	at := func(d time.Duration, text string) {
		t.Helper()
		clock = t0.Add(d)
		n, err := fmt.Fprint(l, text)
		if err != nil || n != len(text) {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", text, n, err, len(text))
		}
	}
	at(0, clearLine+"fastsim search: 1/9 layouts...")
	at(progressEvery-time.Nanosecond, clearLine+"fastsim search: 2/9 layouts...")
	if out.Len() != 0 {
		t.Fatalf("a line within the first %v: %q", progressEvery, out.String())
	}
	at(progressEvery, clearLine+"fastsim search: 3/9 layouts...")
	at(progressEvery+time.Second, clearLine+"fastsim search: 4/9 layouts...")
	at(progressEvery+2*time.Second, clearLine)
	at(2*progressEvery-time.Nanosecond, clearLine+"fastsim search: 5/9 layouts...")
	at(2*progressEvery, clearLine+"fastsim search: 6/9 layouts, 0.1/s, 30s left")
	at(3*progressEvery, clearLine)
	want := "fastsim search: 3/9 layouts\nfastsim search: 6/9 layouts, 0.1/s, 30s left\n"
	if out.String() != want {
		t.Fatalf("wrote %q, want %q", out.String(), want)
	}
}

// TestProgressInALog runs a search with stderr a buffer (no terminal) and
// lines due at once: each progress line is a line of its own, with no
// escape code, and the report is as without them. (A search reports each
// layout; a replay, a prediction, a conversion and synth report once a
// second, too seldom for a test's run, and draw through the same writer.)
func TestProgressInALog(t *testing.T) {
	if isTerminal(os.Stderr) {
		t.Skip("stderr is a terminal: progressTo draws in place there")
	}
	defer func(d time.Duration) { progressEvery = d }(progressEvery)
	args := []string{"search", "--world", "4", "--layers", "2", "--hidden", "64", "--seq", "16", "--batch", "4", "--top", "2"}
	progressEvery = time.Hour
	code, quietOut, quietErr := runCLI(args...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, quietErr)
	}
	progressEvery = 0
	code, out, errText := runCLI(args...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errText)
	}
	if strings.ContainsAny(errText, "\033\r") {
		t.Errorf("an escape code or carriage return in a log: %q", errText)
	}
	var progress, rest []string
	for _, l := range strings.SplitAfter(errText, "\n") {
		if strings.HasPrefix(l, "fastsim search: ") {
			progress = append(progress, l)
		} else if l != "" {
			rest = append(rest, l)
		}
	}
	if len(progress) == 0 {
		t.Errorf("no progress line in %q", errText)
	}
	// The reports hold timings; their lines must agree in number.
	if got, want := strings.Count(out, "\n"), strings.Count(quietOut, "\n"); got != want {
		t.Errorf("%d lines of report with progress lines, %d without", got, want)
	}
	if got, want := len(rest), strings.Count(quietErr, "\n"); got != want {
		t.Errorf("%d other lines on stderr with progress lines, %d without:\n%s\n---\n%s", got, want, strings.Join(rest, ""), quietErr)
	}
}
