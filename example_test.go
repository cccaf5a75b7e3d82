package fastsim_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"math"
	"strings"

	"github.com/fastsim/fastsim"
)

// A two-rank history: a stream, then one function producing a 4 MB tensor.
// By docs/SEMANTICS.md: CreateStream at ts 1,000 adds no controller event; the
// CallFunction at ts 2,000 starts at 2,000 and runs the default 10,000 ns,
// so it ends at 12,000 ns = 0.000012 s, and its output's 4,000,000 bytes are
// allocated on both ranks: 4 MB each; the peak device is the lowest rank
// that reaches the peak, 0.
var records = []string{
	`{"ts":1000,"ranks":[{"offset":0,"sizes":[2],"strides":[1]}],"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`,
	`{"ts":2000,"ranks":[{"offset":0,"sizes":[2],"strides":[1]}],"msg":{"type":"CallFunction","ident":1,"function":"torch.ops.aten.ones.default","args":[],"kwargs":{},"result":[{"tensor":1,"storage":1,"nbytes":4000000,"dtype":"float32","shape":[1000000],"device":"cuda"}],"mutates":[],"stream":{"ref":1}}}`,
	`{"step":0}`,
}

// Feed a simulation record by record and read the step report.
func Example() {
	sim, err := fastsim.New(fastsim.Header{WorldSize: 2}, fastsim.Options{})
	if err != nil {
		log.Fatal(err)
	}
	for _, line := range records {
		if err := sim.Feed([]byte(line)); err != nil {
			log.Fatal(err)
		}
	}
	r := sim.Steps()[0]
	fmt.Printf("step 0: %g s, %g MB peak on device %d\n", r.ExecSeconds(), r.PeakMB(), r.PeakDevice)
	for _, d := range r.Devices {
		fmt.Printf("device %d: %d bytes\n", d.LowestRank, d.PeakBytes)
	}
	// Output:
	// step 0: 1.2e-05 s, 4 MB peak on device 0
	// device 0: 4000000 bytes
	// device 1: 4000000 bytes
}

// Price commands with a cost model: here every function takes 50 µs, so
// the function ends at 2,000 + 50,000 = 52,000 ns.
func ExampleParseCosts() {
	model, err := fastsim.ParseCosts([]byte(`{"fixed":{"call_function_ns":50000}}`))
	if err != nil {
		log.Fatal(err)
	}
	sim, err := fastsim.New(fastsim.Header{WorldSize: 2}, fastsim.Options{Costs: model})
	if err != nil {
		log.Fatal(err)
	}
	if err := sim.Feed([]byte(strings.Join(records[:2], "\n"))); err != nil {
		log.Fatal(err)
	}
	fmt.Println(sim.Report().ExecNs, "ns")
	// Output: 52000 ns
}

// Replay a whole history from an io.Reader, grouped, and write its trace.
// Both ranks receive the same commands, so grouped they are one device of
// two ranks.
func ExampleReplay() {
	history := `{"fastsim":"history","version":1,"world_size":2}` + "\n" + strings.Join(records, "\n")
	sim, err := fastsim.Replay(strings.NewReader(history), fastsim.Options{Grouped: true, KeepTrace: true})
	if err != nil {
		log.Fatal(err)
	}
	r := sim.Report()
	fmt.Printf("%d commands, %d ns, %d device entries (%d ranks)\n", sim.Commands(), r.ExecNs, len(r.Devices), r.Devices[0].Ranks)
	var trace bytes.Buffer
	if err := sim.WriteTrace(&trace); err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.HasPrefix(trace.String(), `{"traceEvents":[`))
	// Output:
	// 2 commands, 12000 ns, 1 device entries (2 ranks)
	// true
}

// Build a synthetic training history in memory and replay it: 2 pipeline
// stages x 2 replicas x 2 tensor shards is a world of 8 ranks, and each of
// the 3 steps ends with a step report.
func ExampleTrain() {
	job := fastsim.Train{PP: 2, DP: 2, TP: 2, Layers: 4, Hidden: 256, Seq: 128, Batch: 8, Micro: 2, Steps: 3}
	hist, err := job.History()
	if err != nil {
		log.Fatal(err)
	}
	sim, err := fastsim.Replay(bytes.NewReader(hist), fastsim.Options{Grouped: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sim.WorldSize(), "ranks,", len(sim.Steps()), "steps")
	// Output: 8 ranks, 3 steps
}

// Price commands on a GPU: a bf16 8192×8192 matrix product on an H100.
// Each ones() writes 134,217,728 bytes at 3,350 GB/s × 0.879713 (the
// preset's memory efficiency at that size, BabelStream's Triad fraction
// 0.8866 less the latency to fill the pipe): 45,543.2 ns, plus the
// preset's 2,060 ns launch: 47,603.2 -> 47,604 ns. The product's 2·8192³
// FLOPs at 989.4 TFLOP/s × 0.801 take 1,387,379.9 ns, plus the launch:
// 1,389,439.9 -> 1,389,440 ns. With no controller cost (SPMD) they run back
// to back: 2 × 47,604 + 1,389,440 = 1,484,648 ns.
func ExampleLoadHardware() {
	h100, err := fastsim.LoadHardware("h100-sxm")
	if err != nil {
		log.Fatal(err)
	}
	sim, err := fastsim.New(fastsim.Header{WorldSize: 1}, fastsim.Options{Hardware: h100, Controller: fastsim.ControllerNone})
	if err != nil {
		log.Fatal(err)
	}
	rank := `"ranks":[{"offset":0,"sizes":[],"strides":[]}]`
	mat := func(id int) string {
		return fmt.Sprintf(`{"tensor":%d,"storage":%d,"nbytes":134217728,"dtype":"bfloat16","shape":[8192,8192],"device":"cuda"}`, id, id)
	}
	call := func(fn, args, result string) string {
		return `{"ts":0,` + rank + `,"msg":{"type":"CallFunction","ident":1,"function":"torch.ops.aten.` + fn +
			`.default","args":[` + args + `],"kwargs":{},"result":[` + result + `],"mutates":[],"stream":{"ref":1}}}`
	}
	lines := []string{
		`{"ts":0,` + rank + `,"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`,
		call("ones", "", mat(1)),
		call("ones", "", mat(2)),
		call("mm", `{"tensor":1},{"tensor":2}`, mat(3)),
	}
	if err := sim.Feed([]byte(strings.Join(lines, "\n"))); err != nil {
		log.Fatal(err)
	}
	fmt.Println(sim.Report().ExecNs, "ns")
	// Output: 1484648 ns
}

// Train Llama-2 7B on 2 stages x 2 replicas x 2 tensor shards with the
// 1F1B schedule and replay it: 8 ranks, 2 steps.
func ExampleTransformer() {
	m, err := fastsim.LoadModel("llama2-7b")
	if err != nil {
		log.Fatal(err)
	}
	job := fastsim.Transformer{Model: m, TP: 2, PP: 2, DP: 2, MicroBatch: 1, GlobalBatch: 4,
		Schedule: "1f1b", Recompute: "selective", SequenceParallel: true, Zero: 1, FlashAttention: true, Steps: 2}
	hist, err := job.History()
	if err != nil {
		log.Fatal(err)
	}
	sim, err := fastsim.Replay(bytes.NewReader(hist), fastsim.Options{Grouped: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sim.WorldSize(), "ranks,", len(sim.Steps()), "steps")
	// Output: 8 ranks, 2 steps
}

// Stop a replay early: the Stop channel is already closed, so the replay
// stops at its first record. Replay returns what it simulated with
// ErrStopped, and Partial says so.
func ExampleReplay_stop() {
	history := `{"fastsim":"history","version":1,"world_size":2}` + "\n" + strings.Join(records, "\n")
	stop := make(chan struct{})
	close(stop)
	sim, err := fastsim.Replay(strings.NewReader(history), fastsim.Options{Stop: stop})
	fmt.Println(errors.Is(err, fastsim.ErrStopped), sim.Partial(), sim.Commands(), "commands")
	// Output: true true 0 commands
}

// Trace one step of a longer history: a second function at ts 30,000
// follows the step record. The engine numbers commands from 1 (the
// CreateStream is 1, the first function 2, the second 3), and the trace
// of step 1 alone holds command 3's events and not command 2's.
func ExampleStepRange() {
	lines := append(append([]string{}, records...),
		`{"ts":30000,"ranks":[{"offset":0,"sizes":[2],"strides":[1]}],"msg":{"type":"CallFunction","ident":2,"function":"torch.ops.aten.ones.default","args":[],"kwargs":{},"result":[{"tensor":2,"storage":2,"nbytes":4000000,"dtype":"float32","shape":[1000000],"device":"cuda"}],"mutates":[],"stream":{"ref":1}}}`)
	sim, err := fastsim.New(fastsim.Header{WorldSize: 2}, fastsim.Options{KeepTrace: true, TraceSteps: &fastsim.StepRange{First: 1, Last: 1}})
	if err != nil {
		log.Fatal(err)
	}
	if err := sim.Feed([]byte(strings.Join(lines, "\n"))); err != nil {
		log.Fatal(err)
	}
	var trace bytes.Buffer
	if err := sim.WriteTrace(&trace); err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.Contains(trace.String(), `"command":3}`), strings.Contains(trace.String(), `"command":2}`))
	// Output: true false
}

// Keep a simulation within a memory budget. Each rank of an ungrouped
// simulation takes over a thousand bytes of state, so 2^20 ranks need
// more than 1 GiB and are refused before the first record; grouped, the
// ranks that receive the same commands are simulated once, and the world
// is accepted.
func ExampleWatchMemory() {
	budget := fastsim.WatchMemory(1 << 30)
	defer budget.Stop()
	_, err := fastsim.New(fastsim.Header{WorldSize: 1 << 20}, fastsim.Options{Memory: budget})
	fmt.Println("ungrouped refused:", errors.Is(err, fastsim.ErrMemoryLimit))
	sim, err := fastsim.New(fastsim.Header{WorldSize: 1 << 20}, fastsim.Options{Memory: budget, Grouped: true})
	if err != nil {
		log.Fatal(err)
	}
	defer sim.Close()
	fmt.Println("grouped accepted")
	// Output:
	// ungrouped refused: true
	// grouped accepted
}

// Predict GPT-3 175B on 64 A100s as Korthikanti et al. 2022 trained it
// (the README's "Choose a layout": tp 8, pp 8, interleaved with 3
// chunks, selective recomputation, sequence parallelism, and the four
// mechanisms of Megatron-LM of 2022).
//
// The model FLOPs of a step, by Narayanan et al.'s count (3 x the
// forward; per token and layer 24·h² + 4·s·h, plus 2·h·V for the
// logits), with h = 12,288, s = 2,048, 96 layers, V = 51,200 and a batch
// of 64 sequences: (96 x (3,623,878,656 + 100,663,296) + 1,258,291,200)
// x 3 x 64 x 2,048 = 1.411e17. The published step time is 13.75 s
// (Korthikanti et al. 2022, Table 5, row 175B, "Present Work"); the
// README's accuracy target is within 10%. The A100-80GB's driver
// reports 85,100,068,864 bytes of global memory (the a100-80gb preset's
// sources), 85.1e9 / 2^30 = 79.26 GiB, and the published run ran on
// them: it fits.
func ExamplePredict() {
	hw, err := fastsim.LoadHardware("a100-80gb")
	if err != nil {
		log.Fatal(err)
	}
	m, err := fastsim.LoadModel("korthikanti-175b")
	if err != nil {
		log.Fatal(err)
	}
	job := fastsim.Transformer{Model: m, TP: 8, PP: 8, DP: 1, MicroBatch: 1, GlobalBatch: 64,
		Schedule: "interleaved:3", Recompute: "selective", SequenceParallel: true,
		GradReduce: "after-backward", FuseGradAccumulation: true, BlockingP2P: true, FP32CrossEntropy: true}
	p, err := fastsim.Predict(context.Background(), job, hw)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.World, "GPUs, mechanisms", p.Mechanisms)
	fmt.Printf("model FLOPs per step %.4g\n", p.ModelFLOPs)
	fmt.Println("within 10% of the published 13.75 s:", math.Abs(p.StepTimeS-13.75)/13.75 < 0.10)
	fmt.Println("fits in", math.Round(p.HBMGiB), "GiB:", p.Fits)
	// Output:
	// 64 GPUs, mechanisms [--grad-reduce after-backward --fuse-grad-accumulation --blocking-p2p --fp32-cross-entropy]
	// model FLOPs per step 1.411e+17
	// within 10% of the published 13.75 s: true
	// fits in 79 GiB: true
}

// ExampleSearch ranks the layouts of a small GPT on 8 A100s: each of the
// mesh's tensor, pipeline and data-parallel sizes and microbatch counts,
// with ZeRO 0 or 1, pruned by cheap bounds before any is simulated.
func ExampleSearch() {
	hw, err := fastsim.LoadHardware("a100-80gb")
	if err != nil {
		log.Fatal(err)
	}
	m, err := fastsim.LoadModel("megatron-1.7b")
	if err != nil {
		log.Fatal(err)
	}
	m.Layers, m.Seq = 8, 256
	space := fastsim.SearchSpace{Model: m, World: 8, Batch: 16, Zeros: "0,1", Prune: true}
	rs, stats, err := fastsim.Search(context.Background(), space, hw, 1)
	if err != nil {
		log.Fatal(err)
	}
	best := rs[0]
	fmt.Println("every layout accounted for:", stats.PrunedMemory+stats.PrunedBound+stats.Simulated == stats.Enumerated)
	fmt.Println("the best fits:", best.Fits, "and uses", best.PP*best.DP*best.TP, "GPUs")
	// Output:
	// every layout accounted for: true
	// the best fits: true and uses 8 GPUs
}
