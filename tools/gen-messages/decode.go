package main

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

func scannerParams() jen.Code {
	return jen.List(
		jen.Id("s").Op("*").Add(jsonl("Scanner")),
		jen.Id("reg").Op("*").Add(values("Registry")),
	)
}

func usesMessages(sp *spec) bool {
	for _, m := range sp.messages {
		for _, fd := range m.fields {
			if fd.kind == kindMessages {
				return true
			}
		}
	}
	return false
}

func renderDecode(sp *spec, f *jen.File) {
	errNil := jen.Err().Op("!=").Nil()
	f.Comment("DecodeMsg decodes the JSON object at the scanner into m. The \"type\" key may")
	f.Comment("come anywhere in the object; unknown extra fields are skipped. A missing")
	f.Comment("required field or a field of the wrong JSON type is an error naming the")
	f.Comment("field and the message type. Accepted and unknown kinds have their fields")
	f.Comment("skipped (kept in m.Extra, with the order of the keys, when s.KeepExtra is set).")
	f.Comment("Decoding reuses the slices of m and allocates nothing in steady state.")
	f.Func().Id("DecodeMsg").Params(scannerParams(), jen.Id("m").Op("*").Id("Msg")).Error().Block(
		jen.Id("m").Dot("Extra").Dot("Reset").Call(),
		jen.Id("mark").Op(":=").Id("s").Dot("Mark").Call(),
		// ObjectType reads "type" wherever it is, and takes the usual
		// case (first, written compactly) without comparing keys.
		jen.List(jen.Id("typ"), jen.Id("_"), jen.Err()).Op(":=").Id("s").Dot("ObjectType").Call(),
		jen.If(errNil).Block(jen.Return(jen.Err())),
		jen.Id("m").Dot("Kind").Op("=").Id("KindOf").Call(jen.Id("typ")),
		jen.If(jen.Id("m").Dot("Kind").Op("==").Id("MsgUnknown")).Block(
			jen.Id("m").Dot("TypeName").Op("=").Id("s").Dot("Intern").Call(jen.Id("typ")),
		).Else().Block(
			jen.Id("m").Dot("TypeName").Op("=").Id("m").Dot("Kind").Dot("String").Call(),
		),
		jen.Switch(jen.Id("m").Dot("Kind")).BlockFunc(func(g *jen.Group) {
			for _, m := range simulated(sp) {
				g.Case(jen.Id("Msg" + m.name)).Block(
					jen.Err().Op("=").Id("decode"+m.name).Call(jen.Id("s"), jen.Id("reg"), jen.Op("&").Id("m").Dot(m.name)),
				)
			}
			g.Default().Block(jen.Err().Op("=").Id("s").Dot("SkipRest").Call())
		}),
		jen.If(errNil).Block(
			jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit("%s: %w"), jen.Id("m").Dot("TypeName"), jen.Err())),
		),
		jen.If(jen.Id("s").Dot("KeepExtra")).Block(
			jen.If(
				jen.Err().Op(":=").Id("s").Dot("CaptureExtras").Call(jen.Id("mark"), jen.Id("FieldNames").Call(jen.Id("m").Dot("Kind")), jen.Op("&").Id("m").Dot("Extra")),
				errNil,
			).Block(
				jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit("%s: %w"), jen.Id("m").Dot("TypeName"), jen.Err())),
			),
		),
		jen.Return(jen.Nil()),
	)
	f.Line()
	for _, m := range simulated(sp) {
		renderDecodeMsg(f, m)
		f.Line()
	}
	if usesMessages(sp) {
		f.Comment("decodeMsgs decodes a list of messages into l, reusing its elements.")
		f.Func().Id("decodeMsgs").Params(scannerParams(), jen.Id("l").Op("*").Id("Msgs")).Error().Block(
			jen.Id("l").Dot("Reset").Call(),
			jen.If(jen.Err().Op(":=").Id("s").Dot("BeginArray").Call(), errNil).Block(jen.Return(jen.Err())),
			jen.Id("m").Op(":=").Id("l").Dot("scratch").Call(),
			jen.For().Block(
				jen.List(jen.Id("ok"), jen.Err()).Op(":=").Id("s").Dot("NextElem").Call(),
				jen.If(jen.Err().Op("!=").Nil().Op("||").Op("!").Id("ok")).Block(jen.Return(jen.Err())),
				jen.If(jen.Err().Op(":=").Id("DecodeMsg").Call(jen.Id("s"), jen.Id("reg"), jen.Id("m")), errNil).Block(
					jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit("item %d: %w"), jen.Id("l").Dot("Len").Call(), jen.Err())),
				),
				jen.Id("l").Dot("add").Call(jen.Id("m")),
			),
		)
	}
}

func renderDecodeMsg(f *jen.File, m *message) {
	// Every field has a bit in seen: set, the field is repeated (a
	// duplicate key, found without comparing keys); clear at the end, a
	// required field is missing. Keys the spec does not declare are
	// checked by the scanner.
	if len(m.fields) > 64 {
		panic("gen-messages: " + m.name + " has more than 64 fields")
	}
	bit := map[*field]int{}
	for i, fd := range m.fields {
		bit[fd] = i
	}
	var names []jen.Code
	for _, fd := range m.fields {
		names = append(names, jen.Lit(fd.json))
	}
	f.Comment(fmt.Sprintf("fields%s are the keys of a %s, for Scanner.NextField.", m.name, m.name))
	f.Var().Id("fields" + m.name).Op("=").Add(jsonl("NewFields")).Call(names...)
	f.Line()
	f.Comment(fmt.Sprintf("decode%s decodes the fields of a %s after its '{'.", m.name, m.name))
	f.Func().Id("decode"+m.name).Params(scannerParams(), jen.Id("x").Op("*").Id(m.name)).Error().BlockFunc(func(g *jen.Group) {
		for _, fd := range m.fields {
			for _, c := range resetField(fd) {
				g.Add(c)
			}
		}
		if len(m.fields) > 0 {
			g.Var().Id("seen").Uint64()
		}
		// Fields are usually written in spec order: the field after the
		// last one is tried first.
		g.Id("next").Op(":=").Lit(0)
		g.For().Block(
			jen.List(jen.Id("field"), jen.Id("key"), jen.Id("at"), jen.Id("ok"), jen.Err()).Op(":=").Id("s").Dot("NextField").Call(jen.Id("fields"+m.name), jen.Id("next")),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
			jen.If(jen.Op("!").Id("ok")).Block(jen.Break()),
			jen.Id("next").Op("=").Id("field").Op("+").Lit(1),
			jen.Switch(jen.Id("field")).BlockFunc(func(g *jen.Group) {
				for _, fd := range m.fields {
					g.Case(jen.Lit(bit[fd])).BlockFunc(func(g *jen.Group) {
						g.If(jen.Id("seen").Op("&").Parens(jen.Lit(1).Op("<<").Lit(bit[fd])).Op("!=").Lit(0)).Block(
							jen.Return(jsonl("Duplicate").Call(jen.Id("key"), jen.Id("at"))),
						)
						g.Id("seen").Op("|=").Lit(1).Op("<<").Lit(bit[fd])
						switch k := fd.info(); {
						case k.flag:
							g.If(jen.Id("s").Dot("Null").Call()).Block(jen.Break())
							g.Id("x").Dot("Has" + fd.goName).Op("=").True()
						case fd.optional && !k.nullIsValue:
							g.If(jen.Id("s").Dot("Null").Call()).Block(jen.Break())
						}
						g.If(decodeField(fd), jen.Err().Op("!=").Nil()).Block(
							jen.Return(values("FieldError").Call(jen.Lit(fd.json), jen.Err())),
						)
					})
				}
				g.Default().Block(
					jen.If(jen.Err().Op(":=").Id("s").Dot("CheckKey").Call(jen.Id("key"), jen.Id("at")), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
					jen.If(jen.Err().Op(":=").Id("s").Dot("Skip").Call(), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
				)
			}),
		)
		for _, fd := range m.fields {
			if fd.optional {
				continue
			}
			g.If(jen.Id("seen").Op("&").Parens(jen.Lit(1).Op("<<").Lit(bit[fd])).Op("==").Lit(0)).Block(
				jen.Return(values("MissingError").Call(jen.Lit(fd.json))),
			)
		}
		g.Return(jen.Nil())
	})
}
