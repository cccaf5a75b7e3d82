package search

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/workload"
)

// fullSpace is a small GPT over the whole space: 8 GPUs, tp up to 4
// (two hosts of 4, so collectives cross hosts too), every schedule,
// recomputation, sequence parallelism and ZeRO stage.
func fullSpace() Space {
	m := workload.Model{Name: "g", Layers: 8, Hidden: 256, Heads: 4, Vocab: 512, Seq: 128, Bias: true, Tied: true, Dtype: "bfloat16"}
	return Space{Model: m, Layers: m.Layers, Hidden: m.Hidden, Seq: m.Seq, Batch: 8, World: 8, GPUsPerHost: 4,
		MemoryBytes: 80e9, Steps: 2, MaxTP: 4, MaxMicro: 4,
		Schedules: "1f1b,interleaved:2,gpipe", Recomputes: "none,selective,full", SequenceParallels: "false,true", Zeros: "0,1,2,3"}
}

func a100(t testing.TB) *costs.Model {
	t.Helper()
	spec, err := hardware.Preset("a100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	m, err := costs.NewWithHardware(costs.Config{}, spec)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestBoundsBelowReplay is the property the pruning rests on: over every
// layout of a space (every mesh, microbatch count, schedule,
// recomputation, sequence parallelism and ZeRO stage), each layout's
// memory bound is at most the peak its replay reports and its step-time
// bound at most the replayed step, priced by the hardware model with no
// controller time (the tightest case: a controller only delays tasks).
func TestBoundsBelowReplay(t *testing.T) {
	s := fullSpace()
	model := a100(t)
	all, err := Enumerate(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 500 {
		t.Fatalf("%d layouts; the test wants a wide space", len(all))
	}
	// Every fifth layout (5 is prime to the 3 schedules, 3 policies, 2
	// and 4 choices of the inner dimensions, so every value of each
	// appears), to keep the test short.
	var idx []int
	for i := 0; i < len(all); i += 5 {
		idx = append(idx, i)
	}
	bounds, err := Bounds(context.Background(), s, all, idx, model, 2)
	if err != nil {
		t.Fatal(err)
	}
	rs := make([]Result, len(idx))
	g := new(errgroup.Group)
	g.SetLimit(2)
	for j, i := range idx {
		g.Go(func() (err error) {
			rs[j], err = Evaluate(context.Background(), s, all[i], model, sched.ControllerNone)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	tight, tightMem := 0.0, 0.0
	for j, r := range rs {
		b := bounds[j]
		if b.MemoryBytes <= 0 || b.TimeNs <= 0 {
			t.Errorf("layout %+v: empty bound %+v", r.Layout, b)
		}
		if b.MemoryBytes > r.PeakBytes {
			t.Errorf("layout %+v: memory bound %d over the replayed peak %d", r.Layout, b.MemoryBytes, r.PeakBytes)
		}
		if b.TimeNs > r.StepTimeNs {
			t.Errorf("layout %+v: step-time bound %d over the replayed step %d", r.Layout, b.TimeNs, r.StepTimeNs)
		}
		tight = max(tight, float64(b.TimeNs)/float64(r.StepTimeNs))
		tightMem = max(tightMem, float64(b.MemoryBytes)/float64(r.PeakBytes))
	}
	t.Logf("%d of %d layouts: tightest step-time bound %.2f of the step, memory bound %.2f of the peak", len(rs), len(all), tight, tightMem)
}

// TestLayerProbeIndependentOfDP: a layer's compute-stream work, which the
// step-time bound probes with dp 2, is the same at any dp (only the
// optimizer and the collectives see the shards).
func TestLayerProbeIndependentOfDP(t *testing.T) {
	s := fullSpace()
	b := &bounder{s: s, model: a100(t)}
	for zero := 0; zero <= 3; zero++ {
		for _, rec := range []workload.Recompute{workload.RecomputeNone, workload.RecomputeFull} {
			var got [3]int64
			for i, dp := range []int{2, 4, 8} {
				var c [2][2]int64
				for L := 1; L <= 2; L++ {
					for m := 1; m <= 2; m++ {
						pr := &probe{model: b.model, main: 2, stopAt: 2}
						if err := workload.Emit(b.probeJob(2, dp, 1, m, L, zero, rec, true), pr); err != nil && err != errProbeDone {
							t.Fatal(err)
						}
						c[L-1][m-1] = pr.mainNs
					}
				}
				got[i] = c[1][1] - c[0][1] - c[1][0] + c[0][0]
			}
			if got[0] <= 0 || got[0] != got[1] || got[0] != got[2] {
				t.Errorf("zero %d, recompute %d: layer work at dp 2, 4, 8: %v", zero, rec, got)
			}
		}
	}
}

// prunedSpace is smaller than fullSpace, to be searched whole many times.
func prunedSpace() Space {
	m := workload.Model{Name: "g", Layers: 4, Hidden: 128, Heads: 4, Vocab: 256, Seq: 64, Bias: true, Tied: true, Dtype: "bfloat16"}
	return Space{Model: m, Layers: m.Layers, Hidden: m.Hidden, Seq: m.Seq, Batch: 4, World: 4, GPUsPerHost: 4,
		MemoryBytes: 80e9, Steps: 2, MaxTP: 4,
		Schedules: "1f1b,gpipe", Recomputes: "none,full", SequenceParallels: "false,true", Zeros: "0,1,3"}
}

// TestPrunedFindsTheBest: a pruned search simulates fewer layouts than the
// whole space and finds the same best layout as the unpruned one; its
// result, sharded and merged, is byte-identical to the unsharded one at
// any --jobs.
func TestPrunedFindsTheBest(t *testing.T) {
	s := prunedSpace()
	model := a100(t)
	ctx := context.Background()
	opt := Options{Model: model, Controller: sched.ControllerNone, Jobs: 2}
	whole, n, err := Run(ctx, s, opt)
	if err != nil {
		t.Fatal(err)
	}
	// A GPU of the median peak: about half the layouts fit.
	peaks := make([]int64, len(whole))
	for i, r := range whole {
		peaks[i] = r.PeakBytes
	}
	slices.Sort(peaks)
	s.MemoryBytes = peaks[len(peaks)/2]
	for i := range whole {
		fill(&whole[i], s)
	}
	Rank(whole)
	s.Prune = true
	var st Stats
	opt.Stats = &st
	// Progress counts up to the layouts a pruned search simulates, not
	// to every layout that fits: the last call has done equal to total.
	var calls [][2]int
	opt.Progress = func(done, total int) { calls = append(calls, [2]int{done, total}) }
	pruned, n2, err := Run(ctx, s, opt)
	if err != nil {
		t.Fatal(err)
	}
	opt.Progress = nil
	if len(calls) != st.Simulated || calls[len(calls)-1] != [2]int{st.Simulated, st.Simulated} {
		t.Errorf("progress %v for %d simulated", calls, st.Simulated)
	}
	for i, c := range calls {
		if c[0] != i+1 || c[1] < c[0] {
			t.Errorf("progress call %d: %v", i, c)
		}
	}
	if n != n2 || st.Enumerated != n || st.PrunedMemory+st.PrunedBound+st.Simulated != n {
		t.Fatalf("counts: %d and %d layouts, stats %+v", n, n2, st)
	}
	if st.PrunedMemory == 0 || st.PrunedBound == 0 {
		t.Errorf("nothing pruned: %+v", st)
	}
	if !whole[0].Fits || !pruned[0].Fits || whole[0].Index != pruned[0].Index || whole[0].StepTimeNs != pruned[0].StepTimeNs {
		t.Errorf("best layout: unpruned %+v, pruned %+v", whole[0], pruned[0])
	}
	t.Logf("%d layouts: %+v", n, st)
	doc := func(rs []Result, sh Shard, st Stats) *Doc {
		d := NewDoc(s, "x", sh, n, rs)
		d.PrunedMemory = st.PrunedMemory
		return d
	}
	want := render(t, doc(pruned, Shard{}, st))
	var st1 Stats
	rs, _, err := Run(ctx, s, Options{Model: model, Controller: sched.ControllerNone, Jobs: 1, Stats: &st1})
	if err != nil {
		t.Fatal(err)
	}
	if got := render(t, doc(rs, Shard{}, st1)); !bytes.Equal(got, want) {
		t.Errorf("jobs 1 differs from jobs 2:\n%s\nvs\n%s", got, want)
	}
	for _, parts := range []int{2, 5} {
		var docs []*Doc
		for k := 0; k < parts; k++ {
			var sst Stats
			rs, _, err := Run(ctx, s, Options{Model: model, Controller: sched.ControllerNone, Jobs: 2, Shard: Shard{K: k, N: parts}, Stats: &sst})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := doc(rs, Shard{K: k, N: parts}, sst).WriteJSON(&b); err != nil {
				t.Fatal(err)
			}
			d, err := ReadDoc(&b, "shard")
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, d)
		}
		merged, err := Merge(docs)
		if err != nil {
			t.Fatal(err)
		}
		if got := render(t, merged); !bytes.Equal(got, want) {
			t.Errorf("%d shards merged differ:\n%s\nvs\n%s", parts, got, want)
		}
		if got, want := merged.CountsLine(), doc(pruned, Shard{}, st).CountsLine(); got != want {
			t.Errorf("%d shards merged: counts line %q, unsharded %q", parts, got, want)
		}
	}

	// The counts the JSON records, against the bounds computed here: a
	// layout is pruned by memory when its memory bound exceeds a GPU, and
	// by the step-time bound when it fits that bound but its step-time
	// bound exceeds the best step of a layout that fits (the unpruned
	// search's best, whole[0]); the rest are the results.
	all, idx := enumerateAll(t, s)
	bounds, err := Bounds(ctx, s, all, idx, model, 2)
	if err != nil {
		t.Fatal(err)
	}
	memory, timeBound := 0, 0
	for _, b := range bounds {
		switch {
		case b.MemoryBytes > s.MemoryBytes:
			memory++
		case b.TimeNs > whole[0].StepTimeNs:
			timeBound++
		}
	}
	var b bytes.Buffer
	if err := doc(pruned, Shard{}, st).WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var counts struct {
		Layouts   int               `json:"layouts"`
		Memory    *int              `json:"pruned_by_memory"`
		TimeBound *int              `json:"pruned_by_time_bound"`
		Results   []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(b.Bytes(), &counts); err != nil {
		t.Fatal(err)
	}
	if counts.Memory == nil || counts.TimeBound == nil || counts.Layouts != n || *counts.Memory != memory || *counts.TimeBound != timeBound || len(counts.Results) != n-memory-timeBound {
		t.Errorf("JSON counts: %d layouts, pruned by memory %v, by the step-time bound %v, %d results; want %d, %d, %d, %d",
			counts.Layouts, counts.Memory, counts.TimeBound, len(counts.Results), n, memory, timeBound, n-memory-timeBound)
	}
	// The run simulated the results and maybe more (layouts simulated
	// before the best step was found), never fewer.
	if st.Simulated < len(counts.Results) || st.PrunedMemory != memory {
		t.Errorf("stats %+v against the counts %d, %d", st, memory, timeBound)
	}
	// A shard's file whose counts do not add up is refused at the count.
	edited := bytes.Replace(b.Bytes(), []byte(fmt.Sprintf(`"pruned_by_time_bound": %d,`, timeBound)), []byte(fmt.Sprintf(`"pruned_by_time_bound": %d,`, timeBound+1)), 1)
	if bytes.Equal(edited, b.Bytes()) {
		t.Fatal("no pruned_by_time_bound to edit")
	}
	if _, err := ReadDoc(bytes.NewReader(edited), "e.json"); err == nil || !strings.Contains(err.Error(), "pruned by the step-time bound") {
		t.Errorf("an edited pruned_by_time_bound: %v", err)
	}
	// A shard of a fastsim that counted nothing (no counts at all) is
	// refused with the reason, not blamed for a count it never had.
	old := bytes.Replace(b.Bytes(), []byte(fmt.Sprintf(`"pruned_by_time_bound": %d,`, timeBound)), nil, 1)
	old = bytes.Replace(old, []byte(fmt.Sprintf(`"pruned_by_memory": %d,`, memory)), nil, 1)
	if _, err := ReadDoc(bytes.NewReader(old), "o.json"); err == nil || !strings.Contains(err.Error(), "an older fastsim") {
		t.Errorf("a shard without counts: %v", err)
	}
}

// TestBoundsBelowReplayCostsFile: the same property priced by a runtime
// table (examples/costs.json, which prices every call, views too, though
// the engine gives a view no time) and with the controller's time
// (Monarch's: tasks start no earlier than their command).
func TestBoundsBelowReplayCostsFile(t *testing.T) {
	m := workload.Model{Name: "gpt", Layers: 4, Hidden: 64, Heads: 2, Vocab: 512, Seq: 32, Bias: true, Tied: true, Dtype: "bfloat16"}
	s := Space{Model: m, Layers: 4, Hidden: 64, Seq: 32, Batch: 8, World: 8, GPUsPerHost: 4, MemoryBytes: 80e9, Steps: 2, MaxTP: 4,
		Schedules: "1f1b,interleaved:2", Recomputes: "none,selective,full", SequenceParallels: "false,true", Zeros: "0,1,2,3"}
	model, err := costs.Load("../../examples/costs.json")
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := sched.ParseController("monarch")
	if err != nil {
		t.Fatal(err)
	}
	boundsBelowEveryReplay(t, s, model, ctl)
}

// boundsBelowEveryReplay bounds every layout of s and replays each,
// failing where a bound is above what the replay reports.
func boundsBelowEveryReplay(t *testing.T, s Space, model *costs.Model, ctl sched.Controller) {
	t.Helper()
	all, idx := enumerateAll(t, s)
	bounds, err := Bounds(context.Background(), s, all, idx, model, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range all {
		r, err := Evaluate(context.Background(), s, l, model, ctl)
		if err != nil {
			t.Fatal(err)
		}
		if b := bounds[i]; b.TimeNs > r.StepTimeNs || b.MemoryBytes > r.PeakBytes {
			t.Errorf("layout %+v: bounds %+v over the replay's step %d ns, peak %d bytes", l, b, r.StepTimeNs, r.PeakBytes)
		}
	}
}

// BenchmarkBoundsGPT3 computes the bounds of every layout of GPT-3 175B
// on 1,024 A100-80GB GPUs with a global batch of 1,536 (tp within a host,
// the schedules 1F1B and interleaved with 2 and 4 chunks, every
// recomputation policy, sequence parallelism and ZeRO stage), as a pruned
// search does before it simulates anything.
func BenchmarkBoundsGPT3(b *testing.B) {
	m, err := workload.LoadModel("gpt3-175b")
	if err != nil {
		b.Fatal(err)
	}
	s := Space{Model: m, Layers: m.Layers, Hidden: m.Hidden, Seq: m.Seq, Batch: 1536, World: 1024, GPUsPerHost: 8, MemoryBytes: 80e9, Steps: 2, MaxTP: 8,
		Schedules: "1f1b,interleaved:2,interleaved:4", Recomputes: "none,selective,full", SequenceParallels: "false,true", Zeros: "0,1,2,3", Prune: true}
	all, idx := enumerateAll(b, s)
	model := a100(b)
	fit := 0
	for b.Loop() {
		bs, err := Bounds(context.Background(), s, all, idx, model, runtime.GOMAXPROCS(0))
		if err != nil {
			b.Fatal(err)
		}
		fit = 0
		for _, bd := range bs {
			if bd.MemoryBytes <= s.MemoryBytes {
				fit++
			}
		}
	}
	b.ReportMetric(float64(len(all)), "layouts")
	b.ReportMetric(float64(len(all)-fit), "pruned-by-memory")
}

// TestBoundsBelowReplayFlash: the same property with flash attention
// (nothing of size s² kept), on the hardware model.
func TestBoundsBelowReplayFlash(t *testing.T) {
	s := prunedSpace()
	s.FlashAttention = true
	s.Recomputes = "none,selective,full"
	boundsBelowEveryReplay(t, s, a100(t), sched.ControllerNone)
}

// TestBoundsBelowReplayLlama: the bounds hold for a model without
// dropout, with a gated MLP and grouped-query attention (the Llama
// presets' shape), whose layers keep less than a GPT's of the same width.
// Sequences of 512 tokens on a hidden size of 128 make the attention
// scores most of what a layer keeps: a bound that counted a GPT's
// dropped scores and mask there was over the replayed peak.
func TestBoundsBelowReplayLlama(t *testing.T) {
	s := prunedSpace()
	s.Model = workload.Model{Name: "l", Layers: 4, Hidden: 128, Heads: 4, KVHeads: 2, FFN: 320, Vocab: 256, Seq: 512,
		Gated: true, Dtype: "bfloat16"}
	s.Recomputes = "none,selective,full"
	boundsBelowEveryReplay(t, s, a100(t), sched.ControllerNone)
	s.FlashAttention = true
	boundsBelowEveryReplay(t, s, a100(t), sched.ControllerNone)
}

// panicking is a cost model with a bug: every price panics.
type panicking struct{ sched.CostModel }

func (panicking) CallRuntimeNs(*gen.CallFunction, string) int64 { panic("broken cost model") }
func (panicking) ReduceRuntimeNs(*gen.Reduce, sched.Comm) int64 { panic("broken cost model") }
func (panicking) SendRuntimeNs(*gen.SendTensor, sched.Comm) int64 {
	panic("broken cost model")
}

// TestBoundsPanic: a panic on a goroutine computing bounds becomes an
// internal error, as on the goroutines that evaluate layouts, instead of
// ending the process with a stack dump.
func TestBoundsPanic(t *testing.T) {
	s := fullSpace()
	all, err := Enumerate(s)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Bounds(context.Background(), s, all, []int{0, 1, 2}, panicking{sched.DefaultCosts()}, 2)
	if !errors.Is(err, sched.ErrInternal) || !strings.Contains(err.Error(), "broken cost model") {
		t.Fatalf("Bounds = %v, want ErrInternal with the panic's value", err)
	}
}

// enumerateAll enumerates space s and gives every layout's index, for
// bounding them all.
func enumerateAll(tb testing.TB, s Space) ([]Layout, []int) {
	tb.Helper()
	all, err := Enumerate(s)
	if err != nil {
		tb.Fatal(err)
	}
	idx := make([]int, len(all))
	for i := range idx {
		idx[i] = i
	}
	return all, idx
}

// TestLeastMemoryBound: with a GPU too small for any layout, a pruned
// search prunes every layout by memory, simulates none, and its Stats
// name the lowest of the bounds Bounds gives the layouts, and the first
// layout with it, in the enumeration's order. With a GPU that fits them
// all, nothing is pruned by memory and the Stats name no layout.
func TestLeastMemoryBound(t *testing.T) {
	s := prunedSpace()
	model := a100(t)
	ctx := context.Background()
	all, idx := enumerateAll(t, s)
	bounds, err := Bounds(ctx, s, all, idx, model, 1)
	if err != nil {
		t.Fatal(err)
	}
	least, at := bounds[0].MemoryBytes, 0
	for j, b := range bounds {
		if b.MemoryBytes < least {
			least, at = b.MemoryBytes, j
		}
	}
	s.Prune = true
	s.MemoryBytes = least - 1
	var st Stats
	rs, _, err := Run(ctx, s, Options{Model: model, Controller: sched.ControllerNone, Jobs: 2, Stats: &st})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 0 || st.Simulated != 0 || st.PrunedMemory != len(all) {
		t.Fatalf("GPU of %d bytes: %d results, stats %+v; want every layout pruned by memory", s.MemoryBytes, len(rs), st)
	}
	if st.LeastMemoryBytes != least || st.LeastMemory != all[at] {
		t.Errorf("least memory bound %d of %v, want %d of %v", st.LeastMemoryBytes, st.LeastMemory, least, all[at])
	}
	s.MemoryBytes = 80e9
	st = Stats{}
	if _, _, err := Run(ctx, s, Options{Model: model, Controller: sched.ControllerNone, Jobs: 2, Stats: &st}); err != nil {
		t.Fatal(err)
	}
	if st.PrunedMemory != 0 || st.LeastMemoryBytes != 0 || st.LeastMemory != (Layout{}) {
		t.Errorf("GPU of 80 GB: stats %+v, want nothing pruned by memory and no least bound", st)
	}
}

// TestBoundsRecordedOrNot: the probes write their jobs without recorded
// passes; with them (workload.Emit, the writer every replay uses) every
// layout of the whole space gets the same bounds, priced by the hardware
// model and by the reference's fixed runtimes.
func TestBoundsRecordedOrNot(t *testing.T) {
	s := fullSpace()
	all, idx := enumerateAll(t, s)
	defer func(f func(workload.Job, workload.Sink) error) { probeEmit = f }(probeEmit)
	for _, model := range []sched.CostModel{a100(t), sched.DefaultCosts()} {
		probeEmit = workload.EmitUnrecorded
		plain, err := Bounds(context.Background(), s, all, idx, model, 2)
		if err != nil {
			t.Fatal(err)
		}
		probeEmit = workload.Emit
		recorded, err := Bounds(context.Background(), s, all, idx, model, 2)
		if err != nil {
			t.Fatal(err)
		}
		for i := range plain {
			if plain[i] != recorded[i] {
				t.Fatalf("layout %+v: bounds %+v without recordings, %+v with", all[idx[i]], plain[i], recorded[i])
			}
		}
	}
}
