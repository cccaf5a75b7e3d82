package jsonl

import (
	"strconv"

	"github.com/fastsim/fastsim/internal/values"
)

// Writer appends the JSON text of values to Buf, the inverse of the
// decoders of this package. It remembers which tensors it has written in
// full: the first mention of a tensor (by dense index Idx) carries every
// field, later ones only the id. Generated code writes a message's fields
// with Field followed by one value.
type Writer struct {
	// Buf is the text written so far; callers take it and truncate it.
	Buf     []byte
	written []bool // by Tensor.Idx: written in full
}

// Reset forgets the tensors written and empties Buf.
func (w *Writer) Reset() {
	w.Buf = w.Buf[:0]
	clear(w.written)
	w.written = w.written[:0]
}

// Field writes `,"name":`: every field follows the "type" key or another field.
func (w *Writer) Field(name string) {
	w.Buf = append(w.Buf, ',')
	w.Buf = AppendString(w.Buf, name)
	w.Buf = append(w.Buf, ':')
}

// Int writes an integer.
func (w *Writer) Int(v int64) { w.Buf = strconv.AppendInt(w.Buf, v, 10) }

// Bool writes a boolean.
func (w *Writer) Bool(v bool) { w.Buf = strconv.AppendBool(w.Buf, v) }

// String writes a string, escaped.
func (w *Writer) String(v string) { w.Buf = AppendString(w.Buf, v) }

// Null appends null.
func (w *Writer) Null() { w.Buf = append(w.Buf, "null"...) }

// Raw writes JSON text as it is.
func (w *Writer) Raw(v []byte) { w.Buf = append(w.Buf, v...) }

// Ints writes a list of integers.
func (w *Writer) Ints(v []int64) { w.Buf = AppendInts(w.Buf, v) }

// Strings writes a list of strings.
func (w *Writer) Strings(v []string) {
	w.Buf = append(w.Buf, '[')
	for i, s := range v {
		if i > 0 {
			w.Buf = append(w.Buf, ',')
		}
		w.Buf = AppendString(w.Buf, s)
	}
	w.Buf = append(w.Buf, ']')
}

// Stream writes a STREAM object.
func (w *Writer) Stream(st *values.Stream) {
	w.Buf = append(w.Buf, `{"ref":`...)
	w.Buf = strconv.AppendInt(w.Buf, st.Ref, 10)
	if st.HasName {
		w.Buf = append(w.Buf, `,"name":`...)
		w.Buf = AppendString(w.Buf, st.Name)
	}
	w.Buf = append(w.Buf, '}')
}

// Slice writes a SLICE object.
func (w *Writer) Slice(sl *values.Slice) { w.Buf = AppendSlice(w.Buf, sl) }

// Tensor writes a TENSOR object: every field the first time the tensor is
// written, {"tensor":ID} after.
func (w *Writer) Tensor(t *values.Tensor) {
	w.Buf = append(w.Buf, `{"tensor":`...)
	w.Buf = strconv.AppendInt(w.Buf, t.ID, 10)
	if w.mark(t.Idx) {
		w.Buf = append(w.Buf, `,"storage":`...)
		w.Buf = strconv.AppendInt(w.Buf, t.Storage, 10)
		w.Buf = append(w.Buf, `,"nbytes":`...)
		w.Buf = strconv.AppendInt(w.Buf, t.NBytes, 10)
		w.Buf = append(w.Buf, `,"dtype":`...)
		w.Buf = AppendString(w.Buf, t.Dtype)
		w.Buf = append(w.Buf, `,"shape":`...)
		w.Buf = AppendInts(w.Buf, t.Shape)
		if t.CPU {
			w.Buf = append(w.Buf, `,"device":"cpu"`...)
		} else {
			w.Buf = append(w.Buf, `,"device":"cuda"`...)
		}
	}
	w.Buf = append(w.Buf, '}')
}

// Unmark makes the next Tensor of idx write it in full again: the row now
// holds a new tensor (its first mention).
func (w *Writer) Unmark(idx int32) {
	if idx >= 0 && int(idx) < len(w.written) {
		w.written[idx] = false
	}
}

// mark records that tensor idx is written and reports whether it was not yet.
func (w *Writer) mark(idx int32) bool {
	if idx < 0 {
		return true
	}
	if int(idx) >= len(w.written) {
		w.written = append(w.written, make([]bool, int(idx)+1-len(w.written))...)
	}
	if w.written[idx] {
		return false
	}
	w.written[idx] = true
	return true
}

// Tensors writes a list of TENSOR objects.
func (w *Writer) Tensors(ts []values.Tensor) {
	w.Buf = append(w.Buf, '[')
	for i := range ts {
		if i > 0 {
			w.Buf = append(w.Buf, ',')
		}
		w.Tensor(&ts[i])
	}
	w.Buf = append(w.Buf, ']')
}

// Tree writes a tree's raw JSON text; its leaves count as written (the text
// holds their mentions as they were first written).
func (w *Writer) Tree(t *values.Tree) {
	for i := range t.Leaves {
		w.mark(t.Leaves[i].Idx)
	}
	if !t.Given() {
		w.Buf = append(w.Buf, "null"...)
		return
	}
	w.Buf = t.AppendText(w.Buf)
}

// AppendInts appends a JSON list of integers.
func AppendInts(b []byte, v []int64) []byte { return values.AppendJSONInts(b, v) }

// AppendSlice appends a SLICE object.
func AppendSlice(b []byte, sl *values.Slice) []byte {
	b = append(b, `{"offset":`...)
	b = strconv.AppendInt(b, sl.Offset, 10)
	b = append(b, `,"sizes":`...)
	b = AppendInts(b, sl.Sizes)
	b = append(b, `,"strides":`...)
	b = AppendInts(b, sl.Strides)
	return append(b, '}')
}

// AppendString appends s as a quoted JSON string. Quotes, backslashes and
// control characters are escaped; invalid UTF-8 becomes U+FFFD, and U+2028
// and U+2029 are escaped so the output is also valid JavaScript
// (values.AppendJSONString, which a tree's text is rendered with too).
func AppendString(b []byte, s string) []byte { return values.AppendJSONString(b, s) }
