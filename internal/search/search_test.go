package search

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
)

func small() Space {
	return Space{Workload: WorkloadToy, Layers: 2, Hidden: 8, Seq: 4, Batch: 4, World: 4, GPUsPerHost: 2, MemoryBytes: 1e9, Steps: 2}
}

func TestDivisors(t *testing.T) {
	if got, want := divisors(12), []int64{1, 2, 3, 4, 6, 12}; !slices.Equal(got, want) {
		t.Errorf("divisors(12) = %v, want %v", got, want)
	}
	if got, want := divisors(16), []int64{1, 2, 4, 8, 16}; !slices.Equal(got, want) {
		t.Errorf("divisors(16) = %v, want %v", got, want)
	}
}

// TestEnumerate checks the small space by hand: world 4, 2 layers, hidden
// 8, batch 4. pp must divide 4 and the 2 layers: 1 or 2.
//
//	pp=1: dp=1 tp=4, micro | 4/1: 1 2 4; dp=2 tp=2, micro | 2: 1 2; dp=4 tp=1, micro | 1: 1
//	pp=2: dp=1 tp=2, micro | 4: 1 2 4; dp=2 tp=1, micro | 2: 1 2
//
// 11 layouts; every tp divides hidden 8.
func TestEnumerate(t *testing.T) {
	got, err := Enumerate(small())
	if err != nil {
		t.Fatal(err)
	}
	want := []Layout{
		lay(1, 1, 4, 1), lay(1, 1, 4, 2), lay(1, 1, 4, 4), lay(1, 2, 2, 1), lay(1, 2, 2, 2), lay(1, 4, 1, 1),
		lay(2, 1, 2, 1), lay(2, 1, 2, 2), lay(2, 1, 2, 4), lay(2, 2, 1, 1), lay(2, 2, 1, 2),
	}
	if !slices.Equal(got, want) {
		t.Errorf("Enumerate:\n got %v\nwant %v", got, want)
	}
	s := small()
	s.MaxMicro = 1 // pp=1: (1,1,4,1) (1,2,2,1) (1,4,1,1); pp=2: (2,1,2,1) (2,2,1,1)
	if got, _ := Enumerate(s); len(got) != 5 {
		t.Errorf("max micro 1: %d layouts, want 5", len(got))
	}
}

// TestResultOf checks the derived figures by hand.
func TestResultOf(t *testing.T) {
	s := small() // batch 4 x seq 4 = 16 tokens a step
	s.MemoryBytes = 3_000_000
	res := &replay.Result{
		Steps: []sched.Report{{ExecNs: 100_000_000}, {ExecNs: 600_000_000}},
		Final: sched.Report{ExecNs: 600_000_000, PeakBytes: 3_000_000},
	}
	r := resultOf(s, lay(1, 1, 4, 1), res)
	// step time = 600e6 - 100e6 = 500e6 ns = 0.5 s; 16 tokens / 0.5 s = 32;
	// 3e6 B = 3 MB, exactly the capacity: fits.
	if r.StepTimeNs != 500_000_000 || r.StepTimeS != 0.5 || r.TokensPerS != 32 || r.PeakMemoryMB != 3 || !r.Fits {
		t.Errorf("resultOf = %+v", r)
	}
	res.Final.PeakBytes = 3_000_001
	if r := resultOf(s, Layout{}, res); r.Fits {
		t.Errorf("one byte over the capacity fits")
	}
	// One step: the whole exec time of that step.
	res.Steps = res.Steps[:1]
	if r := resultOf(s, Layout{}, res); r.StepTimeNs != 100_000_000 {
		t.Errorf("one step: %d ns, want 100000000", r.StepTimeNs)
	}
}

func TestRank(t *testing.T) {
	rs := []Result{
		{Index: 0, Fits: false, StepTimeNs: 1},
		{Index: 1, Fits: true, StepTimeNs: 30},
		{Index: 2, Fits: true, StepTimeNs: 20, PeakBytes: 9},
		{Index: 3, Fits: true, StepTimeNs: 20, PeakBytes: 5},
		{Index: 4, Fits: true, StepTimeNs: 20, PeakBytes: 5},
	}
	Rank(rs)
	var order []int
	for _, r := range rs {
		order = append(order, r.Index)
	}
	if want := []int{3, 4, 2, 1, 0}; !slices.Equal(order, want) {
		t.Errorf("rank order %v, want %v", order, want)
	}
}

func render(t *testing.T, d *Doc) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := d.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteTable(&b, 0); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestShardsMergeToWhole: merging N shards (round-tripped through JSON)
// gives exactly the unsharded search, for several N, and --jobs does not
// change anything.
func TestShardsMergeToWhole(t *testing.T) {
	s := small()
	s.MemoryBytes = 2_500 // a few kB: some layouts fit, some do not
	model, err := costs.Parse([]byte(`{"comm":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	whole, n, err := Run(ctx, s, Options{Model: model, Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n != 11 || len(whole) != 11 {
		t.Fatalf("%d results of %d layouts, want 11", len(whole), n)
	}
	fits := 0
	for _, r := range whole {
		if r.StepTimeNs <= 0 || r.PeakBytes <= 0 {
			t.Errorf("layout %+v: no time or memory", r)
		}
		if r.Fits {
			fits++
		}
	}
	if fits == 0 || fits == len(whole) {
		t.Fatalf("%d of %d fit; the test wants a mix to exercise ranking", fits, len(whole))
	}
	want := render(t, NewDoc(s, "x", Shard{}, n, whole))
	par, _, err := Run(ctx, s, Options{Model: model, Jobs: 4})
	if err != nil {
		t.Fatal(err)
	}
	if got := render(t, NewDoc(s, "x", Shard{}, n, par)); !bytes.Equal(got, want) {
		t.Errorf("jobs 4 differs from jobs 1:\n%s\nvs\n%s", got, want)
	}
	for _, parts := range []int{1, 2, 3, 11, 13} {
		var docs []*Doc
		for k := parts - 1; k >= 0; k-- { // any order
			rs, n, err := Run(ctx, s, Options{Model: model, Jobs: 2, Shard: Shard{K: k, N: parts}})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := NewDoc(s, "x", Shard{K: k, N: parts}, n, rs).WriteJSON(&b); err != nil {
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
			t.Fatalf("%d shards: %v", parts, err)
		}
		if got := render(t, merged); !bytes.Equal(got, want) {
			t.Errorf("%d shards merged differ from the whole search:\n%s\nvs\n%s", parts, got, want)
		}
	}
}

func TestMergeErrors(t *testing.T) {
	s := small()
	ls, err := Enumerate(s)
	if err != nil {
		t.Fatal(err)
	}
	n := len(ls)
	// half k of 2: the results of the layouts shard k of 2 holds, each
	// with its own layout.
	half := func(k int) []Result {
		var rs []Result
		for i, l := range ls {
			if i%2 == k {
				rs = append(rs, Result{Index: i, Layout: l})
			}
		}
		return rs
	}
	a := NewDoc(s, "x", Shard{K: 0, N: 2}, n, half(0))
	b := NewDoc(s, "x", Shard{K: 1, N: 2}, n, half(1))
	if _, err := Merge([]*Doc{a, b}); err != nil {
		t.Fatalf("good shards: %v", err)
	}
	// The default gradient reduction spelled out, as a document written
	// by hand or another program may have it, is the same space.
	spelled := NewDoc(s, "x", Shard{K: 1, N: 2}, n, half(1))
	spelled.Space.GradReduce = gradOverlap
	if _, err := Merge([]*Doc{a, spelled}); err != nil {
		t.Errorf("shards with the gradient reduction empty and %q: %v", gradOverlap, err)
	}
	other := s
	other.Batch = 8
	edited := half(1)
	edited[0].TP *= 2 // layout 1 said to be another
	cases := map[string][]*Doc{
		"missing":   {a},
		"twice":     {a, a, b},
		"space":     {a, NewDoc(other, "x", Shard{K: 1, N: 2}, n, half(1))},
		"costs":     {a, NewDoc(s, "y", Shard{K: 1, N: 2}, n, half(1))},
		"not own":   {a, NewDoc(s, "x", Shard{K: 1, N: 2}, n, half(0))},
		"too few":   {a, NewDoc(s, "x", Shard{K: 1, N: 2}, n, half(1)[1:])},
		"other N":   {a, NewDoc(s, "x", Shard{K: 1, N: 3}, n, nil)},
		"count":     {NewDoc(s, "x", Shard{K: 0, N: 2}, n+1, half(0)), NewDoc(s, "x", Shard{K: 1, N: 2}, n+1, half(1))},
		"edited":    {a, NewDoc(s, "x", Shard{K: 1, N: 2}, n, edited)},
		"no shards": nil,
	}
	for name, docs := range cases {
		if _, err := Merge(docs); !errors.Is(err, ErrMerge) {
			t.Errorf("%s: %v, want ErrMerge", name, err)
		}
	}
	// Named as the results name a layout, not as a Go struct.
	if _, err := Merge(cases["edited"]); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("layout 1 is pp %d, dp %d, tp %d, micro %d", ls[1].PP, ls[1].DP, 2*ls[1].TP, ls[1].Micro)) || strings.Contains(err.Error(), "{") {
		t.Errorf("edited: %v, want layout 1 named", err)
	}
}

// TestMergeNamesTheField: shards of spaces that differ in one value are
// refused with that value named, not with both spaces printed whole.
func TestMergeNamesTheField(t *testing.T) {
	s := small()
	a := NewDoc(s, "x", Shard{K: 0, N: 2}, 2, []Result{{Index: 0}})
	for want, change := range map[string]func(*Space){
		"(batch 8, not 4)":           func(o *Space) { o.Batch = 8 },
		"(peak_tflops 989.4, not 0)": func(o *Space) { o.PeakTFLOPS = 989.4 },
		"(model.hidden 128, not 0)":  func(o *Space) { o.Model.Hidden = 128 },
		"(zeros 0,1, not )":          func(o *Space) { o.Zeros = "0,1" },
	} {
		other := s
		change(&other)
		_, err := Merge([]*Doc{a, NewDoc(other, "x", Shard{K: 1, N: 2}, 2, []Result{{Index: 1}})})
		if !errors.Is(err, ErrMerge) || !strings.HasSuffix(err.Error(), "searched another space "+want) {
			t.Errorf("got %v, want it to end with %q", err, want)
		}
	}
}

func TestCSV(t *testing.T) {
	d := NewDoc(small(), "x", Shard{}, 1, []Result{{Layout: lay(2, 1, 2, 4), StepTimeS: 0.5, PeakMemoryMB: 3, Fits: true, TokensPerS: 32}})
	var b bytes.Buffer
	if err := d.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	want := CSVHeader + "\n2,1,2,4,0.5,3,true,32\n"
	if b.String() != want {
		t.Errorf("CSV:\n%s\nwant\n%s", b.String(), want)
	}
}

// BenchmarkSearchWorld1024 runs a whole search at world 1,024: 16 layers,
// hidden 1,024, seq 1,024, batch 64 on 8 GPUs a host is 140 layouts, each
// synthesized (2 steps) and replayed grouped with the example cost model.
func BenchmarkSearchWorld1024(b *testing.B) {
	b.ReportAllocs()
	s := Space{Workload: WorkloadToy, Layers: 16, Hidden: 1024, Seq: 1024, Batch: 64, World: 1024, GPUsPerHost: 8, MemoryBytes: 80e9, Steps: 2}
	model, err := costs.Load("../../examples/costs.json")
	if err != nil {
		b.Fatal(err)
	}
	layouts := 0
	for b.Loop() {
		rs, _, err := Run(context.Background(), s, Options{Model: model, Jobs: runtime.GOMAXPROCS(0)})
		if err != nil {
			b.Fatal(err)
		}
		layouts += len(rs)
	}
	b.ReportMetric(float64(layouts)/b.Elapsed().Seconds(), "layouts/s")
}

// A search whose histories would be too long to replay is refused before
// any is synthesized: 65,536 layers (the most a shape may have) give the
// layout pp 1, dp 128, tp 8 with 64 microbatches
// 5 + 2 x 64 x (65,536 x 38 + 1 x 8) = 318,768,133 commands, over 2^28.
func TestRunRefusesHugeSpace(t *testing.T) {
	s := small()
	s.World, s.Layers, s.Batch, s.Steps = 1024, 65536, 1048576, 2
	_, _, err := Run(context.Background(), s, Options{Jobs: 1})
	if !errors.Is(err, ErrSpace) || !strings.Contains(err.Error(), "318768133 commands") {
		t.Fatalf("got %v, want a refusal naming 318768133 commands", err)
	}
}

// lay is the layout of the mesh and microbatches, trained as the space says.
func lay(pp, dp, tp, micro int) Layout { return Layout{PP: pp, DP: dp, TP: tp, Micro: micro} }

// A batch past MaxBatch is refused by Check: 2^63-1 sequences would have
// the enumeration count the divisors of a number near 2^63, and a batch
// times a layout's ranks would wrap an int64.
func TestCheckRefusesHugeBatch(t *testing.T) {
	for _, batch := range []int{0, MaxBatch + 1, math.MaxInt64} {
		s := small()
		s.Batch = batch
		if err := s.Check(); !errors.Is(err, ErrSpace) || !strings.Contains(err.Error(), "batch") {
			t.Errorf("batch %d: got %v, want a bad space naming the batch", batch, err)
		}
	}
	s := small()
	s.Batch = MaxBatch
	if err := s.Check(); err != nil {
		t.Errorf("batch %d: %v", MaxBatch, err)
	}
}

// TestCheckToyShape: a toy space whose shape wraps an int64 (a 2^62-wide
// layer) is a bad space, not a search whose peaks wrapped to 0 MB.
func TestCheckToyShape(t *testing.T) {
	s := small()
	s.Hidden = 1 << 62
	if err := s.Check(); !errors.Is(err, ErrSpace) {
		t.Errorf("hidden 2^62: %v, want ErrSpace", err)
	}
}
