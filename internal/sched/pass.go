package sched

import (
	"cmp"
	"math"
	"reflect"
	"slices"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/groups"
	"github.com/fastsim/fastsim/internal/values"
)

// A pass is a run of commands a producer writes again and again with new
// ids: a transformer layer's forward or backward on one pipeline stage
// (internal/workload records one and writes the later ones from the
// recording). The engine applies the first run of each pass command by
// command, watching what it does to the one group it runs on, and keeps
// the pass's effect; a later run whose starting state matches is then
// applied as one step, without its commands:
//
//   - every stream the pass involved ends at its start time plus a fixed
//     offset, and its last task is a copy of the recorded one, shifted;
//   - its memory events are the recorded ones (those of one time on one
//     stream summed into one, which changes no peak: netEvents), shifted,
//     appended to their streams; the device's peak is merged from the
//     events as before, so it is the same whatever the other streams do
//     meanwhile;
//   - the tensors and storages it leaves behind (the layer's output, what
//     it keeps for the backward, its inputs' new state) are set as
//     recorded, and the tensors it made and deleted never exist.
//
// Times shift exactly because, with no controller cost (the clock stays
// 0), every time a pass computes is a maximum of sums over its streams'
// start times and runtimes: moving every start by the same amount moves
// every result by it. So a recording is applied only when:
//
//   - the controller costs nothing (Controller none, or stream-only mode),
//     no trace is kept, the engine runs on one goroutine, the commands'
//     dense indexes come from a registry the engine owns, and no held
//     Reduce or earlier failure is pending;
//   - the pass runs on one group, whole (its ranks are the group's: the
//     group has the size it had when recorded), which was the only one
//     its recording reached, and made no new group;
//   - every stream the pass involves (one it queues a task on, whose time
//     or memory it changes, or that holds a row of one of its inputs) is
//     idle at its start and at its end (no queued task), so every task of
//     the pass runs while its commands are applied and waits for nothing
//     outside it; a pass that makes, uses or ends a loan is not recorded
//     (internal/workload writes those command by command anyway);
//   - the streams the pass involves start at the same offsets from one
//     another as recorded;
//   - every input is known and has the rows (stream, references, state)
//     and storages (tensor count, bytes, stream charged) it had when
//     recorded, and a storage the pass frees was allocated before the
//     pass's first event, or at the same offset from its start as
//     recorded (the release-after-allocation check gives the same answer);
//   - the recording priced nothing the cost model counts (an op the
//     hardware model does not know), warned of nothing, settled no memory
//     events (settlement is suspended while a pass is recorded) and
//     sorted none;
//   - no time or memory total of the applied pass overflows.
//
// The effect is computed from what the recorded run left (effectOf),
// which checks that nothing else changed: the live tensor, storage and
// task rows it accounts for are all there are.
//
// Otherwise the pass's commands are applied one by one, as always.

// passCheck, when set (by a test), is called instead of applying a
// recorded pass as a step: the pass's commands are applied and its effect
// computed again, and both effects are given.
var passCheck func(k PassKey, recorded, seen *passEffect)

// PassKey names a recorded pass and where it runs. The producer vouches
// that runs with equal keys write the same commands, to the same ranks,
// with inputs that agree in everything but their ids (sizes, shapes,
// dtypes, which share ids or storages), but for those ids and the ids
// they make (internal/workload's recordings are replayed only then):
// the engine does not see the commands of a run it applies as a step, so
// this is what lets it price them as recorded. What the engine checks is
// the state the run starts from.
type PassKey struct {
	Tpl   int32 // the recording
	Stage int32 // the ranks it runs on
}

// Pass describes one run of a pass, before its commands.
type Pass struct {
	Key  PassKey
	Rank int64           // a rank that every command of the pass addresses
	Ins  []values.Tensor // the tensors it is given (an ID of 0: none)
	Base int64           // the ids it makes are Base .. Base+Made-1
	Made int64
	// MaxTs is the latest ts of its commands (the engine checks a task's
	// runtime against its command's ts for overflow).
	MaxTs int64
	Line  int64 // the line of its first command
}

// passState is what the engine knows of passes.
type passState struct {
	effects  map[PassKey]*passEffect
	declined map[PassKey]bool // recordings that cannot be applied as a step
	// bodies are, by recording, the effects' bodies (shareBody).
	bodies   map[int32][]*effectBody
	rec      *passRec // the pass being recorded
	applied  int64
	recorded int64
	settles  int64   // settlements of the memory events so far
	idx      []int32 // scratch: the inputs' dense indexes
	sidx     []int32 // scratch: the inputs' storages' dense indexes
	made     []int32 // scratch: the made tensors' dense indexes, by made code
	// What passes applied as steps left behind, carried undefined
	// (carry.go): units[head:] in order of their ids.
	units []carryUnit
	// unitBase[i] is units[i].idBase, a column of its own so that
	// unitOf's binary search reads 8 bytes a probe, not a unit's 48.
	unitBase []int64
	// unitLo and unitHi bound the ids of units[head:] (both 0 when
	// there are none): most ids asked about are outside.
	unitLo, unitHi int64
	head           int
	useGen         int64      // counts passInputs calls (carryUnit.useGen)
	lastUnit       int        // the unit unitOf found last
	consume        []carryUse // classes the pass being applied consumes whole
	defining       bool       // classes are being defined
	dmade          []int32
	carrying       bool       // a unit was made: DeleteRefs looks for carried ids
	delUse         []carryUse // scratch of deleteCarried
	carried        int64
	released       int64
	defined        int64
	missFn         func(int64) bool
}

// Codes name a pass's tensors and storages independently of its ids:
// >= 0 the code-th id made by the pass, < 0 input -1-code (its id, or,
// for a storage, its storage id).
type passCode int64

// rowState is a tensor row of an input as a pass finds or leaves it.
type rowState struct {
	in    passCode // the input (-1-k)
	owner gen.StreamID
	refs  int32
	flags gen.TensorFlags
	gone  bool // after: the pass removed it
}

// storState is an input's storage as a pass finds or leaves it.
type storState struct {
	in      passCode
	exists  bool
	count   int32
	bytes   int64
	stream  gen.StreamID
	allocNs int64 // absolute when found; after: relative to the base when the pass allocated it
	fresh   bool  // after: the pass allocated it
}

// madeRow is a tensor row the pass leaves behind, of a tensor it made or
// of an input on a stream that did not hold it.
type madeRow struct {
	t      passCode
	st     passCode
	nbytes int64
	owner  gen.StreamID
	refs   int32
	flags  gen.TensorFlags
	via    int // its tensor in passEffect.tensors (a made one)
}

// madeStor is a storage the pass made and leaves behind.
type madeStor struct {
	st      passCode
	count   int32
	bytes   int64
	stream  gen.StreamID
	allocNs int64 // relative to the base
	via     int   // a tensor of it in passEffect.tensors
}

// madeTensor is a tensor the pass made and leaves behind, as the
// registry defines it.
type madeTensor struct {
	t      passCode
	st     passCode
	nbytes int64
	dtype  string
	shape  []int64
	cpu    bool
}

// streamEffect is what a pass does to one stream it involves.
type streamEffect struct {
	s          gen.StreamID
	rel        int64 // its now at the start, relative to the base
	end        int64 // its now at the end, relative to the base
	usage      int64 // bytes it allocated less those it released
	memFrom    int32 // its events in passEffect.mem
	memTo      int32
	newLast    bool // its last task changed: a copy of last
	lastStart  int64
	lastEnd    int64
	lastRt     int64
	lastName   gen.NameID
	lastCmd    int64 // relative to the command count at the start
	lastLine   int64 // relative to the pass's first line
	lastFlags  gen.TaskFlags
	lastNIn    int32
	lastNOut   int32
	lastStream gen.StreamID
}

// passEffect is a recorded pass's effect on its group: what is the
// group's own, and a body that the effects recorded alike on other groups
// share (shareBody), so that the stages of a pipeline read one copy.
type passEffect struct {
	// hints holds, by input, the rows its id resolved to in the last
	// runs applied, the most recent first (-1: none): knownRow checks
	// them before it finds the id.
	hints [][inputHints]int32
	g     groups.GroupID
	*effectBody
}

// effectBody is what a recorded pass does, relative to its start and its
// inputs: nothing in it names its group.
type effectBody struct {
	size     int64
	ref      gen.StreamID // the stream whose now at the start is the base
	minRel   int64        // the earliest start of an involved stream, relative to the base
	cmds     int64
	tasks    int64
	maxRt    int64
	maxOff   int64 // the latest time the pass computes, relative to the base
	evOff    int64 // the latest end of a stream event, relative to the base
	hasEv    bool
	allocSum int64 // bytes allocated (checkAlloc's bound grows by it)
	streams  []streamEffect
	mem      []memEvent // relative to the base
	rows     []rowState // input rows found, then left (rowsAfter)
	after    []rowState
	stors    []storState // input storages found, then left
	storsAft []storState
	newRows  []madeRow
	newStors []madeStor
	tensors  []madeTensor
	deletes  []passCode // inputs the pass deleted
	nIns     int
	// chains are the inputs whose rows are found (those with an id, the
	// first of each id): the producer vouches that a later run's inputs
	// share ids as the recorded ones did, so this need not be worked out
	// again at each run.
	chains []int32
	carry  *carryInfo // what it leaves carried, and consumes (carry.go)
}

// passRec is a pass being recorded: the state it started from.
type passRec struct {
	key        PassKey
	p          Pass
	g          groups.GroupID
	size       int64
	nGroups    int
	cmd0       int64
	tasks0     int64
	warn0      int64
	counted0   int64
	liveRows   int
	liveStors  int
	liveTasks  int
	borrows    int
	now        []int64
	last       []gen.TaskID
	lastHolds  []int32
	usage      []int64
	nmem       []int
	sorted     []int
	tails      []int64 // each stream's queue tail
	busy       []bool  // each stream had a queued task
	evMax      int64
	hasEv      bool
	maxRt      int64
	rows       []rowState
	stors      []storState
	idx        []int32 // the inputs' dense indexes (-1: ID 0)
	sidx       []int32
	otherGroup bool
	loans      bool // a loan was made, used or ended
	carried    bool // a carried class was defined (defineCarried)
	settles    int64
}

// Counting is implemented by a cost model that counts some of the calls
// it prices (the hardware model counts the ops its table does not know):
// a pass whose recording counted any is never applied as a step, which
// prices nothing. Passes are applied as steps only with the fixed
// runtimes (Costs) or a Counting model, whose other pricing depends on
// the command alone; a model that records what it prices (a catalogue)
// sees every command.
type Counting interface {
	Counted() int64
}

// pricingPure reports whether the cost model is one a pass applied as a
// step may skip.
func (e *Engine) pricingPure() bool {
	switch e.opt.Model.(type) {
	case Costs, Counting:
		return true
	}
	return false
}

func (e *Engine) counted() int64 {
	if c, ok := e.opt.Model.(Counting); ok {
		return c.Counted()
	}
	return 0
}

// PassSteps returns how many passes were applied as one step, and how
// many recorded.
func (e *Engine) PassSteps() (applied, recorded int64) { return e.pass.applied, e.pass.recorded }

// passable reports whether the engine's options and state allow a pass
// to be recorded or applied.
func (e *Engine) passable() bool {
	return (e.opt.Controller == ControllerNone || e.opt.Mode == StreamOnly) && e.opt.Mode != ControllerOnly &&
		!e.opt.KeepEvents && e.opt.Jobs <= 1 && !e.dfr.on && e.reg != nil && e.flushErr == nil && e.nowNs == 0 && e.pricingPure()
}

// BeginPass is called before the commands of pass p. It returns true if
// it applied the whole pass as one step (its commands must not be given);
// otherwise the commands follow, and EndPass after them.
func (e *Engine) BeginPass(p *Pass) bool {
	e.pass.rec = nil
	if !e.passable() || p.Rank < 0 || p.Rank >= e.opt.WorldSize {
		return false
	}
	e.catchUp()
	if e.flushErr != nil {
		return false
	}
	if fx := e.pass.effects[p.Key]; fx != nil {
		if passCheck != nil {
			e.startRecording(p)
			return false
		}
		if e.applyPass(fx, p) {
			e.pass.applied++
			return true
		}
		return false
	}
	if e.pass.declined[p.Key] {
		return false
	}
	e.startRecording(p)
	return false
}

// inputIndexes fills e.pass.idx and sidx with the dense indexes of p's
// inputs (-1 for none); false if an input is not known.
func (e *Engine) inputIndexes(fx *passEffect, p *Pass) bool {
	idx, sidx := e.pass.idx[:0], e.pass.sidx[:0]
	ok := true
	for k := range p.Ins {
		i, si := int32(-1), int32(-1)
		if id := p.Ins[k].ID; id != 0 {
			// A row the id resolved to in an earlier run (a layer's
			// weights: the same every run) is checked, not looked up; a
			// known id is never asked about, so the registry's question
			// (SetMiss) goes out as it did.
			if fx != nil {
				i = e.knownRow(fx, k, id, false)
			} else {
				i = e.reg.TensorIdx(id)
			}
			if i < 0 {
				ok = false
			} else {
				si = e.reg.StorageIdxOf(i)
			}
		}
		idx, sidx = append(idx, i), append(sidx, si)
	}
	e.pass.idx, e.pass.sidx = idx, sidx
	return ok
}

// firstInput is the first input with the same id as input k (inputs may
// repeat), and firstStorage the first with the same storage.
func firstInput(p *Pass, k int) int {
	for j := 0; j < k; j++ {
		if p.Ins[j].ID == p.Ins[k].ID {
			return j
		}
	}
	return k
}

func firstStorage(p *Pass, k int) int {
	for j := 0; j < k; j++ {
		if p.Ins[j].Storage == p.Ins[k].Storage {
			return j
		}
	}
	return k
}

// inputState appends the rows and storages of p's inputs in group g.
func (e *Engine) inputState(g *group, p *Pass, idx, sidx []int32, rows []rowState, stors []storState) ([]rowState, []storState) {
	tt := &g.tensors
	for k := range p.Ins {
		if idx[k] < 0 {
			continue
		}
		if firstInput(p, k) == k {
			for r := gen.TensorRow(g.tensorAt.get(idx[k]) - 1); r >= 0; r = tt.Next[r] {
				rows = append(rows, rowState{in: passCode(-1 - k), owner: tt.Owner[r], refs: tt.Refs[r], flags: tt.Flags[r]})
			}
		}
		if firstStorage(p, k) == k {
			s := storState{in: passCode(-1 - k)}
			if sr := gen.StorageRow(g.storageAt.get(sidx[k]) - 1); sr >= 0 {
				s.exists, s.count, s.bytes, s.stream, s.allocNs = true, g.storages.Count[sr], g.storages.Bytes[sr], g.storages.AllocStream[sr], g.storages.AllocNs[sr]
			}
			stors = append(stors, s)
		}
	}
	return rows, stors
}

// startRecording snapshots the state pass p starts from, if it may be
// recorded.
func (e *Engine) startRecording(p *Pass) {
	gi := e.part.GroupOf(p.Rank)
	g := e.gs[gi]
	if !e.inputIndexes(nil, p) {
		return
	}
	r := &passRec{key: p.Key, p: *p, g: gi, size: e.part.Size(gi), nGroups: len(e.gs), cmd0: e.cmdID, tasks0: g.tasksMade,
		warn0: e.warnings, counted0: e.counted(), liveRows: g.tensors.Live(), liveStors: g.storages.Live(), liveTasks: g.tasks.Live(),
		borrows: len(g.borrows), settles: e.pass.settles}
	r.p.Ins = append([]values.Tensor(nil), p.Ins...)
	r.idx = append([]int32(nil), e.pass.idx...)
	r.sidx = append([]int32(nil), e.pass.sidx...)
	for s := range g.streams {
		st := &g.streams[s]
		r.now = append(r.now, st.nowNs)
		r.last = append(r.last, st.last)
		h := int32(0)
		if st.last >= 0 {
			h = g.tasks.Holds[st.last]
		}
		r.lastHolds = append(r.lastHolds, h)
		r.usage = append(r.usage, st.usage)
		r.nmem = append(r.nmem, st.mem.Len())
		r.sorted = append(r.sorted, st.sorted)
		r.tails = append(r.tails, st.queue.Tail())
		r.busy = append(r.busy, st.queue.Len() > 0 || st.io.Len() > 0)
	}
	r.rows, r.stors = e.inputState(g, p, r.idx, r.sidx, nil, nil)
	e.pass.rec = r
}

// EndPass follows the commands of a pass BeginPass did not apply: if they
// were recorded, their effect is kept for the pass's later runs.
func (e *Engine) EndPass() {
	r := e.pass.rec
	e.pass.rec = nil
	if r == nil {
		return
	}
	e.catchUp()
	fx := e.effectOf(r)
	if old := e.pass.effects[r.key]; old != nil && passCheck != nil {
		passCheck(r.key, old, fx)
		return
	}
	if fx == nil {
		if e.pass.declined == nil {
			e.pass.declined = make(map[PassKey]bool)
		}
		e.pass.declined[r.key] = true
		return
	}
	if e.pass.effects == nil {
		e.pass.effects = make(map[PassKey]*passEffect)
	}
	e.pass.effects[r.key] = e.shareBody(r.key, fx)
	e.pass.recorded++
}

// shareBody returns fx, or fx with the body of an effect recorded on
// another group and alike: the stages of a pipeline run the same layer
// passes, and one copy of what those passes do stays in the caches where
// one a stage did not (bench/RESULTS.md, "One effect for every stage").
// Nothing changes a body once it is recorded but its carry information's
// memo, whose answers depend on the bodies alone (consumable), so sharing
// changes no result.
func (e *Engine) shareBody(key PassKey, fx *passEffect) *passEffect {
	if shareOff {
		return fx
	}
	for _, b := range e.pass.bodies[key.Tpl] {
		if sameBody(b, fx.effectBody) {
			return &passEffect{g: fx.g, effectBody: b}
		}
	}
	if e.pass.bodies == nil {
		e.pass.bodies = make(map[int32][]*effectBody)
	}
	e.pass.bodies[key.Tpl] = append(e.pass.bodies[key.Tpl], fx.effectBody)
	return fx
}

// shareOff, when set (by a test), keeps every effect's body its own.
var shareOff bool

// sameBody reports whether bodies a and b are alike but for their carry
// information's memo. Recordings are few (a few per stage), so
// reflection's cost does not matter here, and a field added to a body is
// compared without being named.
func sameBody(a, b *effectBody) bool {
	x, y := *a, *b
	x.carry, y.carry = nil, nil
	if !reflect.DeepEqual(x, y) || (a.carry == nil) != (b.carry == nil) {
		return false
	}
	if a.carry == nil {
		return true
	}
	c, d := *a.carry, *b.carry
	c.memo, d.memo = nil, nil
	return reflect.DeepEqual(c, d)
}

// noteEvent is called by finish, while a pass is recorded, with the end
// of each stream event.
func (r *passRec) noteEvent(endNs int64) {
	if !r.hasEv || endNs > r.evMax {
		r.evMax, r.hasEv = endNs, true
	}
}

// effectOf computes the effect of recorded pass r from the state it left,
// or nil if the pass cannot be applied as a step.
func (e *Engine) effectOf(r *passRec) *passEffect {
	if r.otherGroup || r.loans || r.carried || e.pass.settles != r.settles || e.flushErr != nil || len(e.gs) != r.nGroups || e.part.Size(r.g) != r.size ||
		e.warnings != r.warn0 || e.counted() != r.counted0 || !e.passable() {
		return nil
	}
	g := e.gs[r.g]
	if len(g.borrows) != r.borrows || len(g.streams) != len(r.now) {
		return nil
	}
	p := &r.p
	fx := &passEffect{g: r.g, effectBody: &effectBody{size: r.size, cmds: e.cmdID - r.cmd0, tasks: g.tasksMade - r.tasks0, maxRt: r.maxRt, nIns: len(p.Ins)}}
	// The streams involved: those whose state changed, or that hold a
	// row of an input before or after.
	involved := make([]bool, len(g.streams))
	for s := range g.streams {
		st := &g.streams[s]
		if st.nowNs != r.now[s] || st.last != r.last[s] || st.usage != r.usage[s] || st.mem.Len() != r.nmem[s] || st.queue.Tail() != r.tails[s] {
			involved[s] = true
		}
		if st.sorted != r.sorted[s] {
			return nil // the events were sorted (or settled) meanwhile
		}
	}
	// The inputs as the pass leaves them.
	idxAfter := make([]int32, len(p.Ins))
	for k := range p.Ins {
		idxAfter[k] = -1
		if p.Ins[k].ID != 0 {
			idxAfter[k] = e.reg.TensorIdx(p.Ins[k].ID)
		}
		if idxAfter[k] >= 0 && idxAfter[k] != r.idx[k] {
			return nil // deleted and defined again
		}
		if idxAfter[k] < 0 && r.idx[k] >= 0 && firstInput(p, k) == k {
			fx.deletes = append(fx.deletes, passCode(-1-k))
		}
	}
	tt := &g.tensors
	for _, rs := range r.rows {
		if rs.owner >= 0 {
			involved[rs.owner] = true
		}
	}
	// Rows of inputs after: the same owners (changed), gone, or new.
	newInputRows := 0
	for k := range p.Ins {
		if r.idx[k] < 0 || firstInput(p, k) != k {
			continue
		}
		for _, rs := range r.rows {
			if rs.in != passCode(-1-k) {
				continue
			}
			a := rs
			if row := g.rowOf(r.idx[k], rs.owner); row >= 0 && tt.ID[row] == p.Ins[k].ID {
				a.refs, a.flags = tt.Refs[row], tt.Flags[row]
			} else {
				a.gone = true
			}
			fx.after = append(fx.after, a)
		}
		if idxAfter[k] < 0 {
			continue
		}
		for row := gen.TensorRow(g.tensorAt.get(r.idx[k]) - 1); row >= 0; row = tt.Next[row] {
			known := false
			for _, rs := range r.rows {
				known = known || rs.in == passCode(-1-k) && rs.owner == tt.Owner[row]
			}
			if !known {
				if tt.Owner[row] < 0 || tt.StorageIdx[row] != r.sidx[k] {
					return nil
				}
				involved[tt.Owner[row]] = true
				fx.newRows = append(fx.newRows, madeRow{t: passCode(-1 - k), st: passCode(-1 - firstStorage(p, k)), nbytes: tt.NBytes[row],
					owner: tt.Owner[row], refs: tt.Refs[row], flags: tt.Flags[row], via: -1})
				newInputRows++
			}
		}
	}
	fx.rows = r.rows
	for k := range p.Ins {
		if r.idx[k] >= 0 && firstInput(p, k) == k {
			fx.chains = append(fx.chains, int32(k))
		}
	}
	// The inputs' storages after.
	freedInputStors, newInputStors := 0, 0
	for _, ss := range r.stors {
		k := int(-1 - ss.in)
		a := storState{in: ss.in}
		// The storage's index may have been released with its last
		// tensor, and given to another storage since.
		si := e.reg.StorageIdxOfID(p.Ins[k].Storage)
		if si >= 0 && si != r.sidx[k] {
			return nil
		}
		if si < 0 {
			// released: no storage row either
		} else if sr := gen.StorageRow(g.storageAt.get(si) - 1); sr >= 0 {
			a.exists, a.count, a.bytes, a.stream, a.allocNs = true, g.storages.Count[sr], g.storages.Bytes[sr], g.storages.AllocStream[sr], g.storages.AllocNs[sr]
		}
		switch {
		case a.exists && !ss.exists:
			a.fresh, newInputStors = true, newInputStors+1
		case !a.exists && ss.exists:
			freedInputStors++
		case a.exists && (a.allocNs != ss.allocNs || a.bytes != ss.bytes || a.stream != ss.stream):
			return nil // freed and allocated again
		}
		if a.exists && a.stream >= 0 {
			involved[a.stream] = true
		}
		if ss.exists && ss.stream >= 0 {
			involved[ss.stream] = true
		}
		fx.storsAft = append(fx.storsAft, a)
	}
	fx.stors = r.stors
	// The base: the start of the first involved stream.
	fx.ref = -1
	for s := range involved {
		if involved[s] {
			fx.ref = gen.StreamID(s)
			break
		}
	}
	if fx.ref < 0 {
		return nil
	}
	base := r.now[fx.ref]
	fx.minRel = math.MaxInt64
	for s := range involved {
		if involved[s] {
			fx.minRel = min(fx.minRel, r.now[s]-base)
		}
	}
	// Allocation times: of a storage the pass allocated, relative to the
	// base; of one it frees, relative to the base, or minRel-1 for any
	// before the pass's first event (every such time passes the check
	// alike); of others, no matter.
	for k := range fx.storsAft {
		a, b := &fx.storsAft[k], &fx.stors[k]
		if a.fresh {
			a.allocNs -= base
		} else {
			a.allocNs = 0
		}
		switch {
		case !b.exists || a.exists:
			b.allocNs = 0
		case b.allocNs-base < fx.minRel:
			b.allocNs = fx.minRel - 1
		default:
			b.allocNs -= base
		}
	}
	// The tensors the pass made and leaves behind, with their storages.
	fx.maxOff = 0
	madeStorSeen := map[int64]bool{}
	for c := int64(0); c < p.Made; c++ {
		id := p.Base + c
		i := e.reg.TensorIdx(id)
		if i < 0 {
			continue
		}
		head := gen.TensorRow(g.tensorAt.get(i) - 1)
		if head < 0 {
			return nil // known to the registry, held by no stream
		}
		t := e.reg.At(i)
		mt := madeTensor{t: passCode(c), nbytes: t.NBytes, dtype: t.Dtype, shape: append([]int64(nil), t.Shape...), cpu: t.CPU}
		if mt.st = e.codeOf(p, t.Storage, true); mt.st == codeNone {
			return nil
		}
		fx.tensors = append(fx.tensors, mt)
		for row := head; row >= 0; row = tt.Next[row] {
			if tt.ID[row] != id || tt.Owner[row] < 0 {
				return nil
			}
			involved[tt.Owner[row]] = true
			fx.newRows = append(fx.newRows, madeRow{t: passCode(c), st: mt.st, nbytes: tt.NBytes[row], owner: tt.Owner[row], refs: tt.Refs[row], flags: tt.Flags[row], via: len(fx.tensors) - 1})
		}
		if mt.st >= 0 && !madeStorSeen[int64(mt.st)] {
			madeStorSeen[int64(mt.st)] = true
			sr := gen.StorageRow(g.storageAt.get(t.StorageIdx) - 1)
			if sr < 0 {
				continue // not yet produced (no task has started it)
			}
			ms := madeStor{st: mt.st, count: g.storages.Count[sr], bytes: g.storages.Bytes[sr], stream: g.storages.AllocStream[sr], allocNs: g.storages.AllocNs[sr] - base, via: len(fx.tensors) - 1}
			fx.maxOff = max(fx.maxOff, ms.allocNs)
			fx.newStors = append(fx.newStors, ms)
		}
	}
	// Nothing else was made or freed: the live rows account for every change.
	if g.tensors.Live()-r.liveRows != len(fx.newRows)-countGone(fx.after) ||
		g.storages.Live()-r.liveStors != len(fx.newStors)+newInputStors-freedInputStors {
		return nil
	}
	// The streams: new now, last task and memory events, relative to the base.
	tk := &g.tasks
	liveTasks := r.liveTasks
	for s := range involved {
		if !involved[s] {
			continue
		}
		st := &g.streams[s]
		if r.busy[s] || st.queue.Len() > 0 || st.io.Len() > 0 {
			return nil // a stream it involves was not idle, at its start or end
		}
		se := streamEffect{s: gen.StreamID(s), rel: r.now[s] - base, end: st.nowNs - base, usage: st.usage - r.usage[s]}
		if se.end < se.rel {
			return nil
		}
		fx.maxOff = max(fx.maxOff, se.end)
		se.memFrom = int32(len(fx.mem))
		fx.mem = netEvents(fx.mem, &st.mem, r.nmem[s], base)
		for _, ev := range fx.mem[se.memFrom:] {
			fx.maxOff = max(fx.maxOff, ev.ns)
			if ev.delta > 0 {
				fx.allocSum = satAdd(fx.allocSum, ev.delta)
			}
		}
		se.memTo = int32(len(fx.mem))
		// A task the pass made is the stream's last (its row may be the
		// old last's, freed and reused).
		if t := st.last; t >= 0 && tk.Command[t] > r.cmd0 {
			if tk.Holds[t] != 1 || tk.Flags[t]&gen.TaskFlagsEvent != 0 || tk.State[t] != gen.TaskStateExecuted || tk.Coll[t] >= 0 || tk.Wait[t] >= 0 {
				return nil
			}
			se.newLast = true
			se.lastStart, se.lastEnd, se.lastRt = tk.StartNs[t]-base, tk.EndNs[t]-base, tk.RuntimeNs[t]
			se.lastName, se.lastCmd, se.lastLine = tk.Name[t], tk.Command[t]-r.cmd0, tk.Line[t]-p.Line
			se.lastFlags, se.lastNIn, se.lastNOut, se.lastStream = tk.Flags[t], tk.NIn[t], tk.NOut[t], tk.Stream[t]
			liveTasks++
			if r.last[s] >= 0 && r.lastHolds[s] == 1 {
				liveTasks-- // released by the pass's first task on s
			}
		}
		fx.streams = append(fx.streams, se)
	}
	if tk.Live() != liveTasks {
		return nil
	}
	if r.hasEv {
		fx.hasEv, fx.evOff = true, r.evMax-base
		fx.maxOff = max(fx.maxOff, fx.evOff)
	}
	fx.carry = carryInfoOf(fx, p)
	return fx
}

// netEvents appends a stream's memory events evs from index first on,
// relative to base, in time order, with the events of one time summed
// into one (and dropped when they cancel). The peak and every total the report reads are
// unchanged: a device's events are merged stream by stream at equal
// times (SEMANTICS.md, "The report"), so one stream's events at a time
// are consecutive in the merge, sorted by delta; the running sums over
// such a run fall while its deltas are negative and then rise, so the
// highest of them is the one at its end, the same total, or below the
// sum before the run, which is itself a running sum already counted
// (or the settled total, which the settled peak is at least).
func netEvents(dst []memEvent, evs *memLog, first int, base int64) []memEvent {
	from := len(dst)
	dst = evs.appendTo(dst, first)
	run := dst[from:]
	for i := range run {
		run[i].ns -= base
	}
	slices.SortStableFunc(run, func(a, b memEvent) int { return cmp.Compare(a.ns, b.ns) })
	n := 0
	for i := 0; i < len(run); {
		j, sum := i, int64(0)
		for ; j < len(run) && run[j].ns == run[i].ns; j++ {
			sum += run[j].delta
		}
		if sum != 0 {
			run[n] = memEvent{run[i].ns, sum}
			n++
		}
		i = j
	}
	return dst[:from+n]
}

func countGone(rs []rowState) int {
	n := 0
	for _, r := range rs {
		if r.gone {
			n++
		}
	}
	return n
}

// codeNone is no code: an id neither made by the pass nor an input's.
const codeNone passCode = math.MinInt64

// codeOf codes id as a made id or an input's (storage's, with storage).
func (e *Engine) codeOf(p *Pass, id int64, storage bool) passCode {
	if id >= p.Base && id < p.Base+p.Made {
		return passCode(id - p.Base)
	}
	for k := range p.Ins {
		if storage && p.Ins[k].Storage == id && p.Ins[k].ID != 0 {
			return passCode(-1 - firstStorage(p, k))
		}
		if !storage && p.Ins[k].ID == id && id != 0 {
			return passCode(-1 - firstInput(p, k))
		}
	}
	return codeNone
}

// applyPass applies the recorded effect fx to run p, if p starts from a
// state the recording holds for; false (and nothing changed) otherwise.
func (e *Engine) applyPass(fx *passEffect, p *Pass) bool {
	gi := e.part.GroupOf(p.Rank)
	if gi != fx.g || e.part.Size(gi) != fx.size || len(p.Ins) != fx.nIns || p.MaxTs > math.MaxInt64-fx.maxRt {
		return false
	}
	g := e.gs[gi]
	if int(fx.ref) >= len(g.streams) {
		return false
	}
	base := g.streams[fx.ref].nowNs
	if base > math.MaxInt64-fx.maxOff {
		return false
	}
	for i := range fx.streams {
		se := &fx.streams[i]
		if int(se.s) >= len(g.streams) || g.streams[se.s].nowNs-base != se.rel || g.streams[se.s].queue.Len() > 0 || g.streams[se.s].io.Len() > 0 {
			return false
		}
	}
	if satAdd(g.allocBytes, fx.allocSum) >= math.MaxInt64-g.memBase {
		return false
	}
	// The inputs' indexes; those carried in a unit's classes this pass
	// consumes whole are checked against the unit's effect (carry.go).
	if !e.passInputs(fx, p, base) {
		return false
	}
	idx, sidx := e.pass.idx, e.pass.sidx
	// The inputs' rows and storages must be as recorded.
	tt := &g.tensors
	nrows := 0
	for _, k := range fx.chains {
		if idx[k] == idxCarried {
			nrows += fx.rowsCarried(k)
			continue
		}
		if idx[k] < 0 {
			return false
		}
		for r := gen.TensorRow(g.tensorAt.get(idx[k]) - 1); r >= 0; r = tt.Next[r] {
			nrows++
		}
	}
	if nrows != len(fx.rows) {
		return false
	}
	for _, rs := range fx.rows {
		k := int(-1 - rs.in)
		if idx[k] == idxCarried {
			continue
		}
		row := g.rowOf(idx[k], rs.owner)
		if row < 0 || tt.Refs[row] != rs.refs || tt.Flags[row] != rs.flags {
			return false
		}
	}
	for i, ss := range fx.stors {
		k := int(-1 - ss.in)
		if sidx[k] == idxCarried {
			continue
		}
		sr := gen.StorageRow(g.storageAt.get(sidx[k]) - 1)
		if (sr >= 0) != ss.exists {
			return false
		}
		if sr < 0 {
			continue
		}
		st := &g.storages
		if st.Count[sr] != ss.count || st.Bytes[sr] != ss.bytes || st.AllocStream[sr] != ss.stream {
			return false
		}
		// A storage the pass frees must pass the check that a release
		// comes after the allocation alike: every event of the pass is at
		// or after the start of an involved stream, so an allocation
		// before the earliest of those passes it, as it did when
		// recorded, or the allocation is where it was.
		if !fx.storsAft[i].exists {
			if rel := st.AllocNs[sr] - base; rel >= fx.minRel && rel != ss.allocNs {
				return false
			}
		}
	}
	if e.reg.Len()+e.reg.Outside()+len(fx.tensors) > values.MaxTensors {
		return false
	}
	// Every check passed: apply. First the registry: the tensors the pass
	// made and leaves behind (the dense indexes they get change no result).
	carry := e.carries(fx, p)
	made := e.pass.made[:0]
	for i := range fx.tensors {
		mt := &fx.tensors[i]
		if carry && fx.carry.tensorClass[i] >= 0 {
			made = append(made, -1, -1)
			continue
		}
		ti, si, err := e.reg.Ensure(p.Base+int64(mt.t), e.storageID(p, mt.st), mt.nbytes, mt.dtype, mt.shape, mt.cpu)
		if err != nil {
			// Unreachable: the recording defined the same tensors, and
			// the count was checked above.
			panic(err)
		}
		made = append(made, ti, si)
	}
	e.pass.made = made
	e.reserveRows(e.reg.Len())
	e.applyEffect(fx, p, gi, base, idx, sidx, made, carry)
	return true
}

// applyEffect applies fx to group gi for run p starting at base, once
// every check has passed.
func (e *Engine) applyEffect(fx *passEffect, p *Pass, gi groups.GroupID, base int64, idx, sidx, made []int32, carry bool) {
	g := e.gs[gi]
	cmd0 := e.cmdID
	e.cmdID += fx.cmds
	tk := &g.tasks
	for i := range fx.streams {
		se := &fx.streams[i]
		st := &g.streams[se.s]
		st.mem.pushShifted(fx.mem[se.memFrom:se.memTo], base)
		st.usage += se.usage
		if se.newLast {
			t := tk.Alloc()
			tk.State[t] = gen.TaskStateExecuted
			tk.StartNs[t], tk.EndNs[t], tk.RuntimeNs[t] = se.lastStart+base, se.lastEnd+base, se.lastRt
			tk.Stream[t], tk.Name[t] = se.lastStream, se.lastName
			tk.Command[t], tk.Line[t] = cmd0+se.lastCmd, p.Line+se.lastLine
			tk.Coll[t], tk.Wait[t], tk.Waiters[t], tk.NextWaiter[t], tk.Borrow[t] = -1, -1, -1, -1, -1
			tk.Flags[t], tk.IOOff[t], tk.NIn[t], tk.NOut[t] = se.lastFlags, st.io.Tail(), se.lastNIn, se.lastNOut
			tk.Holds[t] = 1 // the stream's last task
			old := st.last
			st.last = t
			if old >= 0 {
				g.release(old)
			}
		}
		st.nowNs = se.end + base
	}
	g.allocBytes = satAdd(g.allocBytes, fx.allocSum)
	if fx.hasEv {
		g.evMaxNs = max(g.evMaxNs, fx.evOff+base)
	}
	g.tasksMade += fx.tasks
	e.tasked = true // a pass follows tasks already; said for Options.FixedStreams
	if fx.tasks > 0 {
		g.active = true
	}
	// The inputs' rows and storages as the pass leaves them.
	tt := &g.tensors
	for i, rs := range fx.rows {
		a := &fx.after[i]
		if idx[-1-rs.in] == idxCarried {
			continue // consumed whole
		}
		row := g.rowOf(idx[-1-rs.in], rs.owner)
		if a.gone {
			g.unlink(row)
			e.freeRow(g, row)
			continue
		}
		tt.Refs[row], tt.Flags[row] = a.refs, a.flags
	}
	sto := &g.storages
	for i, ss := range fx.stors {
		a := &fx.storsAft[i]
		si := sidx[-1-ss.in]
		if si == idxCarried {
			continue
		}
		sr := gen.StorageRow(g.storageAt.get(si) - 1)
		switch {
		case ss.exists && !a.exists:
			g.storageAt.set(&g.pages, si, 0)
			sto.Free(sr)
		case !ss.exists && a.exists:
			sr = sto.Alloc()
			g.storageAt.set(&g.pages, si, int32(sr)+1)
			sto.Count[sr], sto.Bytes[sr], sto.AllocStream[sr], sto.AllocNs[sr] = a.count, a.bytes, a.stream, a.allocNs+base
		case a.exists:
			sto.Count[sr] = a.count
		}
	}
	// The storages and rows of the tensors it made and leaves behind.
	for i := range fx.newStors {
		if carry && fx.carry.storClass[i] >= 0 {
			continue // carried
		}
		ms := &fx.newStors[i]
		si := made[2*ms.via+1]
		sr := sto.Alloc()
		g.storageAt.set(&g.pages, si, int32(sr)+1)
		sto.Count[sr], sto.Bytes[sr], sto.AllocStream[sr], sto.AllocNs[sr] = ms.count, ms.bytes, ms.stream, ms.allocNs+base
	}
	for i := range fx.newRows {
		if carry && fx.carry.rowClass[i] >= 0 {
			continue // carried
		}
		nr := &fx.newRows[i]
		t := values.Tensor{Storage: e.storageID(p, nr.st), NBytes: nr.nbytes}
		if nr.t >= 0 {
			t.ID, t.Idx, t.StorageIdx = p.Base+int64(nr.t), made[2*nr.via], made[2*nr.via+1]
		} else {
			k := -1 - nr.t
			t.ID, t.Idx, t.StorageIdx = p.Ins[k].ID, idx[k], sidx[-1-nr.st]
		}
		row := e.newRow(g, &t)
		tt.Owner[row], tt.Refs[row], tt.Flags[row] = nr.owner, nr.refs, nr.flags
		g.link(row)
	}
	for _, c := range fx.deletes {
		if idx[-1-c] != idxCarried {
			e.reg.DeleteAt(idx[-1-c], p.Ins[-1-c].ID)
		}
	}
	e.consumeCarried()
	if carry {
		if e.pass.missFn == nil {
			e.pass.missFn = e.carryMiss
		}
		e.reg.SetMiss(e.pass.missFn)
		e.pass.carrying = true
		if len(e.pass.units) == e.pass.head {
			e.pass.unitLo = p.Base
		}
		e.addUnit(carryUnit{fx: fx, g: gi, base: base, idBase: p.Base, idEnd: p.Base + p.Made, mask: 1<<len(fx.carry.classes) - 1})
		e.pass.unitHi = p.Base + p.Made
		e.reg.HoldOutside(fx.carry.nTensors)
	}
	e.touch([]groups.GroupID{gi})
	e.countRows()
	e.recycle()
	if cmd0/settleEvery != e.cmdID/settleEvery {
		e.settle()
	}
}

// storageID is the storage id of code c in run p.
func (e *Engine) storageID(p *Pass, c passCode) int64 {
	if c >= 0 {
		return p.Base + int64(c)
	}
	return p.Ins[-1-c].Storage
}

// inputHints is how many rows each input of a recorded pass remembers:
// the layers of one stage share a recording, each with its own weights.
const inputHints = 4

// hint is where input k's remembered rows are, making room for the
// inputs' hints on first use (-1: none).
func (fx *passEffect) hint(k int) *[inputHints]int32 {
	for len(fx.hints) <= k {
		fx.hints = append(fx.hints, [inputHints]int32{-1, -1, -1, -1})
	}
	return &fx.hints[k]
}

// knownRow is the row of id, input k of a run of fx, or -1 if the
// registry does not know id now; known, without asking the registry's
// question (Registry.Known), or else found (Registry.TensorIdx).
func (e *Engine) knownRow(fx *passEffect, k int, id int64, known bool) int32 {
	h := fx.hint(k)
	for j, r := range h {
		if e.reg.IsRow(id, r) {
			// The most recent first.
			copy(h[1:j+1], h[:j])
			h[0] = r
			return r
		}
	}
	var i int32
	if known {
		i = e.reg.Known(id)
	} else {
		i = e.reg.TensorIdx(id)
	}
	if i >= 0 {
		copy(h[1:], h[:inputHints-1])
		h[0] = i
	}
	return i
}
