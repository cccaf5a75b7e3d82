package search

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/values"
	"github.com/fastsim/fastsim/internal/workload"
)

// Bound is a layout's lower bounds: no replay of it reports a lower peak
// memory or a shorter step.
//
// Both come from the workload itself, priced by the search's own cost
// model, on probe jobs of one or two layers and one or two microbatches
// on a single stage (tiny histories, a few hundred records, that are
// emitted but not replayed):
//
//   - Memory: the model state of a layer (the storages a layer's
//     parameter group allocates at setup and keeps to the end: bf16
//     parameters, fp32 main gradients (unless FP16Grads keeps 16-bit ones
//     within the step), master weights and Adam moments, sharded as the
//     ZeRO stage says) times the layers of a stage, plus
//     what stage 0 must hold at the end of its warm-up: what every layer
//     keeps for its backward (workload.KeptBytes) for every microbatch-chunk then
//     in flight, min(p, m) microbatches under 1F1B,
//     min(2(p-1)+(v-1)p+1, mv) chunks interleaved, m under GPipe.
//     Embedding, head, norms' statistics, pipeline buffers and transients
//     only add to the peak.
//   - Step time: the compute stream of a stage runs its tasks one at a
//     time, so a step takes at least the runtime of the layer tasks on it
//     (forward, backward and recomputation of one layer and microbatch, ℓ,
//     times the stage's L/p layers and m microbatches), plus the pipeline's
//     fill and drain: the first microbatch's forward passes the first p-1
//     stages' first chunk (L/(pv) layers each) before the last stage can
//     start, and the last backward passes them again after it ends. So
//     T >= ℓ·(L/p)·m + ℓ·(L/(pv))·(p-1) + o·(L/p): after the drain, stage
//     0 still runs its layers' optimizer step (o per layer) on the same
//     stream. Other communication, the embedding and the head only add.
//
// ℓ is the runtime of the tasks on the compute stream in the second step
// of a probe, differenced over layers and microbatches so the optimizer,
// embedding and head cancel: ℓ = C(2,2) - C(1,2) - C(2,1) + C(1,1), C(L,m)
// for L layers and m microbatches; and o = C(2,1) - C(1,1) - ℓ. The tasks
// counted are the calls and the tensor-parallel collectives (Megatron-LM
// runs them on the compute stream, not overlapped): a collective holds its
// stream for at least its runtime, and a tensor-parallel peer set is the
// same in the probe as in every layout of that size. o is counted only
// without ZeRO: sharded, the optimizer's work shrinks with dp, and the
// probe's dp is not the layout's.
type Bound struct {
	MemoryBytes int64
	TimeNs      int64
}

// timeKey is what ℓ depends on: the shapes of a layer's tasks and which
// tasks there are.
type timeKey struct {
	tp, mb, zero int
	rec          workload.Recompute
	sp           bool
}

// stateKey is what a layer's model state depends on.
type stateKey struct{ tp, dp, zero int }

// bounder caches probe results; lookups happen once per layout, not on a
// replay's hot path.
type bounder struct {
	s     Space
	model sched.CostModel
	mu    sync.Mutex
	layer map[timeKey][2]int64 // ℓ and o
	state map[stateKey]int64
}

// Bounds computes the bounds of layouts all[i] for i in idx, jobs at a
// time; model nil prices as the reference does.
func Bounds(ctx context.Context, s Space, all []Layout, idx []int, model sched.CostModel, jobs int) ([]Bound, error) {
	if model == nil {
		model = sched.DefaultCosts()
	}
	b := &bounder{s: s, model: model, layer: map[timeKey][2]int64{}, state: map[stateKey]int64{}}
	out := make([]Bound, len(idx))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(max(jobs, 1))
	for j, i := range idx {
		g.Go(func() (err error) {
			defer sched.RecoverInternal(&err)
			if err := ctx.Err(); err != nil {
				return err
			}
			bd, err := b.bound(ctx, all[i])
			if err != nil {
				return fmt.Errorf("layout pp=%d dp=%d tp=%d micro=%d: bound: %w", all[i].PP, all[i].DP, all[i].TP, all[i].Micro, err)
			}
			out[j] = bd
			return nil
		})
	}
	return out, g.Wait()
}

// bound is layout l's bounds.
func (b *bounder) bound(ctx context.Context, l Layout) (Bound, error) {
	j := b.s.Job(l)
	L := int64(j.Model.Layers)
	p, v, m := int64(j.PP), int64(j.VStages()/j.PP), int64(j.Micro())
	z := j.Zero
	if j.DP == 1 {
		z = 0 // nothing to shard
	}
	lo, err := b.layerNs(ctx, timeKey{tp: j.TP, mb: j.MicroBatch, zero: z, rec: j.Recompute, sp: j.SequenceParallel})
	if err != nil {
		return Bound{}, err
	}
	ell, opt := lo[0], lo[1]
	if z > 0 {
		// Sharded over dp, a layer's optimizer work shrinks as dp grows;
		// the probe's (dp 2) is no lower bound for a larger dp.
		opt = 0
	}
	state, err := b.stateBytes(ctx, stateKey{tp: j.TP, dp: j.DP, zero: z})
	if err != nil {
		return Bound{}, err
	}
	var inflight int64
	switch j.Schedule {
	case workload.GPipe:
		inflight = m
	case workload.OneFOneB:
		inflight = min(p, m)
	case workload.Interleaved:
		inflight = min(2*(p-1)+(v-1)*p+1, m*v)
	}
	act := workload.KeptBytes(&j)
	fill := ell * (L / (p * v)) * (p - 1)
	if j.FP16Grads && m == 1 {
		// With 16-bit gradients ℓ holds a later microbatch's gradient
		// addition, which the only microbatch's backward does not run:
		// the drain is not bounded by ℓ, so it is left out.
		fill = 0
	}
	return Bound{
		MemoryBytes: L/p*state + inflight*(L/(p*v))*act,
		TimeNs:      ell*(L/p)*m + fill + opt*(L/p),
	}, nil
}

// layerNs is ℓ and o for k, probed once.
func (b *bounder) layerNs(ctx context.Context, k timeKey) ([2]int64, error) {
	b.mu.Lock()
	v, ok := b.layer[k]
	b.mu.Unlock()
	if ok {
		return v, nil
	}
	dp := 1
	if k.zero > 0 {
		dp = 2
	}
	var c [2][2]int64
	for L := 1; L <= 2; L++ {
		for m := 1; m <= 2; m++ {
			j := b.probeJob(k.tp, dp, k.mb, m, L, k.zero, k.rec, k.sp)
			pr := &probe{model: b.model, main: 2, stopAt: 2, gpusPerHost: int64(j.GPUsPerHost), ctx: ctx}
			if err := probeEmit(j, pr); err != nil && !errors.Is(err, errProbeDone) {
				return [2]int64{}, err
			}
			c[L-1][m-1] = pr.mainNs
		}
	}
	ell := max(c[1][1]-c[0][1]-c[1][0]+c[0][0], 0)
	v = [2]int64{ell, max(c[1][0]-c[0][0]-ell, 0)}
	b.mu.Lock()
	b.layer[k] = v
	b.mu.Unlock()
	return v, nil
}

// stateBytes is a layer's model state on one device for k, probed once.
func (b *bounder) stateBytes(ctx context.Context, k stateKey) (int64, error) {
	b.mu.Lock()
	v, ok := b.state[k]
	b.mu.Unlock()
	if ok {
		return v, nil
	}
	var c [2]int64
	for L := 1; L <= 2; L++ {
		j := b.probeJob(k.tp, k.dp, 1, 1, L, k.zero, workload.RecomputeNone, false)
		pr := &probe{model: b.model, main: 2, stopAt: -1, ctx: ctx}
		if err := probeEmit(j, pr); err != nil && !errors.Is(err, errProbeDone) {
			return 0, err
		}
		c[L-1] = pr.stateBytes
	}
	v = max(c[1]-c[0], 0)
	b.mu.Lock()
	b.state[k] = v
	b.mu.Unlock()
	return v, nil
}

// probeJob is the space's model cut to L layers on one stage of tp x dp
// ranks, m microbatches of mb sequences, two steps.
func (b *bounder) probeJob(tp, dp, mb, m, L, zero int, rec workload.Recompute, sp bool) workload.Job {
	model := b.s.Model
	model.Layers = L
	j := workload.Job{
		Model: model, TP: tp, PP: 1, DP: dp, MicroBatch: mb, GlobalBatch: mb * m * dp,
		Schedule: workload.OneFOneB, Chunks: 1, Recompute: rec, SequenceParallel: sp,
		Zero: zero, Steps: 2, GPUsPerHost: b.s.GPUsPerHost, CommandNs: -1,
	}
	b.s.SetMechanisms(&j)
	return j
}

// tpDims is how the workload names the mesh dimension of a
// tensor-parallel collective (its mesh is pp x dp x tp).
var tpDims = []string{"tp"}

// probeEmit writes a probe's job. A probe has one or two layers, too few
// for recorded passes to pay back their recording, so it is written
// without (the same records). Tests swap in the recorded writer.
var probeEmit = workload.EmitUnrecorded

// errProbeDone stops a probe's emission once it has what it needs.
var errProbeDone = errors.New("probe done")

// The setup operators that allocate a parameter group's persistent
// storages, and the view that goes with them (no memory).
const (
	opEmpty = "torch.ops.aten.empty.memory_format"
	opZeros = "torch.ops.aten.zeros.default"
	opView  = "torch.ops.aten.view.default"
)

// probe is a workload.Sink that prices instead of replaying: the runtime
// of the calls on stream main in step stopAt-1 (the second step), and the
// bytes the setup allocates on rank 0 (stopAt < 0: stop after setup).
type probe struct {
	model       sched.CostModel
	gpusPerHost int64
	main        int64
	stopAt      int
	steps       int
	mainNs      int64
	stateBytes  int64
	pastSetup   bool
	// ctx, when set, ends the probe once it is done: a probe of a layout
	// at a world of a million ranks writes millions of records.
	ctx context.Context
}

// Write takes one record.
func (p *probe) Write(rec *history.Record, _ *values.Registry) error {
	if p.ctx != nil {
		select {
		case <-p.ctx.Done():
			return p.ctx.Err()
		default:
		}
	}
	if rec.IsStep {
		p.steps++
		if p.steps == p.stopAt {
			return errProbeDone
		}
		return nil
	}
	if rec.Msg.Kind == gen.MsgReduce {
		// A tensor-parallel collective on the compute stream holds it for
		// at least its runtime, which is the same in every layout of this
		// tensor-parallel size: a peer set of tp ranks placed alike. Rank
		// 0's peer set stands for all of them.
		r := &rec.Msg.Reduce
		if p.steps == p.stopAt-1 && p.pastSetup && r.Stream.Ref == p.main && slices.Equal(r.Dims, tpDims) && hasRank0(rec.Ranks) {
			p.mainNs += p.model.ReduceRuntimeNs(r, sched.SliceComm(rec.Ranks, p.gpusPerHost))
		}
		return nil
	}
	if rec.Msg.Kind != gen.MsgCallFunction {
		return nil
	}
	cf := &rec.Msg.CallFunction
	if !p.pastSetup {
		switch cf.Function {
		case opEmpty, opZeros:
			if hasRank0(rec.Ranks) {
				for _, t := range cf.Result.Leaves {
					p.stateBytes += t.NBytes
				}
			}
			return nil
		case opView:
			return nil
		}
		p.pastSetup = true
		if p.stopAt < 0 {
			return errProbeDone
		}
	}
	if p.steps == p.stopAt-1 && cf.Stream.Ref == p.main {
		// The engine ends a view when it starts, whatever its price.
		if cf.Function != opView {
			p.mainNs += p.model.CallRuntimeNs(cf, sched.CleanName(cf.Function))
		}
	}
	return nil
}

// hasRank0 reports whether rank 0 is among ranks' slices.
func hasRank0(ranks []values.Slice) bool {
	for i := range ranks {
		if ranks[i].Offset == 0 {
			return true
		}
	}
	return false
}
