package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/fastsim/fastsim/internal/synth"
)

const synthUsage = `Usage: fastsim synth --random SEED [flags] OUT

Writes a synthetic command history to OUT ("-" for stdout). With --random it
is a random valid history (streams, views, in-place ops, reductions on
sub-slices, borrows, sends, CPU tensors, deletes, command groups, steps): the
kind the grouped-workers property tests replay.

Flags:
`

func synthCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("synth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Int64("random", -1, "write a random valid history from this `SEED` (>= 0)")
	world := fs.Int("world", 16, "number of ranks, 2..64")
	commands := fs.Int("commands", 1000, "about this many commands")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), synthUsage)
		fs.PrintDefaults()
	}
	positional, code := parseInterleaved(fs, args)
	if code >= 0 {
		return code
	}
	if *seed < 0 {
		fmt.Fprintln(stderr, "fastsim synth: --random SEED is required (see fastsim synth --help)")
		return exitInput
	}
	if len(positional) != 1 {
		fmt.Fprintf(stderr, "fastsim synth: want exactly one OUT path, got %d\n", len(positional))
		return exitInput
	}
	if *world < 2 || *world > synth.MaxRandomWorld || *commands < 0 {
		fmt.Fprintf(stderr, "fastsim synth: --world must be 2..%d and --commands >= 0\n", synth.MaxRandomWorld)
		return exitInput
	}
	write := func(w io.Writer) error { return synth.Random(w, uint64(*seed), *world, *commands) }
	if positional[0] == "-" {
		bw := bufio.NewWriter(stdout)
		if err := write(bw); err != nil {
			fmt.Fprintf(stderr, "fastsim synth: %v\n", err)
			return exitError
		}
		if err := bw.Flush(); err != nil {
			fmt.Fprintf(stderr, "fastsim synth: %v\n", err)
			return exitError
		}
		return exitOK
	}
	if err := writeAtomic(positional[0], write); err != nil {
		fmt.Fprintf(stderr, "fastsim synth: %v\n", err)
		return exitError
	}
	return exitOK
}

// writeAtomic streams fill into a temp file beside path and renames it onto
// path once complete; on error nothing is left at path.
func writeAtomic(path string, fill func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err = fill(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// parseInterleaved parses flags that may come before or after positional
// arguments. It returns the positional arguments, and an exit code >= 0 when
// the command should stop (help or a bad flag).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, int) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK
			}
			return nil, exitInput
		}
		if fs.NArg() == 0 {
			return positional, -1
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
