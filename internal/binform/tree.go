package binform

import (
	"bytes"

	"github.com/fastsim/fastsim/internal/jsonl"
	"github.com/fastsim/fastsim/internal/values"
)

// Trees holding tensors are written as a template and leaves (FORMAT.md,
// "tree"): the template is the tree's JSON text with every tensor object
// cut out and a NUL byte in its place (NUL never appears in JSON text), and
// each leaf says which of the two forms a JSON-lines writer uses it was
// written in. A program writes the same trees again and again with other
// tensors in them, so the template joins the blob table and is checked
// once; the leaves are tensor references. A reader then renders the text
// from the template and the registry instead of parsing and checking JSON
// text at every record. A tree whose tensor objects are in neither form is
// written as its text (FORMAT.md), as before.

// Leaf forms: how a tensor object of a template tree is written.
const (
	leafShort = values.LeafShort // {"tensor":ID}
	leafFull  = values.LeafFull  // every field, in the order jsonl.Writer writes them
)

// appendLeaf appends tensor t's object in form f.
func appendLeaf(b []byte, t *values.Tensor, f byte) []byte { return values.AppendTensorJSON(b, t, f) }

// appendTail appends the end of tensor t's object in full, from its
// "nbytes" on: what a definition carries as text (Encoder.Define).
func appendTail(b []byte, t *values.Tensor) []byte { return values.AppendTensorTail(b, t) }

// tail is a definition's text, read: its fields, and the text, which
// renders the tensor's object in full.
type tail struct {
	nbytes  int64
	dtype   string
	shapeAt int32 // in Decoder.tailShapes
	shapeN  int32
	cpu     bool
}

// parseTail reads a definition's text: the fields of a tensor object from
// "nbytes" on, which must be written exactly as appendTail writes them.
func (c *templateChecker) parseTail(text []byte) (values.Tensor, error) {
	c.text = append(append(c.text[:0], `{"tensor":0,"storage":0`...), text...)
	if c.reg == nil {
		c.reg = values.NewRegistry()
	}
	c.reg.Reset()
	if err := c.sc.Reset(c.text); err != nil {
		return values.Tensor{}, err
	}
	var t values.Tensor
	if err := jsonl.DecodeTensor(&c.sc, c.reg, &t); err != nil {
		return values.Tensor{}, err
	}
	if err := c.sc.End(); err != nil {
		return values.Tensor{}, err
	}
	c.leaf = appendTail(c.leaf[:0], &t)
	if !bytes.Equal(c.leaf, text) {
		return values.Tensor{}, values.Errorf(ErrCorrupt, "its fields are not written as a JSON-lines writer writes them")
	}
	return t, nil
}

// leafSpans appends to dst the byte ranges of the tensor objects in raw
// (objects with a "tensor" key, not searched inside), in document order.
// It fails on text that is not one JSON value; a span it finds wrongly is
// caught by checkTemplate, which the encoder runs before using a template.
func leafSpans(s *jsonl.Scanner, raw []byte, dst [][2]int) ([][2]int, bool) {
	if s.Reset(raw) != nil {
		return dst, false
	}
	var ok bool
	if dst, ok = walkSpans(s, dst); !ok || s.End() != nil {
		return dst, false
	}
	return dst, true
}

func walkSpans(s *jsonl.Scanner, dst [][2]int) ([][2]int, bool) {
	switch s.Kind() {
	case jsonl.KindObject:
		start := s.Pos()
		m := s.Mark()
		if s.BeginObject() != nil {
			return dst, false
		}
		leaf := false
		for {
			key, ok, err := s.NextKey()
			if err != nil {
				return dst, false
			}
			if !ok {
				break
			}
			if string(key) == "tensor" {
				leaf = true
				break
			}
			if s.Skip() != nil {
				return dst, false
			}
		}
		s.Rewind(m)
		if leaf {
			if s.Skip() != nil {
				return dst, false
			}
			return append(dst, [2]int{start, s.Pos()}), true
		}
		if s.BeginObject() != nil {
			return dst, false
		}
		for {
			_, ok, err := s.NextKey()
			if err != nil {
				return dst, false
			}
			if !ok {
				return dst, true
			}
			var good bool
			if dst, good = walkSpans(s, dst); !good {
				return dst, false
			}
		}
	case jsonl.KindArray:
		if s.BeginArray() != nil {
			return dst, false
		}
		for {
			ok, err := s.NextElem()
			if err != nil {
				return dst, false
			}
			if !ok {
				return dst, true
			}
			var good bool
			if dst, good = walkSpans(s, dst); !good {
				return dst, false
			}
		}
	default:
		return dst, s.Skip() == nil
	}
}

// The ids a template's NUL bytes stand for while it is checked: two bases,
// so that no tensor object written in the template itself can pass for a
// leaf (its id would have to equal both).
const (
	sentinelA = int64(1) << 61
	sentinelB = -(int64(1) << 61)
)

// templateChecker checks templates. It is shared by Encoder and Decoder.
type templateChecker struct {
	sc   jsonl.Scanner
	reg  *values.Registry
	tree values.Tree
	text []byte
	leaf []byte
	one  values.Tensor
}

// check reports whether template tmpl, with n leaves, is what a JSON-lines
// reader would accept with n tensor objects at its NUL bytes and none
// elsewhere: with each NUL replaced by a complete tensor object (of ids
// counting up from a sentinel base), the text is one valid JSON value whose
// tensor objects are exactly those, in order. Its leaves' own objects are
// always valid (appendLeaf writes them from the registry), so a template
// that passes stays valid whichever tensors fill it.
func (c *templateChecker) check(tmpl []byte, n int) error {
	if got := bytes.Count(tmpl, []byte{0}); got != n {
		return values.Errorf(ErrCorrupt, "tree: its template has %d places for tensors, its list %d", got, n)
	}
	if c.reg == nil {
		c.reg = values.NewRegistry()
	}
	for _, base := range [2]int64{sentinelA, sentinelB} {
		c.text = c.text[:0]
		k := int64(0)
		for _, b := range tmpl {
			if b != 0 {
				c.text = append(c.text, b)
				continue
			}
			c.one = values.Tensor{ID: base + k, Dtype: "x"}
			c.text = appendLeaf(c.text, &c.one, leafFull)
			k++
		}
		c.reg.Reset()
		if err := c.sc.Reset(c.text); err != nil {
			return values.Errorf(ErrCorrupt, "tree: %v", err)
		}
		if err := jsonl.DecodeTree(&c.sc, c.reg, &c.tree); err != nil {
			return values.Errorf(ErrCorrupt, "tree: %v", err)
		}
		if err := c.sc.End(); err != nil {
			return values.Errorf(ErrCorrupt, "tree: %v", err)
		}
		if len(c.tree.Leaves) != n {
			return values.Errorf(ErrCorrupt, "tree: its template holds %d tensors, its list %d", len(c.tree.Leaves), n)
		}
		for i := range c.tree.Leaves {
			if c.tree.Leaves[i].ID != base+int64(i) {
				return values.Errorf(ErrCorrupt, "tree: tensor %d of its template is not in a place for a tensor", i)
			}
		}
	}
	return nil
}

// Tree forms, after a tree's leaf count when it is not 0.
const (
	treeText     = 0 // the tree's text and its leaves' references
	treeTemplate = 1 // a template and each leaf's reference and form
)
