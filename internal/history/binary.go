package history

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/binform"
	"github.com/fastsim/fastsim/internal/values"
)

// binReader is the state of a Reader reading the binary form. Its line
// numbers are record numbers: the header is 1, the first record 2.
type binReader struct {
	on    bool
	ended bool
	dec   *binform.Decoder
	body  []byte // the current block's records, checked
	at    int    // where the next record starts in body
	shape []int64
	// lastDelta is the last record's ts less the one before it (wrapping):
	// a record gives the change of that difference.
	lastDelta uint64
	absTs     bool // version 3: a record gives its ts less the last one's
}

// Record flags (the varint after a record's kind byte).
const (
	binFlagExtras = 1 << iota // record extras follow the record
	binFlagsAll   = binFlagExtras
)

// ErrBinary wraps every error about corrupt binary input; the binform
// sentinels (binform.ErrTruncated, ...) are wrapped too.
var ErrBinary = errors.New("corrupt binary history")

// binErr wraps an error of binary input in ErrBinary.
func binErr(err error) error { return wrap(ErrBinary, "%v", err) }

// readErr turns an error reading the binary stream into one that says
// where the data ended.
func (r *Reader) readErr(err error, what string) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return binErr(values.Errorf(binform.ErrTruncated, "the binary history is truncated: it ends inside %s", what))
	}
	if r.zstd || r.s2 {
		return compErr(err, r.s2)
	}
	return wrap(ErrRead, "%v: %v", ErrRead, err)
}

// readUvarint reads a varint from the stream.
func (r *Reader) readUvarint(what string) (uint64, error) {
	v, err := binary.ReadUvarint(r.lines)
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return 0, r.readErr(err, what)
		}
		if errors.Is(err, ErrZstd) || errors.Is(err, ErrS2) || !isOverflow(err) {
			return 0, r.readErr(err, what)
		}
		return 0, binErr(values.Errorf(binform.ErrVarint, "bad varint in %s: %v", what, err))
	}
	return v, nil
}

func isOverflow(err error) bool {
	return err != nil && err.Error() == "binary: varint overflows a 64-bit integer"
}

// readBody reads n bytes into r.bin.body, growing it at most 1 MiB ahead of
// the data actually read, so a corrupt length cannot make it allocate much
// more than the input holds.
func (r *Reader) readBody(n int, what string) ([]byte, error) {
	buf := r.bin.body[:0]
	for len(buf) < n {
		chunk := n - len(buf)
		if free := cap(buf) - len(buf); chunk > free {
			chunk = min(chunk, max(free, 1<<20))
			buf = slices.Grow(buf, chunk)
		}
		m, err := io.ReadFull(r.lines, buf[len(buf):len(buf)+chunk])
		buf = buf[:len(buf)+m]
		if err != nil {
			r.bin.body = buf
			return nil, r.readErr(err, what)
		}
	}
	r.bin.body = buf
	return buf, nil
}

// binHeader reads the magic, the version and the header of a binary stream.
func (r *Reader) binHeader() error {
	b := &r.bin
	b.on, b.ended, b.lastDelta = true, false, 0
	if b.dec == nil {
		b.dec = binform.NewDecoder(r.reg)
	} else {
		b.dec.Reset(r.reg)
	}
	r.line = 1
	if _, err := r.lines.Discard(len(binform.Magic)); err != nil {
		return r.fail(1, r.readErr(err, "the magic bytes"))
	}
	v, err := r.readUvarint("the version")
	if err != nil {
		return r.fail(1, err)
	}
	if v < binform.OldestVersion || v > binform.Version {
		hint := ""
		if v < binform.OldestVersion {
			hint = ": convert the history's JSON-lines form again"
		}
		return r.fail(1, wrap(ErrVersion, "unsupported binary version %d (this reader knows versions %d to %d)%s", v, binform.OldestVersion, binform.Version, hint))
	}
	b.absTs = v < 4
	b.dec.SetVersion(v)
	n, err := r.readUvarint("the header length")
	if err != nil {
		return r.fail(1, err)
	}
	if n > binform.MaxHeaderBytes {
		return r.fail(1, binErr(values.Errorf(values.ErrLimit, "header of %d bytes, more than the limit of %d", n, binform.MaxHeaderBytes)))
	}
	line, err := r.readBody(int(n), "the header")
	if err != nil {
		return r.fail(1, err)
	}
	b.at = len(line) // the buffer holds no block yet
	return r.parseHeader(line)
}

// nextBinary reads the next record of a binary stream: from the current
// block, or from the next one, whose checksum is checked before any of its
// records is decoded.
func (r *Reader) nextBinary(rec *Record) error {
	b := &r.bin
	if b.ended {
		return io.EOF
	}
	if b.at >= len(b.body) {
		if err := r.nextBlock(); err != nil {
			return err
		}
		if b.ended {
			return io.EOF
		}
	}
	r.line++
	var n uint64
	var k int
	if c := b.body[b.at]; c < 0x80 { // most records are shorter than 128 bytes
		n, k = uint64(c), 1
	} else {
		n, k = binary.Uvarint(b.body[b.at:])
	}
	if k <= 0 || n == 0 || n > uint64(len(b.body)-b.at-k) {
		return r.fail(r.line, binErr(values.Errorf(binform.ErrCorrupt, "a record's length does not fit in its block")))
	}
	body := b.body[b.at+k : b.at+k+int(n)]
	b.at += k + int(n)
	if err := r.binRecord(body, rec); err != nil {
		return r.fail(r.line, err)
	}
	return nil
}

// nextBlock reads the next block (or the end marker) into r.bin.body.
func (r *Reader) nextBlock() error {
	b := &r.bin
	if _, err := r.lines.Peek(1); err == io.EOF {
		// A copy cut at a block's end: every record read is whole.
		return r.fail(r.line+1, binErr(values.Errorf(binform.ErrTruncated, "the binary history is truncated: it ends %s, without its end marker", r.afterRecord())))
	}
	n, err := r.readUvarint("a block's length, " + r.afterRecord())
	if err != nil {
		return r.fail(r.line+1, err)
	}
	if n == 0 {
		if _, err := r.lines.ReadByte(); err != io.EOF {
			if err == nil {
				return r.fail(r.line+1, binErr(values.Errorf(binform.ErrCorrupt, "data after the end marker")))
			}
			return r.fail(r.line+1, r.readErr(err, "the end"))
		}
		b.ended = true
		return nil
	}
	if n > binform.MaxBlockBytes {
		return r.fail(r.line+1, binErr(values.Errorf(values.ErrLimit, "block of %d bytes, more than the limit of %d", n, int64(binform.MaxBlockBytes))))
	}
	body, err := r.readBody(int(n)+binform.ChecksumBytes, "a block of records, "+r.afterRecord())
	if err != nil {
		return r.fail(r.line+1, err)
	}
	if err := checkSum(body[:n], body[n:]); err != nil {
		return r.fail(r.line+1, err)
	}
	b.body, b.at = body[:n], 0
	return nil
}

// afterRecord says where the blocks read so far end: after the last
// record read (the header is record 1), all of whose blocks were whole.
func (r *Reader) afterRecord() string {
	if r.line <= 1 {
		return "after the header, before the first record"
	}
	return fmt.Sprintf("after record %d, the last complete one", r.line)
}

// checkSum compares a block's records with the checksum written after them.
func checkSum(body, sum []byte) error {
	if want, got := binary.LittleEndian.Uint32(sum), binform.Checksum(body); want != got {
		return binErr(values.Errorf(binform.ErrCorrupt, "block checksum %08x does not match its records (%08x): the file is damaged", want, got))
	}
	return nil
}

// binRecord decodes one record body.
func (r *Reader) binRecord(body []byte, rec *Record) error {
	d := r.bin.dec
	rec.Line, rec.IsStep, rec.Step, rec.Ranks = r.line, false, 0, rec.Ranks[:0]
	rec.Extra.Reset()
	r.reg.SetLine(r.line)
	d.Begin(body)
	kind := d.Byte()
	flags := d.Uvarint()
	if flags&^binFlagsAll != 0 {
		d.Failf(binform.ErrCorrupt, "unknown record flags %#x", flags)
	}
	delta := r.bin.lastDelta + uint64(d.Int())
	if r.bin.absTs {
		delta -= r.bin.lastDelta
	}
	r.bin.lastDelta = delta
	ts := int64(uint64(r.lastTs) + delta)
	if err := d.Err(); err != nil {
		return binErr(err)
	}
	switch kind {
	case binform.KindCommand:
		// A definition is at least three bytes: its id's and storage's
		// deltas, and its fields as a blob table index.
		ndef := d.SmallCount(values.MaxTensors, 3)
		if ndef < 0 {
			ndef = d.Count("tensor definitions", values.MaxTensors, 3)
		}
		for i := 0; i < ndef && d.Err() == nil; i++ {
			r.bin.shape = d.Define(r.bin.shape)
		}
		if err := d.Err(); err != nil {
			return binErr(fmt.Errorf("tensor definition: %w", err))
		}
		// A slice already in the slice table is one byte (its index).
		nr := d.SmallCount(values.MaxRankSlices, 1)
		if nr < 0 {
			nr = d.Count("rank slices", values.MaxRankSlices, 1)
		}
		for i := 0; i < nr; i++ {
			if len(rec.Ranks) < cap(rec.Ranks) {
				rec.Ranks = rec.Ranks[:len(rec.Ranks)+1]
			} else {
				rec.Ranks = append(rec.Ranks, values.Slice{})
			}
			sl := &rec.Ranks[i]
			at := d.SliceAt(sl)
			if err := d.Err(); err != nil {
				return binErr(values.FieldError("ranks", fmt.Errorf("slice %d: %w", i, err)))
			}
			if d.CheckedSlice(at) {
				continue
			}
			if err := sl.Check(r.hdr.WorldSize); err != nil {
				return values.FieldError("ranks", wrap(err, "slice %d: %v", i, err))
			}
			d.SliceChecked(at)
		}
		if err := d.Err(); err != nil {
			return binErr(values.FieldError("ranks", err))
		}
		if err := gen.DecodeMsgBinary(d, &rec.Msg); err != nil {
			return binErr(values.FieldError("msg", err))
		}
		// A key order alone (an optional field given empty, as a
		// CallFunction's "mutates":[] is) is checked by the decoder as it
		// reads it, a sub-command's too; checkExtras checks it again,
		// naming what is wrong, when the decoder found it wrong, and checks
		// extra fields wherever a message of the record (a CommandGroup's
		// sub-command too) has some. A record with neither, the usual one,
		// skips it: a CommandGroup's sub-commands are then not copied out
		// of their list again only to pass the same checks.
		if m := &rec.Msg; d.ExtraKeys() || !d.OrdersValid() {
			if err := r.checkExtras(m); err != nil {
				return binErr(values.FieldError("msg", err))
			}
		}
		// A tensor is defined by the record that first mentions it: one the
		// record defines but never mentions would vanish from its JSON.
		for _, f := range r.reg.Fresh() {
			if !slices.Contains(d.Mentioned(), f) {
				return binErr(values.Errorf(binform.ErrCorrupt, "tensor %d is defined by a record that does not mention it", r.reg.At(f).ID))
			}
		}
	case binform.KindStep:
		rec.IsStep = true
		rec.Msg.Kind, rec.Msg.TypeName = gen.MsgInvalid, ""
		rec.Step = d.Nonneg("step")
	default:
		return binErr(values.Errorf(binform.ErrCorrupt, "record kind %d is neither a command (%d) nor a step (%d)", kind, binform.KindCommand, binform.KindStep))
	}
	if flags&binFlagExtras != 0 {
		n := d.Count("record extra fields", binform.MaxExtras, 2)
		for i := 0; i < n; i++ {
			k := d.String()
			v := d.Blob()
			if d.Err() != nil {
				break
			}
			rec.Extra.Add(k, v)
		}
	}
	if err := d.End(); err != nil {
		return binErr(err)
	}
	if len(rec.Extra.Keys) > 0 {
		if err := r.checkFields(recordKeys, rec.Extra.Keys, rec.Extra.Vals); err != nil {
			return binErr(fmt.Errorf("record: %w", err))
		}
	}
	if !rec.IsStep || ts != r.lastTs {
		if err := r.advanceTs(ts); err != nil {
			return err
		}
	}
	return r.finishRecord(rec)
}

// recordKeys are the keys of a record object that the reader decodes ("type"
// is never an extra key either: checkFields refuses it everywhere).
var recordKeys = []string{"ts", "ranks", "msg", "step"}

// checkExtras holds a message's extra fields (and its sub-commands') to
// what its JSON line would be: checkFields, and a key order that names each
// declared field at most once and every extra field.
func (r *Reader) checkExtras(m *gen.Msg) error {
	ex := &m.Extra
	if len(ex.Order) == 0 && len(ex.Keys) == 0 && m.Kind != gen.MsgCommandGroup {
		return nil // nothing to check: the usual message
	}
	names := gen.FieldNames(m.Kind)
	if len(ex.Order) > 0 {
		var seen uint64
		extras := 0
		for _, it := range ex.Order {
			switch {
			case it == 0:
				extras++
			case seen&(1<<it) != 0:
				return values.Errorf(binform.ErrCorrupt, "%s: key order names field %q twice", m.TypeName, names[it-1])
			default:
				seen |= 1 << it
			}
		}
		if extras != len(ex.Keys) {
			return values.Errorf(binform.ErrCorrupt, "%s: key order lists %d extra fields, the message has %d", m.TypeName, extras, len(ex.Keys))
		}
	}
	if err := r.checkFields(names, ex.Keys, ex.Vals); err != nil {
		return fmt.Errorf("%s: %w", m.TypeName, err)
	}
	if m.Kind == gen.MsgCommandGroup && m.CommandGroup.Commands.Len() > 0 {
		var sub gen.Msg
		l := &m.CommandGroup.Commands
		for i := 0; i < l.Len(); i++ {
			l.At(i, &sub)
			if err := r.checkExtras(&sub); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkFields checks extra fields as the JSON line holding them would be
// checked: keys that are neither declared nor repeated, and values that are
// valid JSON.
func (r *Reader) checkFields(declared, keys []string, vals [][]byte) error {
	for i, k := range keys {
		if k == "type" || slices.Contains(declared, k) || slices.Contains(keys[:i], k) {
			return values.Errorf(binform.ErrCorrupt, "key %q appears twice", k)
		}
		s := &r.sc
		err := s.Reset(vals[i])
		if err == nil {
			err = s.Skip()
		}
		if err == nil {
			err = s.End()
		}
		if err != nil {
			return values.Errorf(binform.ErrCorrupt, "field %q: %v", k, err)
		}
	}
	return nil
}

// deletedIn calls fn with each id a DeleteRefs in m names (in a
// CommandGroup too), in the order DeleteRefs deletes them.
func deletedIn(m *gen.Msg, fn func(id int64)) {
	switch m.Kind {
	case gen.MsgDeleteRefs:
		for _, id := range m.DeleteRefs.Refs {
			fn(id)
		}
	case gen.MsgCommandGroup:
		deletedInMsgs(&m.CommandGroup.Commands, fn)
	}
}

func deletedInMsgs(l *gen.Msgs, fn func(id int64)) {
	for i := 0; i < l.Len(); i++ {
		switch l.Kind(i) {
		case gen.MsgDeleteRefs:
			for _, id := range l.DeleteRefsAt(i).Refs {
				fn(id)
			}
		case gen.MsgCommandGroup:
			deletedInMsgs(&l.CommandGroupAt(i).Commands, fn)
		}
	}
}

// freeSlots frees the decoder's slots of the tensors the record's
// DeleteRefs delete, in the order the encoder freed them (deletedIn), and
// deletes them from reg in the order DeleteRefs does; the rows are those
// Index gave the ids, before the deletion.
func (b *binReader) freeSlots(m *gen.Msg, reg *values.Registry) {
	switch m.Kind {
	case gen.MsgDeleteRefs:
		for _, row := range m.DeleteRefs.RefsIdx {
			b.dec.Deleted(row)
			reg.DeleteRow(row)
		}
	case gen.MsgCommandGroup:
		b.freeSlotsIn(&m.CommandGroup.Commands, reg)
	}
}

func (b *binReader) freeSlotsIn(l *gen.Msgs, reg *values.Registry) {
	for i := 0; i < l.Len(); i++ {
		switch l.Kind(i) {
		case gen.MsgDeleteRefs:
			for _, row := range l.DeleteRefsAt(i).RefsIdx {
				b.dec.Deleted(row)
				reg.DeleteRow(row)
			}
		case gen.MsgCommandGroup:
			b.freeSlotsIn(&l.CommandGroupAt(i).Commands, reg)
		}
	}
}
