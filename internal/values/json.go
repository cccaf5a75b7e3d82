package values

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// The JSON text of the values a tree holds, written as a JSON-lines writer
// writes them. A tree read from the binary form keeps a template and its
// leaves rather than its text (Tree.Tmpl), and its text is rendered from
// them only when asked for (Tree.AppendText): the text functions live here,
// below both codecs and the cost models, so that every reader of a tree's
// text renders it the one way.

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a quoted JSON string. Quotes, backslashes
// and control characters are escaped; invalid UTF-8 becomes U+FFFD, and
// U+2028 and U+2029 are escaped so the output is also valid JavaScript.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendJSONInts appends a JSON list of integers.
func AppendJSONInts(b []byte, v []int64) []byte {
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, x, 10)
	}
	return append(b, ']')
}

// Leaf forms: how a tensor object of a tree's template is written
// (Tree.Forms).
const (
	LeafShort byte = 0 // {"tensor":ID}
	LeafFull  byte = 1 // every field, in the order a JSON-lines writer writes them
)

// AppendTensorJSON appends tensor t's object in form f (LeafShort or
// LeafFull).
func AppendTensorJSON(b []byte, t *Tensor, f byte) []byte {
	b = append(b, `{"tensor":`...)
	b = strconv.AppendInt(b, t.ID, 10)
	if f == LeafFull {
		b = append(b, `,"storage":`...)
		b = strconv.AppendInt(b, t.Storage, 10)
		return AppendTensorTail(b, t)
	}
	return append(b, '}')
}

// AppendTensorTail appends the end of tensor t's object in full, from its
// "nbytes" on.
func AppendTensorTail(b []byte, t *Tensor) []byte {
	b = append(b, `,"nbytes":`...)
	b = strconv.AppendInt(b, t.NBytes, 10)
	b = append(b, `,"dtype":`...)
	b = AppendJSONString(b, t.Dtype)
	b = append(b, `,"shape":`...)
	b = AppendJSONInts(b, t.Shape)
	if t.CPU {
		return append(b, `,"device":"cpu"}`...)
	}
	return append(b, `,"device":"cuda"}`...)
}

// Given reports whether the tree was given at all (a message's optional
// tree that is absent has neither text nor template).
func (t *Tree) Given() bool { return t.Raw != nil || t.Tmpl != nil }

// AppendText appends the tree's JSON text: Raw, or the template with each
// NUL byte replaced by its leaf's object in its form. A tree not given
// appends nothing.
func (t *Tree) AppendText(b []byte) []byte {
	if t.Tmpl == nil {
		return append(b, t.Raw...)
	}
	tmpl := t.Tmpl
	for k := range t.Leaves {
		i := bytes.IndexByte(tmpl, 0)
		if i < 0 || k >= len(t.Forms) {
			break // not a template of these leaves; a reader never makes one
		}
		b = append(b, tmpl[:i]...)
		b = AppendTensorJSON(b, &t.Leaves[k], t.Forms[k])
		tmpl = tmpl[i+1:]
	}
	return append(b, tmpl...)
}

// Text returns the tree's JSON text: Raw itself when the tree has one,
// else the text rendered from its template into a new buffer (nil for a
// tree not given).
func (t *Tree) Text() []byte {
	if t.Tmpl == nil {
		return t.Raw
	}
	return t.AppendText(nil)
}
