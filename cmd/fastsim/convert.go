package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/replay"
)

const convertUsage = `Usage: fastsim convert IN OUT

Converts the history IN to OUT without loss. IN's form is detected by its
magic bytes (JSON lines, plain or zstd, or the binary form); OUT's form is
chosen by its name:

  NAME.fhist.zst               the binary form, zstd-compressed
  NAME.fhist                   the binary form, uncompressed (about 5x the
                               bytes; read without decompressing)
  NAME.hist.zst                JSON lines in a zstd frame
  NAME.hist                    plain JSON lines

OUT is written to a temporary file and renamed when complete; it may not
be IN itself.

Flags:
`

func convertCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("convert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quiet := fs.Bool("quiet", false, "print nothing on success")
	positional, code := parseArgs(fs, convertUsage, args, 2, "IN and OUT")
	if code >= 0 {
		return code
	}
	in, out := positional[0], positional[1]
	form, ok := history.FormOf(out)
	if !ok {
		fmt.Fprintf(stderr, "fastsim convert: %s: want a name ending in .fhist, .fhist.zst, .hist or .hist.zst\n", out)
		return exitInput
	}
	if !checkDests("fastsim convert", stderr, []string{in}, dest{"OUT", out}) {
		return exitInput
	}
	began := time.Now()
	r, err := history.Open(in)
	if err != nil {
		return convertErr(stderr, err)
	}
	defer r.Close()
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
	if err != nil {
		return convertErr(stderr, err)
	}
	if !*quiet {
		fmt.Fprintf(stdout, "%s: %d records in %.3f s\n", out, records, time.Since(began).Seconds())
	}
	return exitOK
}

func convertErr(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, oneLine(err))
	var he *history.Error
	if errors.As(err, &he) || errors.Is(err, os.ErrNotExist) {
		return exitInput
	}
	return exitError
}

// decodeOnlyCmd is replay --decode-only: decode every record, simulate
// nothing, print the count and the wall time.
func decodeOnlyCmd(path string, stdout, stderr io.Writer) int {
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
	fmt.Fprintf(stdout, "decoded %d records in %.3f s (%.0f records/s), no simulation\n", records, wall.Seconds(), rate)
	return exitOK
}
