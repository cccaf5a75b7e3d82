package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/synth"
	"github.com/fastsim/fastsim/internal/trace"
)

const synthUsage = `Usage: fastsim synth [flags] OUT

Writes a synthetic command history to OUT ("-" for stdout), streamed: memory
stays constant whatever its length. The form follows OUT's name, as for
convert: NAME.hist plain JSON lines, NAME.hist.zst zstd-compressed JSON
lines, NAME.fhist / NAME.fhist.zst the binary form; any other name gets
plain JSON lines.

By default it is a training job: a mesh of --pp pipeline stages, --dp data
replicas and --tp tensor shards (rank = (stage*dp + replica)*tp + shard).
Per step and microbatch, stage 0 receives a CPU batch and copies it to the
GPU; each layer all-gathers its parameter shard on stream "comm", borrows the
full weight into "main", runs its matmuls and activation; activations go to
the next stage with SendTensor; backward runs the stages in reverse with
input- and weight-gradient matmuls, reduce-scatters the weight gradient on
"comm" and updates the shard in place. Tensor sizes follow from the shapes
(bf16), so memory results mean something.

With --random SEED it is instead a random valid history (streams, views,
in-place ops, reductions on sub-slices, borrows, sends, CPU tensors,
deletes, command groups, steps) of --world ranks.

Flags:
`

func synthCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("synth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Int64("random", -1, "write a random valid history from this `SEED` (0 or more) instead of a training job")
	world := fs.Int("world", 16, "with --random: number of ranks, 2..64")
	commands := fs.Int("commands", 1000, "with --random: about this many commands")
	var c synth.Train
	fs.IntVar(&c.PP, "pp", 2, "pipeline stages")
	fs.IntVar(&c.DP, "dp", 2, "data-parallel replicas")
	fs.IntVar(&c.TP, "tp", 1, "tensor-parallel shards")
	modelFlags(fs, &c.Layers, &c.Hidden, &c.Seq, &c.Batch)
	fs.IntVar(&c.Micro, "micro", 2, "microbatches per step")
	fs.IntVar(&c.Steps, "steps", 2, "training steps")
	fs.IntVar(&c.GPUsPerHost, "gpus-per-host", 8, "GPUs per host, written to the header")
	fs.IntVar(&c.CommandNs, "command-ns", 20_000, "controller time between two commands, in `ns`")
	positional, code := parseArgs(fs, synthUsage, args, 1, "exactly one OUT path")
	if code >= 0 {
		return code
	}
	var write func(w io.Writer) error
	if flagSet(fs, "random") && *seed < 0 {
		fmt.Fprintf(stderr, "fastsim synth: --random %d: want a seed of 0 or more\n", *seed)
		return exitInput
	}
	if *seed >= 0 {
		if *world < 2 || *world > synth.MaxRandomWorld || *commands < 0 {
			fmt.Fprintf(stderr, "fastsim synth: --world must be 2..%d and --commands >= 0\n", synth.MaxRandomWorld)
			return exitInput
		}
		write = func(w io.Writer) error { return synth.Random(w, uint64(*seed), *world, *commands) }
	} else {
		if err := c.Check(); err != nil {
			fmt.Fprintf(stderr, "fastsim synth: %v\n", err)
			return exitInput
		}
		write = func(w io.Writer) error { return synth.WriteTrain(w, c) }
	}
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
	if form, ok := history.FormOf(positional[0]); ok {
		write = inForm(form, write)
	}
	if err := writeAtomic(positional[0], write); err != nil {
		fmt.Fprintf(stderr, "fastsim synth: %v\n", err)
		return exitError
	}
	return exitOK
}

// writeAtomic streams fill to path as an output: a regular file through a
// temporary file renamed onto path once complete (on error nothing is left
// at path), standard output ("-"), a device or a pipe directly.
func writeAtomic(path string, fill func(io.Writer) error) error {
	o, err := trace.CreateOutput(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(o.W, 1<<20)
	if err := fill(bw); err != nil {
		o.Abort()
		return err
	}
	if err := bw.Flush(); err != nil {
		o.Abort()
		return err
	}
	return o.Commit()
}

// modelFlags declares the model's shape flags, shared by synth and search.
func modelFlags(fs *flag.FlagSet, layers, hidden, seq, batch *int) {
	fs.IntVar(layers, "layers", 4, "transformer-like blocks, split evenly over the pipeline stages")
	fs.IntVar(hidden, "hidden", 1024, "hidden size, split over the tensor-parallel shards")
	fs.IntVar(seq, "seq", 2048, "tokens per sequence")
	fs.IntVar(batch, "batch", 8, "sequences per step, across all replicas")
}

// costsFlag declares --costs, shared by replay and search.
func costsFlag(fs *flag.FlagSet) *string {
	return fs.String("costs", "", "price commands with the cost model in `FILE` (JSON; see examples/costs.json), or with a\nMonarch timing file {timing_key: microseconds} (see fastsim ops); default: the reference's fixed runtimes")
}

// parseArgs sets fs's usage text, parses args (flags anywhere) and checks
// that there are want positional arguments (-1: any number). It returns
// them, and an exit code >= 0 when the command should stop.
func parseArgs(fs *flag.FlagSet, usage string, args []string, want int, what string) ([]string, int) {
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	positional, code := parseInterleaved(fs, args)
	if code >= 0 {
		return nil, code
	}
	if want >= 0 && len(positional) != want {
		fmt.Fprintf(fs.Output(), "fastsim %s: want %s, got %d argument(s) (see fastsim %s --help)\n", fs.Name(), what, len(positional), fs.Name())
		return nil, exitInput
	}
	return positional, -1
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

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// inForm turns write, which produces plain JSON lines, into a writer of
// the given form: zstd JSON lines are the same bytes in a zstd frame; the
// binary form is produced by reading the JSON lines back as a history and
// converting them (history.Convert) while they are produced, so memory
// stays constant.
func inForm(form history.Form, write func(io.Writer) error) func(io.Writer) error {
	switch form {
	case history.FormJSON:
		return write
	case history.FormJSONZstd:
		return func(w io.Writer) error {
			zw, err := zstd.NewWriter(w)
			if err != nil {
				return err
			}
			if err := write(zw); err != nil {
				zw.Close()
				return err
			}
			return zw.Close()
		}
	}
	return func(w io.Writer) error {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(write(pw)) }()
		defer pr.Close()
		r, err := history.NewReader(pr, "synth")
		if err != nil {
			return err
		}
		defer r.Close()
		r.KeepExtra = true
		hw, err := history.NewWriter(w, form, r.Header(), r.RawHeader())
		if err != nil {
			return err
		}
		if _, err := history.Convert(r, hw); err != nil {
			return err
		}
		return hw.Close()
	}
}
