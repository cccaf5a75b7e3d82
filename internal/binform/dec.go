package binform

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf8"

	"github.com/fastsim/fastsim/internal/jsonl"
	"github.com/fastsim/fastsim/internal/values"
)

// Decoder reads values from one record body. Errors are sticky: after the
// first one every read returns a zero value, and Err reports it, so decoders
// check once per record. It holds the string and blob tables of a stream and
// resolves tensor references against a values.Registry.
type Decoder struct {
	buf []byte
	pos int
	err error

	reg       *values.Registry
	strs      []string
	strBytes  int
	blobs     [][]byte
	blobBytes int
	treeOK    []bool // by blob: checked as a tree without tensors, or as a template
	slices    []values.Slice
	sliceOK   []bool // by slice: checked against the world (SliceChecked)
	depth     int
	oddOrders bool // a key order of the record failed Extras' check
	extraKeys bool // a message of the record has extra fields (Extras)

	sc         jsonl.Scanner // checks trees' raw JSON
	tree       values.Tree
	mentioned  []int32 // registry rows the record refers to
	chk        templateChecker
	slotRow    []int32         // by tensor slot: its registry row (-1: free)
	slotTen    []values.Tensor // by slot: its tensor (the registry's row, gathered once)
	rowSlot    []int32         // by registry row: its tensor's slot (-1: none)
	freeSlots  []int32
	lastDef    int64   // the id of the tensor defined last (0 before any)
	absIDs     bool    // version 3: a definition's id is written whole
	blobTail   []int32 // by blob: its entry in tails once read as a definition (-1: not)
	tails      []tail  // definitions' texts read, by blobTail
	tailShapes []int64 // their shapes, back to back
}

// NewDecoder returns a Decoder with empty tables that resolves tensors
// against reg.
func NewDecoder(reg *values.Registry) *Decoder { return &Decoder{reg: reg} }

// Reset empties the tables, for a new stream.
// SetVersion makes d read the stream of binary version v (OldestVersion
// to Version), after Reset.
func (d *Decoder) SetVersion(v uint64) { d.absIDs = v < 4 }

func (d *Decoder) Reset(reg *values.Registry) {
	d.reg = reg
	d.buf, d.pos, d.err, d.depth = nil, 0, nil, 0
	clear(d.strs)
	d.strs = d.strs[:0]
	clear(d.blobs)
	d.blobs = d.blobs[:0]
	d.treeOK = d.treeOK[:0]
	d.strBytes, d.blobBytes = 0, 0
	d.slices = d.slices[:0]
	d.sliceOK = d.sliceOK[:0]
	d.slotRow, d.rowSlot, d.freeSlots, d.lastDef = d.slotRow[:0], d.rowSlot[:0], d.freeSlots[:0], 0
	clear(d.slotTen)
	d.slotTen = d.slotTen[:0]
	d.blobTail, d.tails, d.tailShapes = d.blobTail[:0], d.tails[:0], d.tailShapes[:0]
}

// Registry returns the registry tensors are resolved against.
func (d *Decoder) Registry() *values.Registry { return d.reg }

// Begin starts decoding a record body. The body must stay unchanged until
// the record's values are no longer used unless every string and blob in
// it was interned (blobs that are not interned alias it).
func (d *Decoder) Begin(body []byte) {
	d.buf, d.pos, d.err, d.depth = body, 0, nil, 0
	d.mentioned = d.mentioned[:0]
	d.oddOrders, d.extraKeys = false, false
}

// Err returns the first error of the record, nil if none.
func (d *Decoder) Err() error { return d.err }

// Fail records err, unless an error is already recorded.
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.pos = len(d.buf)
}

// Failf records an *Error wrapping sentinel.
func (d *Decoder) Failf(sentinel error, format string, args ...any) {
	if d.err == nil {
		d.Fail(values.Errorf(sentinel, format, args...))
	}
}

// End checks that the whole body was read.
func (d *Decoder) End() error {
	if d.err == nil && d.pos != len(d.buf) {
		d.Failf(ErrCorrupt, "%d bytes left over at the end of the record", len(d.buf)-d.pos)
	}
	return d.err
}

// Left is the number of bytes not yet read.
func (d *Decoder) Left() int { return len(d.buf) - d.pos }

// Uvarint reads an unsigned varint. The Go compiler does not inline it (a
// call to its slow part makes it too large), so the decoder's hot readers
// (Int, Count, String, blob, SliceAt, Tensor) repeat its one-byte case
// inline: most varints of a record are one byte.
func (d *Decoder) Uvarint() uint64 {
	if d.pos < len(d.buf) {
		if b := d.buf[d.pos]; b < 0x80 {
			d.pos++
			return uint64(b)
		}
	}
	return d.uvarintMore()
}

// uvarintMore reads a varint of 2 or 3 bytes without a loop, else calls
// uvarintLong.
func (d *Decoder) uvarintMore() uint64 {
	if p := d.pos; p >= 0 && p+2 < len(d.buf) {
		b := d.buf[p : p+3 : p+3] // one bounds check for the three bytes
		if b[1] < 0x80 {
			d.pos = p + 2
			return uint64(b[0]&0x7f) | uint64(b[1])<<7
		}
		if b[2] < 0x80 {
			d.pos = p + 3
			return uint64(b[0]&0x7f) | uint64(b[1]&0x7f)<<7 | uint64(b[2])<<14
		}
	}
	return d.uvarintLong()
}

// uvarintLong reads a varint of 4 to 8 bytes without a loop, else calls
// uvarintSlow: tensor ids and idents past 2^20 are varints of four bytes,
// and every record of a long history has some. With 8 bytes in reach
// (the body's capacity: a record's body lies in its block, so its last
// varints have them too) it loads them at once and gathers the 7-bit
// groups in three steps.
func (d *Decoder) uvarintLong() uint64 {
	if p := d.pos; p >= 0 && p+8 <= cap(d.buf) {
		x := binary.LittleEndian.Uint64(d.buf[p : p+8 : p+8])
		if stop := ^x & 0x8080808080808080; stop != 0 {
			last := stop & -stop                       // the high bit of the varint's last byte
			n := (bits.TrailingZeros64(last) + 1) >> 3 // its length in bytes
			if n <= len(d.buf)-p {
				x &= (last - 1) & 0x7f7f7f7f7f7f7f7f
				x = x&0x007f007f007f007f | x>>1&0x3f803f803f803f80
				x = x&0x00003fff00003fff | x>>2&0x0fffc0000fffc000
				x = x&0x000000000fffffff | x>>4&0x00fffffff0000000
				d.pos = p + n
				return x
			}
		}
	}
	return d.uvarintSlow()
}

func (d *Decoder) uvarintSlow() uint64 {
	var v uint64
	var s uint
	for i := 0; i < 10; i++ {
		if d.pos >= len(d.buf) {
			d.Failf(ErrTruncated, "record ends inside a varint")
			return 0
		}
		b := d.buf[d.pos]
		d.pos++
		if b < 0x80 {
			if i == 9 && b > 1 {
				break
			}
			return v | uint64(b)<<s
		}
		v |= uint64(b&0x7f) << s
		s += 7
	}
	d.Failf(ErrVarint, "varint overflows 64 bits")
	return 0
}

// Int reads a signed (zigzag) varint.
func (d *Decoder) Int() int64 {
	var u uint64 // d.Uvarint(), its one-byte case inline
	if p := d.pos; p < len(d.buf) && d.buf[p] < 0x80 {
		u, d.pos = uint64(d.buf[p]), p+1
	} else {
		u = d.uvarintMore()
	}
	return int64(u>>1) ^ -int64(u&1)
}

// Nonneg reads an unsigned varint that must fit in an int64.
func (d *Decoder) Nonneg(what string) int64 {
	u := d.Uvarint()
	if u > 1<<63-1 {
		d.Failf(ErrCorrupt, "%s %d does not fit in 64 bits", what, u)
		return 0
	}
	return int64(u)
}

// Byte reads one byte.
func (d *Decoder) Byte() byte {
	if d.pos >= len(d.buf) {
		d.Failf(ErrTruncated, "record ends early")
		return 0
	}
	b := d.buf[d.pos]
	d.pos++
	return b
}

// Bool reads a boolean byte (0 or 1).
func (d *Decoder) Bool() bool {
	if p := d.pos; p < len(d.buf) && d.buf[p] <= 1 {
		d.pos = p + 1
		return d.buf[p] == 1
	}
	switch d.Byte() {
	case 0:
		return false
	case 1:
		return true
	}
	d.Failf(ErrCorrupt, "boolean byte is not 0 or 1")
	return false
}

// Count reads a count of items that take at least minBytes each, checking it
// against max and against the bytes left in the record.
func (d *Decoder) Count(what string, max, minBytes int) int {
	var u uint64 // d.Uvarint(), its one-byte case inline
	if p := d.pos; p < len(d.buf) && d.buf[p] < 0x80 {
		u, d.pos = uint64(d.buf[p]), p+1
	} else {
		u = d.uvarintMore()
	}
	if u > uint64(max) {
		d.Failf(values.ErrLimit, "%d %s, more than the limit of %d", u, what, max)
		return 0
	}
	// u > Left/minBytes, without a division: once u <= Left (at most
	// MaxRecordBytes) the product cannot overflow.
	if left := uint64(d.Left()); minBytes > 0 && (u > left || u*uint64(minBytes) > left) {
		d.Failf(ErrTruncated, "%d %s but only %d bytes left in the record", u, what, d.Left())
		return 0
	}
	return int(u)
}

// SmallCount is Count's common case, small enough for the compiler to
// inline (Count is not: its errors make it too large): a count of one
// byte, at most max, whose items fit in the bytes left. It returns -1,
// having read nothing, in every other case, where the caller calls Count:
//
//	n := d.SmallCount(max, minBytes)
//	if n < 0 {
//		n = d.Count(what, max, minBytes)
//	}
func (d *Decoder) SmallCount(max, minBytes int) int {
	if p := d.pos; p < len(d.buf) {
		if u := int(d.buf[p]); u < 0x80 && u <= max && u*minBytes < len(d.buf)-p {
			d.pos = p + 1
			return u
		}
	}
	return -1
}

// bytesN reads n bytes (aliasing the body).
func (d *Decoder) bytesN(what string) []byte {
	var n uint64 // d.Uvarint(), its one-byte case inline
	if p := d.pos; p < len(d.buf) && d.buf[p] < 0x80 {
		n, d.pos = uint64(d.buf[p]), p+1
	} else {
		n = d.uvarintMore()
	}
	if n > MaxRecordBytes {
		d.Failf(values.ErrLimit, "%s of %d bytes, more than the limit of %d", what, n, MaxRecordBytes)
		return nil
	}
	if n > uint64(d.Left()) {
		d.Failf(ErrTruncated, "%s of %d bytes but only %d bytes left in the record", what, n, d.Left())
		return nil
	}
	b := d.buf[d.pos : d.pos+int(n) : d.pos+int(n)]
	d.pos += int(n)
	return b
}

// String reads a string reference.
func (d *Decoder) String() string {
	var ref uint64 // d.Uvarint(), its one-byte case inline
	if p := d.pos; p < len(d.buf) && d.buf[p] < 0x80 {
		ref, d.pos = uint64(d.buf[p]), p+1
	} else {
		ref = d.uvarintMore()
	}
	if ref != 0 {
		if ref > uint64(len(d.strs)) {
			if d.err == nil {
				d.Failf(ErrIndex, "string %d out of range (%d strings so far)", ref-1, len(d.strs))
			}
			return ""
		}
		return d.strs[ref-1]
	}
	b := d.bytesN("string")
	if d.err != nil {
		return ""
	}
	if !utf8.Valid(b) {
		d.Failf(ErrCorrupt, "string is not valid UTF-8")
		return ""
	}
	s := string(b)
	if interns(len(s), len(d.strs), d.strBytes) {
		d.strs = append(d.strs, s)
		d.strBytes += len(s)
	}
	return s
}

// Blob reads a reference to raw JSON text. The bytes must not be modified;
// text that does not join the table aliases the record body. The text is
// not checked here: Tree checks a tree's, internal/history a message's
// extra fields.
func (d *Decoder) Blob() []byte {
	b, _ := d.blob()
	return b
}

// blob is Blob, also returning the text's index in the blob table when it
// came from there (-1 otherwise).
func (d *Decoder) blob() ([]byte, int) {
	var ref uint64 // d.Uvarint(), its one-byte case inline
	if p := d.pos; p < len(d.buf) && d.buf[p] < 0x80 {
		ref, d.pos = uint64(d.buf[p]), p+1
	} else {
		ref = d.uvarintMore()
	}
	if ref >= 2 {
		if ref-2 >= uint64(len(d.blobs)) {
			if d.err == nil {
				d.Failf(ErrIndex, "blob %d out of range (%d blobs so far)", ref-2, len(d.blobs))
			}
			return nil, -1
		}
		return d.blobs[ref-2], int(ref - 2)
	}
	b := d.bytesN("JSON text")
	if d.err != nil {
		return nil, -1
	}
	if b == nil {
		b = []byte{}
	}
	if ref == 0 && interns(len(b), len(d.blobs), d.blobBytes) {
		b = append([]byte(nil), b...)
		d.blobs = append(d.blobs, b)
		d.blobBytes += len(b)
		d.treeOK = append(d.treeOK, false)
		d.blobTail = append(d.blobTail, -1)
		return b, len(d.blobs) - 1
	}
	return b, -1
}

// Ints reads a count and integers into dst[:0].
func (d *Decoder) Ints(dst []int64) []int64 {
	dst = dst[:0]
	n := d.SmallCount(MaxRecordBytes, 1)
	if n < 0 {
		n = d.Count("integers", MaxRecordBytes, 1)
	}
	for i := 0; i < n; i++ {
		dst = append(dst, d.Int())
	}
	return dst
}

// Strings reads a count and string references into dst[:0].
func (d *Decoder) Strings(dst []string) []string {
	dst = dst[:0]
	n := d.Count("strings", MaxRecordBytes, 1)
	for i := 0; i < n; i++ {
		dst = append(dst, d.String())
	}
	return dst
}

// Stream reads a stream.
func (d *Decoder) Stream(st *values.Stream) {
	st.Ref = d.Int()
	st.HasName = d.Bool()
	st.Name = ""
	if st.HasName {
		st.Name = d.String()
	}
}

// Slice reads a slice of ranks into sl, reusing its slices. It checks the
// number of dimensions; callers check the ranks against the world.
func (d *Decoder) Slice(sl *values.Slice) { d.SliceAt(sl) }

// SliceAt is Slice, also returning the slice's index in the slice table
// (-1 when it did not join it), for CheckedSlice and SliceChecked.
func (d *Decoder) SliceAt(sl *values.Slice) int {
	sl.Reset()
	var ref uint64 // d.Uvarint(), its one-byte case inline
	if p := d.pos; p < len(d.buf) && d.buf[p] < 0x80 {
		ref, d.pos = uint64(d.buf[p]), p+1
	} else {
		ref = d.uvarintMore()
	}
	if ref != 0 {
		if ref > uint64(len(d.slices)) {
			if d.err == nil {
				d.Failf(ErrIndex, "slice %d out of range (%d slices so far)", ref-1, len(d.slices))
			}
			return -1
		}
		t := &d.slices[ref-1]
		sl.Offset = t.Offset
		// Slices of ranks have a few dimensions: copied in a loop into
		// the room sl has (sl was reset), rather than by memmove.
		if n := len(t.Sizes); n <= cap(sl.Sizes) && n <= cap(sl.Strides) && n == len(t.Strides) {
			sl.Sizes, sl.Strides = sl.Sizes[:n], sl.Strides[:n]
			sz, st, tz, tt := sl.Sizes[:n], sl.Strides[:n], t.Sizes[:n], t.Strides[:n]
			for k := range sz { // the lengths are equal: no bounds checks
				sz[k], st[k] = tz[k], tt[k]
			}
		} else {
			sl.Sizes = append(sl.Sizes, t.Sizes...)
			sl.Strides = append(sl.Strides, t.Strides...)
		}
		return int(ref - 1)
	}
	d.sliceNew(sl)
	if d.err == nil && len(d.slices) < MaxTableEntries {
		d.slices = append(d.slices, values.Slice{Offset: sl.Offset, Sizes: slices.Clone(sl.Sizes), Strides: slices.Clone(sl.Strides)})
		d.sliceOK = append(d.sliceOK, false)
		return len(d.slices) - 1
	}
	return -1
}

// CheckedSlice reports whether the table's slice at (from SliceAt) has been
// marked checked: a check against the stream's world, which depends on the
// slice alone, need not run again.
func (d *Decoder) CheckedSlice(at int) bool { return at >= 0 && d.sliceOK[at] }

// SliceChecked marks the table's slice at (from SliceAt; -1 is ignored) as
// checked.
func (d *Decoder) SliceChecked(at int) {
	if at >= 0 {
		d.sliceOK[at] = true
	}
}

// sliceNew reads a slice written in full.
func (d *Decoder) sliceNew(sl *values.Slice) {
	sl.Offset = d.Int()
	n := d.Count("slice dimensions", values.MaxSliceDims, 2)
	for k := 0; k < n; k++ {
		size := d.Int()
		if size < 0 {
			d.Failf(ErrCorrupt, "negative size %d in dimension %d", size, k)
		}
		sl.Sizes = append(sl.Sizes, size)
		sl.Strides = append(sl.Strides, d.Int())
	}
}

// Tensor reads a tensor reference (the slot of a tensor defined earlier in
// the stream and not deleted since) into t.
func (d *Decoder) Tensor(t *values.Tensor) {
	var u uint64 // d.Uvarint(), its one-byte case inline
	if p := d.pos; p < len(d.buf) && d.buf[p] < 0x80 {
		u, d.pos = uint64(d.buf[p]), p+1
	} else {
		u = d.uvarintMore()
	}
	if s := u - 1; s < uint64(len(d.slotRow)) {
		if row := d.slotRow[s]; row >= 0 {
			// A live row's fields do not change (only a deletion, which
			// frees the slot, lets the row be defined again), so the copy
			// gathered at definition is the registry's tensor.
			*t = d.slotTen[s]
			d.mentioned = append(d.mentioned, row)
			return
		}
	}
	*t = values.Tensor{}
	if d.err != nil {
		return
	}
	// Never defined, or deleted since: in JSON lines this would be a first
	// mention without its fields, which is an error.
	if u == 0 {
		id := d.Int()
		if d.err == nil {
			d.Failf(ErrCorrupt, "tensor %d is referred to but not defined (or deleted since)", id)
		}
		return
	}
	d.Failf(ErrCorrupt, "tensor slot %d is referred to but holds no tensor (never defined, or deleted since)", u-1)
}

// Deleted frees the slot of registry row row (-1 is ignored): the
// tensor it holds is deleted after this record (a DeleteRefs names it).
// Rows must be given in the order the DeleteRefs name their ids, as the
// encoder frees slots.
func (d *Decoder) Deleted(row int32) {
	if row < 0 || int(row) >= len(d.rowSlot) {
		return
	}
	if s := d.rowSlot[row]; s >= 0 && d.slotRow[s] == row {
		d.slotRow[s], d.rowSlot[row] = -1, -1
		d.freeSlots = append(d.freeSlots, s)
	}
}

// Mentioned lists the registry rows of the tensors the record refers to,
// so a reader can check that the tensors a record defines are ones it
// mentions (as a first mention in JSON lines is).
func (d *Decoder) Mentioned() []int32 { return d.mentioned }

// Tensors reads a count and tensor references into dst[:0].
func (d *Decoder) Tensors(dst []values.Tensor) []values.Tensor {
	dst = dst[:0]
	n := d.SmallCount(MaxRecordBytes, 1)
	if n < 0 {
		n = d.Count("tensors", MaxRecordBytes, 1)
	}
	for i := 0; i < n; i++ {
		dst = append(dst, values.Tensor{})
		d.Tensor(&dst[i])
	}
	return dst
}

// Tree reads a tree into t, reusing its leaves.
func (d *Decoder) Tree(t *values.Tree) {
	t.Reset()
	n := d.SmallCount(MaxRecordBytes, 2)
	if n < 0 {
		n = d.Count("tree tensors", MaxRecordBytes, 2)
	}
	if n == 0 {
		var at int
		t.Raw, at = d.blob()
		if d.err != nil {
			return
		}
		// A tree without tensors ("[]", "{}", constants) is checked once:
		// its check depends on its text alone, which the blob table keeps.
		if at >= 0 && d.treeOK[at] {
			return
		}
		d.checkTree(t)
		if at >= 0 && d.err == nil {
			d.treeOK[at] = true
		}
		return
	}
	switch mode := d.Byte(); mode {
	case treeText:
		t.Raw, _ = d.blob()
		for i := 0; i < n; i++ {
			t.Leaves = append(t.Leaves, values.Tensor{})
			d.Tensor(&t.Leaves[i])
		}
		if d.err == nil {
			d.checkTree(t)
		}
	case treeTemplate:
		tmpl, at := d.blob()
		t.Forms = t.Forms[:0]
		t.Leaves = slices.Grow(t.Leaves, n)[:n] // Tensor sets every field
		for i := 0; i < n; i++ {
			d.Tensor(&t.Leaves[i])
			var f byte // d.Byte(), inline
			if p := d.pos; p < len(d.buf) {
				f, d.pos = d.buf[p], p+1
			} else {
				f = d.Byte()
			}
			if f > leafFull {
				d.Failf(ErrCorrupt, "tree: tensor %d has form %d, not one of 0..%d", i, f, leafFull)
			}
			t.Forms = append(t.Forms, f)
		}
		if d.err != nil {
			return
		}
		// A template is checked once: whichever tensors fill it, the
		// text is then what a JSON-lines reader accepts (templateChecker).
		if at < 0 || !d.treeOK[at] {
			if err := d.chk.check(tmpl, n); err != nil {
				d.Fail(err)
				return
			}
			if at >= 0 {
				d.treeOK[at] = true
			}
		}
		// The text is rendered only when asked for (Tree.AppendText):
		// a replay reads the leaves, and the template with the leaves'
		// forms is the text.
		t.Raw, t.Tmpl = nil, tmpl
		if t.Tmpl == nil {
			t.Tmpl = []byte{} // blob returns nil only on an error
		}
	default:
		if d.err == nil {
			d.Failf(ErrCorrupt, "tree: form %d is neither text (%d) nor a template (%d)", mode, treeText, treeTemplate)
		}
	}
}

// checkTree holds a tree to what a JSON-lines reader accepts and finds in
// it: its raw text is valid JSON (no key repeated in an object), and the
// tensor objects in it are the tree's leaves, in order, each agreeing with
// the registry. Without this check a damaged tree would replay one way
// from the binary form and another (or not at all) once converted.
func (d *Decoder) checkTree(t *values.Tree) {
	if err := d.sc.Reset(t.Raw); err != nil {
		d.Failf(ErrCorrupt, "tree: %v", err)
		return
	}
	if err := jsonl.DecodeTree(&d.sc, d.reg, &d.tree); err != nil {
		d.Failf(ErrCorrupt, "tree: %v", err)
		return
	}
	if err := d.sc.End(); err != nil {
		d.Failf(ErrCorrupt, "tree: %v", err)
		return
	}
	if len(d.tree.Leaves) != len(t.Leaves) {
		d.Failf(ErrCorrupt, "tree: its JSON holds %d tensors, its list %d", len(d.tree.Leaves), len(t.Leaves))
		return
	}
	for i := range t.Leaves {
		if d.tree.Leaves[i].ID != t.Leaves[i].ID {
			d.Failf(ErrCorrupt, "tree: tensor %d of its JSON is %d, of its list %d", i, d.tree.Leaves[i].ID, t.Leaves[i].ID)
			return
		}
	}
}

// Define reads the definition of a tensor first mentioned, adds it to the
// registry and gives it a slot, as Encoder.Define does; later references
// name the slot. The slot tables are as large as the most tensors alive at
// once, not as the history. A definition's text (the tensor's fields) is
// read once per blob; shape is scratch for one that is not in the blob
// table, returned for reuse.
func (d *Decoder) Define(shape []int64) []int64 {
	id := int64(uint64(d.lastDef) + uint64(d.Int()))
	if d.absIDs {
		id = int64(uint64(id) - uint64(d.lastDef))
	}
	d.lastDef = id
	storage := int64(uint64(id) + uint64(d.Int()))
	text, at := d.blob()
	if d.err != nil {
		return shape
	}
	var tl *tail
	var dims []int64 // the shape: in tailShapes, or in the caller's shape
	scratch := false // dims is the caller's shape, reused by the next definition
	if at >= 0 && d.blobTail[at] >= 0 {
		tl = &d.tails[d.blobTail[at]]
		dims = d.tailShapes[tl.shapeAt : tl.shapeAt+tl.shapeN : tl.shapeAt+tl.shapeN]
	} else {
		t, err := d.chk.parseTail(text)
		if err != nil {
			d.Failf(ErrCorrupt, "tensor %d: its definition: %v", id, err)
			return shape
		}
		nt := tail{nbytes: t.NBytes, dtype: t.Dtype, shapeAt: int32(len(d.tailShapes)), shapeN: int32(len(t.Shape)), cpu: t.CPU}
		if at >= 0 {
			d.tailShapes = append(d.tailShapes, t.Shape...)
			d.blobTail[at] = int32(len(d.tails))
			d.tails = append(d.tails, nt)
			tl = &d.tails[len(d.tails)-1]
			dims = d.tailShapes[tl.shapeAt : tl.shapeAt+tl.shapeN : tl.shapeAt+tl.shapeN]
		} else {
			// Not in the table (it is full): the shape is used at once.
			shape = append(shape[:0], t.Shape...)
			dims = shape
			tl, scratch = &nt, true
		}
	}
	row, err := d.reg.DefineRow(id, storage, tl.nbytes, tl.dtype, dims, tl.cpu)
	if err != nil {
		d.Fail(err)
		return shape
	}
	// The tensor's slot, as the encoder gives it (Encoder.Define).
	var s int32
	if n := len(d.freeSlots); n > 0 {
		s = d.freeSlots[n-1]
		d.freeSlots = d.freeSlots[:n-1]
	} else {
		s = int32(len(d.slotRow))
		d.slotRow = append(d.slotRow, -1)
		d.slotTen = append(d.slotTen, values.Tensor{})
	}
	d.slotRow[s] = row
	if scratch {
		d.slotTen[s] = d.reg.At(row)
	} else {
		// The registry's tensor at row (Registry.At), built from what the
		// definition gave rather than gathered back from the registry's
		// columns; its shape is the definition text's, which the
		// decoder keeps as long as the stream and equals the registry's
		// copy.
		d.slotTen[s] = values.Tensor{ID: id, Idx: row, Storage: storage, StorageIdx: d.reg.StorageIdxOf(row), NBytes: tl.nbytes, Dtype: tl.dtype, Shape: dims, CPU: tl.cpu}
	}
	for int(row) >= len(d.rowSlot) {
		d.rowSlot = append(d.rowSlot, -1)
	}
	d.rowSlot[row] = s
	return shape
}

// Extras reads a message's key order and extra fields into ex (which the
// caller has reset), for a message with nfields declared fields.
func (d *Decoder) Extras(ex *values.Extras, nfields int) {
	n := d.SmallCount(MaxExtras+values.MaxFields, 1) // n bytes are left
	if n < 0 {
		n = d.Count("keys", MaxExtras+values.MaxFields, 1)
	}
	order := d.buf[d.pos : d.pos+n]
	var seen uint64 // declared fields named so far
	zeros, twice := 0, false
	for _, it := range order {
		switch {
		case int(it) > nfields:
			d.Failf(ErrCorrupt, "key order names field %d of %d", it, nfields)
			return
		case it == 0:
			zeros++
		case it >= 64:
			twice = true // beyond seen's bits: leave it to the reader's check
		case seen&(1<<it) != 0:
			twice = true
		default:
			seen |= 1 << it
		}
	}
	ex.Order = append(ex.Order, order...)
	d.pos += n
	n = d.SmallCount(MaxExtras, 2)
	if n < 0 {
		n = d.Count("extra fields", MaxExtras, 2)
	}
	if twice || zeros != n {
		d.oddOrders = true
	}
	if n > 0 {
		d.extraKeys = true
	}
	for i := 0; i < n; i++ {
		k := d.String()
		v := d.Blob()
		if d.err != nil {
			return
		}
		ex.Add(k, v)
	}
}

// OrdersValid reports whether every key order the record held (Extras)
// names each declared field at most once and lists every extra field: a
// reader need not check them again, and checks them, with its own
// messages, when this is false.
func (d *Decoder) OrdersValid() bool { return !d.oddOrders }

// ExtraKeys reports whether a message of the record (a sub-command too)
// held extra fields (Extras): with none and valid orders, a reader has
// nothing of the messages' extras left to check.
func (d *Decoder) ExtraKeys() bool { return d.extraKeys }

// Enter notes that a nested message begins; it fails past MaxDepth.
func (d *Decoder) Enter() bool {
	if d.depth >= MaxDepth {
		d.Failf(values.ErrLimit, "messages nest deeper than %d", MaxDepth)
		return false
	}
	d.depth++
	return true
}

// Leave notes that a nested message ends.
func (d *Decoder) Leave() { d.depth-- }
