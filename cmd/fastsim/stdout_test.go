package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// fullWriter fails every write, as /dev/full does.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestReportWriteFailureFails: a command whose report cannot be written to
// standard output exits 1 and says so, instead of exiting 0 with nothing
// written (`fastsim hardware a100-80gb > spec.json` on a full disk).
func TestReportWriteFailureFails(t *testing.T) {
	for _, args := range [][]string{
		{"hardware", "a100-80gb"},
		{"help"},
		{"replay", "--report-only", "../../examples/train_step.hist"},
	} {
		var stderr bytes.Buffer
		code := run(args, fullWriter{}, &stderr)
		if code != exitError || !strings.Contains(stderr.String(), "fastsim "+args[0]+": write standard output: no space left on device") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming the failed write", args, code, stderr.String(), exitError)
		}
	}
}

// TestDoubledInterruptIsOne: GNU timeout -s INT signals the process and
// then its process group, so one interrupt arrives twice within
// microseconds; only a SIGINT sameInterrupt or more after the first is a
// second Ctrl-C, which exits at once without the report.
func TestDoubledInterruptIsOne(t *testing.T) {
	first := time.Unix(1000, 0)
	for _, c := range []struct {
		after  time.Duration
		second bool
	}{{0, false}, {50 * time.Microsecond, false}, {150 * time.Millisecond, false}, {200 * time.Millisecond, true}, {2 * time.Second, true}} {
		if got := secondInterrupt(first, first.Add(c.after)); got != c.second {
			t.Errorf("SIGINT %v after the first: second Ctrl-C %v, want %v", c.after, got, c.second)
		}
	}
}
