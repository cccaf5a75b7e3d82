package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/values"
)

// dumpSink renders every record it is given as text: every field a
// reader of the record sees (the command's own message, its ranks, its
// time, every tensor with all its fields, the trees' text).
type dumpSink struct {
	recs []string
}

func (d *dumpSink) Write(rec *history.Record, _ *values.Registry) error {
	var b strings.Builder
	fmt.Fprintf(&b, "step=%v/%d ts=%d ranks=%+v kind=%d type=%q extra=%+v/%+v ", rec.IsStep, rec.Step, rec.Ts, rec.Ranks, rec.Msg.Kind, rec.Msg.TypeName, rec.Msg.Extra, rec.Extra)
	m := &rec.Msg
	switch m.Kind {
	case gen.MsgCallFunction:
		c := m.CallFunction
		fmt.Fprintf(&b, "args=%s kwargs=%s result=%s ", c.Args.Raw, c.Kwargs.Raw, c.Result.Raw)
		c.Args.Raw, c.Kwargs.Raw, c.Result.Raw = nil, nil, nil
		fmt.Fprintf(&b, "%+v", c)
	case gen.MsgReduce:
		fmt.Fprintf(&b, "%+v", m.Reduce)
	case gen.MsgDeleteRefs:
		fmt.Fprintf(&b, "%+v", m.DeleteRefs.Refs)
	case gen.MsgSendTensor:
		fmt.Fprintf(&b, "%+v", m.SendTensor)
	case gen.MsgBorrowCreate:
		fmt.Fprintf(&b, "%+v", m.BorrowCreate)
	case gen.MsgBorrowFirstUse:
		fmt.Fprintf(&b, "%+v", m.BorrowFirstUse)
	case gen.MsgBorrowLastUse:
		fmt.Fprintf(&b, "%+v", m.BorrowLastUse)
	case gen.MsgBorrowDrop:
		fmt.Fprintf(&b, "%+v", m.BorrowDrop)
	case gen.MsgPipeRecv:
		p := m.PipeRecv
		fmt.Fprintf(&b, "result=%s ", p.Result.Raw)
		p.Result.Raw = nil
		fmt.Fprintf(&b, "%+v", p)
	case gen.MsgCreateStream:
		fmt.Fprintf(&b, "%+v", m.CreateStream)
	case gen.MsgInvalid:
	default:
		fmt.Fprintf(&b, "%+v", *m)
	}
	d.recs = append(d.recs, b.String())
	return nil
}

// TestPassEndChangesNoRecord: writing a layer pass's last deletions at
// its end (passEnd) writes the records written without it, record for
// record: nothing that follows a pass deletes before its first message,
// so no DeleteRefs is split in two. (With a controller that costs each
// command, a split would move every later task.)
func TestPassEndChangesNoRecord(t *testing.T) {
	for _, j := range FeatureLayouts() {
		name := fmt.Sprintf("tp%d pp%d dp%d %v zero%d recompute%d", j.TP, j.PP, j.DP, j.Schedule, j.Zero, j.Recompute)
		var before, after dumpSink
		if _, _, err := emitStats(j, &before, emitOpts{templates: true, noPassEnd: true}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, _, err := emitStats(j, &after, emitOpts{templates: true}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sameRecords(t, name, "without passEnd", "with it", before.recs, after.recs)
	}
}

// sameRecords reports the first difference between the records a and b
// (written the ways named aWay and bWay) of layout name.
func sameRecords(t *testing.T, name, aWay, bWay string, a, b []string) {
	t.Helper()
	if len(a) != len(b) {
		t.Errorf("%s: %d records %s, %d %s", name, len(a), aWay, len(b), bWay)
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			t.Errorf("%s: record %d differs:\n%s: %s\n%s: %s", name, i, aWay, a[i], bWay, b[i])
			return
		}
	}
}

// TestTemplatesWriteTheSameRecords: a history written with recorded layer
// passes replayed is the history written by generating every pass, record
// for record, field for field.
func TestTemplatesWriteTheSameRecords(t *testing.T) {
	all := FeatureLayouts()
	if testing.Short() { // the race detector's run: every third layout
		for i := 0; 3*i < len(all); i++ {
			all[i] = all[3*i]
		}
		all = all[:(len(all)+2)/3]
	}
	compacted, repeats := 0, 0
	for _, j := range all {
		name := fmt.Sprintf("tp%d pp%d dp%d %v zero%d recompute%d", j.TP, j.PP, j.DP, j.Schedule, j.Zero, j.Recompute)
		var plain, tpl dumpSink
		st0, _, err := emitStats(j, &plain, emitOpts{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		st1, n, err := emitStats(j, &tpl, emitOpts{templates: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sameRecords(t, name, "generated", "with recordings", plain.recs, tpl.recs)
		if fmt.Sprint(st0) != fmt.Sprint(st1) {
			t.Errorf("%s: stats %v generated, %v with recordings", name, st0, st1)
		}
		// The property is only tested where recordings are replayed.
		if n.replayed == 0 {
			t.Errorf("%s: no layer pass was replayed from a recording", name)
		}
		compacted += n.compacted
		repeats += n.repeats
	}
	// Replayed forwards keep their saved sets compact (saved.compact),
	// which the records above cover.
	if compacted == 0 {
		t.Error("no saved set was kept compact")
	}
	// So are collectives per group recorded as one (tplRec.more).
	if repeats == 0 {
		t.Error("no Reduce was recorded as a copy of the one before")
	}
}

// TestSigTableEqualsPairs checks sig's table against the comparison of
// every pair, on input lists whose ids and storages are drawn from a few
// values, so that they share ids and storages in every way (an id equal to
// another's storage, repeated tensors, id 0), and on lists longer than the
// table takes.
func TestSigTableEqualsPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var tab sigTable // one table for every trial, as a generator keeps it
	for trial := 0; trial < 20000; trial++ {
		if trial == 10000 {
			tab.gen = math.MaxUint32 - 3 // the trials after go through its generations' wrap
		}
		n := rng.IntN(maxSigHashed + 8)
		vals := 1 + rng.IntN(2*n+2)
		ts := make([]values.Tensor, n)
		for k := range ts {
			ts[k].ID = int64(rng.IntN(vals)) - 1
			ts[k].Storage = int64(rng.IntN(vals)) - 1
			if rng.IntN(4) == 0 {
				ts[k].Storage = ts[k].ID
			}
		}
		got := sig(&tab, nil, ts)
		want := sigPairs(nil, ts)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: sig %v, pair by pair %v, for %v", trial, got, want, ts)
		}
	}
}

// markSeen over a run marks exactly the ids seenBefore would mark one at
// a time, across word boundaries and on a table that has to grow.
func TestMarkSeenMatchesSeenBefore(t *testing.T) {
	runs := [][2]int64{{0, 0}, {0, 1}, {3, 64}, {63, 65}, {64, 128}, {100, 300}, {5, 6}, {700, 701}, {1000, 1130}}
	for _, r := range runs {
		var a, b emitter
		a.seen = make([]uint64, 1)
		b.seen = make([]uint64, 1)
		a.markSeen(r[0], r[1])
		for id := r[0]; id < r[1]; id++ {
			b.seenBefore(id)
		}
		for id := int64(0); id < 1200; id++ {
			w := id >> 6
			in := func(e *emitter) bool { return w < int64(len(e.seen)) && e.seen[w]&(1<<(id&63)) != 0 }
			if in(&a) != in(&b) {
				t.Fatalf("run %v: id %d marked %v by markSeen, %v one at a time", r, id, in(&a), in(&b))
			}
		}
	}
}

// A recording replays only with inputs that share ids and storages as its
// own did: inputs equal field by field but for how they alias one another
// do not match, whichever way the aliasing changes, and the recorded
// inputs with fresh ids (the same pattern) do.
func TestMatchesComparesAliasing(t *testing.T) {
	shape := []int64{4, 8}
	tensor := func(id, storage int64) values.Tensor {
		return values.Tensor{ID: id, Storage: storage, NBytes: 64, Dtype: "bfloat16", Shape: shape}
	}
	var e emitter
	e.seen = make([]uint64, 1)
	// Recorded: x, a view of x, and y on its own storage.
	rec := []values.Tensor{tensor(10, 10), tensor(11, 10), tensor(12, 12)}
	r := e.startRecording(passCtx{}, rec, nil)
	e.recd = nil
	var scratch []int32
	for _, c := range []struct {
		name string
		ins  []values.Tensor
		want bool
	}{
		{"the same pattern, fresh ids", []values.Tensor{tensor(20, 20), tensor(21, 20), tensor(22, 22)}, true},
		{"the view on a storage of its own", []values.Tensor{tensor(20, 20), tensor(21, 21), tensor(22, 22)}, false},
		{"the third a view of the first too", []values.Tensor{tensor(20, 20), tensor(21, 20), tensor(22, 20)}, false},
		{"the first tensor twice", []values.Tensor{tensor(20, 20), tensor(20, 20), tensor(22, 22)}, false},
	} {
		if got := r.t.matches(&e, c.ins, nil, &scratch); got != c.want {
			t.Errorf("%s: matches %v, want %v", c.name, got, c.want)
		}
	}
	if !sameSig([]int32{1, 2}, []int32{1, 2}) || sameSig([]int32{1, 2}, []int32{1, 3}) || sameSig([]int32{1}, []int32{1, 0}) || !sameSig(nil, []int32{}) {
		t.Error("sameSig")
	}
}

// gatherSink counts the tensor-parallel all-gathers (Reduce "stack" over
// tp) written inside and outside the layer passes a PassSink is told of;
// it applies none, so every record comes.
type gatherSink struct {
	open            bool
	inside, outside int
}

func (s *gatherSink) Write(rec *history.Record, _ *values.Registry) error {
	if m := &rec.Msg; m.Kind == gen.MsgReduce && m.Reduce.Reduction == "stack" && slices.Equal(m.Reduce.Dims, []string{"tp"}) {
		if s.open {
			s.inside++
		} else {
			s.outside++
		}
	}
	return nil
}

func (s *gatherSink) BeginPass(*sched.Pass) bool { s.open = true; return false }
func (s *gatherSink) EndPass()                   { s.open = false }

// With scatter/gather, a received shard's all-gather is the first thing
// the layer pass after the receive writes, so that a replayed pass
// applies it with the layer: outside the passes there are only those of
// the passes generated or recorded before a recording is replayed (a few
// per stage and pass kind), whatever the microbatches.
func TestReceivedGatherInsidePasses(t *testing.T) {
	m := Model{Name: "tiny-gpt", Layers: 8, Hidden: 128, Heads: 4, Vocab: 300, Seq: 32, Bias: true, Dtype: "bfloat16"}
	first := -1
	for _, mbs := range []int{16, 64} {
		j := Job{Model: m, TP: 2, PP: 4, DP: 1, MicroBatch: 1, GlobalBatch: mbs, Schedule: OneFOneB, Steps: 2}
		var s gatherSink
		if _, _, err := emitStats(j, &s, emitOpts{templates: true}); err != nil {
			t.Fatal(err)
		}
		// 3 stage boundaries, both directions, every microbatch, 2 steps.
		if want := 3 * 2 * mbs * 2; s.inside+s.outside != want {
			t.Fatalf("%d microbatches: %d all-gathers, want one a transfer, %d", mbs, s.inside+s.outside, want)
		}
		t.Logf("%d microbatches: %d inside, %d outside", mbs, s.inside, s.outside)
		// Per receiving stage and direction: the pass generated, the one
		// recorded, and one for each other kind of pass that may come
		// first (a backward's first with fresh gradients).
		if bound := 3 * 2 * 3; s.outside > bound {
			t.Errorf("%d microbatches: %d of %d all-gathers outside the layer passes, want at most %d", mbs, s.outside, s.inside+s.outside, bound)
		}
		if first >= 0 && s.outside != first {
			t.Errorf("%d all-gathers outside the passes with %d microbatches, %d with 16: they grow with the microbatches", s.outside, mbs, first)
		}
		first = s.outside
	}
}

// The emitter's shapes: one slice for equal dims, whoever asks; other
// dims their own; a scalar's nil or empty shape as given; and dims in a
// crowded neighbourhood still equal, if not shared.
func TestShapeTable(t *testing.T) {
	var tab shapeTable
	a := tab.of([]int64{2048, 1, 25600})
	b := tab.of([]int64{2048, 1, 25600})
	if &a[0] != &b[0] || !slices.Equal(a, []int64{2048, 1, 25600}) {
		t.Fatalf("equal dims: %v at %p, %v at %p", a, &a[0], b, &b[0])
	}
	c := tab.of([]int64{2048, 25600})
	if !slices.Equal(c, []int64{2048, 25600}) || &c[0] == &a[0] {
		t.Fatalf("other dims: %v", c)
	}
	dims := []int64{7, 9}
	d := tab.of(dims)
	dims[0] = 8 // the caller's slice is not the table's
	if !slices.Equal(d, []int64{7, 9}) {
		t.Fatalf("the table kept the caller's slice: %v", d)
	}
	if s := tab.of(nil); s != nil {
		t.Fatalf("scalar: %v", s)
	}
	if s := tab.of([]int64{}); s == nil || len(s) != 0 {
		t.Fatalf("empty: %#v", s)
	}
	// Fill the table; every answer stays equal to what was asked.
	for i := range int64(3000) {
		if s := tab.of([]int64{i, 3}); !slices.Equal(s, []int64{i, 3}) {
			t.Fatalf("dims %d,3: %v", i, s)
		}
	}
	if s := tab.of([]int64{2048, 1, 25600}); &s[0] != &a[0] {
		t.Fatal("a shape kept before the table filled is no longer shared")
	}
}

// TestPlaceGridIsAScan: the index placeGrid computes from a slice's offset
// is the one a scan of the stage's slices finds first (or -1), for the
// stage's own groups and for slices near them, on stages laid out as
// setup lays them out, including tp 1 and dp 1, where a group can equal
// another.
func TestPlaceGridIsAScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 7))
	for _, sz := range [][2]int64{{1, 1}, {1, 4}, {4, 1}, {3, 2}, {2, 8}, {5, 3}, {64, 8}} {
		dp, tp := sz[0], sz[1]
		for _, pp := range []int{1, 3} {
			j := Job{Model: Model{Name: "m", Layers: 2, Hidden: 64, Heads: 8, FFN: 256, Vocab: 128, Seq: 16}, TP: int(tp), PP: pp, DP: int(dp),
				MicroBatch: 1, GlobalBatch: int(dp), Schedule: OneFOneB, Chunks: 1, Steps: 1, GPUsPerHost: 8}
			g := &generator{j: j, d: dimsOf(&j), v: j.chunks(), m: j.Micro()}
			g.e = emitter{w: &dumpSink{}, next: 1}
			g.setup()
			for _, st := range g.stages {
				grid := passCtx{slices: st.slices, off: st.all.Offset, dp: dp, tp: tp}
				scan := passCtx{slices: st.slices}
				try := func(x values.Slice) {
					if a, b := grid.place(&x), scan.place(&x); a != b {
						t.Fatalf("dp %d tp %d stage %d: %+v placed at %d, a scan finds %d", dp, tp, st.idx, x, a, b)
					}
				}
				for _, x := range st.slices {
					try(x)
				}
				world := int64(pp) * dp * tp
				for range 2000 {
					n := 1 + rng.Int64N(2)
					x := values.Slice{Offset: rng.Int64N(world + 2)}
					for range n {
						x.Sizes = append(x.Sizes, 1+rng.Int64N(max(dp, tp)))
						x.Strides = append(x.Strides, []int64{1, tp, dp}[rng.IntN(3)])
					}
					try(x)
				}
			}
		}
	}
}
