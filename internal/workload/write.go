package workload

import (
	"errors"
	"io"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/values"
)

// streamComm is the data-parallel communication stream on every rank; the
// compute stream of stage s is ref streamMain+s, and a stage sends to a
// neighbour on a stream of the neighbour's compute ref (see stage).
const (
	streamComm = 1
	streamMain = 2
)

// errSchedule is a broken internal invariant: a schedule whose stages wait
// for each other.
var errSchedule = errors.New("workload: pipeline schedule does not progress")

// stage is one pipeline stage: its ranks, streams, parameters and the
// state of its schedule in the current step.
//
// Point-to-point transfers: the receiver receives on its compute stream, in
// the order its schedule needs the data, so the receive buffer is
// allocated when the stage gets to it; the sender lends its output to a
// side stream whose ref is the receiver's compute ref (SendTensor names
// one stream for both ends) and sends from there, so its compute stream
// goes on without waiting for the receiver. The sender gives back the
// loans of the sends the receiver has taken (and its compute stream waits
// for those transfers) at its next send in the same direction, and every
// loan at the end of the step; until then the sent output stays allocated.
type stage struct {
	idx      int
	all      values.Slice
	tpGroups []values.Slice // per data-parallel replica
	dpGroups []values.Slice // per tensor-parallel shard
	slices   []values.Slice // all, tpGroups and dpGroups: the ranks a recorded layer pass names
	main     int64
	groups   []*layerW   // every parameter group, in allocation order
	layers   [][]*layerW // per model chunk
	emb      *layerW
	pos      *layerW // learned positions, apart from a tied word embedding
	head     *layerW
	acts     []action
	cursor   int
	out      [2][]*outSend // sends not given back, to the next stage (0) and the previous one (1)

	// stored is what the stage's transformer layers keep for their
	// backward passes now (saved.bytes over the microbatches in flight),
	// storedMax the most of it in any step.
	stored, storedMax int64

	pendingGrad  []*layerW
	bucketBorrow int64
	// ZeRO 3: matrices gathered and in use, and the last ones used.
	inUse          []*gathered
	pendingRelease *gathered

	// gather is a received shard whose tensor-parallel all-gather is
	// still to be written (scatter-gather): the first layer pass after
	// the receive writes it as its first records, so that a replayed
	// pass applies it with the layer (receive, takeGather).
	gather pendingGather
}

// pendingGather is a received shard (got, 1/t of the tensor) that is
// all-gathered into a tensor of shape when taken; none when got is zero.
type pendingGather struct {
	got   values.Tensor
	shape []int64
}

func (p *pendingGather) pending() bool { return p.got.ID != 0 }
func (p *pendingGather) clear()        { *p = pendingGather{} }

// outSend is a send whose loan is not given back yet.
type outSend struct {
	consumed bool // the receiver has taken it
	dropped  bool // its loan is given back already (Job.BlockingP2P)
	borrow   int64
}

// message is an activation or gradient waiting for its receiver.
type message struct {
	from *stage
	out  *outSend
	sent values.Tensor // the sender's tensor, deleted with the loaned one
	lent values.Tensor
	mb   int // its microbatch
	ok   bool
}

// mailbox holds the messages in flight to one virtual stage in one
// direction, by microbatch. A stage has a few in flight at a time (at
// most its share of the pipeline's depth), not one per microbatch of the
// step: a slot per microbatch, 200 bytes each, came to 13 MB for the
// 1T-parameter prediction's 64 stages and 512 microbatches, a slot
// written once and read once a step, each a cache miss and the whole a
// few thousand page faults. A slot is mb modulo the box's size, grown
// when a microbatch finds its slot taken by another in flight.
type mailbox struct {
	slots []message
}

// at returns microbatch mb's message, nil if none is in flight.
func (b *mailbox) at(mb int) *message {
	if len(b.slots) == 0 {
		return nil
	}
	if m := &b.slots[mb&(len(b.slots)-1)]; m.ok && m.mb == mb {
		return m
	}
	return nil
}

// put returns the slot for microbatch mb's message, to be filled.
func (b *mailbox) put(mb int) *message {
	for {
		if len(b.slots) > 0 {
			if m := &b.slots[mb&(len(b.slots)-1)]; !m.ok {
				return m
			}
		}
		b.grow()
	}
}

// grow doubles the box, moving the messages in flight to their slots.
func (b *mailbox) grow() {
	old := b.slots
	b.slots = make([]message, max(4, 2*len(old)))
	for i := range old {
		if m := &old[i]; m.ok {
			b.slots[m.mb&(len(b.slots)-1)] = *m
		}
	}
}

type headSaved struct {
	x, ln, mu, rs, lsm, tgt, loss, tw values.Tensor
}

// generator writes one job's history.
type generator struct {
	j      Job
	d      dims
	e      emitter
	stages []*stage
	v, m   int // chunks, microbatches
	// per virtual stage and microbatch: what the forward kept, the
	// messages in flight.
	saved [][][]*saved
	// Saved sets and their lists whose backward has run, for the next
	// forwards to reuse: a layer pass makes one set of 25 tensors (about
	// 2 KiB) and allocating it anew each time showed in profiles.
	svFree  []*saved
	svLists [][]*saved
	// Sends whose loans are given back and whose messages are received,
	// for the next sends to reuse: one was allocated for each of the
	// 129,024 transfers of the 1T-parameter prediction.
	outFree []*outSend
	ids     []values.Tensor // embedding inputs, per microbatch
	head    []headSaved
	inAct   []mailbox // activations to each virtual stage
	inGrad  []mailbox // gradients to each virtual stage
	tied    bool      // the word embedding is on the first and the last stage

	// Recorded layer passes (template.go).
	noTemplates bool // generate every layer pass anew
	noPassEnd   bool // passEnd does nothing (a test's switch)
	tplBusy     bool // a pass is being recorded
	tpls        map[tplKey][]*template
	tplSeen     map[tplKey]bool // keys whose first pass was generated
	tplIns      []values.Tensor
	tplOuts     []values.Tensor
	tplInsB     []int64
	tplOutsB    []int64
	tplSig      []int32
	tplReplays  int
	compacted   int // saved sets kept compact (saved.compact)
	tplN        int // recordings kept
}

// Write writes job j's training history to out as JSON lines: setup (mesh,
// streams, parameters and optimizer state), then Steps steps of the
// pipeline schedule, each ending with the optimizer and a step line.
func Write(out io.Writer, j Job) error {
	h, err := HeaderOf(j)
	if err != nil {
		return err
	}
	w, err := history.NewWriter(out, history.FormJSON, h, nil)
	if err != nil {
		return err
	}
	if err := Emit(j, w); err != nil {
		return err
	}
	return w.Close()
}

// HeaderOf is the history header of job j.
func HeaderOf(j Job) (history.Header, error) {
	if err := j.Check(); err != nil {
		return history.Header{}, err
	}
	gph := j.GPUsPerHost
	if gph < 1 {
		gph = 8
	}
	return history.Header{Version: 1, WorldSize: j.World(), GPUsPerHost: int64(gph)}, nil
}

// Sink takes the records of a history one at a time, as typed values: a
// history.Writer writes them out; a replay applies them directly, with
// no text in between. A record is valid until Write returns. Tensors carry
// their full fields in every mention and are indexed by id (Idx = ID),
// dense from 1.
type Sink interface {
	Write(rec *history.Record, reg *values.Registry) error
}

// Emit sends job j's training history (as Write writes it) to sink,
// without its header (HeaderOf).
func Emit(j Job, sink Sink) error {
	_, err := EmitStats(j, sink)
	return err
}

// Stats is what writing a history learns about it.
type Stats struct {
	// StoredActivations is, per pipeline stage, the most bytes one rank's
	// transformer layers keep at once for their backward passes: each
	// layer's saved tensors (saved.bytes) times the microbatches in
	// flight through it. It is what Korthikanti et al. 2022 count as
	// activation memory (§4, Eq. 1-6: the layers' stored activations,
	// summed over the layers of the first stage): not the output layer's
	// logits, nor the temporaries of the forward and backward passes.
	StoredActivations []int64
}

// EmitStats is Emit, and reports the history's Stats.
func EmitStats(j Job, sink Sink) (Stats, error) {
	st, _, err := emitStats(j, sink, emitOpts{templates: true})
	return st, err
}

// EmitUnrecorded is Emit without recordings: every layer pass is
// generated command by command, none recorded to write the next ones
// from. The records are the same (TestTemplatesWriteTheSameRecords);
// recording a pass costs more than generating it, so a history of a
// layer or two, as the search's probes write, is written sooner so.
func EmitUnrecorded(j Job, sink Sink) error {
	_, _, err := emitStats(j, sink, emitOpts{})
	return err
}

// emitOpts are emitStats' switches: templates replays recorded layer
// passes (template.go); noPassEnd leaves a pass's last deletions pending,
// as before passEnd, for the test that passEnd changes no record.
type emitOpts struct{ templates, noPassEnd bool }

// emitStats is EmitStats with the switches of o; it also returns what it
// counted for tests (emitCounts).
func emitStats(j Job, sink Sink, o emitOpts) (Stats, emitCounts, error) {
	if err := j.Check(); err != nil {
		return Stats{}, emitCounts{}, err
	}
	if j.GPUsPerHost < 1 {
		j.GPUsPerHost = 8
	}
	g := &generator{j: j, d: dimsOf(&j), v: j.chunks(), m: j.Micro(), noTemplates: !o.templates, noPassEnd: o.noPassEnd}
	g.e = emitter{w: sink, next: 1, cmdNs: j.CommandNs}
	if j.CommandNs == 0 {
		g.e.cmdNs = 20_000
	}
	g.setup()
	for step := 0; step < j.Steps; step++ {
		if err := g.runStep(); err != nil {
			return Stats{}, emitCounts{}, err
		}
		g.e.step(int64(step))
		if g.e.callErr != nil {
			return Stats{}, emitCounts{}, g.e.callErr
		}
	}
	g.e.flushDel()
	var st Stats
	for _, s := range g.stages {
		st.StoredActivations = append(st.StoredActivations, s.storedMax)
	}
	return st, emitCounts{replayed: g.tplReplays, compacted: g.compacted, repeats: g.e.repeats}, g.e.callErr
}

// emitCounts are what emitStats counts for tests: the layer passes
// replayed from recordings, the saved sets kept compact, and the Reduces
// recorded as copies of the one before.
type emitCounts struct{ replayed, compacted, repeats int }

// commEverywhere, set by a test, makes "comm" on every stage, used or not.
var commEverywhere bool

// usesComm reports whether stage st ever runs a task on "comm": its data-
// parallel reductions overlapped with the backward (PyTorch DDP) or
// sharded (ZeRO), and the tied word embedding's reduction between the
// first and last stages. A stage makes the stream only then: a stream
// that never runs a task would hold its group's memory events unsettled
// at time 0 until the end (Options.FixedStreams in internal/replay), and
// one that a stage needs but lacks fails the replay (unknown stream), as
// the tests of every layout would show.
func (g *generator) usesComm(st *stage) bool {
	// ZeRO (which needs dp > 1) reduces during the backward: Job.Check
	// refuses it with GradAfterBackward.
	switch {
	case commEverywhere:
		return true
	case g.j.DP > 1 && g.j.GradReduce != GradAfterBackward:
		return true
	}
	return g.j.Model.Tied && g.j.PP > 1 && (st.idx == 0 || st.idx == g.j.PP-1)
}

func (g *generator) setup() {
	j := &g.j
	dp, tp := int64(j.DP), int64(j.TP)
	world := slice1(0, j.World(), 1)
	g.e.createMesh(world, []byte(`["pp","dp","tp"]`))
	for s := 0; s < j.PP; s++ {
		st := &stage{idx: s, main: streamMain + int64(s)}
		off := int64(s) * dp * tp
		st.all = values.Slice{Offset: off, Sizes: []int64{dp, tp}, Strides: []int64{tp, 1}}
		// One list, the groups' lists its parts: a world of a million
		// ranks has a million groups, which are not copied twice.
		sl := make([]values.Slice, 0, 1+dp+tp)
		sl = append(sl, st.all)
		for r := int64(0); r < dp; r++ {
			sl = append(sl, slice1(off+r*tp, tp, 1))
		}
		for sh := int64(0); sh < tp; sh++ {
			sl = append(sl, slice1(off+sh, dp, tp))
		}
		st.slices, st.tpGroups, st.dpGroups = sl, sl[1:1+dp:1+dp], sl[1+dp:]
		if j.StageCollectives {
			st.tpGroups, st.dpGroups = []values.Slice{st.all}, []values.Slice{st.all}
			st.slices = []values.Slice{st.all, st.all, st.all}
		}
		st.acts = actions(j.Schedule, j.PP, g.v, g.m, s)
		g.stages = append(g.stages, st)
	}
	for _, st := range g.stages {
		g.e.createStream(st.all, st.main, "main", true)
		if g.usesComm(st) {
			g.e.createStream(st.all, streamComm, "comm", false)
		}
		if n := g.neighbour(st.idx, 0); n >= 0 {
			g.e.createStream(st.all, streamMain+int64(n), "send_next", false)
		}
		if n := g.neighbour(st.idx, 1); n >= 0 && n != g.neighbour(st.idx, 0) {
			g.e.createStream(st.all, streamMain+int64(n), "send_prev", false)
		}
	}
	d := &g.d
	small := 2 * d.h // the two norms' scales
	if j.Model.Bias {
		// norm shifts; QKV and fc1 biases (column-parallel, split);
		// projection and fc2 biases (row-parallel, whole on every shard)
		small += 2*d.h + d.qkvW + d.fc1W + 2*d.h
	}
	pos := int64(0)
	if j.Model.Bias {
		pos = d.s * d.h // learned positions
	}
	// A tied embedding on two stages: Megatron-LM keeps a copy of the word
	// embedding on the last stage and all-reduces the two gradients at the
	// end of each step. Both copies get the same tensor ids so that one
	// Reduce names them on both stages.
	g.tied = j.Model.Tied && j.PP > 1
	var wordIDs int64
	for _, st := range g.stages {
		st.layers = make([][]*layerW, g.v)
		if st.idx == 0 {
			if g.tied {
				wordIDs = g.e.next
				st.emb = g.newGroup(0, []int64{d.vt, d.h})
				g.allocate(st, st.emb)
				st.groups = append(st.groups, st.emb)
				if pos > 0 {
					st.pos = g.newGroup(pos)
					g.allocate(st, st.pos)
					st.groups = append(st.groups, st.pos)
				}
			} else {
				st.emb = g.newGroup(pos, []int64{d.vt, d.h})
				g.allocate(st, st.emb)
				st.groups = append(st.groups, st.emb)
			}
		}
		per := j.Model.Layers / (j.PP * g.v)
		for c := 0; c < g.v; c++ {
			for i := 0; i < per; i++ {
				w := g.newGroup(small, []int64{d.h, d.qkvW}, []int64{d.h / d.t, d.h}, []int64{d.h, d.fc1W}, []int64{d.f, d.h})
				g.allocate(st, w)
				st.groups = append(st.groups, w)
				st.layers[c] = append(st.layers[c], w)
			}
		}
		if st.idx == j.PP-1 {
			norm := d.h
			if j.Model.Bias {
				norm = 2 * d.h
			}
			switch {
			case j.Model.Tied && st.emb != nil:
				st.head = g.newGroup(norm)
				st.head.shared = st.emb
			case g.tied:
				word := g.newGroup(0, []int64{d.vt, d.h})
				next := g.e.next
				g.e.next = wordIDs
				g.allocate(st, word)
				g.e.next = next
				word.tied, g.stages[0].emb.tied = g.stages[0].emb, word
				st.groups = append(st.groups, word)
				st.head = g.newGroup(norm)
				st.head.shared = word
			default:
				st.head = g.newGroup(norm, []int64{d.vt, d.h})
			}
			g.allocate(st, st.head)
			st.groups = append(st.groups, st.head)
		}
	}
	vs := j.PP * g.v
	g.saved = make([][][]*saved, vs)
	g.inAct = make([]mailbox, vs)
	g.inGrad = make([]mailbox, vs)
	for i := range g.saved {
		g.saved[i] = make([][]*saved, g.m)
	}
	g.ids = make([]values.Tensor, g.m)
	g.head = make([]headSaved, g.m)
}

// neighbour is the stage that stage s sends to in direction dir (0:
// forward, 1: backward), or -1. With the interleaved schedule the last
// stage feeds the first one's next chunk.
func (g *generator) neighbour(s, dir int) int {
	p := g.j.PP
	if p == 1 {
		return -1
	}
	if g.j.Schedule == Interleaved {
		if dir == 0 {
			return (s + 1) % p
		}
		return (s + p - 1) % p
	}
	if dir == 0 && s+1 < p {
		return s + 1
	}
	if dir == 1 && s > 0 {
		return s - 1
	}
	return -1
}

// runStep emits one step: the stages' schedules merged so that each runs
// an action once its input has been sent, one action per stage in turn
// (the controller's order approximates the order in which the work runs),
// then the optimizer.
func (g *generator) runStep() error {
	for _, st := range g.stages {
		st.cursor = 0
	}
	left := 0
	for _, st := range g.stages {
		left += len(st.acts)
	}
	for left > 0 {
		progress := false
		for _, st := range g.stages {
			if st.cursor < len(st.acts) && g.ready(st, st.acts[st.cursor]) {
				g.run(st, st.acts[st.cursor])
				st.cursor++
				left--
				progress = true
				// A sink that failed (or was stopped) fails every later
				// write: end the step here rather than generate the rest
				// of it for nothing.
				if g.e.callErr != nil {
					return g.e.callErr
				}
			}
		}
		if !progress {
			return errSchedule
		}
	}
	for _, st := range g.stages {
		for dir := range st.out {
			for _, o := range st.out[dir] {
				if !o.dropped {
					g.e.borrowDrop(st.all, o.borrow)
				}
				if o.consumed {
					g.outFree = append(g.outFree, o)
				}
			}
			clear(st.out[dir])
			st.out[dir] = st.out[dir][:0]
		}
	}
	if g.j.GradReduce == GradAfterBackward && g.zero() == 0 && g.j.DP > 1 {
		for _, st := range g.stages {
			g.reduceAfterBackward(st)
		}
	}
	if g.torchDDPCopies() {
		for _, st := range g.stages {
			g.finishDDP(st)
		}
	}
	if g.tied {
		g.syncEmbedding()
	}
	for _, st := range g.stages {
		g.optimizerStep(st)
	}
	return nil
}

// syncEmbedding all-reduces the word embedding's gradient between the
// first and the last stage, rank by rank (Megatron-LM's embedding group:
// the stage-0 and stage-(p-1) ranks of one replica and shard), before the
// optimizer step. The two copies have the same tensor ids; with ZeRO < 2
// each stage lends its gradient to "comm" (the same loan ids on both) and
// its compute stream waits for the reduction.
func (g *generator) syncEmbedding() {
	first, last := g.stages[0], g.stages[g.j.PP-1]
	w := first.emb
	local := w.grad
	z := g.zero()
	var id int64
	if z < 2 {
		next, borrow := g.e.next, g.e.borrow
		for _, st := range []*stage{first, last} {
			g.e.next, g.e.borrow = next, borrow
			id, local = g.e.borrowCreate(st.all, w.grad, st.main, streamComm)
		}
		g.e.write2(func() { g.e.borrowFirstUse(first.all, id) }, last.all)
	} else {
		local = w.gshard
	}
	res := g.e.alias(local, local.Dtype, local.Shape...)
	dp, tp := int64(g.j.DP), int64(g.j.TP)
	if g.j.StageCollectives {
		g.e.reduce2(first.all, last.all, dimPP, streamComm, res, local)
	} else {
		var pairs []values.Slice
		for r := int64(0); r < dp; r++ {
			for sh := int64(0); sh < tp; sh++ {
				pairs = append(pairs, slice1(r*tp+sh, 2, int64(g.j.PP-1)*dp*tp))
			}
		}
		g.e.reduceEach(pairs, dimPP, streamComm, res, local, "sum", false)
	}
	// One id names the result (and the lent gradient) on both stages: one
	// record deletes it on both (del2).
	g.e.del2(first.all, last.all, res)
	if z < 2 {
		g.e.write2(func() { g.e.borrowLastUse(first.all, id) }, last.all)
		g.e.del2(first.all, last.all, local)
		g.e.write2(func() { g.e.borrowDrop(first.all, id) }, last.all)
	}
}

func (g *generator) vstage(st *stage, chunk int) int { return chunk*g.j.PP + st.idx }

// ready reports whether stage st can run a: its input has been sent.
func (g *generator) ready(st *stage, a action) bool {
	vs, last := g.vstage(st, a.chunk), g.j.PP*g.v-1
	if a.fwd {
		return vs == 0 || g.inAct[vs].at(a.mb) != nil
	}
	return vs == last || g.inGrad[vs].at(a.mb) != nil
}

func (g *generator) run(st *stage, a action) {
	g.runAction(st, a)
	if st.pendingRelease != nil {
		g.release(st, st.pendingRelease)
		st.pendingRelease = nil
	}
}

func (g *generator) runAction(st *stage, a action) {
	vs, last := g.vstage(st, a.chunk), g.j.PP*g.v-1
	layers := st.layers[a.chunk]
	if a.fwd {
		var x values.Tensor
		if vs == 0 {
			x = g.embedForward(st, a.mb)
		} else {
			x = g.receive(st, g.inAct[vs].at(a.mb))
			// Job.Check gives every chunk a layer to take the gather;
			// should one have none, it is written here.
			if len(layers) == 0 {
				x = g.takeGather(st, x)
			}
		}
		sv := g.savedList(len(layers))
		for i, w := range layers {
			x, sv[i] = g.layerForward(st, w, x, g.j.Recompute != RecomputeFull) // with its kept bytes
			st.stored += sv[i].kept
		}
		st.storedMax = max(st.storedMax, st.stored)
		g.saved[vs][a.mb] = sv
		if vs == last {
			g.headForward(st, a.mb, x)
		} else {
			g.send(st, 0, x, g.inAct[vs+1].put(a.mb), a.mb)
		}
		return
	}
	lastMB := a.mb == g.m-1
	var dy values.Tensor
	if vs == last {
		st.head.last = lastMB
		if w := st.head.shared; w != nil && st.emb == nil {
			w.last = lastMB
		}
		dy = g.headBackward(st, a.mb)
	} else {
		dy = g.receive(st, g.inGrad[vs].at(a.mb))
		if len(layers) == 0 {
			dy = g.takeGather(st, dy)
		}
	}
	sv := g.saved[vs][a.mb]
	for i := len(layers) - 1; i >= 0; i-- {
		layers[i].last = lastMB
		st.stored -= sv[i].kept // nothing changes a layer's saved tensors before its backward
		dy = g.layerBackward(st, layers[i], dy, sv[i])
		g.layerDone(st, layers[i])
	}
	g.saved[vs][a.mb] = nil
	g.freeSaved(sv)
	if vs == 0 {
		st.emb.last = lastMB
		if st.pos != nil {
			st.pos.last = lastMB
		}
		g.embedBackward(st, a.mb, dy)
	} else {
		g.send(st, 1, dy, g.inGrad[vs-1].put(a.mb), a.mb)
	}
}

// savedList returns a list for n layers' saved sets, reused if one is
// free.
func (g *generator) savedList(n int) []*saved {
	if k := len(g.svLists); k > 0 && cap(g.svLists[k-1]) >= n {
		l := g.svLists[k-1][:n]
		g.svLists = g.svLists[:k-1]
		return l
	}
	return make([]*saved, n)
}

// newSaved returns an empty saved set, reused if one is free.
func (g *generator) newSaved() *saved {
	if k := len(g.svFree); k > 0 {
		sv := g.svFree[k-1]
		g.svFree = g.svFree[:k-1]
		*sv = saved{}
		return sv
	}
	return &saved{}
}

// freeSaved keeps the saved sets of list l, whose backwards have run
// (nothing holds them any more), and l itself for reuse.
func (g *generator) freeSaved(l []*saved) {
	g.svFree = append(g.svFree, l...)
	clear(l)
	g.svLists = append(g.svLists, l[:0])
}

// send lends x to the side stream towards the neighbour in direction dir;
// the transfer itself is written when the receiver takes it. The loans of
// earlier sends the receiver has taken are given back first: everything
// the receiver did before taking them was written earlier, so waiting for
// them cannot wait for this stage's later work.
func (g *generator) send(st *stage, dir int, x values.Tensor, to *message, mb int) {
	keep := st.out[dir][:0]
	for _, o := range st.out[dir] {
		if o.consumed {
			if !o.dropped {
				g.e.borrowDrop(st.all, o.borrow)
			}
			// Its message was received and cleared (receive): nothing
			// else points at it.
			g.outFree = append(g.outFree, o)
		} else {
			keep = append(keep, o)
		}
	}
	clear(st.out[dir][len(keep):])
	st.out[dir] = keep
	n := g.stages[g.neighbour(st.idx, dir)]
	id, lent := g.e.borrowCreate(st.all, x, st.main, n.main)
	var o *outSend
	if k := len(g.outFree); k > 0 {
		o = g.outFree[k-1]
		g.outFree = g.outFree[:k-1]
		*o = outSend{borrow: id}
	} else {
		o = &outSend{borrow: id}
	}
	st.out[dir] = append(st.out[dir], o)
	// x is deleted by the receive, with the loaned tensor (receive).
	*to = message{from: st, out: o, sent: x, lent: lent, mb: mb, ok: true}
}

// scatterGather reports whether a pipeline transfer of n elements takes
// the scatter/gather path: with tensor parallelism every shard of a stage
// holds the same activation (or gradient), so each sends only its 1/t of
// it and the receiving stage all-gathers the parts over its tensor-parallel
// group, on NVLink, instead of each shard sending the whole over its
// network link (Narayanan et al., SC'21, §4.1, "Scatter/gather
// communication optimization"). Megatron-LM does this by default
// (--no-scatter-gather-tensors-in-pipeline turns it off), except with
// sequence parallelism, whose activations are already split, and when t
// does not divide the tensor (megatron/p2p_communication.py, _communicate,
// at commits 6985e58 of 2021 and 2755bcb of 2022).
// takeGather writes the all-gather of st's pending received shard, if
// any, and returns the whole tensor; else x.
func (g *generator) takeGather(st *stage, x values.Tensor) values.Tensor {
	if !st.gather.pending() {
		return x
	}
	p := st.gather
	st.gather.clear()
	r := g.tpAllGather(st, p.got, p.shape...)
	g.free(st, p.got)
	return r
}

func (g *generator) scatterGather(n int64) bool {
	return g.d.t > 1 && !g.j.SequenceParallel && !g.j.NoScatterGather && n%g.d.t == 0
}

// receive writes the transfer of a message into st's compute stream and
// returns the received tensor.
func (g *generator) receive(st *stage, msg *message) values.Tensor {
	from := msg.from
	// The loan's first use is written here, not at the send: the side
	// stream then runs each wait right before its own transfer, never a
	// later output's wait ahead of an earlier transfer.
	g.e.borrowFirstUse(from.all, msg.out.borrow)
	var r, part values.Tensor // part: with scatter/gather, the 1/t sent
	if n := numel(msg.lent.Shape); g.scatterGather(n) {
		// Each shard sends its 1/t of the flattened tensor (a view: no
		// copy) and the receiving shards all-gather the whole.
		part = g.e.alias(msg.lent, msg.lent.Dtype, n/g.d.t)
		g.e.call(from.all, st.main, opView, []any{msg.lent, []int64{n / g.d.t}}, []any{part})
		got := g.e.tensor(msg.lent.Dtype, n/g.d.t)
		g.e.sendTensor(from.all, st.all, st.main, got, part)
		// The all-gather is written by the first layer pass that
		// follows (takeGather), after the sender's records below: they
		// are the other stage's, and touch nothing of this one.
		r = got
		st.gather = pendingGather{got: got, shape: msg.lent.Shape}
	} else {
		r = g.e.tensor(bf16, msg.lent.Shape...)
		g.e.sendTensor(from.all, st.all, st.main, r, msg.lent)
	}
	g.e.borrowLastUse(from.all, msg.out.borrow)
	// What the transfer held (the sender's tensor, the loan's view, the
	// part sent) is deleted in one DeleteRefs after the loan's last use:
	// all share the loaned storage, which the loan holds until it is
	// given back, so this frees nothing sooner or later than deleting
	// each after its own last use would, in three DeleteRefs.
	g.free(from, msg.sent, part, msg.lent)
	msg.out.consumed = true
	if g.j.BlockingP2P {
		// The sender's compute stream waits for the transfer here,
		// not at its next send.
		g.e.borrowDrop(from.all, msg.out.borrow)
		msg.out.dropped = true
	}
	*msg = message{}
	return r
}

// embedForward: stage 0 receives the token ids from the data pipe, copies
// them to the GPU and looks them up in its vocabulary shard; the partial
// embeddings are summed over the tensor-parallel group (Megatron-LM's
// VocabParallelEmbedding).
func (g *generator) embedForward(st *stage, mb int) values.Tensor {
	d := &g.d
	cpu := g.e.cpuTensor(i64, d.b, d.s)
	g.e.pipeRecv(st.all, st.main, cpu)
	ids := g.e.tensor(i64, d.b, d.s)
	g.op(st, opToCopy, []any{cpu}, ids)
	g.e.del(st.all, cpu)
	W := g.weights(st, st.emb, false)
	e := g.e.tensor(bf16, d.s, d.b, d.h)
	g.op(st, opEmbedding, []any{W[0], ids}, e)
	g.releaseWeights(st, st.emb, W)
	g.ids[mb] = ids
	return g.rowOut(st, e)
}

// embedBackward accumulates the embedding's gradient from dy.
func (g *generator) embedBackward(st *stage, mb int, dy values.Tensor) {
	d := &g.d
	full, extra := g.gatherSeq(st, dy)
	gb := g.view(st, full, d.b, d.s, d.h)
	var dw values.Tensor
	if g.takesGrad(st.emb, 0) { // the result is param.grad (Job.FP16Grads)
		dst := g.gradTarget(st, st.emb, 0)
		g.e.call(st.all, st.main, opEmbeddingBw, []any{gb, g.ids[mb], d.vt, -1, false}, []any{dst}, dst)
	} else {
		dw = g.e.tensor(bf16, d.vt, d.h)
		g.op(st, opEmbeddingBw, []any{gb, g.ids[mb], d.vt, -1, false}, dw)
		g.accumulate(st, st.emb, 0, dw)
	}
	g.free(st, gb, full, extra, dw, dy, g.ids[mb])
	g.ids[mb] = values.Tensor{}
	g.layerDone(st, st.emb)
	if st.pos != nil {
		g.layerDone(st, st.pos)
	}
}

// headForward: the final norm, the logits against the vocabulary shard,
// log-softmax and the negative log-likelihood of the labels. With tensor
// parallelism the shards' partial statistics are all-reduced as in
// Megatron-LM's vocabulary-parallel cross entropy: the logits' maximum,
// the sum of their exponentials and the target logits, s*b values each.
func (g *generator) headForward(st *stage, mb int, x values.Tensor) {
	d := &g.d
	h := headSaved{x: x}
	h.ln, h.mu, h.rs = g.layerNorm(st, x)
	in, extra := g.gatherSeq(st, h.ln)
	WT := g.weights(st, st.head, true)
	logits := g.e.tensor(bf16, d.sb, d.vt)
	g.op(st, opMM, []any{in, WT[0]}, logits)
	g.releaseWeights(st, st.head, WT)
	g.free(st, in, extra)
	ce := g.ceDtype()
	if ce != bf16 {
		wide := g.e.tensor(ce, d.sb, d.vt)
		g.op(st, opToCopy, []any{logits}, wide)
		g.free(st, logits)
		logits = wide
	}
	cpu := g.e.cpuTensor(i64, d.sb)
	g.e.pipeRecv(st.all, st.main, cpu)
	h.tgt = g.e.tensor(i64, d.sb)
	g.op(st, opToCopy, []any{cpu}, h.tgt)
	g.e.del(st.all, cpu)
	if d.t > 1 {
		mx := g.e.tensor(ce, d.sb)
		g.op(st, opAmax, []any{logits, []int64{1}, false}, mx)
		mxr := g.e.alias(mx, ce, d.sb)
		g.e.reduceEach(st.tpGroups, dimTP, st.main, mxr, mx, "max", false)
		se := g.e.tensor(f32, d.sb)
		g.op(st, opLogSumExp, []any{logits, []int64{1}, false}, se)
		ser := g.e.alias(se, f32, d.sb)
		g.e.reduceEach(st.tpGroups, dimTP, st.main, ser, se, "sum", false)
		t2 := g.view(st, h.tgt, d.sb, 1)
		pl := g.e.tensor(ce, d.sb, 1)
		g.op(st, opGather, []any{logits, 1, t2}, pl)
		plr := g.e.alias(pl, ce, d.sb, 1)
		g.e.reduceEach(st.tpGroups, dimTP, st.main, plr, pl, "sum", false)
		g.free(st, mx, mxr, se, ser, t2, pl, plr)
	}
	h.lsm = g.e.tensor(ce, d.sb, d.vt)
	g.op(st, opLogSoftmax, []any{logits, 1, false}, h.lsm)
	g.free(st, logits)
	h.loss, h.tw = g.e.tensor(f32), g.e.tensor(f32)
	g.op(st, opNLL, []any{h.lsm, h.tgt, nil, 1, -100}, h.loss, h.tw)
	g.head[mb] = h
}

// ceDtype is the dtype the cross entropy runs in: fp32 with
// Job.FP32CrossEntropy, else the logits' bf16.
func (g *generator) ceDtype() string {
	if g.j.FP32CrossEntropy {
		return f32
	}
	return bf16
}

// headBackward is the loss's backward down to the last layer's output
// gradient.
func (g *generator) headBackward(st *stage, mb int) values.Tensor {
	d := &g.d
	h := g.head[mb]
	one := g.e.tensor(f32)
	g.op(st, opOnesLike, []any{h.loss}, one)
	ce := g.ceDtype()
	dlsm := g.e.tensor(ce, d.sb, d.vt)
	g.op(st, opNLLBw, []any{one, h.lsm, h.tgt, nil, 1, -100, h.tw}, dlsm)
	g.free(st, one, h.loss, h.tw, h.tgt)
	dlog := g.e.tensor(ce, d.sb, d.vt)
	g.op(st, opLogSmBw, []any{dlsm, h.lsm, 1, ce}, dlog)
	g.free(st, dlsm, h.lsm)
	if ce != bf16 { // back to 16 bits for the output layer's GEMMs
		narrow := g.e.tensor(bf16, d.sb, d.vt)
		g.op(st, opToCopy, []any{dlog}, narrow)
		g.free(st, dlog)
		dlog = narrow
	}
	W := g.weights(st, st.head, false)
	dln := g.e.tensor(bf16, d.sb, d.h)
	g.op(st, opMM, []any{dlog, W[0]}, dln)
	g.releaseWeights(st, st.head, W)
	in, extra := g.gatherSeq(st, h.ln)
	dlt := g.view(st, dlog, d.vt, d.sb)
	g.weightGrad(st, st.head, 0, dlt, in)
	g.free(st, dlt, dlog, in, extra, h.ln)
	dlr := g.columnGradOut(st, dln)
	dx := g.normBackward(st, dlr, h.x, h.mu, h.rs)
	g.free(st, dlr, h.x, h.mu, h.rs)
	g.head[mb] = headSaved{}
	g.layerDone(st, st.head)
	if st.emb == nil && st.head.shared != nil { // the last stage's copy of a tied embedding
		g.layerDone(st, st.head.shared)
	}
	return dx
}
