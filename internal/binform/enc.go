package binform

import (
	"bytes"
	"encoding/binary"

	"github.com/fastsim/fastsim/internal/values"
)

// Encoder appends the binary encoding of values to Buf. It holds the string
// and blob tables of one stream: create one per stream (or Reset it).
type Encoder struct {
	// Buf is the encoding so far; callers take it and truncate it.
	Buf []byte

	strs      map[string]uint32
	slices    map[string]uint32 // encoded slice -> index
	strBytes  int
	blobs     map[string]uint32
	blobCount int
	blobBytes int
	seq       []uint8

	// tensor slots (Define, Deleted)
	live      map[int64]uint32 // id -> slot of the tensors alive
	freeSlots []uint32
	slots     uint32 // slots handed out
	lastDef   int64  // the id of the tensor defined last (0 before any)

	// trees
	chk   templateChecker
	spans [][2]int
	tmpl  []byte
	forms []byte
	leaf  []byte
	text  []byte // a tree's text rendered from its template (Tree.Tmpl)
}

// NewEncoder returns an Encoder with empty tables.
func NewEncoder() *Encoder {
	return &Encoder{strs: make(map[string]uint32), blobs: make(map[string]uint32), slices: make(map[string]uint32), live: make(map[int64]uint32)}
}

// Reset empties the tables and Buf, for a new stream.
func (e *Encoder) Reset() {
	e.Buf = e.Buf[:0]
	clear(e.strs)
	clear(e.blobs)
	clear(e.slices)
	clear(e.live)
	e.freeSlots, e.slots, e.lastDef = e.freeSlots[:0], 0, 0
	e.strBytes, e.blobCount, e.blobBytes = 0, 0, 0
}

// Uvarint appends an unsigned varint.
func (e *Encoder) Uvarint(v uint64) { e.Buf = binary.AppendUvarint(e.Buf, v) }

// Int appends a signed integer (zigzag varint).
func (e *Encoder) Int(v int64) { e.Buf = binary.AppendVarint(e.Buf, v) }

// Bool appends a boolean as one byte.
func (e *Encoder) Bool(v bool) {
	if v {
		e.Buf = append(e.Buf, 1)
	} else {
		e.Buf = append(e.Buf, 0)
	}
}

// Byte appends one byte.
func (e *Encoder) Byte(b byte) { e.Buf = append(e.Buf, b) }

// String appends a string reference.
func (e *Encoder) String(s string) {
	if i, ok := e.strs[s]; ok {
		e.Uvarint(uint64(i) + 1)
		return
	}
	e.Buf = append(e.Buf, 0)
	e.Uvarint(uint64(len(s)))
	e.Buf = append(e.Buf, s...)
	if interns(len(s), len(e.strs), e.strBytes) {
		e.strs[s] = uint32(len(e.strs))
		e.strBytes += len(s)
	}
}

// Blob appends a reference to raw JSON text that is likely to repeat.
func (e *Encoder) Blob(b []byte) { e.blob(b, true) }

// blob appends a reference to raw JSON text: 0 and the text when it is new
// and joins the table, 1 and the text when it is new and does not (unique
// text: a tree holding tensors, whose ids rarely repeat), 2+index when it is
// in the table.
func (e *Encoder) blob(b []byte, share bool) {
	if i, ok := e.blobs[string(b)]; ok {
		e.Uvarint(uint64(i) + 2)
		return
	}
	share = share && interns(len(b), e.blobCount, e.blobBytes)
	if share {
		e.Buf = append(e.Buf, 0)
	} else {
		e.Buf = append(e.Buf, 1)
	}
	e.Uvarint(uint64(len(b)))
	e.Buf = append(e.Buf, b...)
	if share {
		e.blobs[string(b)] = uint32(e.blobCount)
		e.blobCount++
		e.blobBytes += len(b)
	}
}

// Ints appends a count and the integers.
func (e *Encoder) Ints(v []int64) {
	e.Uvarint(uint64(len(v)))
	for _, x := range v {
		e.Int(x)
	}
}

// Strings appends a count and the string references.
func (e *Encoder) Strings(v []string) {
	e.Uvarint(uint64(len(v)))
	for _, s := range v {
		e.String(s)
	}
}

// Stream appends a stream: its ref, whether a name follows, the name.
func (e *Encoder) Stream(st *values.Stream) {
	e.Int(st.Ref)
	e.Bool(st.HasName)
	if st.HasName {
		e.String(st.Name)
	}
}

// Slice appends a reference to a slice of ranks: 1+index into the slice
// table, or 0 and the slice (offset, dimensions, then size and stride of
// each), which then joins the table while it holds fewer than
// MaxTableEntries slices.
func (e *Encoder) Slice(sl *values.Slice) {
	at := len(e.Buf)
	e.Int(sl.Offset)
	n := min(len(sl.Sizes), len(sl.Strides))
	e.Uvarint(uint64(n))
	for k := 0; k < n; k++ {
		e.Int(sl.Sizes[k])
		e.Int(sl.Strides[k])
	}
	if i, ok := e.slices[string(e.Buf[at:])]; ok {
		e.Buf = binary.AppendUvarint(e.Buf[:at], uint64(i)+1)
		return
	}
	if len(e.slices) < MaxTableEntries {
		e.slices[string(e.Buf[at:])] = uint32(len(e.slices))
	}
	e.Buf = append(e.Buf, 0)
	copy(e.Buf[at+1:], e.Buf[at:])
	e.Buf[at] = 0
}

// Tensor appends a tensor reference: 1 + the slot of its tensor (see
// Define), or 0 and its id when it has none (a reader refuses it).
func (e *Encoder) Tensor(t *values.Tensor) {
	if s, ok := e.live[t.ID]; ok {
		e.Uvarint(uint64(s) + 1)
		return
	}
	e.Uvarint(0)
	e.Int(t.ID)
}

// Tensors appends a count and the tensor references.
func (e *Encoder) Tensors(ts []values.Tensor) {
	e.Uvarint(uint64(len(ts)))
	for i := range ts {
		e.Tensor(&ts[i])
	}
}

// Tree appends a tree: the number of its leaves, then its text (shared)
// when it has none; else a template (shared) and each leaf's reference and
// form when its tensor objects are written as jsonl.Writer writes them,
// or its text and leaf references when they are not.
func (e *Encoder) Tree(t *values.Tree) {
	n := len(t.Leaves)
	e.Uvarint(uint64(n))
	raw := t.Raw
	if t.Tmpl != nil {
		e.text = t.AppendText(e.text[:0])
		raw = e.text
	}
	if n == 0 {
		e.blob(raw, true)
		return
	}
	if e.template(t, raw) {
		e.Byte(treeTemplate)
		e.blob(e.tmpl, true)
		for i := range t.Leaves {
			e.Tensor(&t.Leaves[i])
			e.Byte(e.forms[i])
		}
		return
	}
	e.Byte(treeText)
	e.blob(raw, false)
	for i := range t.Leaves {
		e.Tensor(&t.Leaves[i])
	}
}

// template makes e.tmpl and e.forms from t, whose text is raw, and reports
// whether they are usable: every tensor object of the text is one of its
// leaves in a form appendLeaf writes, and the template passes the check a
// reader makes.
func (e *Encoder) template(t *values.Tree, raw []byte) bool {
	var ok bool
	e.spans, ok = leafSpans(&e.chk.sc, raw, e.spans[:0])
	if !ok || len(e.spans) != len(t.Leaves) {
		return false
	}
	e.tmpl, e.forms = e.tmpl[:0], e.forms[:0]
	at := 0
	for i, sp := range e.spans {
		obj := raw[sp[0]:sp[1]]
		f := byte(leafShort)
		e.leaf = appendLeaf(e.leaf[:0], &t.Leaves[i], leafShort)
		if !bytes.Equal(obj, e.leaf) {
			f = leafFull
			e.leaf = appendLeaf(e.leaf[:0], &t.Leaves[i], leafFull)
			if !bytes.Equal(obj, e.leaf) {
				return false
			}
		}
		e.forms = append(e.forms, f)
		e.tmpl = append(e.tmpl, raw[at:sp[0]]...)
		e.tmpl = append(e.tmpl, 0)
		at = sp[1]
	}
	e.tmpl = append(e.tmpl, raw[at:]...)
	if _, known := e.blobs[string(e.tmpl)]; known {
		return true // checked when it joined the table
	}
	return e.chk.check(e.tmpl, len(t.Leaves)) == nil
}

// Define appends the definition of a tensor first mentioned (id, storage
// as a difference from id, and the rest of its fields as the text that ends
// its object in full: a shared blob, since tensors of one shape and dtype
// are many) and gives it a slot: the most recently freed one (Deleted),
// else the next unused. A reader gives it the same slot, so references
// name the slot and a reader resolves them without looking the id up.
func (e *Encoder) Define(t *values.Tensor) {
	e.Int(int64(uint64(t.ID) - uint64(e.lastDef)))
	e.lastDef = t.ID
	e.Int(int64(uint64(t.Storage) - uint64(t.ID)))
	e.leaf = appendTail(e.leaf[:0], t)
	e.blob(e.leaf, true)
	var s uint32
	if n := len(e.freeSlots); n > 0 {
		s = e.freeSlots[n-1]
		e.freeSlots = e.freeSlots[:n-1]
	} else {
		s = e.slots
		e.slots++
	}
	e.live[t.ID] = s
}

// Deleted frees the slot of tensor id, after the record whose DeleteRefs
// names it (in the order the DeleteRefs name them); unknown ids are
// ignored.
func (e *Encoder) Deleted(id int64) {
	if s, ok := e.live[id]; ok {
		delete(e.live, id)
		e.freeSlots = append(e.freeSlots, s)
	}
}

// Extras appends a message's extra fields and key order, for a message
// whose present declared fields are mask out of nfields: the key order
// (a count of 0 when canonical) and the extra fields (key, raw value).
func (e *Encoder) Extras(ex *values.Extras, mask uint64, nfields int) {
	e.seq = ex.Seq(e.seq[:0], mask, nfields)
	// An order listing a field given empty (not in mask) is written even
	// when canonical: it is the only record that the field was given.
	if values.Canonical(e.seq) && ex.Given(nfields)&^mask == 0 {
		e.Uvarint(0)
	} else {
		e.Uvarint(uint64(len(e.seq)))
		e.Buf = append(e.Buf, e.seq...)
	}
	e.Uvarint(uint64(len(ex.Keys)))
	for i, k := range ex.Keys {
		e.String(k)
		e.Blob(ex.Vals[i])
	}
}

// HasExtras reports whether a message with these extras and present fields
// needs its extras written (extra fields, or keys out of spec order).
func (e *Encoder) HasExtras(ex *values.Extras, mask uint64, nfields int) bool {
	if len(ex.Keys) > 0 {
		return true
	}
	if len(ex.Order) == 0 {
		return false
	}
	if ex.Given(nfields)&^mask != 0 {
		return true // a field given empty
	}
	e.seq = ex.Seq(e.seq[:0], mask, nfields)
	return !values.Canonical(e.seq)
}
