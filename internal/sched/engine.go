package sched

import (
	"fmt"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"
	"golang.org/x/sync/errgroup"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/groups"
	"github.com/fastsim/fastsim/internal/soa"
	"github.com/fastsim/fastsim/internal/values"
)

// Mode says which parts of the timeline are simulated and traced.
type Mode uint8

// Trace modes, as in docs/SEMANTICS.md.
const (
	Everything     Mode = iota // controller and streams
	StreamOnly                 // streams; the controller clock stays 0
	ControllerOnly             // the controller alone; no handler runs
)

// ParseMode reads a mode name: everything, stream-only or controller-only
// (underscores are accepted for hyphens).
func ParseMode(s string) (Mode, error) {
	switch s {
	case "everything":
		return Everything, nil
	case "stream-only", "stream_only":
		return StreamOnly, nil
	case "controller-only", "controller_only":
		return ControllerOnly, nil
	}
	return 0, fmt.Errorf("%w: trace mode %q (want everything, stream-only or controller-only)", ErrOptions, s)
}

func (m Mode) String() string {
	return [...]string{"everything", "stream-only", "controller-only"}[m]
}

func (m Mode) controller() bool { return m != StreamOnly }

// Controller says what the controller's sending of commands costs.
type Controller uint8

// Controllers.
const (
	// ControllerMonarch: the controller clock follows each record's ts, so
	// a task starts no earlier than the controller sent its command (a
	// Monarch program, one controller driving every worker; the default,
	// as the reference replays recorded histories).
	ControllerMonarch Controller = iota
	// ControllerNone: commands cost the controller nothing and the clock
	// stays 0, so tasks wait only for their streams, as in an SPMD program
	// where every rank runs its own copy of the code. No controller events
	// are traced.
	ControllerNone
)

// ParseController reads a controller name: monarch or none (also spmd).
func ParseController(s string) (Controller, error) {
	switch s {
	case "monarch", "":
		return ControllerMonarch, nil
	case "none", "spmd":
		return ControllerNone, nil
	}
	return 0, fmt.Errorf("%w: controller %q (want monarch or none)", ErrOptions, s)
}

// String is the controller's name, as ParseController reads it.
func (c Controller) String() string { return [...]string{"monarch", "none"}[c] }
func (m Mode) streams() bool        { return m != ControllerOnly }

// Costs are the runtimes the engine charges, in nanoseconds.
type Costs struct {
	CallFunctionNs int64
	ReduceNs       int64
	SendLocalNs    int64 // SendTensor whose from_ranks equal its to_ranks
	SendRemoteNs   int64
	EventWaitNs    int64
	KernelLaunchNs int64 // CPU side only; does not affect results
}

// DefaultCosts are the reference simulator's runtimes, as the message spec
// declares them.
func DefaultCosts() Costs {
	return Costs{
		CallFunctionNs: gen.MsgCallFunction.Info().RuntimeNs,
		ReduceNs:       gen.MsgReduce.Info().RuntimeNs,
		SendLocalNs:    gen.MsgSendTensor.Info().LocalRuntimeNs,
		SendRemoteNs:   gen.MsgSendTensor.Info().RuntimeNs,
		EventWaitNs:    gen.MsgBorrowCreate.Info().EventRuntimeNs,
		KernelLaunchNs: gen.MsgCallFunction.Info().LaunchNs,
	}
}

// Options configure an Engine.
type Options struct {
	WorldSize int64
	Mode      Mode
	Costs     Costs // fixed runtimes, used when Model is nil
	// Model prices tasks instead of Costs when set.
	Model CostModel
	// GPUsPerHost says which ranks share a host (for Model); 0: all.
	GPUsPerHost int64
	// KeepEvents keeps every stream and controller event so WriteTrace can
	// write them; without it only the report is computed.
	KeepEvents bool
	// Grouped simulates ranks that received exactly the same commands once,
	// as a group; results are the same as ungrouped.
	Grouped bool
	// Jobs bounds the goroutines that run groups in parallel after a
	// command (<= 1: serial). Results do not depend on it.
	Jobs int
	// Controller prices the controller's part of each command.
	Controller Controller
	// FixedStreams promises that every stream is created before the first
	// task is queued: a producer that makes its streams up front
	// (internal/workload) says so. Memory events then become final, and are
	// let go of, once no stream can record one before them, even where the
	// controller clock is behind (with ControllerNone it stays 0, and
	// without the promise nothing is final before the end). A stream
	// created after a task is an error (ErrStreamsFixed). In StreamOnly
	// mode, which settles nothing, it changes nothing but that check; with
	// KeepEvents the events stay for the trace.
	FixedStreams bool
	// Interrupt, when set, is asked between the sub-commands of a
	// CommandGroup and every 65,536 groups a command reaches; true ends
	// the command with ErrStopped, so a stop request or a memory limit is
	// honoured even inside one huge record.
	Interrupt func() bool
}

// Engine replays commands. It is not safe for concurrent use; inside, the
// groups touched by a command run their streams in parallel (Options.Jobs).
type Engine struct {
	opt Options

	nowNs int64 // the controller clock
	// tasked: a task has been queued; with FixedStreams no stream may be
	// created after that.
	tasked bool
	cmdID  int64
	line   int64
	tsNs   int64          // the current record's ts, whatever the mode
	cur    []values.Slice // ranks of the current command

	part   *groups.Partition
	gs     []*group // one per group of identical ranks (per rank, ungrouped); pointers, so a split appends 8 bytes, not a copy of every group
	colls  colls    // collectives span groups
	names  soa.Intern[gen.NameID]
	recv   []groups.GroupID // groups receiving the current command
	ready  []groups.GroupID // groups with streams to move in the next round
	round  []groups.GroupID
	eg     errgroup.Group
	splitF groups.Split

	// The registry that gave the commands' dense indexes (nil: the
	// commands' ids are their indexes, as a typed producer gives them). The
	// engine alone decides when an index may be reused (recycle).
	reg          *values.Registry
	borrowed     []bool  // by tensor Idx: the tensor is the result of a borrow
	tensorRows   []int32 // by tensor Idx: rows of it alive in all groups
	gone         []int32 // tensors whose count fell to zero since the last recycle
	borrowGroups []int32 // by borrow index: groups that have the borrow
	borGone      []int32 // borrows whose count fell to zero since the last recycle
	boundFn      func(*values.Tensor)
	touched      []groups.GroupID // groups the current command reached, each once (touch)
	dfr          deferred         // the registry's lifecycle while another goroutine writes it (Defer)

	inputs    []values.Tensor
	outs      []values.Tensor
	pairs     []gen.TaskID // tasks of one SendTensor
	order     []int32      // positions of one SendTensor's side, by lowest rank
	memPos    []int        // per stream: where mergePeak stopped
	memHeap   []memHead    // mergePeak's heap of streams
	batch     batchArgs    // arguments of the batch each is running
	pool      pool         // helpers for parallel sections
	secOp     batchOp      // the parallel section being run
	secGroups []groups.GroupID
	secChunks int

	ctrlName  []gen.NameID // controller events, when kept
	ctrlStart []int64
	ctrlEnd   []int64
	ctrlCmd   []int64
	ctrlMaxNs int64

	placeKey   []byte                    // scratch for placement's cache key
	placeRanks *roaring.Bitmap           // scratch for placement's ranks
	placeCache map[string][2]int64       // slices -> hosts, most ranks on a host
	placeMemo  [placeMemos]lastPlacement // placement's answers, at a hashed place

	subs  []*gen.Msg // CommandGroup's scratch sub-command, by nesting depth
	depth int

	pend     pendingReduces // a run of Reduces held back to apply together (batch.go)
	flushErr error          // the run's failure, when applying it was not asked by a command

	viewName  gen.NameID
	fnPaths   []string                       // by CallFunction.FunctionIdx: the function path cached
	fnNames   []gen.NameID                   // by CallFunction.FunctionIdx: its interned clean name + 1 (0: none)
	kindNames [gen.MsgUnknown + 1]gen.NameID // by kind: its interned name + 1 (0: not interned yet)
	recvName  gen.NameID                     // "RecvTensor" + 1 (0: not interned yet)

	pass passState // recorded passes applied as one step (pass.go)

	warnings  int64
	firstWarn string
	reports   []Report
}

// group is the simulation state of a group of identical ranks (one rank
// when ungrouped). Every table is its own, with ids local to the group, so
// a split copies the tables wholesale and groups run in parallel without
// sharing anything but the collectives.
type group struct {
	tasks    gen.TaskTable
	tensors  gen.TensorTable
	storages gen.StorageTable
	streams  []stream // in creation order; a stream's id is its index
	// By the registry's dense indexes, each value its row + 1 (0: none).
	streamAt  paged    // stream index -> StreamID
	tensorAt  paged    // tensor index -> its first row (the others follow Tensors.Next)
	storageAt paged    // storage index -> StorageRow
	borrowAt  paged    // borrow index -> BorrowRow
	pages     pagePool // the pages of the four tables above
	borrows   []borrow
	freeBor   []gen.BorrowRow
	active    bool  // given any task: it appears in the trace
	evMaxNs   int64 // latest end of any of its stream events
	tasksMade int64 // tasks queued on this group (and its ancestors before a split)
	memBase   int64 // running memory total of the settled events
	memPeak   int64 // peak of the running total over the settled events
	// finalBase and finalPeak are memBase and memPeak over the final
	// events alone, those before the controller clock at a settlement
	// (before the settled bound under Options.FixedStreams; merge.go,
	// settleMemory): where a new stream sends the group back.
	finalBase int64
	finalPeak int64
	// allocBytes bounds the unsettled allocations (saturating): while
	// memBase + allocBytes fits, no running total can overflow.
	allocBytes int64

	hits      []deleteHit    // deleteIn's scratch
	work      []gen.StreamID // streams whose head may move
	ready     bool           // in Engine.ready
	touched   bool           // in Engine.touched
	born      []int32        // tensor indices of rows made since the last countRows
	died      []int32        // tensor indices of rows freed since the last countRows
	wakeColls []gen.CollID   // collectives that this round's tasks completed the starts of
	doneColls []gen.CollID   // collectives whose last member executed this round
	err       error
}

type stream struct {
	ref     int64
	name    gen.NameID
	waitFor gen.NameID // interned "waiting for <name>"
	nowNs   int64
	last    gen.TaskID // last executed task, or -1
	queue   soa.Ring[gen.TaskID]
	io      soa.Ring[gen.TensorRow] // tensor rows of queued tasks: inputs, then new outputs
	usage   int64                   // bytes allocated on this stream and not yet released
	inWork  bool

	mem    memLog // allocations and releases, in the order they happened
	sorted int    // mem[:sorted] is in (time, delta) order
	base   int    // mem[:base] is settled
	final  int    // mem[:final] is final (final <= base); kept only for the trace

	evStart []int64 // trace events, when kept
	evEnd   []int64
	evName  []gen.NameID
	evCmd   []int64
}

const (
	borrowCreated uint8 = iota
	borrowFirstUsed
	borrowLastUsed
)

type borrow struct {
	src      int64 // lent tensor id
	srcIdx   int32 // its dense index
	idx      int32 // the borrow's dense index
	live     bool  // a row in use (not on the free list)
	srcRow   gen.TensorRow
	from, to gen.StreamID
	create   gen.TaskID // the event the destination waits on at first use
	last     gen.TaskID // the event the source waits on at drop, or -1
	state    uint8
	holdsSrc bool
}

// tensorFreed marks a recycled tensor row: no live row has every flag.
const tensorFreed = ^gen.TensorFlags(0)

// New returns an engine for a world of opt.WorldSize workers.
func New(opt Options) (*Engine, error) {
	limit := int64(MaxWorld)
	if opt.Grouped {
		limit = MaxGroupedWorld
	}
	if opt.WorldSize < 1 || opt.WorldSize > limit {
		return nil, fmt.Errorf("%w: world size %d (want 1..%d; larger worlds need grouped workers)", ErrOptions, opt.WorldSize, limit)
	}
	if opt.Costs == (Costs{}) {
		opt.Costs = DefaultCosts()
	}
	if opt.Model == nil {
		opt.Model = opt.Costs
	}
	if opt.GPUsPerHost <= 0 {
		opt.GPUsPerHost = opt.WorldSize
	}
	part, err := groups.New(opt.WorldSize, opt.Grouped)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOptions, err)
	}
	e := &Engine{
		opt:  opt,
		part: part,
		gs:   newGroups(part.Len()),
	}
	e.splitF = e.split
	e.boundFn = e.bound
	if opt.Jobs > 1 {
		e.eg.SetLimit(opt.Jobs - 1) // helpers; the caller works too
	}
	e.viewName = e.names.ID("aten.view")
	return e, nil
}

// RankBytes is the least memory a simulated group (a rank, ungrouped)
// takes once it has a stream: its own state and one stream's, before any
// task or tensor. A replay can refuse up front a world whose groups cannot
// fit in its memory budget.
const RankBytes = int64(unsafe.Sizeof(group{}) + unsafe.Sizeof(stream{}))

// newGroups returns n empty groups, laid out in one block (ungrouped, one
// per rank).
func newGroups(n int) []*group {
	block := make([]group, n)
	gs := make([]*group, n)
	for i := range block {
		gs[i] = &block[i]
	}
	return gs
}

// MaxWorld is the largest world an ungrouped engine accepts: each rank
// carries its own tables.
const MaxWorld = 1 << 20

// MaxGroupedWorld is the largest world with grouped workers.
const MaxGroupedWorld = 1 << 24

// Command applies one command record: ts is the controller's send time,
// ranks the slices receiving it, line its line number (for messages).
// reg is the registry that gave the message its dense indexes (m.Index);
// from the first command on, the engine owns its lifecycle: it keeps
// deleted tensors' rows (Registry.DeferFree) and releases a tensor's,
// storage's or borrow's index once no worker holds it. With reg nil the
// message's ids are its indexes (small, non-negative and never reused, as
// a typed producer gives them), and nothing is released.
func (e *Engine) Command(line, ts int64, ranks []values.Slice, m *gen.Msg, reg *values.Registry) error {
	if e.dfr.on {
		// The registry is the decoder's: Decoded said how far it grew.
		e.reserveRows(e.dfr.len)
		return e.command(line, ts, ranks, m)
	}
	if reg != e.reg {
		if e.reg != nil {
			// What is carried undefined is defined in the registry
			// that gave its ids.
			e.defineAll()
			e.reg.SetMiss(nil)
		}
		e.reg = reg
		if reg != nil {
			reg.DeferFree(true)
		}
	}
	if reg != nil {
		e.reserveRows(reg.Len())
	} else {
		m.EachTensor(e.boundFn)
	}
	return e.command(line, ts, ranks, m)
}

// command is Command once the row counts have room for m's tensors.
func (e *Engine) command(line, ts int64, ranks []values.Slice, m *gen.Msg) error {
	if e.flushErr != nil {
		return e.flushErr
	}
	// Disjoint non-empty peer sets are at most one per rank: a longer run
	// cannot go together, and holding it would grow with the history.
	if e.pend.n > 0 && (!e.pend.extends(ts, m) || int64(e.pend.n) >= e.opt.WorldSize) {
		if err := e.flush(); err != nil {
			e.flushErr = err
			return err
		}
	}
	e.line = line
	e.tsNs = ts
	// Not while a pass is recorded: its memory events are read off the
	// streams at its end (pass.go).
	if e.cmdID%settleEvery == settleEvery-1 && e.pass.rec == nil {
		e.settle()
	}
	var err error
	if e.batchable(m) {
		e.hold(line, ts, ranks, m)
	} else {
		err = e.process(ts, ranks, m)
	}
	e.countRows()
	e.recycle()
	return err
}

// Flush applies the Reduces held back to be applied together, now: a
// reader calls it before it reports a fault found after them, which an
// error of theirs precedes.
func (e *Engine) Flush() error {
	e.catchUp()
	return e.flushErr
}

// catchUp applies the held Reduces before the engine's state is read; a
// failure is kept for the next Command or Finish to return.
func (e *Engine) catchUp() {
	if e.pend.n == 0 {
		return
	}
	if err := e.flush(); err != nil && e.flushErr == nil {
		e.flushErr = err
	}
	e.countRows()
	e.recycle()
}

// bound makes room in the row counts for tensor t (reg nil).
func (e *Engine) bound(t *values.Tensor) { e.reserveRows(int(t.Idx) + 1) }

// settleEvery is how many commands pass between two settlements of the
// memory events. A settlement reads every group's streams, cold by then
// when the groups are many and each command touches one: at 4,096 the
// 1T-parameter prediction's 64 groups missed the second-level cache
// about 3.5 million times in settlements, and 7.5% fewer times in all at
// 16,384, where the events a group holds between two settlements (a few
// hundred) still fit in the caches (bench/RESULTS.md, "One effect for
// every stage").
const settleEvery = 16384

// Step closes an iteration: it records and returns the report so far.
func (e *Engine) Step() Report {
	e.catchUp()
	e.settle()
	r := e.Report()
	e.reports = append(e.reports, r)
	return r
}

// settleOff, set by a test, leaves every memory event unsettled until a
// report merges them: what settling must not change.
var settleOff bool

// settle settles every group's final memory events.
func (e *Engine) settle() {
	if settleOff {
		return
	}
	e.pass.settles++
	for gi := range e.gs {
		e.settleMemory(e.gs[gi])
	}
}

// Steps returns the reports recorded by Step.
func (e *Engine) Steps() []Report { return e.reports }

// Warnings returns how many commands had an unknown type and the first
// such warning.
func (e *Engine) Warnings() (int64, string) { return e.warnings, e.firstWarn }

// Commands is the number of commands processed, sub-commands included.
func (e *Engine) Commands() int64 { return e.cmdID }

// process runs one command sent to ranks: steps 1-4 of docs/SEMANTICS.md.
func (e *Engine) process(ts int64, ranks []values.Slice, m *gen.Msg) error {
	e.controllerStep(ts, m)
	if !e.opt.Mode.streams() && m.Kind != gen.MsgCommandGroup {
		return nil
	}
	e.cur = ranks
	if r := e.pass.rec; r != nil {
		switch m.Kind {
		case gen.MsgBorrowCreate, gen.MsgBorrowFirstUse, gen.MsgBorrowLastUse, gen.MsgBorrowDrop:
			r.loans = true // a pass with a loan is not applied as a step
		}
	}
	if err := gen.Dispatch(e, m); err != nil {
		return e.wrap(m, err)
	}
	if err := e.run(); err != nil {
		return e.wrap(m, err)
	}
	return nil
}

// processCall is process for a CallFunction read in place, a
// CommandGroup's sub-command: it is not copied out of the group's list
// into a Msg first (a CallFunction with its trees is a few hundred bytes,
// and it is what a CommandGroup usually holds).
func (e *Engine) processCall(ts int64, ranks []values.Slice, m *gen.CallFunction) error {
	e.cmdID++
	if e.opt.Mode.controller() && e.opt.Controller == ControllerMonarch {
		if gen.MsgCallFunction.Info().ControllerEvent {
			e.controllerEvent(e.fnName(m), e.nowNs, ts)
		}
		e.nowNs = ts
	}
	if !e.opt.Mode.streams() {
		return nil
	}
	e.cur = ranks
	if err := e.CallFunction(m); err != nil {
		return e.wrapCall(m, err)
	}
	if err := e.run(); err != nil {
		return e.wrapCall(m, err)
	}
	return nil
}

// controllerStep is step 1 of a command: it is numbered, and the
// controller's clock moves to ts, with an event for the time it took
// (processCall does the same for a CallFunction read in place).
func (e *Engine) controllerStep(ts int64, m *gen.Msg) {
	e.cmdID++
	if e.opt.Mode.controller() && e.opt.Controller == ControllerMonarch {
		if m.Kind.Info().ControllerEvent {
			e.controllerEvent(e.controllerName(m), e.nowNs, ts)
		}
		e.nowNs = ts
	}
}

// resolve returns the groups receiving the current command, splitting the
// groups it covers in part.
func (e *Engine) resolve() ([]groups.GroupID, error) {
	r, err := e.part.Resolve(e.cur, e.splitF)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", values.ErrRank, err)
	}
	e.recv = append(e.recv[:0], r...)
	e.touch(r)
	return e.recv, nil
}

// touch logs the groups gs as reached by the current command, each group
// once however often the command reaches it (a command resolves its groups
// and then runs them, often several rounds): countRows then visits each
// once.
func (e *Engine) touch(gs []groups.GroupID) {
	for _, gi := range gs {
		if g := e.gs[gi]; !g.touched {
			g.touched = true
			e.touched = append(e.touched, gi)
		}
	}
}

func (e *Engine) controllerName(m *gen.Msg) gen.NameID {
	switch m.Kind {
	case gen.MsgCallFunction:
		return e.fnName(&m.CallFunction)
	case gen.MsgUnknown:
		return e.names.ID(m.TypeName)
	}
	return e.kindName(m.Kind)
}

// kindName interns a message kind's name once. Names are interned when
// first used, as before the cache, so their ids do not change.
func (e *Engine) kindName(k gen.MsgKind) gen.NameID {
	if n := e.kindNames[k]; n != 0 {
		return n - 1
	}
	id := e.names.ID(k.String())
	e.kindNames[k] = id + 1
	return id
}

func (e *Engine) controllerEvent(name gen.NameID, start, end int64) {
	if end > e.ctrlMaxNs {
		e.ctrlMaxNs = end
	}
	if e.opt.KeepEvents {
		e.ctrlName = append(e.ctrlName, name)
		e.ctrlStart = append(e.ctrlStart, start)
		e.ctrlEnd = append(e.ctrlEnd, end)
		e.ctrlCmd = append(e.ctrlCmd, e.cmdID)
	}
}

// fnName returns the interned clean name of a CallFunction's function,
// cached in a slot indexed by the dense index its path was given at decode
// (FunctionIdx), so that no command looks a path up in a map. The slot also
// holds the path it was filled for: a message whose index is stale or was
// never given (built without Msg.Index, or from another registry) misses
// and is interned afresh, which gives the same name.
func (e *Engine) fnName(m *gen.CallFunction) gen.NameID {
	i := int(m.FunctionIdx)
	if i >= 0 && i < len(e.fnNames) && e.fnNames[i] != 0 && samePath(e.fnPaths[i], m.Function) {
		return e.fnNames[i] - 1
	}
	id := e.names.ID(CleanName(m.Function))
	// Indexes are dense from 0: one far beyond the slots is not a
	// registry's, and is not given a slot.
	if i >= 0 && i < len(e.fnNames)+maxFnGrow {
		if i >= len(e.fnNames) {
			e.fnNames = append(e.fnNames, make([]gen.NameID, i+1-len(e.fnNames))...)
			e.fnPaths = append(e.fnPaths, make([]string, i+1-len(e.fnPaths))...)
		}
		e.fnNames[i], e.fnPaths[i] = id+1, m.Function
	}
	return id
}

// samePath is a == b, deciding at once when both are the same bytes: a
// decoder gives a path it has read before as the string it gave then.
func samePath(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// maxFnGrow bounds how far beyond its slots fnName grows its cache at once.
const maxFnGrow = 1 << 12

// CleanName shortens an operator path for display: a leading "torch.ops."
// goes when the path starts with "torch.ops.aten.", a trailing ".default"
// always.
func CleanName(name string) string {
	const ops, aten, def = "torch.ops.", "torch.ops.aten.", ".default"
	if len(name) >= len(aten) && name[:len(aten)] == aten {
		name = name[len(ops):]
	}
	if len(name) >= len(def) && name[len(name)-len(def):] == def {
		name = name[:len(name)-len(def)]
	}
	return name
}

func (e *Engine) wrap(m *gen.Msg, err error) error {
	if m.Kind == gen.MsgCallFunction {
		return e.wrapCall(&m.CallFunction, err)
	}
	if _, ok := err.(*CommandError); ok { // a sub-command's, already named
		return err
	}
	return &CommandError{Command: e.cmdID, Type: m.Kind.String(), Err: err}
}

// wrapCall is wrap for a CallFunction.
func (e *Engine) wrapCall(m *gen.CallFunction, err error) error {
	if _, ok := err.(*CommandError); ok {
		return err
	}
	return &CommandError{Command: e.cmdID, Type: gen.MsgCallFunction.String() + " " + m.Function, Err: err}
}

// CommandError is an error met while applying a command.
type CommandError struct {
	Command int64  // 1-based command number, sub-commands included
	Type    string // message type (and function)
	// Line, when not 0, is the history line of the command: set when the
	// error is found after later records were read (a held Reduce), so
	// it belongs to that line, not the record being read.
	Line int64
	Err  error
}

func (c *CommandError) Error() string {
	return fmt.Sprintf("command %d (%s): %v", c.Command, c.Type, c.Err)
}

func (c *CommandError) Unwrap() error { return c.Err }
