package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"syscall"
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
// An input that is not a regular file (a pipe, a terminal) may wait for
// its writer without end: with opt.Stop, a stop cuts such a read short
// (interruptible), so that the replay ends even then.
func replayInput(path string, opt replay.Options, progress io.Writer) (*replay.Result, error) {
	f, name := os.Stdin, "stdin"
	if path != "-" {
		var err error
		if f, err = openStoppable(path, opt.Stop); err != nil {
			return nil, &history.Error{File: path, Err: err}
		}
		defer f.Close()
		name = path
	}
	var src io.Reader = f
	size := int64(-1)
	st, err := f.Stat()
	switch {
	case err == nil && st.Mode().IsRegular():
		if st.Size() > 0 && path != "-" {
			size = st.Size()
		}
	case opt.Stop != nil:
		var release func()
		src, release = interruptible(f, path == "-", opt.Stop)
		defer release()
	}
	cr := &countingReader{r: src}
	if progress != nil {
		began := time.Now()
		opt.Progress = func(records int64) {
			fmt.Fprint(progress, progressLine(records, cr.n.Load(), size, time.Since(began)))
		}
	}
	return replay.Reader(cr, name, opt)
}

// openStoppable opens path for reading. Opening a named pipe waits for
// its writer (fifo(7)), and nothing can cut a waiting open(2) short: for
// a named pipe the open runs on a goroutine of its own, and a stop closed
// first returns errInterrupted at once (the goroutine stays in its open
// until a writer comes or the process exits, which it is about to).
func openStoppable(path string, stop <-chan struct{}) (*os.File, error) {
	if st, err := os.Stat(path); stop == nil || err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		return os.Open(path)
	}
	type opened struct {
		f   *os.File
		err error
	}
	done := make(chan opened, 1) // never blocks: the goroutine may outlive the wait
	go func() {
		f, err := os.Open(path)
		done <- opened{f, err}
	}()
	select {
	case o := <-done:
		return o.f, o.err
	case <-stop:
		return nil, errInterrupted
	}
}

// interruptible returns a reader of f (standard input when stdin is set),
// not a regular file, whose waiting Read returns an error once stop is
// closed; release ends what it started. Where the runtime's poller can
// wait on the file (a pipe or a terminal opened by name: os.Open adds it),
// the stop sets a read deadline in the past, which wakes the Read with
// os.ErrDeadlineExceeded, and reads cost what they did. Standard input
// was opened blocking by the parent, and making its file description
// non-blocking would change it for the shell too: a new description of
// the same pipe or terminal, opened from /dev/stdin, is used instead. A
// file neither can wait on (a socket on stdin) is read through a
// stopReader, a goroutine and a copy more.
func interruptible(f *os.File, stdin bool, stop <-chan struct{}) (r io.Reader, release func()) {
	if stdin {
		// O_NONBLOCK: opening a named pipe whose writer has left would
		// otherwise wait for another (fifo(7)). O_NOCTTY: a session
		// leader without a controlling terminal would otherwise take
		// the terminal it opens as one (open(2)), and its signals.
		if own, err := os.OpenFile("/dev/stdin", os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0); err == nil {
			if own.SetReadDeadline(time.Time{}) == nil {
				r, release := interruptible(own, false, stop)
				return r, func() { release(); own.Close() }
			}
			own.Close()
		}
	}
	if f.SetReadDeadline(time.Time{}) != nil { // no poller for it
		return newStopReader(f, stop), func() {}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-stop:
			f.SetReadDeadline(time.Now()) // in the past: a waiting Read returns
		case <-done:
		}
	}()
	return f, func() { close(done) }
}

// errInterrupted is what a stopReader returns once its stop is closed.
var errInterrupted = errors.New("interrupted (Ctrl-C) while waiting for input")

// stopReader reads r on a goroutine of its own, so that a read waiting on
// a pipe or a terminal can be given up: once stop is closed, Read returns
// errInterrupted at once, whether data has come or not. The goroutine
// reads into buffers of its own (two, passed back and forth over
// channels, so each has one owner at a time), never into the caller's;
// after a stop it stays in its read until data or the end arrive, or the
// process exits. Read must not be called from two goroutines at once, as
// for any io.Reader.
type stopReader struct {
	stop <-chan struct{}
	data chan chunk  // read chunks, from the goroutine
	free chan []byte // emptied buffers, back to it
	cur  []byte      // what is left of the chunk being read
	buf  []byte      // that chunk's buffer, to give back once emptied
	err  error       // the chunk's error, returned once cur is empty
}

// chunk is one read of the goroutine: the bytes and the read's error.
type chunk struct {
	b   []byte
	err error
}

// stopReadBytes is the size of a stopReader's buffers, a pipe's capacity
// on Linux (pipe(7): 65,536 bytes by default).
const stopReadBytes = 64 << 10

func newStopReader(r io.Reader, stop <-chan struct{}) *stopReader {
	s := &stopReader{stop: stop, data: make(chan chunk), free: make(chan []byte, 2)}
	s.free <- make([]byte, stopReadBytes)
	s.free <- make([]byte, stopReadBytes)
	go s.pump(r)
	return s
}

// pump reads r into the free buffers until an error (io.EOF included) or
// a stop.
func (s *stopReader) pump(r io.Reader) {
	for {
		var buf []byte
		select {
		case buf = <-s.free:
		case <-s.stop:
			return
		}
		n, err := r.Read(buf)
		select {
		case s.data <- chunk{buf[:n], err}:
		case <-s.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

func (s *stopReader) Read(p []byte) (int, error) {
	for len(s.cur) == 0 {
		select {
		case <-s.stop:
			return 0, errInterrupted
		default:
		}
		if s.err != nil {
			return 0, s.err
		}
		if s.buf != nil {
			s.free <- s.buf[:cap(s.buf)] // never blocks: it holds both buffers
			s.buf = nil
		}
		select {
		case c := <-s.data:
			s.buf, s.cur, s.err = c.b, c.b, c.err
		case <-s.stop:
			return 0, errInterrupted
		}
	}
	select {
	case <-s.stop:
		return 0, errInterrupted
	default:
	}
	n := copy(p, s.cur)
	s.cur = s.cur[n:]
	return n, nil
}

// progressLine is the progress text for records replayed after reading
// read of size bytes (size < 0: unknown) in elapsed time. The time left
// assumes the rest of the file goes as fast as what was read so far. It
// begins with clearLine, as the other commands' progress lines do.
func progressLine(records, read, size int64, elapsed time.Duration) string {
	if size <= 0 || read <= 0 {
		return fmt.Sprintf(clearLine+"fastsim: %d records replayed...", records)
	}
	read = min(read, size)
	pct := 100 * float64(read) / float64(size)
	left := time.Duration(float64(elapsed) * float64(size-read) / float64(read)).Round(time.Second)
	return fmt.Sprintf(clearLine+"fastsim: %d records replayed, %.0f%% of the input, about %s left...", records, pct, left)
}
