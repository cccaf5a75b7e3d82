package workload_test

import (
	"strings"
	"testing"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/workload"
)

type collKey struct {
	dim       string
	reduction string
	scatter   bool
	ranks     int64
}

// collectives counts the Reduce commands of one step by mesh dimension,
// kind and group size.
func collectives(t *testing.T, j workload.Job) map[collKey]int {
	t.Helper()
	out := map[collKey]int{}
	eachRecord(t, j, true, func(rec *history.Record) {
		if rec.Msg.Kind != gen.MsgReduce {
			return
		}
		red := &rec.Msg.Reduce
		n := int64(0)
		for i := range rec.Ranks {
			n += rec.Ranks[i].Len()
		}
		out[collKey{red.Dims[0], red.Reduction, red.Scatter, n}]++
	})
	return out
}

// TestCollectives counts one step's collectives by hand for tp=2, pp=2,
// dp=2, 4 layers, 2 microbatches per replica (Megatron-LM's placement):
//
//	tensor parallel, one command per replica (2) of 2 ranks: per
//	microbatch 4 all-reduces a layer (attention and MLP outputs forward,
//	their inputs' gradients backward) x 4 layers, the embedding's
//	forward and the output layer's input gradient: 18 x 2 microbatches
//	x 2 replicas = 72; with sequence parallelism each becomes a
//	reduce-scatter and the layers' backward and the output layer add
//	all-gathers. The cross entropy adds per microbatch a max and two
//	sums of s*b values: 4 max and 8 more sums.
//	data parallel, one command per shard (2) of 2 ranks: one all-reduce
//	per parameter group and step (stage 0: word embedding, positions, 2
//	layers; stage 1: 2 layers, the word embedding's copy, the final
//	norm): 8 x 2 = 16.
//	the tied embedding, one command per replica and shard (4) of 2 ranks
//	(stage 0 and stage 1): 4.
//	pipeline scatter/gather: each microbatch's activation (stage 0 to 1)
//	and gradient (1 to 0) arrive as halves, all-gathered over the
//	receiver's tensor-parallel group: 2 x 2 microbatches x 2 replicas = 8.
func TestCollectives(t *testing.T) {
	j := workload.Job{Model: tiny, TP: 2, PP: 2, DP: 2, MicroBatch: 2, GlobalBatch: 8, Schedule: workload.OneFOneB, Steps: 1}
	got := collectives(t, j)
	want := map[collKey]int{
		{"tp", "sum", false, 2}:   72 + 8,
		{"tp", "max", false, 2}:   4,
		{"tp", "stack", false, 2}: 8,
		{"dp", "sum", false, 2}:   16,
		{"pp", "sum", false, 2}:   4,
	}
	if len(got) != len(want) {
		t.Errorf("collectives %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%+v: %d commands, want %d", k, got[k], n)
		}
	}
	// Without scatter/gather the transfers are whole: no all-gathers.
	j.NoScatterGather = true
	if got = collectives(t, j); got[collKey{"tp", "stack", false, 2}] != 0 {
		t.Errorf("no scatter/gather: %v", got)
	}
	j.NoScatterGather = false
	// ZeRO 1: reduce-scatters into the optimizer's shards, and after the
	// step all-gathers of the updated parameters (8 groups x 2 shards).
	j.Zero = 1
	got = collectives(t, j)
	if got[collKey{"dp", "sum", true, 2}] != 16 || got[collKey{"dp", "stack", false, 2}] != 16 || got[collKey{"dp", "sum", false, 2}] != 0 {
		t.Errorf("zero 1: %v", got)
	}
	// Full recomputation repeats each layer's forward with its two
	// all-reduces: 4 layers x 2 x 2 microbatches x 2 replicas = 32 more.
	j.Zero, j.Recompute = 0, workload.RecomputeFull
	if got = collectives(t, j); got[collKey{"tp", "sum", false, 2}] != 80+32 {
		t.Errorf("full recomputation: %v", got)
	}
	// Sequence parallelism: per microbatch 4 reduce-scatters a layer
	// (2 forward, 2 backward) + the embedding's + the output layer's
	// input gradient = 18, and 2 + 4 all-gathers a layer (before QKV and
	// fc1 forward; the output gradients, and again the norms' outputs for
	// the weight gradients, backward) + the output layer's forward and
	// weight gradient, and the embedding's gradient = 4*6 + 3 = 27; x 2
	// microbatches x 2 replicas; the cross entropy's sums stay all-reduces.
	j.Recompute, j.SequenceParallel = workload.RecomputeNone, true
	got = collectives(t, j)
	if got[collKey{"tp", "sum", true, 2}] != 18*4 || got[collKey{"tp", "stack", false, 2}] != 27*4 || got[collKey{"tp", "sum", false, 2}] != 8 {
		t.Errorf("sequence parallel: %v", got)
	}
	j.SequenceParallel = false
	// Stage collectives: the same count of collectives, one command each.
	j.Zero, j.StageCollectives = 0, true
	got = collectives(t, j)
	if got[collKey{"tp", "sum", false, 4}] != 40 || got[collKey{"dp", "sum", false, 4}] != 8 || got[collKey{"pp", "sum", false, 8}] != 1 {
		t.Errorf("stage collectives: %v", got)
	}
}

// sends lists the element counts of one step's SendTensor commands.
func sends(t *testing.T, j workload.Job) []int64 {
	t.Helper()
	var out []int64
	eachRecord(t, j, true, func(rec *history.Record) {
		if rec.Msg.Kind == gen.MsgSendTensor {
			n := int64(1)
			for _, d := range rec.Msg.SendTensor.Tensor.Shape {
				n *= d
			}
			out = append(out, n)
		}
	})
	return out
}

// TestScatterGather: between two stages of t = 2 shards each transfer
// moves s·b·h/t = 64·2·256/2 = 16,384 elements per shard (Narayanan et
// al., SC'21, §4.1), 2 microbatches x (activation + gradient) = 4
// transfers; without scatter/gather, or with sequence parallelism (whose
// activations are [s/t, b, h] already), 4 of s·b·h/t elements as well
// but sent whole: 32,768 and 16,384.
func TestScatterGather(t *testing.T) {
	j := workload.Job{Model: tiny, TP: 2, PP: 2, DP: 1, MicroBatch: 2, GlobalBatch: 4, Schedule: workload.OneFOneB, Steps: 1}
	for _, c := range []struct {
		noSG, sp bool
		want     int64
	}{{false, false, 16384}, {true, false, 32768}, {false, true, 16384}} {
		j.NoScatterGather, j.SequenceParallel = c.noSG, c.sp
		got := sends(t, j)
		if len(got) != 4 {
			t.Fatalf("%+v: %d transfers, want 4", c, len(got))
		}
		for _, n := range got {
			if n != c.want {
				t.Errorf("%+v: a transfer of %d elements, want %d", c, n, c.want)
			}
		}
	}
}

// TestGradAfterBackward: Megatron-LM's local DDP all-reduces the same 8
// groups x 2 shards = 16 gradients as the overlapped form (see
// TestCollectives), but on the compute stream (ref 2 for stage 0, 3 for
// stage 1) instead of "comm" (ref 1), after every backward; each is fp32,
// or bf16 with HalfGradReduce; each is first divided by dp in place.
func TestGradAfterBackward(t *testing.T) {
	j := workload.Job{Model: tiny, TP: 2, PP: 2, DP: 2, MicroBatch: 2, GlobalBatch: 8, Schedule: workload.OneFOneB, Steps: 1,
		GradReduce: workload.GradAfterBackward}
	for _, half := range []bool{false, true} {
		j.HalfGradReduce = half
		n, divs, lastBackward, firstReduce, i := 0, 0, -1, -1, 0
		eachRecord(t, j, true, func(rec *history.Record) {
			i++
			switch {
			case rec.Msg.Kind == gen.MsgCallFunction && strings.HasSuffix(rec.Msg.CallFunction.Function, "native_layer_norm_backward.default"):
				lastBackward = i
			case rec.Msg.Kind == gen.MsgCallFunction && strings.HasSuffix(rec.Msg.CallFunction.Function, "div_.Scalar"):
				divs++
			case rec.Msg.Kind == gen.MsgReduce && rec.Msg.Reduce.Dims[0] == "dp":
				red := &rec.Msg.Reduce
				n++
				if firstReduce < 0 {
					firstReduce = i
				}
				want := "float32"
				if half {
					want = "bfloat16"
				}
				if red.Stream.Ref == 1 || red.LocalTensor.Dtype != want {
					t.Errorf("half=%v: a gradient all-reduce on stream %d of %s, want a compute stream and %s", half, red.Stream.Ref, red.LocalTensor.Dtype, want)
				}
			}
		})
		if n != 16 || divs != 8 {
			t.Errorf("half=%v: %d gradient all-reduces and %d divisions, want 16 and 8", half, n, divs)
		}
		if firstReduce < lastBackward {
			t.Errorf("half=%v: a gradient all-reduce (record %d) before the last backward (record %d)", half, firstReduce, lastBackward)
		}
	}
}

// TestBlockingP2P: with Job.BlockingP2P every pipeline transfer's loan is
// given back (the sender's compute stream waits for the transfer) right
// after the transfer, before any other command but the deletes of what
// it sent; without it, a loan is given back at the sender's next send.
// Four stages, two shards (scatter/gather), 1F1B and interleaved.
func TestBlockingP2P(t *testing.T) {
	for _, sched := range []workload.Schedule{workload.OneFOneB, workload.Interleaved} {
		for _, blocking := range []bool{false, true} {
			j := workload.Job{Model: tiny, TP: 2, PP: 4, DP: 1, MicroBatch: 2, GlobalBatch: 8, Schedule: sched, Chunks: 2, Steps: 1,
				BlockingP2P: blocking}
			j.Model.Layers = 8
			sent := map[int64]int{} // transfer loan -> record of its last use
			pending, i, prompt, transfers := false, 0, 0, 0
			eachRecord(t, j, true, func(rec *history.Record) {
				i++
				switch m := &rec.Msg; m.Kind {
				case gen.MsgSendTensor:
					pending = true
				case gen.MsgBorrowLastUse:
					if pending { // the transfer's loan ends after the receiver's all-gather
						sent[m.BorrowLastUse.Borrow] = i
						pending = false
						transfers++
					}
				case gen.MsgBorrowDrop:
					if at, ok := sent[m.BorrowDrop.Borrow]; ok && i-at <= 2 {
						prompt++
					}
				}
			})
			if transfers == 0 {
				t.Fatalf("schedule %d: no transfers", sched)
			}
			if want := map[bool]int{true: transfers, false: 0}[blocking]; prompt != want {
				t.Errorf("schedule %d blocking %v: %d of %d transfers' loans given back right after them, want %d", sched, blocking, prompt, transfers, want)
			}
		}
	}
}

// TestTransferDeletesInOneRecord: a pipeline transfer's sender deletes
// what the transfer held (its tensor, the loan's view of it and, with
// scatter/gather, the part it sent) in one DeleteRefs, after the loan's
// last use: each of them shares the loaned storage, which the loan holds
// until it is given back, so deleting them together frees nothing sooner
// or later. With and without scatter/gather, blocking or not.
func TestTransferDeletesInOneRecord(t *testing.T) {
	for _, noSG := range []bool{false, true} {
		for _, blocking := range []bool{false, true} {
			j := workload.Job{Model: tiny, TP: 2, PP: 4, DP: 1, MicroBatch: 2, GlobalBatch: 8, Schedule: workload.OneFOneB, Steps: 1,
				NoScatterGather: noSG, BlockingP2P: blocking}
			type transfer struct {
				ids     [3]int64 // tensor, loaned view, part sent
				lastUse int      // record of the loan's last use
			}
			byBorrow := map[int64]*transfer{}
			byLent := map[int64]*transfer{}
			var ts []*transfer
			deletedAt := map[int64]int{}
			i := 0
			eachRecord(t, j, true, func(rec *history.Record) {
				i++
				switch m := &rec.Msg; m.Kind {
				case gen.MsgBorrowCreate:
					tr := &transfer{ids: [3]int64{m.BorrowCreate.Tensor.ID, m.BorrowCreate.Result.ID}}
					byBorrow[m.BorrowCreate.Borrow] = tr
					byLent[m.BorrowCreate.Result.Storage] = tr
				case gen.MsgSendTensor:
					if tr := byLent[m.SendTensor.Tensor.Storage]; tr != nil {
						tr.ids[2] = m.SendTensor.Tensor.ID
						ts = append(ts, tr)
					}
				case gen.MsgBorrowLastUse:
					if tr := byBorrow[m.BorrowLastUse.Borrow]; tr != nil {
						tr.lastUse = i
					}
				case gen.MsgDeleteRefs:
					for _, id := range m.DeleteRefs.Refs {
						deletedAt[id] = i
					}
				}
			})
			if len(ts) == 0 {
				t.Fatalf("scatter/gather off %v, blocking %v: no transfers", noSG, blocking)
			}
			for _, tr := range ts {
				at := deletedAt[tr.ids[1]]
				if at == 0 || at < tr.lastUse {
					t.Fatalf("scatter/gather off %v, blocking %v: loaned view %d deleted at record %d, its loan last used at %d",
						noSG, blocking, tr.ids[1], at, tr.lastUse)
				}
				for _, id := range tr.ids {
					if deletedAt[id] != at {
						t.Fatalf("scatter/gather off %v, blocking %v: transfer %v: tensor %d deleted at record %d, the loaned view at %d",
							noSG, blocking, tr.ids, id, deletedAt[id], at)
					}
				}
			}
		}
	}
}
