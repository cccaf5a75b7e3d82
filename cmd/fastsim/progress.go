package main

import (
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// clearLine returns the cursor to the start of a terminal's line and
// clears it: every progress line begins with it, so that a shorter line
// ("9s left") does not keep the end of the longer one before it.
const clearLine = "\r\033[K"

// progressEvery is how often a progress line is written where stderr is
// not a terminal (a log file, a CI job's output), and how long a run goes
// before the first: a short run's output is unchanged, and a run of an
// hour still shows, twice a minute, that it is alive and how far it got.
// Tests shorten it.
var progressEvery = 30 * time.Second

// progressTo returns where a command draws its progress line, or nil
// with quiet. On a terminal that is stderr itself, redrawn in place.
// Anywhere else redraws would pile up as one long line full of escape
// codes, so there each redraw is cut to its text and written as a line
// of its own, at most one every progressEvery, the first after
// progressEvery; the clears that end a progress line are dropped.
func progressTo(stderr io.Writer, quiet bool) io.Writer {
	if quiet {
		return nil
	}
	if isTerminal(os.Stderr) {
		return stderr
	}
	return newLogProgress(stderr, time.Now)
}

// logProgress is progressTo's writer off a terminal. Commands draw from
// more than one goroutine (convert's and synth's tickers), hence the lock.
type logProgress struct {
	mu    sync.Mutex
	w     io.Writer
	now   func() time.Time
	began time.Time
	last  time.Time // the last line written (zero: none yet)
}

func newLogProgress(w io.Writer, now func() time.Time) *logProgress {
	return &logProgress{w: w, now: now, began: now()}
}

// Write takes one redraw: clearLine followed by the line's text (or
// nothing, to clear it). It never fails: a progress line that could not be
// written is not worth stopping a run for, and the report after it
// finds the same error.
func (l *logProgress) Write(p []byte) (int, error) {
	text := strings.TrimPrefix(string(p), clearLine)
	if text == "" {
		return len(p), nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.now()
	if t.Sub(l.began) < progressEvery || (!l.last.IsZero() && t.Sub(l.last) < progressEvery) {
		return len(p), nil
	}
	l.last = t
	_, _ = io.WriteString(l.w, strings.TrimSuffix(text, "...")+"\n")
	return len(p), nil
}
