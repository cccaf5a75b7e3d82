package main

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/replay"
)

// largeWorld is the world size from which an ungrouped replay gets a hint
// to try --group-workers: beyond a few thousand ranks, simulating every rank
// separately costs memory and time in proportion to the world, while a
// training job's ranks mostly fall into a few groups.
const largeWorld = 4096

// countingReader counts the bytes read through it, for the progress line.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// replayInput replays path ("-": standard input). On a terminal it shows
// progress: the records replayed and, when the input's size is known (a
// regular file), the share of it read and an estimate of the time left.
func replayInput(path string, opt replay.Options, progress bool, stderr io.Writer) (*replay.Result, error) {
	var src io.Reader
	name := path
	size := int64(-1)
	if path == "-" {
		src, name = os.Stdin, "stdin"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, &history.Error{File: path, Err: err}
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
			size = st.Size()
		}
		src = f
	}
	cr := &countingReader{r: src}
	if progress {
		began := time.Now()
		opt.Progress = func(records int64) {
			fmt.Fprint(stderr, progressLine(records, cr.n.Load(), size, time.Since(began)))
		}
	}
	return replay.Reader(cr, name, opt)
}

// progressLine is the progress text for records replayed after reading
// read of size bytes (size < 0: unknown) in elapsed time. The time left
// assumes the rest of the file goes as fast as what was read so far. It
// returns to the start of the line and clears it ("\r\033[K"), as the
// other commands' progress lines do: a shorter line ("9s left") would
// otherwise keep the end of the longer one before it ("10s left...").
func progressLine(records, read, size int64, elapsed time.Duration) string {
	if size <= 0 || read <= 0 {
		return fmt.Sprintf("\r\033[Kfastsim: %d records replayed...", records)
	}
	read = min(read, size)
	pct := 100 * float64(read) / float64(size)
	left := time.Duration(float64(elapsed) * float64(size-read) / float64(read)).Round(time.Second)
	return fmt.Sprintf("\r\033[Kfastsim: %d records replayed, %.0f%% of the input, about %s left...", records, pct, left)
}
