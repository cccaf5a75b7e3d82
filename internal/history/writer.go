package history

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/binform"
	"github.com/fastsim/fastsim/internal/jsonl"
	"github.com/fastsim/fastsim/internal/values"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Form is a way of writing a history.
type Form uint8

// The forms of a history.
const (
	FormJSON       Form = iota + 1 // JSON lines, plain (.hist)
	FormJSONZstd                   // JSON lines in a zstd frame (.hist.zst)
	FormBinary                     // the binary form, in a zstd frame (.fhist.zst)
	FormBinaryBare                 // the binary form, uncompressed (.fhist): for local files, read without decompressing
	FormBinaryS2                   // the binary form in S2 framing (.fhist.s2): compressed less than in zstd, decompressed faster
)

// binary reports whether f is one of the binary form's framings.
func (f Form) binary() bool { return f == FormBinary || f == FormBinaryBare || f == FormBinaryS2 }

// FormOf returns the form a file name asks for: .fhist.zst is the binary
// form in zstd, .fhist.s2 the binary form in S2 framing, .fhist the binary
// form uncompressed, .hist.zst zstd JSON lines, .hist plain JSON lines;
// false for any other name.
func FormOf(name string) (Form, bool) {
	switch {
	case strings.HasSuffix(name, ".fhist.zst"):
		return FormBinary, true
	case strings.HasSuffix(name, ".fhist.s2"):
		return FormBinaryS2, true
	case strings.HasSuffix(name, ".fhist"):
		return FormBinaryBare, true
	case strings.HasSuffix(name, ".hist.zst"):
		return FormJSONZstd, true
	case strings.HasSuffix(name, ".hist"):
		return FormJSON, true
	}
	return 0, false
}

// Writer writes a history in one form: NewWriter writes the header, Write
// each record, Close the end. Writing is streamed.
type Writer struct {
	form Form
	dst  io.Writer
	cw   io.WriteCloser // the compressor, zstd's or S2's; nil for a bare form
	out  []byte         // pending output

	// JSON lines
	jw jsonl.Writer
	sc jsonl.Scanner // checks each line written
	// binary
	enc    *binform.Encoder
	lastTs int64
	// lastDelta is the binary form's last ts difference: a record's ts is
	// written as the change of that difference (0 while commands come at
	// a steady pace).
	lastDelta uint64
	err       error
	block     []byte // binary records not yet written as a block
}

const writeFlushBytes = 256 << 10

// NewWriter starts writing a history of header h in form f to dst. The
// header is written as raw (the line as read, Reader.RawHeader) when given,
// else made from h. Close does not close dst.
func NewWriter(dst io.Writer, f Form, h Header, raw []byte) (*Writer, error) {
	w := &Writer{form: f, dst: dst}
	if f == FormJSONZstd || f == FormBinary {
		opts := []zstd.EOption{zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault)}
		if f == FormBinary {
			// A reader allocates and clears the frame's whole window
			// (8 MiB by default) before the first byte: that was most of
			// the cost of reading a history of a few thousand records. The
			// binary form repeats itself through its tables, not across
			// megabytes, so a 1 MiB window costs little in size
			// (internal/binform/FORMAT.md, "Framing").
			opts = append(opts, zstd.WithWindowSize(binform.ZstdWindowBytes))
		}
		zw, err := zstd.NewWriter(dst, opts...)
		if err != nil {
			return nil, err
		}
		w.cw = zw
	}
	if f == FormBinaryS2 {
		// Blocks of 1 MiB (S2's default), compressed on the calling
		// goroutine, as zstd is: the output is the same bytes
		// whatever the machine.
		w.cw = s2.NewWriter(dst, s2.WriterConcurrency(1))
	}
	if len(raw) == 0 {
		raw = []byte(`{"fastsim":"history","version":1,"world_size":` + itoa64(h.WorldSize) + `,"gpus_per_host":` + itoa64(h.GPUsPerHost) + `}`)
	}
	switch f {
	case FormJSON, FormJSONZstd:
		w.out = append(append(w.out, raw...), '\n')
	case FormBinary, FormBinaryBare, FormBinaryS2:
		w.enc = binform.NewEncoder()
		w.out = append(w.out, binform.Magic...)
		w.out = binary.AppendUvarint(w.out, binform.Version)
		w.out = binary.AppendUvarint(w.out, uint64(len(raw)))
		w.out = append(w.out, raw...)
	default:
		return nil, errors.New("history: unknown form")
	}
	return w, nil
}

func itoa64(v int64) string { return strconv.FormatInt(v, 10) }

func (w *Writer) flush(force bool) error {
	if w.err != nil || (!force && len(w.out) < writeFlushBytes) {
		return w.err
	}
	var err error
	if w.cw != nil {
		_, err = w.cw.Write(w.out)
	} else {
		_, err = w.dst.Write(w.out)
	}
	w.out = w.out[:0]
	w.err = err
	return err
}

// Write writes one record. reg is the registry of the reader it comes from:
// the binary form defines, ahead of the record, every tensor the record
// mentions first (reg.Fresh), and JSON lines write those in full.
func (w *Writer) Write(rec *Record, reg *values.Registry) error {
	if w.err != nil {
		return w.err
	}
	if w.form.binary() {
		w.writeBinary(rec, reg)
	} else if err := w.writeJSON(rec, reg); err != nil {
		return err
	}
	return w.flush(false)
}

// writeJSON appends the record's line. Raw JSON from a binary history
// (trees, extras) is not checked when it is read, so the line is checked
// here: a corrupt input never becomes an unreadable output.
func (w *Writer) writeJSON(rec *Record, reg *values.Registry) error {
	jw := &w.jw
	for _, i := range reg.Fresh() {
		jw.Unmark(i)
	}
	start := len(w.out)
	jw.Buf = w.out
	if rec.IsStep {
		jw.Buf = append(jw.Buf, `{"step":`...)
		jw.Int(rec.Step)
		if rec.Ts != w.lastTs {
			jw.Field("ts")
			jw.Int(rec.Ts)
		}
	} else {
		jw.Buf = append(jw.Buf, `{"ts":`...)
		jw.Int(rec.Ts)
		jw.Buf = append(jw.Buf, `,"ranks":[`...)
		for i := range rec.Ranks {
			if i > 0 {
				jw.Buf = append(jw.Buf, ',')
			}
			jw.Slice(&rec.Ranks[i])
		}
		jw.Buf = append(jw.Buf, `],"msg":`...)
		gen.WriteMsgJSON(jw, &rec.Msg)
	}
	w.lastTs = rec.Ts
	for i, k := range rec.Extra.Keys {
		jw.Field(k)
		jw.Raw(rec.Extra.Vals[i])
	}
	jw.Buf = append(jw.Buf, '}')
	w.out = jw.Buf
	line := w.out[start:]
	err := w.sc.Reset(line)
	if err == nil {
		err = w.sc.Skip()
	}
	if err == nil {
		err = w.sc.End()
	}
	if err != nil {
		w.out = w.out[:start]
		return wrap(ErrBinary, "the record holds raw JSON that is not valid: %v", err)
	}
	w.out = append(w.out, '\n')
	return nil
}

func (w *Writer) writeBinary(rec *Record, reg *values.Registry) {
	e := w.enc
	e.Buf = e.Buf[:0]
	var flags uint64
	if len(rec.Extra.Keys) > 0 {
		flags |= binFlagExtras
	}
	if rec.IsStep {
		e.Byte(binform.KindStep)
	} else {
		e.Byte(binform.KindCommand)
	}
	e.Uvarint(flags)
	delta := uint64(rec.Ts) - uint64(w.lastTs)
	e.Int(int64(delta - w.lastDelta))
	w.lastTs, w.lastDelta = rec.Ts, delta
	if rec.IsStep {
		e.Uvarint(uint64(rec.Step))
	} else {
		fresh := reg.Fresh()
		e.Uvarint(uint64(len(fresh)))
		for _, i := range fresh {
			t := reg.At(i)
			e.Define(&t)
		}
		e.Uvarint(uint64(len(rec.Ranks)))
		for i := range rec.Ranks {
			e.Slice(&rec.Ranks[i])
		}
		gen.EncodeMsgBinary(e, &rec.Msg)
		deletedIn(&rec.Msg, e.Deleted)
	}
	if flags&binFlagExtras != 0 {
		e.Uvarint(uint64(len(rec.Extra.Keys)))
		for i, k := range rec.Extra.Keys {
			e.String(k)
			e.Blob(rec.Extra.Vals[i])
		}
	}
	w.block = binary.AppendUvarint(w.block, uint64(len(e.Buf)))
	w.block = append(w.block, e.Buf...)
	if len(w.block) >= binform.BlockBytes {
		w.endBlock()
	}
}

// endBlock writes the records gathered so far as one block: its length,
// the records, their checksum.
func (w *Writer) endBlock() {
	if len(w.block) == 0 {
		return
	}
	w.out = binary.AppendUvarint(w.out, uint64(len(w.block)))
	w.out = append(w.out, w.block...)
	w.out = binary.LittleEndian.AppendUint32(w.out, binform.Checksum(w.block))
	w.block = w.block[:0]
}

// Close writes the end of the history (the binary end marker), flushes and
// closes the zstd frame. It does not close the destination.
func (w *Writer) Close() error {
	if w.form.binary() {
		w.endBlock()
		w.out = append(w.out, 0)
	}
	if err := w.flush(true); err != nil {
		return err
	}
	if w.cw != nil {
		err := w.cw.Close()
		w.cw = nil
		return err
	}
	return nil
}

// Convert copies every record of r to w and returns how many it copied.
// Set r.KeepExtra first for a lossless copy.
func Convert(r *Reader, w *Writer) (int64, error) {
	var rec Record
	var n int64
	for {
		err := r.Next(&rec)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if err := w.Write(&rec, r.Registry()); err != nil {
			if _, ok := err.(*Error); !ok && errors.Is(err, ErrBinary) {
				err = &Error{File: r.name, Line: rec.Line, Err: err}
			}
			return n, err
		}
		n++
	}
}

// ConvertBytes rewrites a whole history held in memory (any form; name is
// used in errors) in form f, losslessly (extra fields kept).
func ConvertBytes(src []byte, name string, f Form) ([]byte, error) {
	r, err := NewReader(bytes.NewReader(src), name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	r.KeepExtra = true
	var out bytes.Buffer
	w, err := NewWriter(&out, f, r.Header(), r.RawHeader())
	if err != nil {
		return nil, err
	}
	if _, err := Convert(r, w); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
