package sched

import (
	"slices"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/groups"
	"github.com/fastsim/fastsim/internal/values"
)

// A collective over one mesh dimension is sent as one Reduce per group of
// that dimension (a Reduce has one peer set): a training step's
// tensor-parallel all-reduce is dp·pp commands, each to the 8 ranks of one
// tensor-parallel group, with the same message and the same time. Applied
// one by one, the first command splits every pipeline stage's group into
// its tensor-parallel groups, and they never merge again; a grouped replay
// of a data-parallel job then simulates every rank apart.
//
// So, grouped, the engine holds a run of such Reduces (same time, same
// message, other ranks) back, and when the run ends applies it as one
// collective over the groups its ranks cover, with the runtime of one
// peer set, when that gives every rank the same task times, the same end
// and the same errors as the commands applied one by one:
//
//   - the peer sets do not overlap;
//   - every peer set meets every group the run reaches: a rank's end is
//     the latest start over its own peer set's groups plus the runtime,
//     and every group's ranks start together, so every peer set ends at
//     the latest start over all of them, as the one collective does;
//   - every peer set has the same runtime (same size and placement);
//   - the first command's ranks hold every group's lowest rank: a failure,
//     or a deadlock, is then named by the same rank and the first
//     command's line, as one by one.
//
// Otherwise the commands are applied one by one, as they came. The
// controller's part of each command is done when it arrives, so its
// events and the command numbers are those of the history. A trace keeps
// the controller's span of every command; a group's span of the one
// collective names the run's first command (args.command), where an
// ungrouped trace names each rank's own. Traced replays held every
// command apart once, for that name, and a trace of a training job then
// split its stages into their tensor-parallel groups: minutes and
// gigabytes where the untraced replay took a second.
type pendingReduces struct {
	n     int
	ts    int64
	msg   gen.Msg // the first command's message, owned
	dims  []string
	shape [3][]int64 // owned copies of the tensors' shapes
	line  []int64    // per command
	cmd   []int64    // per command: its number
	at    []int32    // per command: where its slices start in ranks; one more at the end
	ranks []values.Slice
	dimsB []int64 // the slices' sizes and strides
	nd    []int32 // per slice: its dimensions

	// Runs that went together, in the epoch of the partition they were
	// checked in: a training step sends the same few runs again and
	// again, and a run found here with the epoch unchanged needs no check.
	memo     [8]heldRun
	memoNext int

	// scratch of the check
	seen   []int32 // by group: the peer set that last met it, + 1
	lowest []int64 // by position in the run's groups: the group's lowest rank
	pos    []int32 // by group: its position in the run's groups, + 1
	buf    []int64
}

// heldRun is a run that went together: its commands' slices, the groups
// it reached and its peer sets' Comm (the same for every peer set).
type heldRun struct {
	epoch uint64
	at    []int32
	ranks []values.Slice
	dims  []int64
	gs    []groups.GroupID
	comm  Comm
	ok    bool
}

// find returns the remembered run with the pending run's slices, if any.
func (p *pendingReduces) find(epoch uint64) *heldRun {
	for i := range p.memo {
		m := &p.memo[i]
		if m.ok && m.epoch == epoch && slices.Equal(m.at, p.at) && len(m.ranks) == len(p.ranks) {
			same := true
			for k := range m.ranks {
				if !m.ranks[k].Equal(&p.ranks[k]) {
					same = false
					break
				}
			}
			if same {
				return m
			}
		}
	}
	return nil
}

// remember keeps the pending run, which went together over gs with Comm c.
func (p *pendingReduces) remember(epoch uint64, gs []groups.GroupID, c Comm) {
	m := &p.memo[p.memoNext]
	p.memoNext = (p.memoNext + 1) % len(p.memo)
	m.epoch, m.comm, m.ok = epoch, c, true
	m.at = append(m.at[:0], p.at...)
	m.gs = append(m.gs[:0], gs...)
	m.dims = append(m.dims[:0], p.dimsB...)
	m.ranks = append(m.ranks[:0], p.ranks...)
	k := 0
	for i := range m.ranks {
		n := len(m.ranks[i].Sizes)
		m.ranks[i].Sizes = m.dims[k : k+n : k+n]
		m.ranks[i].Strides = m.dims[k+n : k+2*n : k+2*n]
		k += 2 * n
	}
}

// batchOff applies every Reduce when it comes: tests hold runs applied
// together to the commands applied one by one with it.
var batchOff bool

// batchable reports whether m may wait in a run of Reduces.
func (e *Engine) batchable(m *gen.Msg) bool {
	return !batchOff && m.Kind == gen.MsgReduce && e.opt.Grouped && e.opt.Mode.streams()
}

// extends reports whether a Reduce m at ts continues the pending run.
func (p *pendingReduces) extends(ts int64, m *gen.Msg) bool {
	if p.n == 0 || m.Kind != gen.MsgReduce || ts != p.ts {
		return false
	}
	a, b := &p.msg.Reduce, &m.Reduce
	return sameTensor(&a.Result, &b.Result) && sameTensor(&a.LocalTensor, &b.LocalTensor) &&
		a.Stream.Ref == b.Stream.Ref && a.Stream.Idx == b.Stream.Idx &&
		slices.Equal(a.Dims, b.Dims) && a.Reduction == b.Reduction &&
		a.Scatter == b.Scatter && a.Inplace == b.Inplace &&
		a.HasOut == b.HasOut && (!a.HasOut || sameTensor(&a.Out, &b.Out))
}

func sameTensor(a, b *values.Tensor) bool {
	return a.ID == b.ID && a.Idx == b.Idx && a.Storage == b.Storage && a.StorageIdx == b.StorageIdx &&
		a.NBytes == b.NBytes && a.Dtype == b.Dtype && a.CPU == b.CPU && slices.Equal(a.Shape, b.Shape)
}

// hold does the controller's part of Reduce m (step 1 of a command) and
// adds it to the pending run, which it starts when empty.
func (e *Engine) hold(line, ts int64, ranks []values.Slice, m *gen.Msg) {
	e.controllerStep(ts, m)
	p := &e.pend
	if p.n == 0 {
		p.ts = ts
		p.msg.Kind = m.Kind
		r := m.Reduce
		p.dims = append(p.dims[:0], r.Dims...)
		r.Dims = p.dims
		for i, t := range [3]*values.Tensor{&r.Result, &r.LocalTensor, &r.Out} {
			p.shape[i] = append(p.shape[i][:0], t.Shape...)
			t.Shape = p.shape[i]
		}
		p.msg.Reduce = r
		p.line, p.cmd, p.at = p.line[:0], p.cmd[:0], p.at[:0]
		p.ranks, p.dimsB, p.nd = p.ranks[:0], p.dimsB[:0], p.nd[:0]
	}
	p.n++
	p.line = append(p.line, line)
	p.cmd = append(p.cmd, e.cmdID)
	p.at = append(p.at, int32(len(p.ranks)))
	for i := range ranks {
		s := &ranks[i]
		p.ranks = append(p.ranks, values.Slice{Offset: s.Offset})
		p.nd = append(p.nd, int32(len(s.Sizes)))
		p.dimsB = append(p.dimsB, s.Sizes...)
		p.dimsB = append(p.dimsB, s.Strides...)
	}
}

// slicesOf returns pending command i's slices (after seal).
func (p *pendingReduces) slicesOf(i int) []values.Slice {
	return p.ranks[p.at[i]:p.at[i+1]]
}

// seal points the pending slices at their sizes and strides, once every
// command is in and dimsB no longer grows.
func (p *pendingReduces) seal() {
	p.at = append(p.at, int32(len(p.ranks)))
	k := int32(0)
	for i := range p.ranks {
		n := p.nd[i]
		p.ranks[i].Sizes = p.dimsB[k : k+n : k+n]
		p.ranks[i].Strides = p.dimsB[k+n : k+2*n : k+2*n]
		k += 2 * n
	}
}

// flush applies the pending Reduces: together when that is exact, else one
// by one. An error names the line of the command it belongs to.
func (e *Engine) flush() error {
	p := &e.pend
	if p.n == 0 {
		return nil
	}
	line, cmd, ts, cur := e.line, e.cmdID, e.tsNs, e.cur
	defer func() {
		p.n = 0
		e.line, e.cmdID, e.tsNs, e.cur = line, cmd, ts, cur
	}()
	e.tsNs = p.ts
	p.seal()
	m := &p.msg
	if p.n > 1 {
		ok, err := e.runTogether()
		if err != nil {
			return e.lineErr(p.line[0], m, err)
		}
		if ok {
			return nil
		}
	}
	for i := 0; i < p.n; i++ {
		e.line, e.cmdID, e.cur = p.line[i], p.cmd[i], p.slicesOf(i)
		err := e.Reduce(&m.Reduce)
		if err == nil {
			err = e.run()
		}
		if err != nil {
			return e.lineErr(p.line[i], m, err)
		}
	}
	return nil
}

// lineErr wraps an error of a held command, which belongs to its own line,
// not the record being read.
func (e *Engine) lineErr(line int64, m *gen.Msg, err error) error {
	if err == ErrStopped {
		return err
	}
	ce, ok := e.wrap(m, err).(*CommandError)
	if !ok {
		return err
	}
	c := *ce
	c.Line = line
	return &c
}

// runTogether applies the pending Reduces as one collective when that is
// exact (see pendingReduces), and reports whether it did. Before checking,
// it splits the groups the run covers in part, as any of its commands
// would.
func (e *Engine) runTogether() (bool, error) {
	p := &e.pend
	e.cur = p.ranks
	if m := p.find(e.part.Epoch()); m != nil {
		return true, e.together(m.gs, e.opt.Model.ReduceRuntimeNs(&p.msg.Reduce, m.comm))
	}
	gs, err := e.part.Resolve(p.ranks, e.splitF)
	if err != nil {
		return false, nil // one by one, the failing command says so
	}
	gs = slices.Clone(gs) // Resolve's answer lives until its next call
	if n := e.part.Len(); len(p.seen) < n {
		p.seen = append(p.seen, make([]int32, n-len(p.seen))...)
		p.pos = append(p.pos, make([]int32, n-len(p.pos))...)
	}
	for i, g := range gs {
		p.pos[g] = int32(i) + 1
		p.seen[g] = 0
	}
	defer func() {
		for _, g := range gs {
			p.pos[g] = 0
		}
	}()
	p.lowest = p.lowest[:0]
	total := int64(0)
	for _, g := range gs {
		p.lowest = append(p.lowest, e.part.Lowest(g))
		total += e.part.Size(g)
	}
	if cap(p.buf) == 0 {
		p.buf = make([]int64, 0, 256) // EachRanks' chunks, kept between runs
	}
	ok := true
	var count, met int64
	var runtime int64
	var first Comm
	uniform := true // every peer set has the first's Comm
	for i := 0; i < p.n && ok; i++ {
		met = 0
		lowMet := 0
		n0 := count
		for _, s := range p.slicesOf(i) {
			s.EachRanks(p.buf[:0], func(rs []int64) {
				for _, r := range rs {
					count++
					g := e.part.GroupOf(r)
					k := p.pos[g] - 1
					if k < 0 {
						ok = false
						continue
					}
					if p.seen[g] != int32(i)+1 {
						p.seen[g] = int32(i) + 1
						met++
					}
					if i == 0 && r == p.lowest[k] {
						lowMet++
					}
				}
			})
		}
		if met != int64(len(gs)) || i == 0 && lowMet != len(gs) {
			ok = false
			break
		}
		c := e.comm(nil, p.slicesOf(i), nil, false)
		c.Ranks = count - n0
		c.Hosts, c.MaxPerHost = e.placement(p.slicesOf(i))
		// A cost model prices a collective by its message and its Comm:
		// peer sets placed alike (the usual case) are priced once.
		switch {
		case i == 0:
			first, runtime = c, e.opt.Model.ReduceRuntimeNs(&p.msg.Reduce, c)
		case c != first:
			uniform = false
			ok = e.opt.Model.ReduceRuntimeNs(&p.msg.Reduce, c) == runtime
		}
	}
	// Every rank counted once over all the peer sets: they do not overlap.
	if !ok || count != total {
		return false, nil
	}
	if uniform {
		p.remember(e.part.Epoch(), gs, first)
	}
	return true, e.together(gs, runtime)
}

// together applies the pending run as one collective over groups gs.
func (e *Engine) together(gs []groups.GroupID, runtime int64) error {
	p := &e.pend
	e.line, e.cmdID = p.line[0], p.cmd[0]
	e.recv = append(e.recv[:0], gs...)
	e.touch(gs)
	if err := e.reduceOn(e.recv, &p.msg.Reduce, runtime); err != nil {
		return err
	}
	return e.run()
}
