package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/predict"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/trace"
	"github.com/fastsim/fastsim/internal/workload"
)

const predictUsage = `Usage: fastsim predict [flags]

Predicts one training layout on one machine, in process: the transformer
(--model, or a GPT of --layers, --hidden, --heads, --ffn, --vocab, --seq)
trained on --world GPUs of --hardware as Megatron-LM trains it, with
--tp tensor shards and --pp pipeline stages (dp = world/(tp*pp)), a global
batch of --global-batch sequences in microbatches of --micro-batch. Its
training history is replayed with grouped workers on the hardware model
(a roofline per operator, collectives from where the ranks sit) and no
controller cost, as an SPMD job runs; the step time is the second step's.

It prints the step time, tokens/s, model TFLOP/s per GPU (model FLOPs, no
recomputation counted: Korthikanti et al. 2022's Eq. 7 for GPT layers, the
same count of their own GEMMs for gated or grouped-query ones; what MFU
divides by the peak), MFU, the same step's TFLOP/s as Narayanan et al. (SC'21)
count them in their Tables 1 and 2 (Eq. 3: every layer's forward counted
once more, as recomputed, whatever --recompute says; for gated or
grouped-query layers the same rule on their own GEMMs; compare those
tables with this one), and the worst device's peak memory, split into model state
(what the device keeps at the end of a step) and activations (the rest of
its peak), and of those the parts of the transformer layers: their
parameters and optimizer state (18 bytes a parameter with fp32 main
gradients kept, Korthikanti et al.'s accounting as Calculon reads it,
without the embeddings and the output layer; with --fp16-grads the
gradients live within the step and count with the activations: 14 bytes,
16 with data parallelism and --grad-reduce overlap, PyTorch DDP's 16-bit
bucket) and what they store for their backward passes (what
Korthikanti et al.'s activation formulas count). --json writes the same as
{"step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "narayanan_tflops_per_gpu", "peak_memory_gib",
"peak_device", "model_state_gib", "layer_state_gib", "activation_gib", "stored_activation_gib",
"hbm_gib", "fits", ..., "mechanisms"}. Both name the mechanism flags the
job ran with (the layout line's "mechanisms --blocking-p2p ..." or
"mechanisms none"; JSON's "mechanisms", a list of the flags as given,
such as "--grad-reduce after-backward", or []), so that two predictions
of one layout that differ by them can be told apart. With --json - the
JSON goes to standard output and the report to standard error.

Flags:
`

// predictJSON is the --json document of predict.
type predictJSON struct {
	Model          string  `json:"model"`
	Hardware       string  `json:"hardware"`
	World          int64   `json:"world"`
	TP             int     `json:"tp"`
	PP             int     `json:"pp"`
	DP             int     `json:"dp"`
	GlobalBatch    int     `json:"global_batch"`
	MicroBatch     int     `json:"micro_batch"`
	Schedule       string  `json:"schedule"`
	Recompute      string  `json:"recompute"`
	SeqParallel    bool    `json:"sequence_parallel"`
	Zero           int     `json:"zero"`
	StepTimeS      float64 `json:"step_time_s"`
	TokensPerS     float64 `json:"tokens_per_s"`
	TFLOPsPerGPU   float64 `json:"tflops_per_gpu"`
	MFU            float64 `json:"mfu"`
	NarayananTFLOP float64 `json:"narayanan_tflops_per_gpu"`
	ModelFLOPs     float64 `json:"model_flops_per_iteration"`
	PeakMemoryGiB  float64 `json:"peak_memory_gib"`
	PeakDevice     int64   `json:"peak_device"`
	ModelStateGiB  float64 `json:"model_state_gib"`
	LayerStateGiB  float64 `json:"layer_state_gib"`
	ActivationGiB  float64 `json:"activation_gib"`
	StoredActGiB   float64 `json:"stored_activation_gib"`
	HBMGiB         float64 `json:"hbm_gib"`
	Fits           bool    `json:"fits"`
	Groups         int     `json:"groups_simulated"`
	Commands       int64   `json:"commands"`
	PassSteps      int64   `json:"layer_passes_as_steps"`
	WallS          float64 `json:"wall_s"`
	UnknownOpCalls int64   `json:"unknown_op_calls"`

	// Mechanisms are the mechanism flags the job ran with
	// (predict.Result.Mechanisms), [] for none.
	Mechanisms []string `json:"mechanisms"`
}

func predictCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("predict", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var tf tfFlags
	tf.register(fs, true)
	layers := fs.Int("layers", 0, "without --model: the GPT's layers")
	hidden := fs.Int("hidden", 0, "without --model: the GPT's hidden size")
	heads := fs.Int("heads", 0, "without --model: attention heads (0: hidden/64, heads of width 64; when 64 does not divide\nhidden, the most heads up to hidden/64 that divide it: --hidden 1000 gets 10)")
	ffn := fs.Int("ffn", 0, "without --model: MLP width (0: 4*hidden)")
	vocab := fs.Int("vocab", 51200, "without --model: vocabulary size")
	seq := fs.Int("seq", 2048, "without --model: tokens per sequence")
	hw := fs.String("hardware", "a100-80gb", "the machine: a preset `NAME` ("+strings.Join(hardware.Presets(), ", ")+") or a spec FILE")
	world := fs.Int("world", 0, "number of GPUs (required)")
	tp := fs.Int("tp", 1, "tensor-parallel shards (t)")
	pp := fs.Int("pp", 1, "pipeline stages (p)")
	jsonPath := fs.String("json", "", "also write the prediction as JSON to `PATH`")
	quiet := fs.Bool("quiet", false, "print nothing on success")
	cpuprofile := fs.String("cpuprofile", "", "write a Go CPU profile of the prediction to `PATH`")
	jobs := fs.Int("jobs", 1, "run on up to `N` goroutines, capped at the "+strconv.Itoa(runtime.GOMAXPROCS(0))+" cores Go uses here (GOMAXPROCS);\nresults do not depend on it. With 2 or more the workload's history is written on a\ngoroutine of its own while the replay runs on another; with 1 it is written inline.\nIt gains only while a second core is otherwise idle: beside other work it takes more\nCPU and often more time than --jobs 1, hence the default (bench/RESULTS.md,\n\"The workload written beside the replay\")")
	if _, code := parseArgs(fs, stdout, predictUsage, args, 0, "no positional arguments"); code >= 0 {
		return code
	}
	switch {
	case !flagSet(fs, "world"):
		fmt.Fprintln(stderr, "fastsim predict: --world is required (the number of GPUs)")
		return exitInput
	case *world < 1 || *world > sched.MaxGroupedWorld:
		fmt.Fprintf(stderr, "fastsim predict: --world %d: want 1..%d GPUs\n", *world, sched.MaxGroupedWorld)
		return exitInput
	case *tp < 1 || *tp > *world:
		fmt.Fprintf(stderr, "fastsim predict: --tp %d: want 1..%d (--world)\n", *tp, *world)
		return exitInput
	case *pp < 1 || *pp > *world:
		fmt.Fprintf(stderr, "fastsim predict: --pp %d: want 1..%d (--world)\n", *pp, *world)
		return exitInput
	// tp and pp at most the world first, so that their product cannot wrap.
	case *world%(*tp**pp) != 0:
		fmt.Fprintf(stderr, "fastsim predict: --world (%d) must be a positive multiple of --tp x --pp (%d x %d)\n", *world, *tp, *pp)
		return exitInput
	}
	spec, err := hardware.Load(*hw)
	if err != nil {
		fmt.Fprintf(stderr, "fastsim predict: --hardware: %v\n", oneLine(err))
		return exitInput
	}
	dp := *world / (*tp * *pp)
	// As search leaves them out: these would train as the layout without
	// them, under a name that says otherwise.
	var j workload.Job
	if tf.model == "" {
		switch {
		case !flagSet(fs, "layers") && !flagSet(fs, "hidden"):
			fmt.Fprintln(stderr, "fastsim predict: give --model, or the GPT's --layers and --hidden")
			return exitInput
		case !flagSet(fs, "layers") || !flagSet(fs, "hidden"):
			fmt.Fprintln(stderr, "fastsim predict: a GPT needs both --layers and --hidden (or give --model)")
			return exitInput
		case *layers < 1:
			fmt.Fprintf(stderr, "fastsim predict: --layers %d: want at least 1\n", *layers)
			return exitInput
		case *hidden < 1:
			fmt.Fprintf(stderr, "fastsim predict: --hidden %d: want at least 1\n", *hidden)
			return exitInput
		}
		m := gptModel(*layers, *hidden, *seq, *heads, *vocab)
		m.FFN = *ffn
		tf.model = "gpt"
		var ok bool
		if j, ok = tf.jobOf(stderr, "predict", m, *tp, *pp, dp, 2, spec.Host.GPUsPerHost, -1); !ok {
			return exitInput
		}
	} else {
		if bad := setFlags(fs, []string{"layers", "hidden", "heads", "ffn", "vocab", "seq"}); len(bad) > 0 {
			fmt.Fprintf(stderr, "fastsim predict: %s: --model gives the transformer's shape; give the GPT's shape flags or --model, not both\n", strings.Join(bad, ", "))
			return exitInput
		}
		var ok bool
		if j, ok = tf.job(stderr, "predict", *tp, *pp, dp, 2, spec.Host.GPUsPerHost, -1); !ok {
			return exitInput
		}
		nameModel(&j.Model, tf.model)
	}
	if *jobs < 1 {
		fmt.Fprintf(stderr, "fastsim predict: --jobs %d: want at least 1\n", *jobs)
		return exitInput
	}
	if !checkDests("fastsim predict", stderr, []string{tf.model, *hw}, dest{"--json", *jsonPath}, dest{"--cpuprofile", *cpuprofile}) {
		return exitInput
	}
	stdout = reportTo(stdout, stderr, dest{"--json", *jsonPath}, dest{"--cpuprofile", *cpuprofile})

	if *cpuprofile != "" {
		stop, ok := profileCPU(*cpuprofile, "fastsim predict", stderr)
		if !ok {
			return exitError
		}
		defer stop()
	}
	var progress func(records int64)
	pw := progressTo(stderr, *quiet)
	if pw != nil {
		progress = predictProgress(pw, time.Now())
	}
	r, err := predict.RunJobs(context.Background(), j, spec, *jobs, progress)
	if pw != nil {
		fmt.Fprint(pw, clearLine)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fastsim predict: %v\n", oneLine(err))
		return exitInput
	}
	if *jsonPath != "" {
		doc := predictJSON{
			Model: j.Model.Name, Hardware: spec.Name, World: r.World, TP: j.TP, PP: j.PP, DP: j.DP,
			GlobalBatch: j.GlobalBatch, MicroBatch: j.MicroBatch, Schedule: tf.schedule, Recompute: tf.recompute,
			SeqParallel: j.SequenceParallel, Zero: j.Zero,
			StepTimeS: r.StepTimeS, TokensPerS: r.TokensPerS, TFLOPsPerGPU: r.TFLOPsPerGPU, MFU: r.MFU,
			NarayananTFLOP: r.NarayananTFLOPsPerGPU, ModelFLOPs: r.ModelFLOPs, PeakMemoryGiB: r.PeakGiB, PeakDevice: r.PeakDevice,
			ModelStateGiB: r.ModelStateGiB, LayerStateGiB: r.LayerStateGiB, ActivationGiB: r.ActivationGiB, StoredActGiB: r.StoredActivationGiB, HBMGiB: r.HBMGiB, Fits: r.Fits,
			Groups: r.Groups, Commands: r.Commands, PassSteps: r.PassSteps, WallS: r.Wall.Seconds(), UnknownOpCalls: r.UnknownOps,
			Mechanisms: r.Mechanisms,
		}
		data, _ := json.MarshalIndent(doc, "", "  ")
		if err := trace.WriteFileAtomic(*jsonPath, append(data, '\n')); err != nil {
			fmt.Fprintf(stderr, "fastsim predict: --json: %v\n", err)
			return exitError
		}
	}
	if !*quiet {
		fits := "fits"
		if !r.Fits {
			fits = "does NOT fit"
		}
		mech := strings.Join(r.Mechanisms, " ")
		if mech == "" {
			mech = "none"
		}
		fmt.Fprintf(stdout, "layout               %s on %d x %s: tp %d, pp %d, dp %d; batch %d in microbatches of %d; %s, recompute %s, sequence parallel %v, ZeRO %d; mechanisms %s\n",
			j.Model.Name, r.World, spec.Name, j.TP, j.PP, j.DP, j.GlobalBatch, j.MicroBatch, tf.schedule, tf.recompute, j.SequenceParallel, j.Zero, mech)
		fmt.Fprintf(stdout, "step time            %.4f s\n", r.StepTimeS)
		fmt.Fprintf(stdout, "throughput           %.0f tokens/s, %.1f model TFLOP/s per GPU, MFU %.1f%% (%.1f TFLOP/s as Narayanan et al.'s tables count: as if fully recomputed)\n", r.TokensPerS, r.TFLOPsPerGPU, 100*r.MFU, r.NarayananTFLOPsPerGPU)
		fmt.Fprintf(stdout, "memory (device %d)    peak %.2f GiB of %.2f GiB (%s): model state %.2f GiB (the transformer layers' %.2f GiB), activations %.2f GiB (of which the layers store %.2f GiB for the backward)\n",
			r.PeakDevice, r.PeakGiB, r.HBMGiB, fits, r.ModelStateGiB, r.LayerStateGiB, r.ActivationGiB, r.StoredActivationGiB)
		fmt.Fprintf(stdout, "simulated            %d commands (%d layer passes applied as one step each), %s for %d GPUs, in %.2f s\n",
			r.Commands, r.PassSteps, plural(int64(r.Groups), "group"), r.World, r.Wall.Seconds())
		if r.UnknownOps > 0 {
			fmt.Fprintf(stdout, "warning              %d calls priced by the hardware model's default (unknown ops)\n", r.UnknownOps)
		}
		switch {
		// Allowed (search keeps tp within a host unless --max-tp says
		// otherwise), but rarely meant.
		case j.TP > j.GPUsPerHost:
			fmt.Fprintf(stdout, "note                 a tensor-parallel group of %d spans hosts of %d GPUs: its collectives cross the network\n", j.TP, j.GPUsPerHost)
		case j.GPUsPerHost%j.TP != 0:
			fmt.Fprintf(stdout, "note                 tensor-parallel groups of %d do not tile hosts of %d GPUs: some straddle two hosts, and their collectives cross the network\n", j.TP, j.GPUsPerHost)
		}
	}
	return exitOK
}

// predictProgress returns the progress callback of a prediction: one
// status line on w, redrawn, with the records simulated and the time spent
// (the count of a layout's records is not known before it is written).
func predictProgress(w io.Writer, began time.Time) func(records int64) {
	return func(records int64) {
		fmt.Fprintf(w, clearLine+"fastsim predict: %d records simulated in %.0f s...", records, time.Since(began).Seconds())
	}
}

// nameModel gives a model read from a file without a "name" the file's
// base name without its extension (gpt-13b.json: "gpt-13b"), so that
// reports and JSON name it.
func nameModel(m *workload.Model, path string) {
	if m.Name == "" {
		base := filepath.Base(path)
		m.Name = strings.TrimSuffix(base, filepath.Ext(base))
	}
}
