package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/synth"
	"github.com/fastsim/fastsim/internal/trace"
	"github.com/fastsim/fastsim/internal/workload"
)

const synthUsage = `Usage: fastsim synth [flags] OUT

Writes a synthetic command history to OUT ("-" for stdout), streamed: memory
stays constant whatever its length. The form follows OUT's name, as for
convert: NAME.hist plain JSON lines, NAME.hist.zst zstd-compressed JSON
lines, NAME.fhist.zst the binary form in zstd, NAME.fhist.s2 the binary form
in S2 framing, NAME.fhist the binary form uncompressed; any other name gets
plain JSON lines.

With --model NAME|FILE it is a transformer's training job, laid out as
Megatron-LM lays it out on --tp tensor shards, --pp pipeline stages and --dp
data replicas (rank = (stage*dp + replica)*tp + shard: tensor parallelism
inside a host). Each layer runs its ATen operators with their real shapes
(norms, QKV, attention, projection, MLP, dropouts, residuals; and their
backward), with the tensor-parallel all-reduces (or, with
--sequence-parallel, reduce-scatters and all-gathers); stages exchange
activations and gradients with SendTensor in the order of --schedule; the
data-parallel gradient reduction runs on stream "comm" overlapped with the
backward pass, sharded by --zero; one fused Adam step ends each step.
Tensors are allocated and freed as the program would, so peak memory
follows the model state (18 bytes a parameter, sharded) and the
activations the schedule holds.

Without --model (or with --model toy) it is the toy micro-benchmark: one
h x 4h/t weight used twice per layer (--layers, --hidden, --seq, --batch,
--micro); stage 0 receives a CPU batch; each layer all-gathers its
parameter shard on "comm", borrows it into "main", runs its matmuls;
backward reduce-scatters the weight gradient and updates the shard.

With --random SEED it is instead a random valid history (streams, views,
in-place ops, reductions on sub-slices, borrows, sends, CPU tensors,
deletes, command groups, steps) of --world ranks. From 65,536 ranks on, its
rank sets gather at the edges of 65,536-rank blocks (runs ending on, before
and after an edge, single ranks there, strided sets and 2-d blocks across
one, sends between halves and across edges), where grouped replays are
checked against ungrouped ones. With --whole-mesh every command of it
addresses the whole world instead (sends are local copies), as an SPMD
program's do: a grouped replay keeps one group.

Flags:
`

func synthCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("synth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Int64("random", -1, "write a random valid history from this `SEED` (0 or more) instead of a training job (-1: none)")
	world := fs.Int("world", 16, "with --random: number of ranks, 2..16777216")
	commands := fs.Int("commands", 1000, "with --random: about this many commands; the time grows with their square, since each command looks through the live tensors, which grow with the history (100,000 at world 64: about 30 s)")
	mesh := fs.Bool("whole-mesh", false, "with --random: every command addresses the whole world (sends are local copies), as in an SPMD program")
	var c synth.Train
	var tf tfFlags
	tf.register(fs, true)
	fs.IntVar(&c.PP, "pp", 2, "pipeline stages")
	fs.IntVar(&c.DP, "dp", 2, "data-parallel replicas")
	fs.IntVar(&c.TP, "tp", 1, "tensor-parallel shards")
	modelFlags(fs, &c.Layers, &c.Hidden, &c.Seq, &c.Batch)
	fs.IntVar(&c.Micro, "micro", 2, "microbatches per step (the toy's)")
	fs.IntVar(&c.Steps, "steps", 2, "training steps")
	fs.IntVar(&c.GPUsPerHost, "gpus-per-host", 8, "GPUs per host, written to the header")
	quiet := fs.Bool("quiet", false, "draw no progress line (errors still go to stderr)")
	fs.IntVar(&c.CommandNs, "command-ns", 20_000, "controller time between two commands, in `ns`; 0 takes the default 20,000 (transformer: negative sends every command at time 0; the toy workload takes any value below 1 as 20,000)")
	positional, code := parseArgs(fs, stdout, synthUsage, args, 1, "exactly one OUT path")
	if code >= 0 {
		return code
	}
	var write func(w io.Writer) error
	if c.GPUsPerHost < 1 {
		fmt.Fprintf(stderr, "fastsim synth: --gpus-per-host %d: want at least 1\n", c.GPUsPerHost)
		return exitInput
	}
	if flagSet(fs, "random") && *seed < 0 {
		fmt.Fprintf(stderr, "fastsim synth: --random %d: want a seed of 0 or more\n", *seed)
		return exitInput
	}
	if *seed >= 0 {
		if bad := setFlags(fs, trainOnly); len(bad) > 0 {
			fmt.Fprintf(stderr, "fastsim synth: %s: only a training job reads it, not --random's random history (which takes --world, --commands and --whole-mesh)\n", bad[0])
			return exitInput
		}
		if *world < 2 || *world > synth.MaxRandomWorld {
			fmt.Fprintf(stderr, "fastsim synth: --world %d: want 2..%d ranks\n", *world, synth.MaxRandomWorld)
			return exitInput
		}
		if *commands < 0 {
			fmt.Fprintf(stderr, "fastsim synth: --commands %d: want 0 or more\n", *commands)
			return exitInput
		}
		write = func(w io.Writer) error { return synth.Random(w, uint64(*seed), *world, *commands) }
		if *mesh {
			write = func(w io.Writer) error { return synth.RandomMesh(w, uint64(*seed), *world, *commands) }
		}
	} else if bad := setFlags(fs, randomOnly); len(bad) > 0 {
		fmt.Fprintf(stderr, "fastsim synth: %s: only the random history reads it (give --random SEED; a training job's world is --tp x --pp x --dp)\n", bad[0])
		return exitInput
	} else if tf.model != "" && tf.model != "toy" {
		if bad := setFlags(fs, toyOnly); len(bad) > 0 {
			fmt.Fprintf(stderr, "fastsim synth: %s: only the toy workload reads it (--model gives the transformer's shape; use --micro-batch and --global-batch)\n", bad[0])
			return exitInput
		}
		j, ok := tf.job(stderr, "synth", c.TP, c.PP, c.DP, c.Steps, c.GPUsPerHost, int64(c.CommandNs))
		if !ok {
			return exitInput
		}
		write = func(w io.Writer) error { return workload.Write(w, j) }
	} else {
		if bad := setFlags(fs, tfOnly); len(bad) > 0 {
			fmt.Fprintf(stderr, "fastsim synth: %s: only the transformer workload reads it (give --model)\n", bad[0])
			return exitInput
		}
		if err := c.Check(); err != nil {
			fmt.Fprintf(stderr, "fastsim synth: %v\n", err)
			return exitInput
		}
		write = func(w io.Writer) error { return synth.WriteTrain(w, c) }
	}
	if !checkDests("fastsim synth", stderr, []string{tf.model}, dest{"OUT", positional[0]}) {
		return exitInput
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
	if progress := progressTo(stderr, *quiet); progress != nil {
		// The records to come are not counted in advance: the bytes
		// written so far show that it moves.
		var cw countingWriter
		inner := write
		write = func(w io.Writer) error { cw.w = w; return inner(&cw) }
		began := time.Now()
		defer everySecond(progress, func() string {
			return fmt.Sprintf("fastsim synth: %.1f MB written in %.0f s...", float64(cw.n.Load())/1e6, time.Since(began).Seconds())
		})()
	}
	if err := writeAtomic(positional[0], write); err != nil {
		fmt.Fprintf(stderr, "fastsim synth: %v\n", err)
		return exitError
	}
	return exitOK
}

// randomOnly names the flags that only the random history (--random)
// reads.
var randomOnly = []string{"world", "commands", "whole-mesh"}

// trainOnly names the flags that only a training job (the toy or a
// transformer) reads: the random history's shape comes from --world and
// its seed alone.
var trainOnly = append(append([]string{"model", "tp", "pp", "dp", "steps", "gpus-per-host", "command-ns"}, toyOnly...), tfOnly...)

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

// modelFlags declares the toy model's shape flags, shared by synth and
// search (search also builds a transformer from them without --model).
func modelFlags(fs *flag.FlagSet, layers, hidden, seq, batch *int) {
	fs.IntVar(layers, "layers", 4, "layers, split evenly over the pipeline stages (the toy's; search: the GPT's without --model)")
	fs.IntVar(hidden, "hidden", 1024, "hidden size, split over the tensor-parallel shards (the toy's; search: the GPT's without --model)")
	fs.IntVar(seq, "seq", 2048, "tokens per sequence (the toy's; search: the GPT's without --model)")
	fs.IntVar(batch, "batch", 8, "sequences per step, across all replicas (synth: the toy's; search: the global batch)")
}

// parseArgs sets fs's usage text, parses args (flags anywhere) and checks
// that there are want positional arguments (-1: any number). It returns
// them, and an exit code >= 0 when the command should stop. Help (--help,
// -h) goes to stdout with exit status 0, like `fastsim help`: it is what
// was asked for, not an error, and it can be paged (`| less`).
func parseArgs(fs *flag.FlagSet, stdout io.Writer, usage string, args []string, want int, what string) ([]string, int) {
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	positional, code := parseInterleaved(fs, stdout, args)
	if code >= 0 {
		return nil, code
	}
	if want >= 0 && len(positional) != want {
		fmt.Fprintf(fs.Output(), "fastsim %s: want %s, got %d argument(s) (see fastsim %s --help)\n", fs.Name(), what, len(positional), fs.Name())
		return nil, exitInput
	}
	return positional, -1
}

// parsing, when set, is given each command's flags before they are parsed:
// a test reads every command's flags there, whatever their types.
var parsing func(fs *flag.FlagSet)

// parseInterleaved parses flags that may come before or after positional
// arguments. It returns the positional arguments, and an exit code >= 0 when
// the command should stop (help or a bad flag). A bad flag is reported in
// one line naming the flag on fs's output; the usage is printed, to stdout,
// only when asked for.
func parseInterleaved(fs *flag.FlagSet, stdout io.Writer, args []string) ([]string, int) {
	if parsing != nil {
		parsing(fs)
	}
	out := fs.Output()
	fs.SetOutput(io.Discard) // flag would print the whole usage after its error
	defer fs.SetOutput(out)
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(stdout)
				fs.Usage()
				return nil, exitOK
			}
			fs.SetOutput(out)
			fmt.Fprintf(out, "fastsim %s: %s%s (see fastsim %s --help)\n", fs.Name(), valueError(fs, err), flagHint(fs.Name(), err), fs.Name())
			return nil, exitInput
		}
		if fs.NArg() == 0 {
			if name := emptyPathFlag(fs); name != "" {
				// As an empty argument is refused below: --trace "" (an
				// unset shell variable, say) would otherwise mean no
				// trace, without a word.
				fmt.Fprintf(out, "fastsim %s: --%s \"\": an empty value where a path or name goes (leave the flag out for its default; see fastsim %s --help)\n", fs.Name(), name, fs.Name())
				return nil, exitInput
			}
			return positional, -1
		}
		if fs.Arg(0) == "" {
			// A path no file can have (an unset shell variable, say).
			fmt.Fprintf(out, "fastsim %s: an empty argument where a path goes (see fastsim %s --help)\n", fs.Name(), fs.Name())
			return nil, exitInput
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// emptyPathFlag is the first flag given on the command line with an
// empty value whose value is a path or a name (its placeholder in the
// help: PATH, FILE, NAME|FILE, ...), or "".
func emptyPathFlag(fs *flag.FlagSet) string {
	name := ""
	fs.Visit(func(f *flag.Flag) {
		if name != "" || f.Value.String() != "" {
			return
		}
		if ph, _ := flag.UnquoteUsage(f); strings.Contains(ph, "PATH") || strings.Contains(ph, "FILE") || strings.Contains(ph, "NAME") || strings.Contains(ph, "DIR") {
			name = f.Name
		}
	})
	return name
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

// countingWriter counts the bytes written through it, for a progress line
// read on another goroutine.
type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}
