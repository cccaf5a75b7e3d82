package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/bits"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/fastsim/fastsim/internal/predict"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/search"
	"github.com/fastsim/fastsim/internal/workload"
)

// gptModel is a GPT of the given shape (biases, learned positions, tied
// embeddings, as GPT-2 and GPT-3 are); heads 0 means heads of width 64
// (or the widest divisor of hidden below).
func gptModel(layers, hidden, seq, heads, vocab int) workload.Model {
	if heads == 0 {
		heads = max(1, hidden/64)
		for heads > 1 && hidden%heads != 0 {
			heads--
		}
	}
	return workload.Model{Name: "gpt", Layers: layers, Hidden: hidden, Heads: heads, Vocab: vocab, Seq: seq,
		Bias: true, Tied: true, Dtype: "bfloat16", Source: "search flags"}
}

const searchUsage = `Usage: fastsim search [flags]
       fastsim search merge [flags] SHARD.json...

Searches the parallel layouts of a training job on --world GPUs. Each
layout's training history is synthesized in memory and replayed with grouped
workers and the cost model (--costs, --hardware), layouts in parallel
(--jobs); the records go from the synthesis to the engine as typed values,
never written out as text. --cpuprofile writes a Go CPU profile of the
search. The table ranks the layouts that fit --gpu-memory-gb first, then
by step time (the highest tokens/s first).

The job is a transformer (--model NAME|FILE, or a GPT built from --layers,
--hidden, --seq, --heads and --vocab) trained as Megatron-LM trains it;
--batch (or --global-batch) is the global batch. The space is every
(pp, dp, tp, microbatches) that divides the world and the model, tp at most
--max-tp (default: a host) and dividing the heads, times every pipeline
schedule of --schedules, recomputation of --recomputes, sequence
parallelism of --sequence-parallels and ZeRO stage of --zeros; --schedule,
--recompute, --sequence-parallel or --zero pins that dimension to one value.
The table shows each layout's microbatch size (mb), how it trains, its
step time, tokens/s, MFU (with --hardware), and its worst device's memory:
model state (what it holds at the end), activations (the rest) and peak.

Pruning (the default; --no-prune turns it off): every layout first gets two
lower bounds, computed from tiny probe jobs priced by the same cost model:
its peak memory (model state plus what each layer keeps for the microbatches
stage 0 holds) and its step time (the compute stream's layer work plus the
pipeline's fill and drain). A layout whose memory bound exceeds a GPU is not
simulated; the rest are simulated lowest step-time bound first, and the
search stops when the next bound exceeds the best step of a layout that
fits. The result holds the simulated layouts whose bound is at most the best
step (every pruned search simulates these, so the result does not depend on
--jobs or the sharding). The first line counts the layouts enumerated,
pruned by memory, pruned by the step-time bound (those whose bound exceeds
the best step) and written (the result); --json records the same counts
(pruned_by_memory, pruned_by_time_bound). The second line says how many
layouts this run simulated and how long it took: more than the result when
a layout was simulated before the best step that rules it out was found,
which depends on --jobs and the shard, so it is not part of the result.
--workload toy searches the toy micro-benchmark (one weight per layer)
instead, unpruned.

The mechanism flags of fastsim predict (--grad-reduce, --half-grad-reduce,
--fuse-grad-accumulation, --blocking-p2p, --fp32-cross-entropy,
--apex-layer-norm, --fp16-grads, --no-scatter-gather, --flash-attention)
set how every layout trains, as Megatron-LM's implementation of a step;
each layout's step and peak are then predict's with the same flags. A line
after the costs line names them, and --json records them in its space.
--grad-reduce after-backward and --fp16-grads train without ZeRO: give
--zero 0 with them. Without any, every layout trains with predict's
defaults: fp32 main gradients in a zeroed buffer, reduced as PyTorch DDP
does, each bucket during the backward (--grad-reduce overlap).

Step time is the simulated time of the last of --steps training steps (with
2 or more, a steady-state step without setup); peak memory is the highest of
any GPU over the run; tokens/s = batch * seq / step time.

--shard K/N evaluates only the layouts whose index is K mod N, so a Slurm job
array (--shard $SLURM_ARRAY_TASK_ID/N) or a Kubernetes Indexed Job spreads a
search; 'fastsim search merge' combines the shards' --json files into the
same --json, --csv and table as one unsharded search, and prints the same
first line and costs line (not the second: what each shard simulated is in
its own report).

An output given as "-" (one at most) goes to standard output, and the
report then goes to standard error.

Ctrl-C stops the search: the layouts simulated so far are ranked and
written (the table, --json, --csv) after a line saying PARTIAL, the --json
says "partial": true (search merge refuses it), and the exit status is 130;
a second Ctrl-C exits at once.

Flags:
`

const mergeUsage = `Usage: fastsim search merge [flags] SHARD.json...

Combines the --json results of shards 0..N-1 of one search (same space, same
cost model) and prints the ranked table, with the unsharded search's first
line (the layouts enumerated, pruned by memory, pruned by the step-time
bound and written), costs line (shard 0's names of the cost model) and, when
the space sets any, mechanisms line (the predict flags every layout trains
with); --json and --csv write the merged result, byte for byte what the
unsharded search writes. It prints no count of layouts simulated, nor a
time: those are each shard's own (its report's second line), and depend
on its best step and --jobs. A SHARD.json of "-" is standard input (once).

Flags:
`

type searchOut struct {
	json, csv string
	top       int
	costsPath string // the --costs file, for the table's heading
	hardware  string // the --hardware preset or file, likewise
	quiet     bool
}

func (o *searchOut) register(fs *flag.FlagSet) {
	fs.StringVar(&o.json, "json", "", "write the result as JSON to `PATH` (the input of 'search merge'): the counts of layouts enumerated,\npruned by memory and pruned by the step-time bound, and one record per layout written: with pruning,\nthe simulated layouts whose step-time bound is at most the best step (not the pruned ones);\nwith --no-prune or the toy workload, every layout")
	fs.StringVar(&o.csv, "csv", "", "write the layouts --json writes as CSV to `PATH`, one line each:\n"+search.CSVHeader+"\n(the transformer adds "+strings.TrimPrefix(search.CSVFullHeader, search.CSVHeader+",")+")")
	fs.IntVar(&o.top, "top", 20, "show the best `K` layouts in the table (0: all)")
	fs.BoolVar(&o.quiet, "quiet", false, "print no table and no progress line")
}

func searchCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "merge" {
		return mergeCmd(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var s search.Space
	modelFlags(fs, &s.Layers, &s.Hidden, &s.Seq, &s.Batch)
	var tf tfFlags
	tf.register(fs, false)
	// A search tries every value of a dimension unless one is given: the
	// shared flags' defaults (predict's and synth's) do not apply here.
	for _, p := range []struct{ name, usage string }{
		{"schedule", "transformer: search only pipeline schedule `S` (1f1b, gpipe or interleaved:V; default: each of --schedules)"},
		{"recompute", "transformer: search only recomputation `R` (none, selective or full; default: each of --recomputes)"},
	} {
		f := fs.Lookup(p.name)
		f.DefValue, f.Usage = "", p.usage
	}
	fs.Lookup("sequence-parallel").Usage = "transformer: search only layouts with sequence parallelism (default: off and on, --sequence-parallels)"
	fs.Lookup("zero").Usage = "transformer: search only ZeRO stage `N` (0 to 3; default: each of --zeros)"
	fs.StringVar(&s.Workload, "workload", search.WorkloadTransformer, "`W`: transformer, or toy (the one-weight-per-layer micro-benchmark)")
	fs.IntVar(&s.Batch, "global-batch", 8, "the same as --batch: sequences per step over all replicas")
	schedules := fs.String("schedules", "1f1b,interleaved:2,interleaved:4", "transformer: the pipeline schedules to search, comma-separated (--schedule S: only S)")
	recomputes := fs.String("recomputes", "none,selective,full", "transformer: the recomputation policies to search (--recompute R: only R)")
	sps := fs.String("sequence-parallels", "false,true", "transformer: sequence parallelism off and on, searched (--sequence-parallel: only on);\non needs tp > 1")
	zeros := fs.String("zeros", "0,1,2,3", "transformer: the ZeRO stages to search (--zero N: only N); above 0 needs dp > 1")
	maxTP := fs.Int("max-tp", 0, "transformer: tp at most `T` (0: the GPUs of a host, a tensor-parallel group within a host)")
	noPrune := fs.Bool("no-prune", false, "transformer: simulate every layout; without it, layouts whose memory bound exceeds a GPU\nor whose step-time bound exceeds the best step so far are not simulated")
	heads := fs.Int("heads", 0, "transformer without --model: attention heads (0: hidden/64, heads of width 64; when 64 does not\ndivide hidden, the most heads up to hidden/64 that divide it: --hidden 1000 gets 10)")
	vocab := fs.Int("vocab", 51200, "transformer without --model: vocabulary size")
	fs.Int64Var(&s.World, "world", 0, "number of GPUs (required)")
	fs.IntVar(&s.GPUsPerHost, "gpus-per-host", 8, "GPUs per host: transfers within a host use the intra-host link\n(with --hardware, the spec's unless given)")
	memGB := fs.Float64("gpu-memory-gb", 80, "a GPU's memory in `GB` (1e9 bytes); a layout fits when its peak is at most this\n(with --hardware, the spec's HBM unless given)")
	fs.IntVar(&s.Steps, "steps", 2, "training steps per history; the step time is the last step's")
	fs.IntVar(&s.MaxMicro, "max-micro", 0, "try at most `M` microbatches (0: every divisor of the per-replica batch)")
	// A transformer layout is an SPMD program (Megatron-LM's), priced as
	// fastsim predict and fastsim.Search price it; the toy is a Monarch
	// micro-benchmark, priced as its replay is.
	mf := registerPricing(fs, "", "\n(default: none for the transformer workload, as fastsim predict prices a layout;\nmonarch for --workload toy)")
	jobs := fs.Int("jobs", runtime.GOMAXPROCS(0), "evaluate up to `N` layouts at once; results do not depend on it")
	shardFlag := fs.String("shard", "", "evaluate only shard `K/N`: the layouts whose index mod N is K")
	cpuprofile := fs.String("cpuprofile", "", "write a Go CPU profile of the search to `PATH`")
	var out searchOut
	out.register(fs)
	positional, code := parseArgs(fs, stdout, searchUsage, args, -1, "")
	if code >= 0 {
		return code
	}
	out.costsPath, out.hardware = *mf.costs, *mf.hardware
	if !flagSet(fs, "controller") {
		*mf.controller = "none"
		if s.Workload == search.WorkloadToy {
			*mf.controller = "monarch"
		}
	}
	if out.top < 0 {
		fmt.Fprintf(stderr, "fastsim search: --top %d: want 0 (every layout) or more\n", out.top)
		return exitInput
	}
	if len(positional) != 0 {
		fmt.Fprintf(stderr, "fastsim search: unexpected argument %q (everything is a flag; see fastsim search --help)\n", positional[0])
		return exitInput
	}
	if !flagSet(fs, "world") {
		fmt.Fprintln(stderr, "fastsim search: --world is required (the number of GPUs)")
		return exitInput
	}
	if s.World < 1 || s.World > sched.MaxGroupedWorld {
		fmt.Fprintf(stderr, "fastsim search: --world %d: want 1..%d GPUs\n", s.World, sched.MaxGroupedWorld)
		return exitInput
	}
	if flagSet(fs, "batch") && flagSet(fs, "global-batch") {
		fmt.Fprintln(stderr, "fastsim search: --batch and --global-batch: give one (both are the global batch)")
		return exitInput
	}
	model, m, costsID, ctl, err := mf.pricing()
	if err != nil {
		fmt.Fprintf(stderr, "fastsim search: %v\n", oneLine(err))
		return exitInput
	}
	var peakOf func(dtype string) float64
	if m != nil {
		if r := m.Roofline(); r != nil {
			peakOf = func(dtype string) float64 {
				v, _ := r.Spec().GPU.PeakTFLOPS(dtype)
				return v
			}
			// The hardware's memory and host size, unless given.
			given := map[string]bool{}
			fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
			if !given["gpu-memory-gb"] {
				*memGB = r.Spec().GPU.HBMGB
			}
			if !given["gpus-per-host"] {
				s.GPUsPerHost = r.Spec().Host.GPUsPerHost
			}
		}
	}
	if *jobs < 1 {
		fmt.Fprintf(stderr, "fastsim search: --jobs %d: want at least 1\n", *jobs)
		return exitInput
	}
	if !(*memGB > 0 && *memGB <= 1e9) || *memGB*1e9 < 1 { // NaN fails the first test
		fmt.Fprintf(stderr, "fastsim search: --gpu-memory-gb %g: want a size of at least one byte, at most 1e9 GB\n", *memGB)
		return exitInput
	}
	s.MemoryBytes = int64(*memGB * 1e9)
	shard := search.Shard{K: 0, N: 1}
	if *shardFlag != "" {
		var err error
		if shard, err = parseShard(*shardFlag); err != nil {
			fmt.Fprintf(stderr, "fastsim search: --shard: %v\n", err)
			return exitInput
		}
	}
	if s.Workload == search.WorkloadToy {
		if bad := setFlags(fs, append(tfOnly, "model", "heads", "vocab", "schedules", "recomputes", "sequence-parallels", "zeros", "max-tp", "no-prune")); len(bad) > 0 {
			fmt.Fprintf(stderr, "fastsim search: %s: only the transformer workload reads it\n", bad[0])
			return exitInput
		}
	} else {
		if tf.model != "" {
			if bad := setFlags(fs, []string{"layers", "hidden", "seq", "heads", "vocab"}); len(bad) > 0 {
				fmt.Fprintf(stderr, "fastsim search: %s: --model gives the transformer's shape\n", bad[0])
				return exitInput
			}
			m, err := workload.LoadModel(tf.model)
			if err != nil {
				fmt.Fprintf(stderr, "fastsim search: --model: %v\n", err)
				return exitInput
			}
			nameModel(&m, tf.model)
			s.Model = m
		} else {
			s.Model = gptModel(s.Layers, s.Hidden, s.Seq, *heads, *vocab)
		}
		s.Layers, s.Hidden, s.Seq = s.Model.Layers, s.Model.Hidden, s.Model.Seq
		s.Schedule, s.Recompute, s.SequenceParallel, s.Zero, s.FlashAttention = tf.schedule, tf.recompute, tf.sp, tf.zero, tf.flash
		// Every dimension is searched unless its flag pins it.
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		pin := func(one, many string, list *string, v string) {
			if code >= 0 {
				return // one line: the first flag that is wrong
			}
			if given[one] && given[many] {
				fmt.Fprintf(stderr, "fastsim search: --%s and --%s: give one\n", one, many)
				code = exitInput
				return
			}
			if given[many] && strings.TrimSpace(v) == "" {
				// An empty list would search the space's one default.
				fmt.Fprintf(stderr, "fastsim search: --%s %q: an empty list (give at least one value, or --%s to pin one)\n", many, v, one)
				code = exitInput
				return
			}
			if given[many] {
				// A value given twice would search its layouts twice.
				seen := map[string]bool{}
				for _, x := range strings.Split(v, ",") {
					if x = strings.TrimSpace(x); seen[x] {
						fmt.Fprintf(stderr, "fastsim search: --%s %q: %q given twice\n", many, v, x)
						code = exitInput
						return
					}
					seen[x] = true
				}
			}
			*list = v
			if given[one] {
				*list = ""
			}
		}
		code = -1
		pin("schedule", "schedules", &s.Schedules, *schedules)
		pin("recompute", "recomputes", &s.Recomputes, *recomputes)
		pin("sequence-parallel", "sequence-parallels", &s.SequenceParallels, *sps)
		pin("zero", "zeros", &s.Zeros, *zeros)
		if code >= 0 {
			return code
		}
		if s.Schedules != "" || s.Recomputes != "" || s.SequenceParallels != "" || s.Zeros != "" {
			// The space's own values stand for the pinned dimensions.
			if s.Schedules == "" {
				s.Schedules = s.Schedule
			}
			if s.Recomputes == "" {
				s.Recomputes = s.Recompute
			}
			if s.SequenceParallels == "" {
				s.SequenceParallels = strconv.FormatBool(s.SequenceParallel)
			}
			if s.Zeros == "" {
				s.Zeros = strconv.Itoa(s.Zero)
			}
			s.Schedule, s.Recompute, s.SequenceParallel, s.Zero = "", "", false, 0
		}
		if *maxTP < 0 {
			fmt.Fprintf(stderr, "fastsim search: --max-tp %d: want 1 or more, or 0 for the GPUs of a host\n", *maxTP)
			return exitInput
		}
		s.MaxTP = *maxTP
		if s.MaxTP == 0 {
			s.MaxTP = s.GPUsPerHost
		}
		s.Prune = !*noPrune
		if peakOf != nil {
			s.PeakTFLOPS = peakOf(s.Model.Dtype)
		}
		if tf.stageColl {
			fmt.Fprintln(stderr, "fastsim search: --stage-collectives: search prices collectives per group; not offered here")
			return exitInput
		}
		if msg := tf.mechanismConflict(); msg != "" {
			fmt.Fprintf(stderr, "fastsim search: %s\n", msg)
			return exitInput
		}
		if tf.gradReduce == "after-backward" || tf.fp16Grads {
			// Both are of Megatron-LM's data parallelism without ZeRO: a
			// space that holds ZeRO stages is refused, not searched
			// with those layouts silently left out.
			flag := "--fp16-grads"
			if tf.gradReduce == "after-backward" {
				flag = "--grad-reduce after-backward"
			}
			if s.Zero != 0 || !onlyStageZero(s.Zeros) {
				stages := s.Zeros
				if stages == "" {
					stages = strconv.Itoa(s.Zero)
				}
				fmt.Fprintf(stderr, "fastsim search: %s: Megatron-LM ran it without ZeRO, and the space holds ZeRO stages %s (--zero, --zeros); search with --zero 0\n", flag, stages)
				return exitInput
			}
		}
		if tf.gradReduce != "overlap" {
			s.GradReduce = tf.gradReduce // the default stays unwritten, as before the field
		}
		s.HalfGradReduce, s.FuseGradAccumulation, s.BlockingP2P, s.NoScatterGather = tf.halfGrad, tf.fuseGrad, tf.blockingP2P, tf.noSG
		s.FP32CrossEntropy, s.ApexLayerNorm, s.FP16Grads = tf.fp32CE, tf.apexLN, tf.fp16Grads
	}
	if err := s.Check(); err != nil {
		fmt.Fprintf(stderr, "fastsim search: %v\n", err)
		return exitInput
	}
	if !checkDests("fastsim search", stderr, []string{tf.model, *mf.costs, *mf.hardware}, dest{"--json", out.json}, dest{"--csv", out.csv}, dest{"--cpuprofile", *cpuprofile}) {
		return exitInput
	}
	stdout = reportTo(stdout, stderr, dest{"--json", out.json}, dest{"--csv", out.csv}, dest{"--cpuprofile", *cpuprofile})

	if *cpuprofile != "" {
		stop, ok := profileCPU(*cpuprofile, "fastsim search", stderr)
		if !ok {
			return exitError
		}
		defer stop()
	}
	var stats search.Stats
	began := time.Now()
	opt := search.Options{Model: model, Controller: ctl, Jobs: *jobs, Shard: shard, Stats: &stats}
	pw := progressTo(stderr, out.quiet)
	if pw != nil {
		opt.Progress = progress(pw, time.Now())
	}
	// The first Ctrl-C stops the search and reports the layouts simulated
	// until then, marked partial; a second one, or SIGTERM, removes the
	// outputs' temporary files and exits.
	stop, release := handleSignals()
	defer release()
	opt.Stop = stop
	rs, layouts, err := search.Run(context.Background(), s, opt)
	if pw != nil {
		fmt.Fprint(pw, clearLine)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fastsim search: %v\n", err)
		if errors.Is(err, search.ErrSpace) {
			return exitInput
		}
		return exitError
	}
	if layouts == 0 && !stats.Stopped {
		heads := fmt.Sprintf(" (%d heads)", s.Model.Heads)
		if s.Workload == search.WorkloadToy {
			heads = ""
		}
		if why := emptyBecause(s, flagSet(fs, "max-tp")); why != "" {
			fmt.Fprintf(stderr, "fastsim search: no layout of %s that divides %d layers, hidden %d%s and batch %d trains as asked: %s\n", gpus(s.World), s.Layers, s.Hidden, heads, s.Batch, why)
			return exitInput
		}
		fmt.Fprintf(stderr, "fastsim search: no layout of %s divides %d layers, hidden %d%s and batch %d\n", gpus(s.World), s.Layers, s.Hidden, heads, s.Batch)
		return exitInput
	}
	d := search.NewDoc(s, costsID, shard, layouts, rs)
	d.PrunedMemory = stats.PrunedMemory
	d.CostsFrom = costsFrom(out.costsPath, out.hardware)
	d.Partial = stats.Stopped
	ran := fmt.Sprintf("search: %d layouts simulated in %.1f s", stats.Simulated, time.Since(began).Seconds())
	if s.Prune {
		ran += fmt.Sprintf(" (bounds %.1f s)", stats.BoundsSeconds)
		if extra := stats.Simulated - len(rs); extra > 0 {
			ran += fmt.Sprintf("; %d of them before the best step that rules them out was found", extra)
		}
	}
	if d.Partial {
		// Said even with --quiet: the outputs are not the search's result.
		fmt.Fprintf(stdout, "PARTIAL: search interrupted (Ctrl-C) after %d of %d layouts were simulated; the table, --json (\"partial\": true, which search merge refuses) and --csv hold those only\n", len(rs), stats.Enumerated)
		if status := emit(d, out, stdout, stderr, "search", ran); status != exitOK {
			return status
		}
		return exitInterrupted
	}
	status := emit(d, out, stdout, stderr, "search", ran)
	if status == exitOK && !out.quiet && len(rs) == 0 && stats.PrunedMemory > 0 {
		// An empty table: say how far the space is from fitting.
		of := ""
		if shard.N > 1 {
			of = fmt.Sprintf(" of shard %d/%d", shard.K, shard.N)
		}
		fmt.Fprintf(stdout, "no layout%s fits in %.1f GB: the lowest memory bound is %.2f GB, of %v\n",
			of, float64(s.MemoryBytes)/1e9, float64(stats.LeastMemoryBytes)/1e9, stats.LeastMemory)
	}
	return status
}

func mergeCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("search merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var out searchOut
	out.register(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), mergeUsage)
		fs.PrintDefaults()
	}
	files, code := parseInterleaved(fs, stdout, args)
	if code >= 0 {
		return code
	}
	if out.top < 0 {
		fmt.Fprintf(stderr, "fastsim search merge: --top %d: want 0 (every layout) or more\n", out.top)
		return exitInput
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "fastsim search merge: want the shards' JSON files (see fastsim search merge --help)")
		return exitInput
	}
	if !checkDests("fastsim search merge", stderr, files, dest{"--json", out.json}, dest{"--csv", out.csv}) {
		return exitInput
	}
	stdout = reportTo(stdout, stderr, dest{"--json", out.json}, dest{"--csv", out.csv})
	var docs []*search.Doc
	stdin := 0
	for _, p := range files {
		var f *os.File
		var err error
		name := p
		if p == "-" { // standard input, as every command reads "-"
			if stdin++; stdin > 1 {
				fmt.Fprintln(stderr, `fastsim search merge: "-" (standard input) given twice`)
				return exitInput
			}
			f, name = os.Stdin, "stdin"
		} else if f, err = os.Open(p); err != nil {
			fmt.Fprintf(stderr, "fastsim search merge: %v\n", err)
			return exitInput
		}
		d, err := search.ReadDoc(f, name)
		if f != os.Stdin {
			f.Close()
		}
		if err != nil {
			fmt.Fprintf(stderr, "fastsim search merge: %v\n", err)
			return exitInput
		}
		docs = append(docs, d)
	}
	merged, err := search.Merge(docs)
	if err != nil {
		fmt.Fprintf(stderr, "fastsim search merge: %v\n", err)
		return exitInput
	}
	// What each shard simulated, and how long it took, depends on its own
	// best step and --jobs: the merge has no such count to print.
	ran := fmt.Sprintf("search merge: %d shards; how many layouts each simulated, and in what time, is in its own report", len(docs))
	return emit(merged, out, stdout, stderr, "search merge", ran)
}

// emit writes the outputs a search or a merge asked for, then the report:
// the counts line (the same for a search and the merge of its shards),
// ran (what this run simulated, and in what time; a merge has none), the
// cost model and the table.
func emit(d *search.Doc, out searchOut, stdout, stderr io.Writer, cmd, ran string) int {
	if out.json != "" {
		if err := writeAtomic(out.json, d.WriteJSON); err != nil {
			fmt.Fprintf(stderr, "fastsim %s: --json: %v\n", cmd, err)
			return exitError
		}
	}
	if out.csv != "" {
		if err := writeAtomic(out.csv, d.WriteCSV); err != nil {
			fmt.Fprintf(stderr, "fastsim %s: --csv: %v\n", cmd, err)
			return exitError
		}
	}
	if !out.quiet {
		fmt.Fprintln(stdout, d.CountsLine())
		if ran != "" {
			fmt.Fprintln(stdout, ran)
		}
		fmt.Fprintln(stdout, costsLine(d.Costs, d.CostsFrom))
		var j workload.Job
		d.Space.SetMechanisms(&j)
		if m := predict.MechanismsOf(&j); len(m) > 0 {
			fmt.Fprintf(stdout, "mechanisms: %s (every layout trains with them)\n", strings.Join(m, " "))
		}
		if err := d.WriteTable(stdout, out.top); err != nil {
			fmt.Fprintf(stderr, "fastsim %s: %v\n", cmd, err)
			return exitError
		}
	}
	return exitOK
}

// parseShard reads "K/N" with 0 <= K < N.
func parseShard(s string) (search.Shard, error) {
	ks, ns, ok := strings.Cut(s, "/")
	k, err1 := strconv.Atoi(ks)
	n, err2 := strconv.Atoi(ns)
	sh := search.Shard{K: k, N: n}
	if !ok || err1 != nil || err2 != nil || sh.Check() != nil {
		return sh, fmt.Errorf("%q: want K/N with 0 <= K < N, like 3/8", s)
	}
	return sh, nil
}

// progress returns a callback that redraws one status line on w: layouts
// done, the rate and the time left.
func progress(w io.Writer, began time.Time) func(done, total int) {
	last := time.Time{}
	return func(done, total int) {
		now := time.Now()
		if now.Sub(last) < 200*time.Millisecond && done < total {
			return
		}
		last = now
		secs := now.Sub(began).Seconds()
		rate := float64(done) / max(secs, 1e-9)
		left := time.Duration(float64(total-done) / max(rate, 1e-9) * float64(time.Second)).Round(time.Second)
		fmt.Fprintf(w, clearLine+"fastsim search: %d/%d layouts, %.1f/s, %s left", done, total, rate, left)
	}
}

// costsLine says which cost model priced the layouts. The default fixed
// runtimes are the reference simulator's placeholders, the same for every
// kernel and link, so a ranking by them orders layouts by how many commands
// they send, not by what a GPU would take.
// from is what costsFrom says of the flags (empty: nothing to say).
func costsLine(id, from string) string {
	if id == "reference" || strings.HasPrefix(id, "reference+") {
		return "costs: the reference's fixed runtimes (every function 10 us, every reduce 100 us, every remote send 100 us);\n       these are placeholders, not a hardware model: pass --hardware or --costs FILE for a ranking that means something"
	}
	if from == "" {
		return "costs: " + id
	}
	return fmt.Sprintf("costs: %s (%s)", from, id)
}

// costsFrom names the cost model as the flags gave it: the --costs file,
// the --hardware preset or file, or both; "" for the reference's.
func costsFrom(costsPath, hardware string) string {
	var parts []string
	if costsPath != "" && costsPath != "reference" {
		parts = append(parts, costsPath)
	}
	if hardware != "" {
		parts = append(parts, "hardware "+hardware)
	}
	return strings.Join(parts, " with ")
}

// emptyBecause says which of the space's limits left it without a layout
// when some layout divides the world and the model: sequence parallelism
// asked for everywhere (it needs tp > 1), ZeRO stages above 0 alone (they
// need dp > 1), or tp capped by --max-tp (maxTPGiven) or a host. It names
// the fewest of them that leave no layout when the others are lifted. It
// returns "" when lifting them all leaves the space empty too: the sizes
// do not divide.
func emptyBecause(s search.Space, maxTPGiven bool) string {
	type limit struct {
		why  string
		lift func(*search.Space)
	}
	tpWhy := fmt.Sprintf("tp is at most the %d GPUs of a host (--max-tp)", s.MaxTP)
	if maxTPGiven {
		tpWhy = fmt.Sprintf("tp is at most --max-tp %d", s.MaxTP)
	}
	limits := []limit{
		{"sequence parallelism needs tp > 1", func(r *search.Space) {
			if r.SequenceParallels != "" {
				r.SequenceParallels = "false"
			}
			r.SequenceParallel = false
		}},
		{"a ZeRO stage above 0 needs dp > 1", func(r *search.Space) {
			if r.Zeros != "" {
				r.Zeros = "0"
			}
			r.Zero = 0
		}},
		{tpWhy, func(r *search.Space) { r.MaxTP = 0 }},
	}
	empty := func(keep int) bool { // with only the limits in the bit set keep
		r := s
		for i, l := range limits {
			if keep&(1<<i) == 0 {
				l.lift(&r)
			}
		}
		ls, err := search.Enumerate(r)
		return err != nil || len(ls) == 0
	}
	all := 1<<len(limits) - 1
	if empty(0) {
		return ""
	}
	// The fewest limits that leave no layout by themselves; when several
	// sets of that size do, each is named.
	var blamed int
	for size := 1; size <= len(limits) && blamed == 0; size++ {
		for keep := 1; keep <= all; keep++ {
			if bits.OnesCount(uint(keep)) == size && empty(keep) {
				blamed |= keep
			}
		}
	}
	var why []string
	for i, l := range limits {
		if blamed&(1<<i) != 0 {
			why = append(why, l.why)
		}
	}
	if n := len(why); n > 1 {
		return strings.Join(why[:n-1], ", ") + " and " + why[n-1]
	}
	return strings.Join(why, "")
}

// gpus is "1 GPU" or "n GPUs".
func gpus(n int64) string {
	if n == 1 {
		return "1 GPU"
	}
	return fmt.Sprintf("%d GPUs", n)
}

// onlyStageZero reports whether a --zeros list names no ZeRO stage but 0
// (an empty list names none); its entries are checked by the search.
func onlyStageZero(zeros string) bool {
	for _, z := range strings.Split(zeros, ",") {
		if z = strings.TrimSpace(z); z != "" && z != "0" {
			return false
		}
	}
	return true
}
