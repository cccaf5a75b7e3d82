package main

import (
	"slices"

	"github.com/dave/jennifer/jen"
)

// fieldKind is the kind of a field, parsed once from the spec; what the
// renderers write for a field of each kind is the kind's row of kinds.
type fieldKind uint8

// The field kinds; kindInvalid is the zero fieldKind.
const (
	kindInvalid fieldKind = iota
	kindInt
	kindBool
	kindString
	kindInts
	kindStrings
	kindStream
	kindSlice
	kindTensor
	kindMaybeTensor
	kindTensors
	kindTree
	kindMessages
	numKinds
)

// xf returns the field's selector, x.GoName; each call is a fresh statement
// (jennifer statements are appended to in place).
type xf func() *jen.Statement

// kindInfo is everything the renderers know about a field kind. The codecs
// (jsonl.Writer, binform.Encoder and binform.Decoder, and jsonl.Scanner or
// a jsonl.DecodeM function) name their method for a kind alike, so most
// kinds are data; a kind whose code has another shape says so in a func.
type kindInfo struct {
	name   string                // as written in a spec
	goType func() *jen.Statement // the Go type of the field
	method string                // the codecs' method for the kind: Int, Tensor, ...
	byRef  bool                  // the codecs take &x and fill it in place
	reuse  bool                  // the decoders take x and return it, reusing its slice
	// scanned: the JSON scanner decodes the kind itself (s.M); otherwise
	// jsonl.DecodeM(s, ...) does, with the registry when registry is set
	// (the kind names tensors).
	scanned  bool
	registry bool

	// present is the condition under which an optional field is written.
	present func(x xf, fd *field) *jen.Statement
	// reset empties the field, keeping capacity.
	reset func(x xf) jen.Code
	// flag: a bool Has<Name> beside the field says whether it was given
	// (tensor?: null and absent both leave it false).
	flag bool
	// presenceIsValue: an optional field is written only when true, so the
	// binary form's presence bit is its value (bool).
	presenceIsValue bool
	// nullIsValue: null is a value of the kind, not an absent field (tree).
	nullIsValue bool

	// eachTensor writes the calls of fn with the field's tensors; nil: the
	// kind holds none.
	eachTensor func(g *jen.Group, x xf, fd *field)
	// index writes what Index fills in for the field regardless of its
	// attributes; nil: nothing.
	index func(g *jen.Group, x xf)
	// indexedBy lists the indexed= attributes a field of the kind may
	// have (keys of indexers); indexIDs writes what Index fills in for such
	// a field, ids given their dense indexes by the Indexer method.
	indexedBy []string
	indexIDs  func(g *jen.Group, x xf, fd *field, method string)
	// idxType is the Go type of the field's <Name>Idx.
	idxType func() *jen.Statement

	// Kinds whose code has another shape than a codec method call.
	decodeJSON   func(x xf) jen.Code              // sets err
	writeJSON    func(x xf, fd *field) []jen.Code // after the key
	encodeBinary func(x xf) jen.Code
	decodeBinary func(x xf, fd *field) jen.Code // returns on error itself: no check follows
}

// kinds holds the row of every field kind, indexed by fieldKind.
var kinds = [numKinds]kindInfo{
	kindInt: {
		name: "int", goType: jen.Int64, method: "Int", scanned: true,
		present:   func(x xf, _ *field) *jen.Statement { return x().Op("!=").Lit(0) },
		reset:     func(x xf) jen.Code { return x().Op("=").Lit(0) },
		indexedBy: []string{"borrow", "tensor"}, indexIDs: indexOne, idxType: jen.Int32,
	},
	kindBool: {
		name: "bool", goType: jen.Bool, method: "Bool", scanned: true,
		present:         func(x xf, _ *field) *jen.Statement { return x() },
		reset:           func(x xf) jen.Code { return x().Op("=").False() },
		presenceIsValue: true,
	},
	kindString: {
		name: "string", goType: jen.String, method: "String", scanned: true,
		present:   func(x xf, _ *field) *jen.Statement { return x().Op("!=").Lit("") },
		reset:     func(x xf) jen.Code { return x().Op("=").Lit("") },
		indexedBy: []string{"name"}, indexIDs: indexOne, idxType: jen.Int32,
	},
	kindInts: {
		name: "ints", goType: func() *jen.Statement { return jen.Index().Int64() }, method: "Ints", reuse: true, scanned: true,
		present:   nonEmpty,
		reset:     truncate,
		indexedBy: []string{"borrow", "tensor"}, indexIDs: indexEach, idxType: func() *jen.Statement { return jen.Index().Int32() },
	},
	kindStrings: {
		name: "strings", goType: func() *jen.Statement { return jen.Index().String() }, method: "Strings", reuse: true, scanned: true,
		present: nonEmpty,
		reset:   truncate,
	},
	kindStream: {
		name: "stream", goType: valuesType("Stream"), method: "Stream", byRef: true,
		present: func(x xf, _ *field) *jen.Statement {
			return x().Dot("Ref").Op("!=").Lit(0).Op("||").Add(x()).Dot("HasName")
		},
		reset: zeroValue(valuesType("Stream")),
		index: func(g *jen.Group, x xf) {
			g.Add(x()).Dot("Idx").Op("=").Id("ix").Dot("StreamIdx").Call(x().Dot("Ref"))
		},
	},
	kindSlice: {
		name: "slice", goType: valuesType("Slice"), method: "Slice", byRef: true,
		present: func(x xf, _ *field) *jen.Statement {
			return x().Dot("Offset").Op("!=").Lit(0).Op("||").Len(x().Dot("Sizes")).Op(">").Lit(0)
		},
		reset: resetMethod,
	},
	kindTensor: {
		name: "tensor", goType: valuesType("Tensor"), method: "Tensor", byRef: true, registry: true,
		present: func(x xf, _ *field) *jen.Statement {
			return x().Dot("ID").Op("!=").Lit(0).Op("||").Add(x()).Dot("Idx").Op("!=").Lit(0)
		},
		reset: zeroValue(valuesType("Tensor")),
		eachTensor: func(g *jen.Group, x xf, _ *field) {
			g.Id("fn").Call(jen.Op("&").Add(x()))
		},
	},
	kindMaybeTensor: {
		name: "tensor?", goType: valuesType("Tensor"), method: "Tensor", byRef: true, registry: true,
		present: func(_ xf, fd *field) *jen.Statement { return jen.Id("x").Dot("Has" + fd.goName) },
		reset:   zeroValue(valuesType("Tensor")),
		flag:    true,
		eachTensor: func(g *jen.Group, x xf, fd *field) {
			g.If(jen.Id("x").Dot("Has" + fd.goName)).Block(jen.Id("fn").Call(jen.Op("&").Add(x())))
		},
		writeJSON: func(x xf, fd *field) []jen.Code {
			// Written because it was given: a tensor, or null.
			return []jen.Code{jen.If(jen.Id("x").Dot("Has" + fd.goName)).Block(
				jen.Id("w").Dot("Tensor").Call(jen.Op("&").Add(x())),
			).Else().Block(jen.Id("w").Dot("Null").Call())}
		},
	},
	kindTensors: {
		name: "tensors", goType: func() *jen.Statement { return jen.Index().Add(values("Tensor")) }, method: "Tensors", reuse: true, registry: true,
		present: nonEmpty,
		reset:   truncate,
		eachTensor: func(g *jen.Group, x xf, _ *field) {
			g.For(jen.Id("i").Op(":=").Range().Add(x())).Block(jen.Id("fn").Call(jen.Op("&").Add(x()).Index(jen.Id("i"))))
		},
	},
	kindTree: {
		name: "tree", goType: valuesType("Tree"), method: "Tree", byRef: true, registry: true,
		present:     func(x xf, _ *field) *jen.Statement { return x().Dot("Given").Call() },
		reset:       resetMethod,
		nullIsValue: true,
		eachTensor: func(g *jen.Group, x xf, _ *field) {
			g.For(jen.Id("i").Op(":=").Range().Add(x()).Dot("Leaves")).Block(jen.Id("fn").Call(jen.Op("&").Add(x()).Dot("Leaves").Index(jen.Id("i"))))
		},
	},
	kindMessages: {
		name: "messages", goType: func() *jen.Statement { return jen.Id("Msgs") },
		present: func(x xf, _ *field) *jen.Statement { return x().Dot("Len").Call().Op(">").Lit(0) },
		reset:   resetMethod,
		eachTensor: func(g *jen.Group, x xf, _ *field) {
			g.Add(x()).Dot("EachTensor").Call(jen.Id("fn"))
		},
		index: func(g *jen.Group, x xf) {
			g.Add(x()).Dot("Index").Call(jen.Id("ix"))
		},
		decodeJSON: func(x xf) jen.Code {
			return jen.Err().Op("=").Id("decodeMsgs").Call(jen.Id("s"), jen.Id("reg"), jen.Op("&").Add(x()))
		},
		writeJSON: func(x xf, _ *field) []jen.Code {
			return []jen.Code{
				jen.Id("w").Dot("Buf").Op("=").Append(jen.Id("w").Dot("Buf"), jen.LitRune('[')),
				jen.Var().Id("sub").Id("Msg"),
				jen.For(jen.Id("i").Op(":=").Lit(0), jen.Id("i").Op("<").Add(x()).Dot("Len").Call(), jen.Id("i").Op("++")).Block(
					jen.If(jen.Id("i").Op(">").Lit(0)).Block(jen.Id("w").Dot("Buf").Op("=").Append(jen.Id("w").Dot("Buf"), jen.LitRune(','))),
					x().Dot("At").Call(jen.Id("i"), jen.Op("&").Id("sub")),
					jen.Id("WriteMsgJSON").Call(jen.Id("w"), jen.Op("&").Id("sub")),
				),
				jen.Id("w").Dot("Buf").Op("=").Append(jen.Id("w").Dot("Buf"), jen.LitRune(']')),
			}
		},
		encodeBinary: func(x xf) jen.Code {
			return jen.Block(
				jen.Id("e").Dot("Uvarint").Call(jen.Uint64().Call(x().Dot("Len").Call())),
				jen.Var().Id("sub").Id("Msg"),
				jen.For(jen.Id("i").Op(":=").Lit(0), jen.Id("i").Op("<").Add(x()).Dot("Len").Call(), jen.Id("i").Op("++")).Block(
					x().Dot("At").Call(jen.Id("i"), jen.Op("&").Id("sub")),
					jen.Id("EncodeMsgBinary").Call(jen.Id("e"), jen.Op("&").Id("sub")),
				),
			)
		},
		decodeBinary: func(x xf, fd *field) jen.Code {
			return jen.If(
				jen.Err().Op(":=").Id("decodeMsgsBinary").Call(jen.Id("d"), jen.Op("&").Add(x())),
				jen.Err().Op("!=").Nil(),
			).Block(jen.Return(values("FieldError").Call(jen.Lit(fd.json), jen.Err())))
		},
	},
}

// indexers maps each indexed= attribute of a field to the Indexer method
// that gives its values their dense indexes, in the order the spec's
// syntax lists them.
var indexers = []struct {
	attr, method string
	unknown      bool // the method may return -1 for a value it does not know
}{
	{"borrow", "BorrowIdx", true},
	{"tensor", "TensorIdx", true},
	{"name", "NameIdx", false},
}

// indexerMethod returns the Indexer method of attribute attr, "" if there
// is none.
func indexerMethod(attr string) string {
	for _, ix := range indexers {
		if ix.attr == attr {
			return ix.method
		}
	}
	return ""
}

// indexerUnknown reports whether attribute attr's method may return -1.
func indexerUnknown(attr string) bool {
	for _, ix := range indexers {
		if ix.attr == attr {
			return ix.unknown
		}
	}
	return false
}

// indexableBy returns the names of the kinds whose fields may be indexed=attr.
func indexableBy(attr string) []string {
	var names []string
	for k := kindInvalid + 1; k < numKinds; k++ {
		if slices.Contains(kinds[k].indexedBy, attr) {
			names = append(names, kinds[k].name)
		}
	}
	return names
}

// kindNamed returns the kind written name in a spec, false if there is none.
func kindNamed(name string) (fieldKind, bool) {
	for k := kindInvalid + 1; k < numKinds; k++ {
		if kinds[k].name == name {
			return k, true
		}
	}
	return kindInvalid, false
}

// info returns the row of the field's kind.
func (fd *field) info() *kindInfo { return &kinds[fd.kind] }

// sel returns the selector of the field in x.
func (fd *field) sel() xf { return func() *jen.Statement { return jen.Id("x").Dot(fd.goName) } }

func valuesType(name string) func() *jen.Statement {
	return func() *jen.Statement { return values(name) }
}

func nonEmpty(x xf, _ *field) *jen.Statement { return jen.Len(x()).Op(">").Lit(0) }

func truncate(x xf) jen.Code { return x().Op("=").Add(x()).Index(jen.Empty(), jen.Lit(0)) }

func resetMethod(x xf) jen.Code { return x().Dot("Reset").Call() }

func zeroValue(typ func() *jen.Statement) func(x xf) jen.Code {
	return func(x xf) jen.Code { return x().Op("=").Add(typ()).Values() }
}

// indexOne gives an id field its dense index.
func indexOne(g *jen.Group, x xf, fd *field, method string) {
	g.Id("x").Dot(fd.goName + "Idx").Op("=").Id("ix").Dot(method).Call(x())
}

// indexEach gives every id of a list field its dense index.
func indexEach(g *jen.Group, x xf, fd *field, method string) {
	idx := func() *jen.Statement { return jen.Id("x").Dot(fd.goName + "Idx") }
	g.Add(idx()).Op("=").Add(idx()).Index(jen.Empty(), jen.Lit(0))
	g.For(jen.List(jen.Id("_"), jen.Id("id")).Op(":=").Range().Add(x())).Block(
		idx().Op("=").Append(idx(), jen.Id("ix").Dot(method).Call(jen.Id("id"))),
	)
}

// codecArg is the argument a codec method takes for the field: &x or x.
func (k *kindInfo) codecArg(x xf) *jen.Statement {
	if k.byRef {
		return jen.Op("&").Add(x())
	}
	return x()
}

// resetField returns the statements that empty field fd of x, keeping capacity.
func resetField(fd *field) []jen.Code {
	k := fd.info()
	out := []jen.Code{k.reset(fd.sel())}
	if k.flag {
		out = append(out, jen.Id("x").Dot("Has"+fd.goName).Op("=").False())
	}
	return out
}

// decodeField returns the statement that decodes field fd into x, setting err.
func decodeField(fd *field) jen.Code {
	k, x := fd.info(), fd.sel()
	if k.decodeJSON != nil {
		return k.decodeJSON(x)
	}
	if k.scanned {
		var args []jen.Code
		if k.reuse {
			args = append(args, x())
		}
		return jen.List(x(), jen.Err()).Op("=").Add(jen.Id("s").Dot(k.method).Call(args...))
	}
	args := []jen.Code{jen.Id("s")}
	if k.registry {
		args = append(args, jen.Id("reg"))
	}
	args = append(args, k.codecArg(x))
	call := jsonl("Decode" + k.method).Call(args...)
	if k.reuse {
		return jen.List(x(), jen.Err()).Op("=").Add(call)
	}
	return jen.Err().Op("=").Add(call)
}

// writeFieldJSON returns the statements that write field fd of x, key first.
func writeFieldJSON(fd *field) []jen.Code {
	k, x := fd.info(), fd.sel()
	key := jen.Id("w").Dot("Field").Call(jen.Lit(fd.json))
	if k.writeJSON != nil {
		return append([]jen.Code{key}, k.writeJSON(x, fd)...)
	}
	return []jen.Code{key, jen.Id("w").Dot(k.method).Call(k.codecArg(x))}
}

// encodeFieldBinary returns the statement that appends field fd of x.
func encodeFieldBinary(fd *field) jen.Code {
	k, x := fd.info(), fd.sel()
	if k.encodeBinary != nil {
		return k.encodeBinary(x)
	}
	return jen.Id("e").Dot(k.method).Call(k.codecArg(x))
}

// decodeFieldBinary returns the statement that decodes field fd into x.
func decodeFieldBinary(fd *field) jen.Code {
	k, x := fd.info(), fd.sel()
	if k.decodeBinary != nil {
		return k.decodeBinary(x, fd)
	}
	d := func(args ...jen.Code) *jen.Statement { return jen.Id("d").Dot(k.method).Call(args...) }
	switch {
	case k.byRef:
		return d(k.codecArg(x))
	case k.reuse:
		return x().Op("=").Add(d(x()))
	}
	return x().Op("=").Add(d())
}

// presentCond returns the condition under which the optional field fd of x
// is written (in either form).
func presentCond(fd *field) *jen.Statement { return fd.info().present(fd.sel(), fd) }

// goType returns the Go type of a field.
func goType(fd *field) *jen.Statement { return fd.info().goType() }
