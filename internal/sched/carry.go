package sched

import (
	"math/bits"
	"slices"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/groups"
	"github.com/fastsim/fastsim/internal/values"
)

// A forward pass applied as one step leaves behind the tensors it saves
// for its backward, which are next named by that backward, tens of
// microbatches later: defining each in the registry and giving it a
// tensor row, a storage row and page entries, then finding and freeing
// all of that again, touches memory that has gone cold in between. So the
// engine carries what such a pass leaves behind as one unit instead (a
// carryUnit: the pass's effect, its group, its start and its ids), each
// storage with its tensors a class of the unit, defined nowhere:
//
//   - a pass applied as a step that is given every tensor of a class and
//     that, as recorded, found them as the unit leaves them (the same
//     rows, storage and allocation, checked from the two effects, not from
//     the tables) and deleted them all, consumes the class whole: nothing
//     of it is defined or freed;
//   - a DeleteRefs that names a class whole, on its group, whose rows are
//     all on the stream its storage was allocated on and unused, releases
//     the storage there as deleting them would (deleteCarried): a replay
//     indexes a DeleteRefs without defining what it names
//     (Registry.PauseMiss);
//   - anything else that names one of a class's ids, as a tensor or a
//     storage, defines the class first, exactly as applying the pass
//     would have defined it (the registry asks the engine about every id
//     it does not know: Registry.SetMiss), and so does a split of the
//     unit's group, which copies its tables.
//
// Nothing else reads a group's tensors and storages but through the
// registry's dense indexes, so a class defined late is found as it would
// have been found defined early: no command named its ids meanwhile (a
// naming would have defined it), and its rows and storage change only
// when a command names them. The dense indexes it gets differ, which
// changes no result.

// carryOff, when set (by a test), makes passes applied as steps define
// what they leave behind at once, as before carrying.
var carryOff bool

// idxCarried marks, in applyPass's input indexes, an input carried in a
// unit's class.
const idxCarried int32 = -2

// maxCarryClasses bounds a unit's classes (one bit each in a mask).
const maxCarryClasses = 64

// carryClass is one storage a pass made and leaves behind, with its
// tensors.
type carryClass struct {
	stor    int32   // its storage in passEffect.newStors
	tensors []int32 // its tensors in passEffect.tensors
	rows    []int32 // their rows in passEffect.newRows
}

// carryInfo is what an effect needs to leave a unit behind and to
// consume classes of one.
type carryInfo struct {
	classes     []carryClass
	nTensors    int      // the tensors of all classes
	tensorClass []int8   // by passEffect.tensors: its class, or -1
	storClass   []int8   // by passEffect.newStors: its class, or -1
	rowClass    []int8   // by passEffect.newRows: its class, or -1
	codeTensor  []int32  // by made code: its tensor in passEffect.tensors, or -1
	codeClasses []uint64 // by made code: the classes with a tensor or storage of that id
	// As a consumer, by input (those of fx.chains): its rows in
	// passEffect.rows, its storage in passEffect.stors, the input that
	// storage is coded by, and whether the pass deleted it, left none of
	// its rows and made none on other streams.
	rowFrom, rowTo []int32
	stor           []int32
	storIn         []int32
	consumed       []bool
	// memo is consumable's last answer for each input, which the
	// effects alone decide (never set while effects are compared:
	// CheckPasses applies no pass as a step).
	memo []carryMemo
}

// carryUnit is what a pass applied as a step left behind and carries
// undefined.
type carryUnit struct {
	fx     *passEffect
	g      groups.GroupID
	base   int64 // the time the pass's effect is relative to
	idBase int64 // its ids are idBase .. idEnd-1
	idEnd  int64
	mask   uint64 // its classes still carried
	// The classes of it the pass being applied has a use of, valid when
	// useGen is passState.useGen: a new class is appended without a scan
	// of the uses.
	useGen  int64
	useMask uint64
}

// carryInfoOf computes fx's carry information for run p (its recording).
func carryInfoOf(fx *passEffect, p *Pass) *carryInfo {
	ci := &carryInfo{
		tensorClass: make([]int8, len(fx.tensors)),
		storClass:   make([]int8, len(fx.newStors)),
		rowClass:    make([]int8, len(fx.newRows)),
		codeTensor:  make([]int32, p.Made),
		codeClasses: make([]uint64, p.Made),
	}
	for i := range ci.tensorClass {
		ci.tensorClass[i] = -1
	}
	for i := range ci.storClass {
		ci.storClass[i] = -1
	}
	for i := range ci.rowClass {
		ci.rowClass[i] = -1
	}
	for i := range ci.codeTensor {
		ci.codeTensor[i] = -1
	}
	for i := range fx.tensors {
		ci.codeTensor[fx.tensors[i].t] = int32(i)
	}
	for j := range fx.newStors {
		ms := &fx.newStors[j]
		if ms.st < 0 || len(ci.classes) == maxCarryClasses {
			continue
		}
		cl := int8(len(ci.classes))
		c := carryClass{stor: int32(j)}
		for i := range fx.tensors {
			if fx.tensors[i].st == ms.st {
				c.tensors = append(c.tensors, int32(i))
				ci.tensorClass[i] = cl
				ci.codeClasses[fx.tensors[i].t] |= 1 << cl
			}
		}
		for r := range fx.newRows {
			if nr := &fx.newRows[r]; nr.t >= 0 && ci.tensorClass[nr.via] == cl {
				c.rows = append(c.rows, int32(r))
				ci.rowClass[r] = cl
			}
		}
		ci.storClass[j] = cl
		ci.codeClasses[ms.st] |= 1 << cl
		ci.classes = append(ci.classes, c)
		ci.nTensors += len(c.tensors)
	}
	// As a consumer.
	n := len(p.Ins)
	ci.rowFrom, ci.rowTo = make([]int32, n), make([]int32, n)
	ci.stor, ci.storIn, ci.consumed, ci.memo = make([]int32, n), make([]int32, n), make([]bool, n), make([]carryMemo, n)
	for k := range n {
		ci.stor[k], ci.storIn[k] = -1, int32(firstStorage(p, k))
	}
	for i, rs := range fx.rows {
		k := -1 - rs.in
		if ci.rowTo[k] == 0 {
			ci.rowFrom[k] = int32(i)
		}
		ci.rowTo[k] = int32(i + 1)
	}
	for j, ss := range fx.stors {
		k := int32(-1 - ss.in)
		for i := range n {
			if ci.storIn[i] == k {
				ci.stor[i] = int32(j)
			}
		}
	}
	deleted := make([]bool, n)
	for _, c := range fx.deletes {
		deleted[-1-c] = true
	}
	newRows := make([]bool, n)
	for _, nr := range fx.newRows {
		if nr.t < 0 {
			newRows[-1-nr.t] = true
		}
	}
	for _, k := range fx.chains {
		ok := deleted[k] && !newRows[k] && ci.stor[k] >= 0 && ci.rowTo[k] > ci.rowFrom[k]
		for i := ci.rowFrom[k]; ok && i < ci.rowTo[k]; i++ {
			ok = fx.after[i].gone
		}
		if j := ci.stor[k]; ok {
			ok = fx.stors[j].exists && !fx.storsAft[j].exists
		}
		ci.consumed[k] = ok
	}
	return ci
}

// carries reports whether applying fx to run p leaves a unit behind.
func (e *Engine) carries(fx *passEffect, p *Pass) bool {
	if carryOff || fx.carry == nil || len(fx.carry.classes) == 0 || p.Made <= 0 || p.Base > p.Base+p.Made {
		return false
	}
	u := e.pass.units
	return len(u) == 0 || p.Base >= u[len(u)-1].idEnd
}

// carriedOf returns the index in e.pass.units of the unit whose carried
// classes hold tensor id (as a tensor), and which class, or -1.
func (e *Engine) carriedOf(id int64) (int, uint64) {
	ui := e.unitOf(id)
	if ui < 0 {
		return -1, 0
	}
	u := &e.pass.units[ui]
	ti := u.fx.carry.codeTensor[id-u.idBase]
	if ti < 0 {
		return -1, 0
	}
	cl := u.fx.carry.tensorClass[ti]
	if cl < 0 || u.mask&(1<<cl) == 0 {
		return -1, 0
	}
	return ui, 1 << cl
}

// unitOf returns the index in e.pass.units of the unit whose ids hold id
// and that carries something, or -1.
func (e *Engine) unitOf(id int64) int {
	if id < e.pass.unitLo || id >= e.pass.unitHi {
		return -1
	}
	// A pass's inputs are mostly of one unit: the last one found first.
	h, n := e.pass.head, len(e.pass.units)
	if l := e.pass.lastUnit; l >= h && l < n {
		if u := &e.pass.units[l]; id >= u.idBase && id < u.idEnd {
			if u.mask == 0 {
				return -1
			}
			return l
		}
	}
	bs := e.pass.unitBase[h:n]
	lo, hi := 0, len(bs)
	for hi-lo > 1 {
		m := (lo + hi) / 2
		if bs[m] <= id {
			lo = m
		} else {
			hi = m
		}
	}
	u := &e.pass.units[h+lo]
	if id < u.idBase || id >= u.idEnd || u.mask == 0 {
		return -1
	}
	e.pass.lastUnit = h + lo
	return h + lo
}

// carryMiss is the registry's miss function: it defines the classes
// holding id as a tensor or a storage, if any are carried.
func (e *Engine) carryMiss(id int64) bool {
	if e.pass.defining {
		return false
	}
	ui := e.unitOf(id)
	if ui < 0 {
		return false
	}
	u := &e.pass.units[ui]
	m := u.fx.carry.codeClasses[id-u.idBase] & u.mask
	if m == 0 {
		return false
	}
	e.defineCarried(u, m)
	if len(e.pass.consume) == 0 {
		// Not while a pass holds units by index (passInputs to
		// consumeCarried).
		e.trimUnits()
	}
	return true
}

// defineCarried defines the classes m of unit u as applying its pass
// would have: the registry's tensors, then the storage rows and the
// tensor rows, in the order applyEffect makes them.
func (e *Engine) defineCarried(u *carryUnit, m uint64) {
	m &= u.mask
	if m == 0 {
		return
	}
	if e.pass.rec != nil {
		// A pass being recorded names a carried tensor its inputs do not
		// list: its rows appear and may go away within the recording,
		// where the check that live rows account for every memory event
		// cannot see them, so the recording is declined.
		e.pass.rec.carried = true
	}
	e.pass.defining = true
	defer func() { e.pass.defining = false }()
	u.mask &^= m
	fx, ci := u.fx, u.fx.carry
	e.reg.HoldOutside(-classTensors(ci, m))
	g := e.gs[u.g]
	made := e.pass.dmade[:0]
	for range fx.tensors {
		made = append(made, -1, -1)
	}
	for cls := m; cls != 0; cls &= cls - 1 {
		c := &ci.classes[bits.TrailingZeros64(cls)]
		for _, ti := range c.tensors {
			mt := &fx.tensors[ti]
			st := u.idBase + int64(mt.st)
			i, si, err := e.reg.Ensure(u.idBase+int64(mt.t), st, mt.nbytes, mt.dtype, mt.shape, mt.cpu)
			if err != nil {
				// Unreachable: the ids are the unit's, undefined, and
				// the registry counted them against its limit
				// (HoldOutside) until just now.
				panic(err)
			}
			made[2*ti], made[2*ti+1] = i, si
		}
	}
	e.pass.dmade = made
	e.reserveRows(e.reg.Len())
	sto := &g.storages
	for cls := m; cls != 0; cls &= cls - 1 {
		c := &ci.classes[bits.TrailingZeros64(cls)]
		ms := &fx.newStors[c.stor]
		si := made[2*ms.via+1]
		sr := sto.Alloc()
		g.storageAt.set(&g.pages, si, int32(sr)+1)
		sto.Count[sr], sto.Bytes[sr], sto.AllocStream[sr], sto.AllocNs[sr] = ms.count, ms.bytes, ms.stream, ms.allocNs+u.base
	}
	tt := &g.tensors
	for r := range fx.newRows {
		cl := ci.rowClass[r]
		if cl < 0 || m&(1<<cl) == 0 {
			continue
		}
		nr := &fx.newRows[r]
		t := values.Tensor{ID: u.idBase + int64(nr.t), Idx: made[2*nr.via], Storage: u.idBase + int64(nr.st), StorageIdx: made[2*nr.via+1], NBytes: nr.nbytes}
		row := e.newRow(g, &t)
		tt.Owner[row], tt.Refs[row], tt.Flags[row] = nr.owner, nr.refs, nr.flags
		g.link(row)
	}
	// The rows made are counted now: the miss may come between commands.
	for _, idx := range g.born {
		e.tensorRows[idx]++
	}
	g.born = g.born[:0]
	e.pass.defined++
}

// defineGroup defines every class carried for group gi (before a split
// copies its tables).
func (e *Engine) defineGroup(gi groups.GroupID) {
	for i := e.pass.head; i < len(e.pass.units); i++ {
		if u := &e.pass.units[i]; u.g == gi && u.mask != 0 {
			e.defineCarried(u, u.mask)
		}
	}
}

// defineAll defines every class carried.
func (e *Engine) defineAll() {
	for i := e.pass.head; i < len(e.pass.units); i++ {
		if u := &e.pass.units[i]; u.mask != 0 {
			e.defineCarried(u, u.mask)
		}
	}
}

// trimUnits drops the units at the front that carry nothing, and
// compacts the list when most of it is dropped.
func (e *Engine) trimUnits() {
	ps := &e.pass
	for ps.head < len(ps.units) && ps.units[ps.head].mask == 0 {
		ps.units[ps.head] = carryUnit{}
		ps.head++
	}
	if ps.head == len(ps.units) {
		ps.units, ps.unitBase, ps.head = ps.units[:0], ps.unitBase[:0], 0
		ps.unitLo, ps.unitHi = 0, 0
		return
	}
	ps.unitLo = ps.unitBase[ps.head]
	if ps.head >= 1024 && ps.head >= len(ps.units)/2 {
		e.compactUnits()
	}
}

// compactUnits moves the units of units[head:] that still carry
// something to the front, in order (unitBase stays sorted). No unit may
// be held by index (e.pass.consume empty); lastUnit is checked against
// the id it is asked about, so a stale one only misses.
func (e *Engine) compactUnits() {
	ps := &e.pass
	n := 0
	for i := ps.head; i < len(ps.units); i++ {
		if ps.units[i].mask != 0 {
			ps.units[n], ps.unitBase[n] = ps.units[i], ps.unitBase[i]
			n++
		}
	}
	clear(ps.units[n:])
	ps.units, ps.unitBase, ps.head = ps.units[:n], ps.unitBase[:n], 0
	if n > 0 {
		ps.unitLo = ps.unitBase[0]
	}
}

// addUnit appends unit u. A full list is compacted instead of grown
// when at most half its units still carry something: the oldest unit
// (a first stage's forward, carried to its backward) keeps the front from
// being trimmed while the units behind it are spent, and the list grew
// to some 18,000 units, 1.2 MB, in the 1T-parameter prediction, grown by
// a quarter at a time (bench/RESULTS.md, "Fewer slots, copies and page
// faults").
func (e *Engine) addUnit(u carryUnit) {
	ps := &e.pass
	if len(ps.units) == cap(ps.units) && len(ps.consume) == 0 {
		live := 0
		for i := ps.head; i < len(ps.units); i++ {
			if ps.units[i].mask != 0 {
				live++
			}
		}
		if live <= len(ps.units)/2 {
			e.compactUnits()
		} else {
			ps.units = slices.Grow(ps.units, len(ps.units))
			ps.unitBase = slices.Grow(ps.unitBase, len(ps.unitBase))
		}
	}
	ps.units = append(ps.units, u)
	ps.unitBase = append(ps.unitBase, u.idBase)
}

// passInputs fills e.pass.idx and sidx with the dense indexes of p's
// inputs, idxCarried for those carried in classes that fx, starting at
// base, consumes whole (e.pass.consume lists them); a class carried that
// it does not consume whole is defined first, and its inputs found as
// always. False if an input is not known.
func (e *Engine) passInputs(fx *passEffect, p *Pass, base int64) bool {
	e.pass.consume = e.pass.consume[:0]
	if len(e.pass.units) == e.pass.head {
		return e.inputIndexes(fx, p)
	}
	nIns := len(p.Ins)
	idx, sidx := slices.Grow(e.pass.idx[:0], nIns)[:nIns], slices.Grow(e.pass.sidx[:0], nIns)[:nIns]
	cs := e.pass.consume
	ok := true
	last := 0 // the use the last carried input was of: the next is mostly of it too
	e.pass.useGen++
	gen := e.pass.useGen
	for k := range p.Ins {
		i, si := int32(-1), int32(-1)
		if id := p.Ins[k].ID; id != 0 {
			// A carried id is not in the registry: the units are asked
			// first, which saves the registry a miss.
			if ui, m := e.carriedOf(id); ui >= 0 {
				j := last
				if j >= len(cs) || cs[j].unit != int32(ui) || cs[j].class != m {
					u := &e.pass.units[ui]
					if u.useGen != gen {
						u.useGen, u.useMask = gen, 0
					}
					switch {
					case u.useMask&m == 0:
						u.useMask |= m
						j = len(cs)
						cs = append(cs, carryUse{unit: int32(ui), class: m})
					case j+1 < len(cs) && cs[j+1].unit == int32(ui) && cs[j+1].class == m:
						// A pass's inputs meet its classes in order, mostly.
						j++
					default:
						j = 0
						for cs[j].unit != int32(ui) || cs[j].class != m {
							j++
						}
					}
					last = j
				}
				// The carried input's use, coded below idxCarried.
				i, si = idxCarried, int32(-1-j)
			} else if i = e.knownRow(fx, k, id, true); i >= 0 {
				si = e.reg.StorageIdxOf(i)
			} else {
				ok = false
			}
		}
		idx[k], sidx[k] = i, si
	}
	e.pass.idx, e.pass.sidx = idx, sidx
	if !ok || len(cs) == 0 {
		e.pass.consume = cs
		return ok
	}
	// Each carried input found as its unit leaves it and deleted counts
	// for its class; a class is consumed when all its tensors count.
	for _, k := range fx.chains {
		if idx[k] != idxCarried {
			continue
		}
		j := -1 - sidx[k]
		if carryOff || !e.consumable(fx, p, &e.pass.units[cs[j].unit], k, base) {
			cs[j].bad = true
		}
		cs[j].n++
		cs[j].in = k
	}
	n := 0
	redo := false
	for _, c := range cs {
		u := &e.pass.units[c.unit]
		cl := &u.fx.carry.classes[bits.TrailingZeros64(c.class)]
		if c.bad || int(c.n) != len(cl.tensors) || idx[e.classStorageIn(fx, p, u, c)] != idxCarried {
			e.defineCarried(u, c.class)
			redo = true
			continue
		}
		cs[n] = c
		n++
	}
	e.pass.consume = cs[:n]
	// The inputs of the classes defined, found as always; the others'
	// storage indexes marked carried too.
	for k := range p.Ins {
		if idx[k] != idxCarried {
			continue
		}
		sidx[k] = idxCarried
		if !redo {
			continue
		}
		if i := e.reg.Known(p.Ins[k].ID); i >= 0 {
			idx[k], sidx[k] = i, e.reg.StorageIdxOf(i)
		}
	}
	return true
}

// carryUse is a class of a unit a pass is given tensors of.
type carryUse struct {
	unit  int32
	class uint64 // its bit
	n     int32  // its tensors given, found as the unit leaves them
	in    int32  // the last input counted in n
	bad   bool   // one of them is not
}

// classStorageIn is firstCarriedStorage for use c. An input counted in
// c.n and found as its unit leaves it has the class's storage
// (consumable checks), and every input of one storage codes it by the
// same first input (storIn): that one input answers without a scan.
func (e *Engine) classStorageIn(fx *passEffect, p *Pass, u *carryUnit, c carryUse) int {
	if c.n == 0 || c.bad {
		return e.firstCarriedStorage(fx, p, u, c.class)
	}
	return int(fx.carry.storIn[c.in])
}

// firstCarriedStorage is the input that codes the storage of class c of
// unit u in run p (0 when no input names it: then the class is not
// consumed, as that input is not carried).
func (e *Engine) firstCarriedStorage(fx *passEffect, p *Pass, u *carryUnit, c uint64) int {
	ci := u.fx.carry
	st := u.idBase + int64(u.fx.newStors[ci.classes[bits.TrailingZeros64(c)].stor].st)
	for k := range p.Ins {
		if p.Ins[k].Storage == st && p.Ins[k].ID != 0 {
			return int(fx.carry.storIn[k])
		}
	}
	return 0
}

// consumable reports whether input k of run p, carried in unit u, is
// found as u leaves it by fx applied at base, and deleted by it: its
// rows, its storage (the class's, with the same count, bytes and stream)
// and the release-after-allocation check alike (applyPass).
func (e *Engine) consumable(fx *passEffect, p *Pass, u *carryUnit, k int32, base int64) bool {
	bi, F := fx.carry, u.fx
	// The unit must be the group's: another group has no rows of it.
	if bi == nil || u.g != fx.g || len(bi.consumed) != len(p.Ins) || !bi.consumed[k] {
		return false
	}
	ci := F.carry
	ti := ci.codeTensor[p.Ins[k].ID-u.idBase]
	cl := ci.tensorClass[ti]
	ms := &F.newStors[ci.classes[cl].stor]
	ss := &fx.stors[bi.stor[k]]
	if p.Ins[k].Storage != u.idBase+int64(ms.st) {
		return false
	}
	if rel := u.base + ms.allocNs - base; rel >= fx.minRel && rel != ss.allocNs {
		return false
	}
	// The rest depends on the two effects only: worked out once for each
	// (the producer vouches that a pass's inputs come in the same order).
	// The unit's effect is named by its carry information, which the
	// effects of other groups alike share with it (shareBody).
	if m := &bi.memo[k]; m.ci == ci && m.t == ti {
		return m.ok
	}
	ok := sameCarried(fx, k, F, ti, cl, ms, ss)
	bi.memo[k] = carryMemo{ci: ci, t: ti, ok: ok}
	return ok
}

// carryMemo is what consumable last worked out for an input: whether
// tensor t of the unit effect whose carry information is ci is found by
// it as recorded.
type carryMemo struct {
	ci *carryInfo
	t  int32
	ok bool
}

// sameCarried reports whether input k of fx found the rows and storage
// that tensor ti (of class cl, storage ms) of unit effect F leaves.
func sameCarried(fx *passEffect, k int32, F *passEffect, ti int32, cl int8, ms *madeStor, ss *storState) bool {
	bi, ci := fx.carry, F.carry
	fr := ci.classes[cl].rows
	b := fx.rows[bi.rowFrom[k]:bi.rowTo[k]]
	cnt := 0
	for _, r := range fr {
		if F.newRows[r].via == int(ti) {
			cnt++
		}
	}
	if cnt != len(b) {
		return false
	}
	for _, rs := range b {
		found := false
		for _, r := range fr {
			nr := &F.newRows[r]
			if nr.via == int(ti) && nr.owner == rs.owner && nr.refs == rs.refs && nr.flags == rs.flags {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return ss.count == ms.count && ss.bytes == ms.bytes && ss.stream == ms.stream
}

// rowsCarried is how many rows input k of fx's run has in the unit that
// carries it.
func (fx *passEffect) rowsCarried(k int32) int {
	return int(fx.carry.rowTo[k] - fx.carry.rowFrom[k])
}

// consumeCarried drops the classes a pass applied as a step consumed.
func (e *Engine) consumeCarried() {
	if len(e.pass.consume) == 0 {
		return
	}
	for _, c := range e.pass.consume {
		u := &e.pass.units[c.unit]
		u.mask &^= c.class
		e.reg.HoldOutside(-classTensors(u.fx.carry, c.class))
	}
	e.pass.consume = e.pass.consume[:0]
	e.pass.carried++
	e.trimUnits()
}

// PassUnits returns how many passes applied as steps consumed carried
// tensors whole, how many times carried tensors were deleted by a
// DeleteRefs without being defined, and how many times they were defined
// because something else named them (or their group split).
func (e *Engine) PassUnits() (consumed, released, defined int64) {
	return e.pass.carried, e.pass.released, e.pass.defined
}

// CarriedTensors returns how many tensors the units carry undefined,
// counted over the units, and how many the registry holds against its
// limit for them (values.Registry.HoldOutside): the two are equal.
func (e *Engine) CarriedTensors() (counted, held int) {
	for i := e.pass.head; i < len(e.pass.units); i++ {
		u := &e.pass.units[i]
		counted += classTensors(u.fx.carry, u.mask)
	}
	if e.reg != nil {
		held = e.reg.Outside()
	}
	return counted, held
}

// deleteCarried deletes, for DeleteRefs m on groups gs, the tensors it
// names that are carried undefined (a replay indexes a DeleteRefs without
// defining them: their RefsIdx is -1). A class named whole, held by its
// group (one of gs) on one stream with no task using it, is deleted as
// deleteIn would delete it: its storage released at the stream's now,
// after the same checks. Any other is defined, deleted from the registry
// as indexing the DeleteRefs would have, and its index given to deleteIn.
func (e *Engine) deleteCarried(m *gen.DeleteRefs, gs []groups.GroupID) error {
	use := e.pass.delUse[:0]
	for k, idx := range m.RefsIdx {
		if idx >= 0 {
			continue
		}
		id := m.Refs[k]
		if i := e.reg.Known(id); i >= 0 {
			// Defined since it was indexed (a split of its group).
			m.RefsIdx[k] = i
			e.reg.Delete(id)
			continue
		}
		ui, c := e.carriedOf(id)
		if ui < 0 {
			continue
		}
		j := 0
		for j < len(use) && (use[j].unit != int32(ui) || use[j].class != c) {
			j++
		}
		if j == len(use) {
			use = append(use, carryUse{unit: int32(ui), class: c})
		}
		use[j].n++
	}
	e.pass.delUse = use
	if len(use) == 0 {
		return nil
	}
	for _, c := range use {
		u := &e.pass.units[c.unit]
		if !e.releaseCarried(m, gs, u, c) {
			e.defineCarried(u, c.class)
			for k, idx := range m.RefsIdx {
				if idx < 0 {
					if i := e.reg.Known(m.Refs[k]); i >= 0 {
						m.RefsIdx[k] = i
						e.reg.Delete(m.Refs[k])
					}
				}
			}
		}
	}
	e.trimUnits()
	return nil
}

// releaseCarried deletes class c of unit u, named by DeleteRefs m on
// groups gs, as deleteIn would, if that is simple: m names each of its
// tensors once, its group is among gs, and its rows are all on the stream
// its storage was allocated on, unused, produced and not borrowed, so the
// last of them releases the storage at the stream's now, which passes
// releaseStorage's checks. False (and nothing changed) otherwise.
func (e *Engine) releaseCarried(m *gen.DeleteRefs, gs []groups.GroupID, u *carryUnit, c carryUse) bool {
	if e.pass.rec != nil {
		// A pass being recorded must see the release as rows and a
		// storage going away: its check that live rows account for every
		// memory event then declines it, as without carrying. Released
		// here, the freed bytes would become part of its effect and be
		// freed again at every later run.
		return false
	}
	fx, ci := u.fx, u.fx.carry
	cl := &ci.classes[bits.TrailingZeros64(c.class)]
	if int(c.n) != len(cl.tensors) || !slices.Contains(gs, u.g) {
		return false
	}
	// Each tensor named once.
	for _, ti := range cl.tensors {
		id, n := u.idBase+int64(fx.tensors[ti].t), 0
		for _, r := range m.Refs {
			if r == id {
				n++
			}
		}
		if n != 1 {
			return false
		}
	}
	ms := &fx.newStors[cl.stor]
	if int(ms.count) != len(cl.rows) || ms.stream < 0 {
		return false
	}
	for _, r := range cl.rows {
		nr := &fx.newRows[r]
		if nr.owner != ms.stream || nr.refs != 0 || nr.flags&(gen.TensorFlagsPending|gen.TensorFlagsCPU|gen.TensorFlagsBorrowed) != 0 || nr.flags&gen.TensorFlagsInStorage == 0 {
			return false
		}
	}
	g := e.gs[u.g]
	if int(ms.stream) >= len(g.streams) {
		return false
	}
	st := &g.streams[ms.stream]
	ns := max(st.nowNs, e.nowNs)
	if ms.bytes > st.usage || ms.bytes < 0 || u.base+ms.allocNs >= ns {
		return false
	}
	if ms.bytes > 0 {
		st.usage -= ms.bytes
		st.addMem(memEvent{ns, -ms.bytes})
	}
	u.mask &^= c.class
	e.reg.HoldOutside(-classTensors(ci, c.class))
	e.pass.released++
	return true
}

// classTensors returns how many tensors the classes m of ci hold.
func classTensors(ci *carryInfo, m uint64) int {
	n := 0
	for ; m != 0; m &= m - 1 {
		n += len(ci.classes[bits.TrailingZeros64(m)].tensors)
	}
	return n
}
