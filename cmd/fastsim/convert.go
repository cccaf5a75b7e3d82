package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/trace"
)

const convertUsage = `Usage: fastsim convert IN OUT

Converts the history IN to OUT without loss. IN's form is detected by its
magic bytes (JSON lines, plain, zstd or S2, or the binary form); OUT's form is
chosen by its name:

  NAME.fhist.zst               the binary form, zstd-compressed
  NAME.fhist.s2                the binary form in S2 framing: about 1.8
                               times the bytes of zstd, decompressed more
                               than twice as fast
  NAME.fhist                   the binary form, uncompressed (about 5x the
                               bytes; read without decompressing)
  NAME.hist.zst                JSON lines in a zstd frame
  NAME.hist                    plain JSON lines
  -                            standard output, plain JSON lines

IN may be "-", standard input. OUT is written to a temporary file and
renamed when complete; it may not be IN itself. When OUT is "-" the line
saying what was converted goes to standard error.

Flags:
`

func convertCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("convert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quiet := fs.Bool("quiet", false, "print nothing on success")
	positional, code := parseArgs(fs, stdout, convertUsage, args, 2, "IN and OUT")
	if code >= 0 {
		return code
	}
	in, out := positional[0], positional[1]
	form, ok := history.FormOf(out)
	if out == trace.Stdout {
		form, ok = history.FormJSON, true // text a terminal or a pipe can read
	}
	if !ok {
		fmt.Fprintf(stderr, "fastsim convert: %s: want a name ending in .fhist, .fhist.zst, .fhist.s2, .hist or .hist.zst, or - (standard output)\n", out)
		return exitInput
	}
	if !checkDests("fastsim convert", stderr, []string{in}, dest{"OUT", out}) {
		return exitInput
	}
	stdout = reportTo(stdout, stderr, dest{"OUT", out})
	began := time.Now()
	f, name := os.Stdin, "stdin" // errors name standard input as a replay's do
	if in != "-" {
		var err error
		if f, err = os.Open(in); err != nil {
			return convertErr(stderr, &history.Error{File: in, Err: err})
		}
		defer f.Close()
		name = in
	}
	cr := &countingReader{r: f}
	r, err := history.NewReader(cr, name)
	if err != nil {
		return convertErr(stderr, err)
	}
	defer r.Close()
	stopProgress := func() {}
	if progress := progressTo(stderr, *quiet); progress != nil {
		// Stopped before the last line is written, which it would
		// otherwise share; once, whichever way the command ends.
		stopProgress = sync.OnceFunc(convertProgress(progress, cr, f, began))
		defer stopProgress()
	}
	r.KeepExtra = true
	var records int64
	err = writeAtomic(out, func(w io.Writer) error {
		hw, err := history.NewWriter(w, form, r.Header(), r.RawHeader())
		if err != nil {
			return err
		}
		if records, err = history.Convert(r, hw); err != nil {
			return err
		}
		return hw.Close()
	})
	stopProgress()
	if err != nil {
		return convertErr(stderr, err)
	}
	if !*quiet {
		if out == trace.Stdout {
			out = "standard output"
		}
		fmt.Fprintf(stdout, "%s: %s in %.3f s\n", out, plural(records, "record"), time.Since(began).Seconds())
	}
	return exitOK
}

func convertErr(stderr io.Writer, err error) int {
	var he *history.Error
	if errors.As(err, &he) {
		fmt.Fprintln(stderr, oneLine(err)) // FILE:LINE: what is wrong
		return exitInput
	}
	fmt.Fprintf(stderr, "fastsim convert: %s\n", oneLine(err))
	if errors.Is(err, os.ErrNotExist) {
		return exitInput
	}
	return exitError
}

// decodeOnlyCmd is replay --decode-only: decode every record, simulate
// nothing, print the count and the wall time.
func decodeOnlyCmd(path string, quiet bool, stdout, stderr io.Writer) int {
	var records int64
	var wall time.Duration
	var err error
	if path == "-" {
		records, wall, err = replay.DecodeOnlyReader(os.Stdin, "stdin")
	} else {
		records, wall, err = replay.DecodeOnly(path)
	}
	if err != nil {
		fmt.Fprintln(stderr, oneLine(err))
		var he *history.Error
		if errors.As(err, &he) || errors.Is(err, os.ErrNotExist) {
			return exitInput
		}
		return exitError
	}
	rate := 0.0
	if s := wall.Seconds(); s > 0 {
		rate = float64(records) / s
	}
	if !quiet {
		fmt.Fprintf(stdout, "decoded %s in %.3f s (%.0f records/s), no simulation\n", plural(records, "record"), wall.Seconds(), rate)
	}
	return exitOK
}

// convertProgress redraws a progress line on w about once a second while
// a conversion reads f through cr: the share of the file read and the time
// left; stop ends it and clears the line.
func convertProgress(w io.Writer, cr *countingReader, f *os.File, began time.Time) (stop func()) {
	size := int64(-1)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
		size = st.Size()
	}
	return everySecond(w, func() string {
		read := cr.n.Load()
		if size <= 0 || read <= 0 {
			return fmt.Sprintf("fastsim convert: %d bytes read...", read)
		}
		read = min(read, size)
		left := time.Duration(float64(time.Since(began)) * float64(size-read) / float64(read)).Round(time.Second)
		return fmt.Sprintf("fastsim convert: %.0f%% of the input, about %s left...", 100*float64(read)/float64(size), left)
	})
}

// everySecond redraws line() on w once a second until stop, which waits
// for the last redraw and clears the line.
func everySecond(w io.Writer, line func() string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				fmt.Fprint(w, clearLine+line())
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		fmt.Fprint(w, clearLine)
	}
}
