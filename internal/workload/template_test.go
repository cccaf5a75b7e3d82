package workload

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/history"
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

// templateLayouts are layouts of every schedule, recomputation policy,
// ZeRO stage, attention and MLP kind,
// with several layers per stage so that recordings are replayed, and a
// first stage whose first layer takes the embedding's view.
func templateLayouts() []Job {
	gpt := Model{Name: "tiny-gpt", Layers: 12, Hidden: 128, Heads: 4, Vocab: 300, Seq: 32, Bias: true, Tied: true, Dtype: "bfloat16"}
	llama := Model{Name: "tiny-llama", Layers: 12, Hidden: 128, Heads: 4, KVHeads: 2, FFN: 192, Vocab: 300, Seq: 32, Gated: true, Dtype: "bfloat16"}
	j := func(m Model, tp, pp, dp, gb int, s Schedule, edit func(*Job)) Job {
		job := Job{Model: m, TP: tp, PP: pp, DP: dp, MicroBatch: 1, GlobalBatch: gb, Schedule: s, Steps: 2}
		if edit != nil {
			edit(&job)
		}
		return job
	}
	return []Job{
		j(gpt, 1, 1, 1, 2, OneFOneB, nil),
		j(gpt, 2, 2, 1, 4, OneFOneB, nil),
		j(gpt, 2, 3, 2, 12, GPipe, func(j *Job) { j.SequenceParallel = true; j.Zero = 1 }),
		j(gpt, 2, 3, 2, 12, Interleaved, func(j *Job) { j.Chunks = 2; j.Recompute = RecomputeSelective }),
		j(gpt, 2, 2, 2, 8, OneFOneB, func(j *Job) { j.Recompute = RecomputeFull; j.FP32CrossEntropy = true }),
		j(gpt, 2, 2, 2, 8, OneFOneB, func(j *Job) { j.GradReduce = GradAfterBackward; j.HalfGradReduce = true; j.BlockingP2P = true }),
		j(gpt, 4, 2, 2, 8, OneFOneB, func(j *Job) { j.StageCollectives = true; j.Zero = 1; j.FuseGradAccumulation = true }),
		j(gpt, 2, 2, 2, 8, OneFOneB, func(j *Job) { j.NoScatterGather = true; j.CommandNs = -1 }),
		j(gpt, 2, 2, 2, 8, OneFOneB, func(j *Job) { j.Zero = 2 }),
		j(gpt, 2, 2, 2, 8, OneFOneB, func(j *Job) { j.Zero = 3; j.Recompute = RecomputeFull }),
		j(gpt, 2, 3, 2, 12, Interleaved, func(j *Job) { j.Chunks = 2; j.Zero = 3; j.SequenceParallel = true; j.Recompute = RecomputeSelective }),
		j(llama, 2, 2, 2, 8, OneFOneB, func(j *Job) { j.FlashAttention = true; j.Zero = 3 }),
		j(llama, 1, 3, 2, 12, Interleaved, func(j *Job) { j.Chunks = 2; j.FlashAttention = true; j.Zero = 2 }),
		j(llama, 2, 2, 2, 8, OneFOneB, func(j *Job) { j.FlashAttention = true }),
		j(llama, 1, 3, 1, 6, Interleaved, func(j *Job) { j.Chunks = 2; j.FlashAttention = true; j.SequenceParallel = true }),
		j(llama, 2, 4, 1, 8, OneFOneB, func(j *Job) { j.Recompute = RecomputeSelective }),
	}
}

// TestTemplatesWriteTheSameRecords: a history written with recorded layer
// passes replayed is the history written by generating every pass, record
// for record, field for field.
func TestTemplatesWriteTheSameRecords(t *testing.T) {
	all := templateLayouts()
	if testing.Short() { // the race detector's run: every third layout
		for i := 0; 3*i < len(all); i++ {
			all[i] = all[3*i]
		}
		all = all[:(len(all)+2)/3]
	}
	for _, j := range all {
		name := fmt.Sprintf("tp%d pp%d dp%d %v zero%d recompute%d", j.TP, j.PP, j.DP, j.Schedule, j.Zero, j.Recompute)
		var plain, tpl dumpSink
		st0, _, err := emitStats(j, &plain, false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		st1, replayed, err := emitStats(j, &tpl, true)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(plain.recs) != len(tpl.recs) {
			t.Errorf("%s: %d records generated, %d with recordings", name, len(plain.recs), len(tpl.recs))
		}
		for i := range min(len(plain.recs), len(tpl.recs)) {
			if plain.recs[i] != tpl.recs[i] {
				t.Errorf("%s: record %d differs:\ngenerated %s\nrecorded  %s", name, i, plain.recs[i], tpl.recs[i])
				break
			}
		}
		if fmt.Sprint(st0) != fmt.Sprint(st1) {
			t.Errorf("%s: stats %v generated, %v with recordings", name, st0, st1)
		}
		// The property is only tested where recordings are replayed.
		if replayed == 0 {
			t.Errorf("%s: no layer pass was replayed from a recording", name)
		}
	}
}

// TestSigTableEqualsPairs checks sig's table against the comparison of
// every pair, on input lists whose ids and storages are drawn from a few
// values, so that they share ids and storages in every way (an id equal to
// another's storage, repeated tensors, id 0), and on lists longer than the
// table takes.
func TestSigTableEqualsPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := 0; trial < 20000; trial++ {
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
		got := sig(nil, ts)
		want := sigPairs(nil, ts)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: sig %v, pair by pair %v, for %v", trial, got, want, ts)
		}
	}
}
