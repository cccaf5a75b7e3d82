package main

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

func binform(name string) *jen.Statement { return jen.Qual(binformPath, name) }

// bit returns the presence bit of field number i (0-based) as a literal.
func bitLit(i int) jen.Code { return jen.Lit(1).Op("<<").Lit(i) }

// requiredMask is the mask of the required fields of m.
func requiredMask(m *message) uint64 {
	var req uint64
	for i, fd := range m.fields {
		if !fd.optional {
			req |= 1 << i
		}
	}
	return req
}

func renderBinary(sp *spec, f *jen.File) {
	errNil := jen.Err().Op("!=").Nil()
	f.Comment("msgFieldNames lists, by kind, the JSON names of the declared fields:")
	f.Comment("field number i+1 is msgFieldNames[k][i].")
	f.Var().Id("msgFieldNames").Op("=").Index(jen.Op("...")).Index().String().ValuesFunc(func(g *jen.Group) {
		for _, m := range simulated(sp) {
			g.Line().Id("Msg" + m.name).Op(":").ValuesFunc(func(g *jen.Group) {
				for _, fd := range m.fields {
					g.Lit(fd.json)
				}
			})
		}
		g.Line()
	})
	f.Line()
	f.Comment("FieldNames returns the JSON names of the fields the spec declares for")
	f.Comment("kind k, in spec order (nil for accepted and unknown kinds).")
	f.Func().Id("FieldNames").Params(jen.Id("k").Id("MsgKind")).Index().String().Block(
		jen.If(jen.Int().Call(jen.Id("k")).Op("<").Len(jen.Id("msgFieldNames"))).Block(jen.Return(jen.Id("msgFieldNames").Index(jen.Id("k")))),
		jen.Return(jen.Nil()),
	)
	f.Line()

	// EncodeMsgBinary
	f.Comment("EncodeMsgBinary appends the binary form of m to e: a head (kind<<1, | 1")
	f.Comment("when extras follow), the type name of an unknown kind, the fields of a")
	f.Comment("simulated kind (a presence mask, then each present field), then the")
	f.Comment("extras (key order and undeclared fields) when m has any.")
	f.Func().Id("EncodeMsgBinary").Params(jen.Id("e").Op("*").Add(binform("Encoder")), jen.Id("m").Op("*").Id("Msg")).BlockFunc(func(g *jen.Group) {
		g.Var().Id("mask").Uint64()
		g.Id("n").Op(":=").Lit(0)
		g.Switch(jen.Id("m").Dot("Kind")).BlockFunc(func(g *jen.Group) {
			for _, m := range simulated(sp) {
				g.Case(jen.Id("Msg" + m.name)).Block(
					jen.Id("mask").Op(",").Id("n").Op("=").Id("m").Dot(m.name).Dot("present").Call().Op(",").Lit(len(m.fields)),
				)
			}
		})
		g.Id("has").Op(":=").Id("e").Dot("HasExtras").Call(jen.Op("&").Id("m").Dot("Extra"), jen.Id("mask"), jen.Id("n"))
		g.Id("head").Op(":=").Uint64().Call(jen.Id("m").Dot("Kind")).Op("<<").Lit(1)
		g.If(jen.Id("has")).Block(jen.Id("head").Op("|=").Lit(1))
		g.Id("e").Dot("Uvarint").Call(jen.Id("head"))
		g.If(jen.Id("m").Dot("Kind").Op("==").Id("MsgUnknown")).Block(jen.Id("e").Dot("String").Call(jen.Id("m").Dot("TypeName")))
		g.Switch(jen.Id("m").Dot("Kind")).BlockFunc(func(g *jen.Group) {
			for _, m := range simulated(sp) {
				g.Case(jen.Id("Msg" + m.name)).Block(
					jen.Id("encode"+m.name+"Binary").Call(jen.Id("e"), jen.Op("&").Id("m").Dot(m.name), jen.Id("mask")),
				)
			}
		})
		g.If(jen.Id("has")).Block(jen.Id("e").Dot("Extras").Call(jen.Op("&").Id("m").Dot("Extra"), jen.Id("mask"), jen.Id("n")))
	})
	f.Line()

	// DecodeMsgBinary
	f.Comment("DecodeMsgBinary decodes a message written by EncodeMsgBinary into m,")
	f.Comment("reusing its slices. Errors name the message type and the field.")
	f.Func().Id("DecodeMsgBinary").Params(jen.Id("d").Op("*").Add(binform("Decoder")), jen.Id("m").Op("*").Id("Msg")).Error().BlockFunc(func(g *jen.Group) {
		g.Id("m").Dot("Extra").Dot("Reset").Call()
		g.Id("head").Op(":=").Id("d").Dot("Uvarint").Call()
		g.If(jen.Id("k").Op(":=").Id("head").Op(">>").Lit(1), jen.Id("k").Op("==").Lit(0).Op("||").Id("k").Op(">").Uint64().Call(jen.Id("MsgUnknown"))).Block(
			jen.If(jen.Err().Op(":=").Id("d").Dot("Err").Call(), errNil).Block(jen.Return(jen.Err())),
			jen.Id("d").Dot("Failf").Call(binform("ErrCorrupt"), jen.Lit("message kind %d is not one of 1..%d"), jen.Id("k"), jen.Int().Call(jen.Id("MsgUnknown"))),
			jen.Return(jen.Id("d").Dot("Err").Call()),
		)
		g.Id("m").Dot("Kind").Op("=").Id("MsgKind").Call(jen.Id("head").Op(">>").Lit(1))
		g.If(jen.Id("m").Dot("Kind").Op("==").Id("MsgUnknown")).Block(
			jen.Id("m").Dot("TypeName").Op("=").Id("d").Dot("String").Call(),
			jen.If(jen.Id("d").Dot("Err").Call().Op("==").Nil().Op("&&").Id("KindOf").Call(jen.Index().Byte().Parens(jen.Id("m").Dot("TypeName"))).Op("!=").Id("MsgUnknown")).Block(
				jen.Id("d").Dot("Failf").Call(binform("ErrCorrupt"), jen.Lit("unknown message type %q is a known type"), jen.Id("m").Dot("TypeName")),
			),
		).Else().Block(
			// The kind is in range (checked above): its name from the
			// table, without String's call.
			jen.Id("m").Dot("TypeName").Op("=").Id("msgKindNames").Index(jen.Id("m").Dot("Kind")),
		)
		g.Var().Err().Error()
		g.Id("n").Op(":=").Lit(0)
		g.Switch(jen.Id("m").Dot("Kind")).BlockFunc(func(g *jen.Group) {
			for _, m := range simulated(sp) {
				g.Case(jen.Id("Msg"+m.name)).Block(
					jen.Err().Op("=").Id("decode"+m.name+"Binary").Call(jen.Id("d"), jen.Op("&").Id("m").Dot(m.name)),
					jen.Id("n").Op("=").Lit(len(m.fields)),
				)
			}
		})
		g.If(jen.Err().Op("==").Nil().Op("&&").Id("head").Op("&").Lit(1).Op("!=").Lit(0)).Block(
			jen.Id("d").Dot("Extras").Call(jen.Op("&").Id("m").Dot("Extra"), jen.Id("n")),
			jen.Err().Op("=").Id("d").Dot("Err").Call(),
		)
		g.If(jen.Err().Op("==").Nil()).Block(jen.Err().Op("=").Id("d").Dot("Err").Call())
		g.If(errNil).Block(
			jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit("%s: %w"), jen.Id("m").Dot("TypeName"), jen.Err())),
		)
		g.Return(jen.Nil())
	})
	f.Line()

	for _, m := range simulated(sp) {
		renderPresent(f, m)
		f.Line()
		renderEncodeBinary(f, m)
		f.Line()
		renderDecodeBinary(f, m)
		f.Line()
	}
	if usesMessages(sp) {
		f.Comment("decodeMsgsBinary decodes a count and messages into l, reusing its elements.")
		f.Func().Id("decodeMsgsBinary").Params(jen.Id("d").Op("*").Add(binform("Decoder")), jen.Id("l").Op("*").Id("Msgs")).Error().Block(
			jen.Id("l").Dot("Reset").Call(),
			jen.Id("n").Op(":=").Id("d").Dot("Count").Call(jen.Lit("messages"), binform("MaxRecordBytes"), jen.Lit(1)),
			jen.If(jen.Op("!").Id("d").Dot("Enter").Call()).Block(jen.Return(jen.Id("d").Dot("Err").Call())),
			jen.Defer().Id("d").Dot("Leave").Call(),
			jen.Id("m").Op(":=").Id("l").Dot("scratch").Call(),
			jen.For(jen.Id("i").Op(":=").Lit(0), jen.Id("i").Op("<").Id("n"), jen.Id("i").Op("++")).Block(
				jen.If(jen.Err().Op(":=").Id("DecodeMsgBinary").Call(jen.Id("d"), jen.Id("m")), errNil).Block(
					jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit("item %d: %w"), jen.Id("i"), jen.Err())),
				),
				jen.Id("l").Dot("add").Call(jen.Id("m")),
			),
			jen.Return(jen.Id("d").Dot("Err").Call()),
		)
	}
}

func renderPresent(f *jen.File, m *message) {
	f.Comment("present returns the fields of x that are written: bit i for field number i+1")
	f.Comment("(required fields always, optional ones unless empty, bools when true).")
	f.Func().Params(jen.Id("x").Op("*").Id(m.name)).Id("present").Params().Uint64().BlockFunc(func(g *jen.Group) {
		g.Id("mask").Op(":=").Uint64().Call(jen.Lit(int(requiredMask(m))))
		for i, fd := range m.fields {
			if fd.optional {
				g.If(presentCond(fd)).Block(jen.Id("mask").Op("|=").Add(bitLit(i)))
			}
		}
		g.Return(jen.Id("mask"))
	})
}

func renderEncodeBinary(f *jen.File, m *message) {
	f.Comment(fmt.Sprintf("encode%sBinary appends the fields of a %s present in mask.", m.name, m.name))
	f.Func().Id("encode"+m.name+"Binary").Params(jen.Id("e").Op("*").Add(binform("Encoder")), jen.Id("x").Op("*").Id(m.name), jen.Id("mask").Uint64()).BlockFunc(func(g *jen.Group) {
		g.Id("e").Dot("Uvarint").Call(jen.Id("mask"))
		for i, fd := range m.fields {
			switch {
			case !fd.optional:
				g.Add(encodeFieldBinary(fd))
			case fd.info().presenceIsValue:
				// the presence bit is the value
			default:
				g.If(jen.Id("mask").Op("&").Parens(bitLit(i)).Op("!=").Lit(0)).Block(encodeFieldBinary(fd))
			}
		}
	})
}

func renderDecodeBinary(f *jen.File, m *message) {
	var all uint64
	for i := range m.fields {
		all |= 1 << i
	}
	f.Comment(fmt.Sprintf("decode%sBinary decodes the fields of a %s written by encode%sBinary.", m.name, m.name, m.name))
	f.Func().Id("decode"+m.name+"Binary").Params(jen.Id("d").Op("*").Add(binform("Decoder")), jen.Id("x").Op("*").Id(m.name)).Error().BlockFunc(func(g *jen.Group) {
		for _, fd := range m.fields {
			for _, c := range resetField(fd) {
				g.Add(c)
			}
		}
		g.Id("mask").Op(":=").Id("d").Dot("Uvarint").Call()
		g.If(jen.Id("mask").Op("&^").Uint64().Call(jen.Lit(int(all))).Op("!=").Lit(0)).Block(
			jen.Id("d").Dot("Failf").Call(binform("ErrCorrupt"), jen.Lit("field mask %#x names fields beyond the %d of the spec"), jen.Id("mask"), jen.Lit(len(m.fields))),
		)
		for i, fd := range m.fields {
			if !fd.optional {
				g.If(jen.Id("mask").Op("&").Parens(bitLit(i)).Op("==").Lit(0)).Block(
					jen.Id("d").Dot("Fail").Call(values("MissingError").Call(jen.Lit(fd.json))),
				)
			}
		}
		g.If(jen.Err().Op(":=").Id("d").Dot("Err").Call(), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err()))
		for i, fd := range m.fields {
			check := jen.If(jen.Err().Op(":=").Id("d").Dot("Err").Call(), jen.Err().Op("!=").Nil()).Block(
				jen.Return(values("FieldError").Call(jen.Lit(fd.json), jen.Err())),
			)
			body := []jen.Code{decodeFieldBinary(fd)}
			if fd.info().decodeBinary == nil {
				body = append(body, check)
			}
			switch {
			case !fd.optional:
				for _, c := range body {
					g.Add(c)
				}
			case fd.info().presenceIsValue:
				g.Id("x").Dot(fd.goName).Op("=").Id("mask").Op("&").Parens(bitLit(i)).Op("!=").Lit(0)
			default:
				if fd.info().flag {
					body = append([]jen.Code{jen.Id("x").Dot("Has" + fd.goName).Op("=").True()}, body...)
				}
				g.If(jen.Id("mask").Op("&").Parens(bitLit(i)).Op("!=").Lit(0)).Block(body...)
			}
		}
		g.Return(jen.Nil())
	})
}

func renderJSONWrite(sp *spec, f *jen.File) {
	f.Comment("WriteMsgJSON appends m as a JSON object to w.Buf: \"type\" first, then the")
	f.Comment("fields present and the extras in the order m.Extra records (spec order,")
	f.Comment("then the extras, when it records none). It is the inverse of DecodeMsg.")
	f.Func().Id("WriteMsgJSON").Params(jen.Id("w").Op("*").Add(jsonl("Writer")), jen.Id("m").Op("*").Id("Msg")).Block(
		jen.Id("w").Dot("Buf").Op("=").Append(jen.Id("w").Dot("Buf"), jen.Lit(`{"type":`).Op("...")),
		jen.Id("w").Dot("String").Call(jen.Id("m").Dot("TypeName")),
		jen.Switch(jen.Id("m").Dot("Kind")).BlockFunc(func(g *jen.Group) {
			for _, m := range simulated(sp) {
				g.Case(jen.Id("Msg" + m.name)).Block(
					jen.Id("write"+m.name+"JSON").Call(jen.Id("w"), jen.Op("&").Id("m").Dot(m.name), jen.Op("&").Id("m").Dot("Extra")),
				)
			}
			g.Default().Block(
				jen.For(jen.Id("i").Op(",").Id("k").Op(":=").Range().Id("m").Dot("Extra").Dot("Keys")).Block(
					jen.Id("w").Dot("Field").Call(jen.Id("k")),
					jen.Id("w").Dot("Raw").Call(jen.Id("m").Dot("Extra").Dot("Vals").Index(jen.Id("i"))),
				),
			)
		}),
		jen.Id("w").Dot("Buf").Op("=").Append(jen.Id("w").Dot("Buf"), jen.LitRune('}')),
	)
	f.Line()
	for _, m := range simulated(sp) {
		renderWriteJSON(f, m)
		f.Line()
	}
}

func renderWriteJSON(f *jen.File, m *message) {
	f.Comment(fmt.Sprintf("write%sJSON appends the fields of a %s and its extras, in key order.", m.name, m.name))
	f.Func().Id("write"+m.name+"JSON").Params(jen.Id("w").Op("*").Add(jsonl("Writer")), jen.Id("x").Op("*").Id(m.name), jen.Id("ex").Op("*").Add(values("Extras"))).Block(
		jen.Var().Id("buf").Index(jen.Lit(len(m.fields)+8)).Uint8(),
		jen.Id("e").Op(":=").Lit(0),
		jen.For(jen.List(jen.Id("_"), jen.Id("it")).Op(":=").Range().Id("ex").Dot("Seq").Call(jen.Id("buf").Index(jen.Empty(), jen.Lit(0)), jen.Id("x").Dot("present").Call(), jen.Lit(len(m.fields)))).Block(
			jen.Switch(jen.Id("it")).BlockFunc(func(g *jen.Group) {
				g.Case(jen.Lit(0)).Block(
					jen.Id("w").Dot("Field").Call(jen.Id("ex").Dot("Keys").Index(jen.Id("e"))),
					jen.Id("w").Dot("Raw").Call(jen.Id("ex").Dot("Vals").Index(jen.Id("e"))),
					jen.Id("e").Op("++"),
				)
				for i, fd := range m.fields {
					g.Case(jen.Lit(i + 1)).Block(writeFieldJSON(fd)...)
				}
			}),
		),
	)
}
