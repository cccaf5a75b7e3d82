package values

import (
	"slices"
	"strconv"
)

// Registry resolves tensor references. It holds one dense row per tensor id,
// in order of first mention, with columns for the fields of that mention.
// Later mentions are filled in from the row; a later mention that repeats a
// field with a different value is an ErrConflict.
//
// It is also where every id of a history gets its one dense index, at
// decode: a tensor's is its row (Tensor.Idx), a storage's lives while a
// tensor row names it (Tensor.StorageIdx), a stream's forever (StreamIdx),
// a borrow's until ReleaseBorrow, a name's (NameIdx) forever. The engine indexes its tables by them
// and decides when a deleted tensor's row or a borrow's index is reused.
type Registry struct {
	ids idIndex // tensor id -> row

	id      []int64
	storage []int64
	storIdx []int32 // the storage's dense index
	nbytes  []int64
	dtype   []string
	cpu     []bool
	line    []int64 // line of the first mention
	shapeAt []int32 // offset of the shape in shapes
	shapeN  []int32 // rank of the shape
	shapes  []int64 // every shape, back to back

	shapeMax []int32 // room for dimensions at shapeAt (a reused row keeps it)

	free      []int32 // freed rows, reused by Define
	state     []uint8 // by row: rowLive, rowDeleted or rowFree
	deleted   []int32 // rows deleted since TakeDeleted
	deferFree bool
	fresh     []int32 // rows defined since ClearFresh

	curLine int64
	m       Mention // the scratch mention (Mention)

	stor      pool             // storage ids, held by the tensor rows naming them
	bor       pool             // borrow ids
	streams   idIndex          // stream refs
	streamRef []int64          // by stream index: its ref
	names     map[string]int32 // names (function paths) -> dense index
	// nameCache holds recent names by length (NameIdx).
	nameCache [64]nameEntry

	// miss, when set (SetMiss), is asked about an id of a tensor or a
	// storage the registry does not know, before it answers so.
	miss    func(id int64) bool
	missOff bool // PauseMiss
	// outside counts tensors the engine holds undefined and may define
	// later (HoldOutside), against MaxTensors.
	outside int
}

// SetMiss makes the registry call fn with every tensor id it is asked
// about and does not know, and every storage id a new tensor names that
// no tensor names yet, before it answers; fn returns true if it defined
// the id meanwhile (the registry then looks again). The engine defines
// there the tensors it carries undefined (the saved tensors of a pass
// applied as one step, internal/sched's carry.go), so that what the
// registry answers is what it would have answered had they been defined
// all along. fn may define tensors with Ensure; it is asked about their
// ids and storages then too, and must answer false. SetMiss(nil) ends
// it.
func (r *Registry) SetMiss(fn func(id int64) bool) { r.miss = fn }

// PauseMiss(true) makes the registry answer without asking the miss
// function, until PauseMiss(false): a replay indexes a DeleteRefs so,
// and the engine deletes the tensors it carries undefined itself.
func (r *Registry) PauseMiss(on bool) { r.missOff = on }

// Known is TensorIdx without asking the miss function: -1 for an id the
// registry does not know now.
func (r *Registry) Known(id int64) int32 {
	if i, ok := r.ids.find(id); ok {
		return i
	}
	return -1
}

// IsRow reports whether row idx is tensor id's live row now, which is
// what the registry finds for id then (a live row's id resolves to it):
// a caller that remembers the row an id resolved to before checks it
// so, without finding the id.
func (r *Registry) IsRow(id int64, idx int32) bool {
	return idx >= 0 && int(idx) < len(r.id) && r.id[idx] == id && r.stateOf(idx) == rowLive
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// Reset empties the registry, keeping its capacity. Tensors handed out
// before Reset must not be used after it (their shapes are overwritten).
func (r *Registry) Reset() {
	r.ids.reset()
	r.stor.reset()
	r.bor.reset()
	r.streams.reset()
	r.streamRef = r.streamRef[:0]
	clear(r.names)
	r.nameCache = [len(r.nameCache)]nameEntry{}
	r.storIdx = r.storIdx[:0]
	r.id, r.storage, r.nbytes, r.dtype = r.id[:0], r.storage[:0], r.nbytes[:0], r.dtype[:0]
	r.cpu, r.line, r.shapeAt, r.shapeN = r.cpu[:0], r.line[:0], r.shapeAt[:0], r.shapeN[:0]
	r.shapeMax = r.shapeMax[:0]
	// Shapes handed out before Reset alias r.shapes and become invalid.
	r.shapes = r.shapes[:0]
	r.free, r.state, r.deleted, r.fresh = r.free[:0], r.state[:0], r.deleted[:0], r.fresh[:0]
	r.curLine = 0
	// The engine that asked about unknown ids answered for the old
	// contents; it sets its function again if it carries on.
	r.miss, r.missOff, r.outside = nil, false, 0
}

// HoldOutside counts n more tensors (fewer, for n < 0) that the engine
// holds undefined against MaxTensors: a definition that would pass the
// limit with them is refused with the limit's error, so that defining
// them later never can be.
func (r *Registry) HoldOutside(n int) { r.outside += n }

// Outside returns the count HoldOutside keeps.
func (r *Registry) Outside() int { return r.outside }

// SetLine tells the registry the line being decoded, so that conflicts can
// name the line of a tensor's first mention.
func (r *Registry) SetLine(line int64) { r.curLine = line }

// Len is the number of distinct tensors seen.
func (r *Registry) Len() int { return len(r.id) }

// At returns the tensor with dense index idx (0 <= idx < Len).
func (r *Registry) At(idx int32) Tensor {
	at, n := int(r.shapeAt[idx]), int(r.shapeN[idx])
	return Tensor{
		ID:         r.id[idx],
		Idx:        idx,
		Storage:    r.storage[idx],
		StorageIdx: r.storIdx[idx],
		NBytes:     r.nbytes[idx],
		Dtype:      r.dtype[idx],
		Shape:      r.shapes[at : at+n : at+n],
		CPU:        r.cpu[idx],
	}
}

// Lookup returns the tensor with ref id id, if it has been mentioned.
func (r *Registry) Lookup(id int64) (Tensor, bool) {
	i, ok := r.find(id)
	if !ok {
		return Tensor{}, false
	}
	return r.At(i), true
}

// Which fields a Mention gave (Mention.Has).
const (
	HasStorage = 1 << iota
	HasNBytes
	HasDtype
	HasShape
	HasDevice
	HasTensor
)

// Mention holds the fields of one mention of a tensor as written (a TENSOR
// object), before Resolve fills in what it leaves out.
type Mention struct {
	Has     uint8 // which fields were given: Has* bits
	ID      int64
	Storage int64
	NBytes  int64
	Dtype   []byte
	Shape   []int64
	CPU     bool
}

// Interner returns one string for equal byte sequences, so that a dtype
// is held once (a JSON Scanner is one).
type Interner interface {
	Intern(b []byte) string
}

// Mention returns the registry's one scratch Mention, emptied with the
// capacity of its Dtype and Shape kept, so decoding a mention allocates
// nothing in steady state. It is valid until the next call.
func (r *Registry) Mention() *Mention {
	r.m = Mention{Dtype: r.m.Dtype[:0], Shape: r.m.Shape[:0]}
	return &r.m
}

// Resolve resolves mention m into t: a known id is filled in from its row
// (a field that disagrees with the first mention is an ErrConflict); an
// unknown id is defined, which needs every field (ErrMissing otherwise).
// in interns the dtype of a first mention.
func (r *Registry) Resolve(m *Mention, in Interner, t *Tensor) error {
	if i, ok := r.find(m.ID); ok {
		if err := r.agree(i, m); err != nil {
			return err
		}
		*t = r.At(i)
		return nil
	}
	// A first mention gives every field (HISTORY.md, TENSOR): a default
	// taken here would make a later, complete mention disagree with it.
	if m.Has&(HasStorage|HasNBytes|HasDtype|HasShape|HasDevice) == 0 {
		// A bare reference: most likely to a tensor deleted before it.
		return errorf(ErrMissing, "tensor %d: not known here (never defined, or deleted before this use); a first mention gives storage, nbytes, dtype, shape and device", m.ID)
	}
	if miss := missingField(m.Has); miss != "" {
		return errorf(ErrMissing, "tensor %d: its first mention lacks %q (a first mention gives storage, nbytes, dtype, shape and device)", m.ID, miss)
	}
	st := m.ID
	if m.Has&HasStorage != 0 {
		st = m.Storage
	}
	dt := ""
	if m.Has&HasDtype != 0 {
		dt = in.Intern(m.Dtype)
	}
	var err error
	*t, err = r.Define(m.ID, st, m.NBytes, dt, m.Shape, m.CPU)
	return err
}

// missingField names the first field a mention with fields has lacks, or
// returns "".
func missingField(has uint8) string {
	for _, f := range [...]struct {
		bit  uint8
		name string
	}{{HasStorage, "storage"}, {HasNBytes, "nbytes"}, {HasDtype, "dtype"}, {HasShape, "shape"}, {HasDevice, "device"}} {
		if has&f.bit == 0 {
			return f.name
		}
	}
	return ""
}

func (r *Registry) agree(i int32, m *Mention) error {
	var field, now, first string
	switch {
	case m.Has&HasStorage != 0 && m.Storage != r.storage[i]:
		field, now, first = "storage", strconv.FormatInt(m.Storage, 10), strconv.FormatInt(r.storage[i], 10)
	case m.Has&HasNBytes != 0 && m.NBytes != r.nbytes[i]:
		field, now, first = "nbytes", strconv.FormatInt(m.NBytes, 10), strconv.FormatInt(r.nbytes[i], 10)
	case m.Has&HasDtype != 0 && string(m.Dtype) != r.dtype[i]:
		field, now, first = "dtype", strconv.Quote(string(m.Dtype)), strconv.Quote(r.dtype[i])
	case m.Has&HasShape != 0 && !slices.Equal(m.Shape, r.shapes[r.shapeAt[i]:r.shapeAt[i]+r.shapeN[i]]):
		field, now, first = "shape", formatInts(m.Shape), formatInts(r.shapes[r.shapeAt[i]:r.shapeAt[i]+r.shapeN[i]])
	case m.Has&HasDevice != 0 && m.CPU != r.cpu[i]:
		field, now, first = "device", device(m.CPU), device(r.cpu[i])
	default:
		return nil
	}
	where := "its first mention"
	if r.line[i] > 0 {
		where += " (line " + strconv.FormatInt(r.line[i], 10) + ")"
	}
	return errorf(ErrConflict, "tensor %d: %s is %s here but %s in %s", m.ID, field, now, first, where)
}

func device(cpu bool) string {
	if cpu {
		return `"cpu"`
	}
	return `"cuda"`
}

func formatInts(v []int64) string {
	b := []byte{'['}
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, x, 10)
	}
	return string(append(b, ']'))
}

// Ensure gives the indexes of tensor id: its row and storage index if it
// has one (the other fields are not compared), else those of a new row
// defined with the fields given, as Define does. It is Define for a
// producer whose every mention carries every field, without building the
// Tensor.
func (r *Registry) Ensure(id, storage, nbytes int64, dtype string, shape []int64, cpu bool) (idx, storageIdx int32, err error) {
	if i, ok := r.find(id); ok {
		return i, r.storIdx[i], nil
	}
	i, err := r.define(id, storage, nbytes, dtype, shape, cpu)
	if err != nil {
		return 0, 0, err
	}
	return i, r.storIdx[i], nil
}

// Define adds a tensor given with all its fields, as a first mention does,
// and returns it. Defining an id twice is an ErrConflict; shape is copied.
func (r *Registry) Define(id, storage, nbytes int64, dtype string, shape []int64, cpu bool) (Tensor, error) {
	i, err := r.DefineRow(id, storage, nbytes, dtype, shape, cpu)
	if err != nil {
		return Tensor{}, err
	}
	return r.At(i), nil
}

// DefineRow is Define returning the new tensor's row only, for a decoder
// that has no use for the whole Tensor (At builds it from the row).
func (r *Registry) DefineRow(id, storage, nbytes int64, dtype string, shape []int64, cpu bool) (int32, error) {
	if i, ok := r.find(id); ok {
		where := ""
		if r.line[i] > 0 {
			where = " (line " + strconv.FormatInt(r.line[i], 10) + ")"
		}
		return 0, errorf(ErrConflict, "tensor %d is defined again; first defined%s", id, where)
	}
	return r.define(id, storage, nbytes, dtype, shape, cpu)
}

// define adds tensor id, which has no row, and returns its row.
func (r *Registry) define(id, storage, nbytes int64, dtype string, shape []int64, cpu bool) (int32, error) {
	if r.miss != nil && !r.missOff && storage != id {
		// A new view of a storage the engine carries undefined: the
		// storage's tensors are defined first (its id itself was asked
		// about by find).
		if _, ok := r.stor.ids.find(storage); !ok {
			r.miss(storage)
		}
	}
	if len(r.id)+r.outside >= MaxTensors {
		return 0, errorf(ErrLimit, "more than %d distinct tensors", MaxTensors)
	}
	if nbytes < 0 {
		return 0, errorf(ErrRange, "tensor %d: negative size %d", id, nbytes)
	}
	if len(shape) > MaxShapeDims {
		return 0, errorf(ErrLimit, "tensor %d: %d dimensions, more than the limit of %d", id, len(shape), MaxShapeDims)
	}
	for k, d := range shape {
		if d < 0 {
			// The hardware model would price a product of it as of a
			// positive size.
			return 0, errorf(ErrRange, "tensor %d: negative size %d in dimension %d of its shape", id, d, k)
		}
	}
	if len(r.shapes)+len(shape) > 1<<31-1 {
		return 0, errorf(ErrLimit, "shapes hold more than 2^31 dimensions in all")
	}
	if n := len(r.free); n > 0 {
		// Reuse a forgotten tensor's row; its shape's place too when the
		// new shape fits (shapes of one program rarely change rank).
		i := r.free[n-1]
		r.free = r.free[:n-1]
		r.state[i] = rowLive
		r.fresh = append(r.fresh, i)
		r.insert(id, i)
		r.id[i], r.storage[i], r.nbytes[i], r.dtype[i], r.cpu[i], r.line[i] = id, storage, nbytes, dtype, cpu, r.curLine
		r.storIdx[i] = r.storageRef(storage)
		if len(shape) > int(r.shapeMax[i]) {
			r.shapeAt[i], r.shapeMax[i] = int32(len(r.shapes)), int32(len(shape))
			r.shapes = append(r.shapes, shape...)
		} else {
			copy(r.shapes[r.shapeAt[i]:], shape)
		}
		r.shapeN[i] = int32(len(shape))
		return i, nil
	}
	i := int32(len(r.id))
	r.fresh = append(r.fresh, i)
	r.insert(id, i)
	r.id = append(r.id, id)
	r.storage = append(r.storage, storage)
	r.storIdx = append(r.storIdx, r.storageRef(storage))
	r.nbytes = append(r.nbytes, nbytes)
	r.dtype = append(r.dtype, dtype)
	r.cpu = append(r.cpu, cpu)
	r.line = append(r.line, r.curLine)
	r.shapeAt = append(r.shapeAt, int32(len(r.shapes)))
	r.shapeN = append(r.shapeN, int32(len(shape)))
	r.shapeMax = append(r.shapeMax, int32(len(shape)))
	r.shapes = append(r.shapes, shape...)
	return i, nil
}

// find returns the dense index of tensor id, asking the miss function
// (SetMiss) about an id it does not know.
func (r *Registry) find(id int64) (int32, bool) {
	i, ok := r.ids.find(id)
	if !ok && r.miss != nil && !r.missOff && r.miss(id) {
		i, ok = r.ids.find(id)
	}
	return i, ok
}

// insert records that tensor id has dense index i.
func (r *Registry) insert(id int64, i int32) { r.ids.insert(id, i, r.id) }
