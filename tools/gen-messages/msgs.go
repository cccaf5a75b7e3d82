package main

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

// renderMsgs writes Msgs, the list type of "messages" fields: messages
// stored by kind, so that each costs its own kind's fields (an accepted
// message a few bytes) rather than a whole Msg, which holds every kind.
// A CommandGroup of many small commands then takes memory in proportion to
// its line, not hundreds of times more.
func renderMsgs(sp *spec, f *jen.File) {
	l := func() *jen.Statement { return jen.Id("l") }
	f.Comment("Msgs is a list of messages stored by kind: each message costs its kind's")
	f.Comment("own fields, not a whole Msg. Decoding reuses its slices and elements.")
	f.Type().Id("Msgs").StructFunc(func(g *jen.Group) {
		g.Id("kinds").Index().Id("MsgKind")
		g.Id("at").Index().Int32().Comment("index in the kind's slice, or in names for MsgUnknown")
		g.Id("extra").Index().Int32().Comment("index in extras, or -1")
		g.Id("names").Index().String()
		g.Id("extras").Index().Add(values("Extras"))
		for _, m := range simulated(sp) {
			g.Id("x" + m.name).Index().Id(m.name)
		}
		g.Id("tmp").Op("*").Id("Msg").Comment("what decoding fills before add moves it in")
	})
	f.Line()
	f.Comment("Len is the number of messages.")
	f.Func().Params(l().Op("*").Id("Msgs")).Id("Len").Params().Int().Block(jen.Return(jen.Len(l().Dot("kinds"))))
	f.Line()
	f.Comment("Kind is the kind of message i.")
	f.Func().Params(l().Op("*").Id("Msgs")).Id("Kind").Params(jen.Id("i").Int()).Id("MsgKind").Block(jen.Return(l().Dot("kinds").Index(jen.Id("i"))))
	f.Line()
	f.Comment("Reset empties the list, keeping its capacity.")
	f.Func().Params(l().Op("*").Id("Msgs")).Id("Reset").Params().BlockFunc(func(g *jen.Group) {
		for _, name := range []string{"kinds", "at", "extra", "names", "extras"} {
			g.Add(l().Dot(name).Op("=").Add(l().Dot(name)).Index(jen.Empty(), jen.Lit(0)))
		}
		for _, m := range simulated(sp) {
			g.Add(l().Dot("x"+m.name).Op("=").Add(l().Dot("x"+m.name)).Index(jen.Empty(), jen.Lit(0)))
		}
	})
	f.Line()
	f.Comment("At copies message i into m; its slices alias the list's, valid until the")
	f.Comment("list is decoded again.")
	f.Func().Params(l().Op("*").Id("Msgs")).Id("At").Params(jen.Id("i").Int(), jen.Id("m").Op("*").Id("Msg")).BlockFunc(func(g *jen.Group) {
		g.Id("m").Dot("Kind").Op("=").Add(l().Dot("kinds").Index(jen.Id("i")))
		g.Id("m").Dot("TypeName").Op("=").Id("m").Dot("Kind").Dot("String").Call()
		g.Id("m").Dot("Extra").Op("=").Add(values("Extras")).Values()
		g.If(jen.Id("e").Op(":=").Add(l().Dot("extra").Index(jen.Id("i"))), jen.Id("e").Op(">=").Lit(0)).Block(
			jen.Id("m").Dot("Extra").Op("=").Add(l().Dot("extras").Index(jen.Id("e"))),
		)
		g.Switch(jen.Id("m").Dot("Kind")).BlockFunc(func(g *jen.Group) {
			for _, m := range simulated(sp) {
				g.Case(jen.Id("Msg" + m.name)).Block(
					jen.Id("m").Dot(m.name).Op("=").Add(l().Dot("x" + m.name).Index(l().Dot("at").Index(jen.Id("i")))),
				)
			}
			g.Case(jen.Id("MsgUnknown")).Block(
				jen.Id("m").Dot("TypeName").Op("=").Add(l().Dot("names").Index(l().Dot("at").Index(jen.Id("i")))),
			)
		})
	})
	f.Line()
	for _, m := range simulated(sp) {
		f.Comment(fmt.Sprintf("%sAt returns message i, which must be a %s.", m.name, m.name))
		f.Func().Params(l().Op("*").Id("Msgs")).Id(m.name + "At").Params(jen.Id("i").Int()).Op("*").Id(m.name).Block(
			jen.Return(jen.Op("&").Add(l().Dot("x" + m.name).Index(l().Dot("at").Index(jen.Id("i"))))),
		)
		f.Line()
	}
	f.Comment("add moves m into the list: its kind's fields are swapped with a spare")
	f.Comment("element (whose slices m then reuses), so neither allocates in steady state.")
	f.Func().Params(l().Op("*").Id("Msgs")).Id("add").Params(jen.Id("m").Op("*").Id("Msg")).BlockFunc(func(g *jen.Group) {
		g.Add(l().Dot("kinds").Op("=").Append(l().Dot("kinds"), jen.Id("m").Dot("Kind")))
		g.Id("at").Op(":=").Int32().Call(jen.Lit(-1))
		g.Switch(jen.Id("m").Dot("Kind")).BlockFunc(func(g *jen.Group) {
			for _, m := range simulated(sp) {
				x := func() *jen.Statement { return l().Dot("x" + m.name) }
				g.Case(jen.Id("Msg"+m.name)).Block(
					jen.Id("n").Op(":=").Len(x()),
					jen.If(jen.Id("n").Op("<").Cap(x())).Block(
						x().Op("=").Add(x()).Index(jen.Empty(), jen.Id("n").Op("+").Lit(1)),
					).Else().Block(
						x().Op("=").Append(x(), jen.Id(m.name).Values()),
					),
					jen.List(x().Index(jen.Id("n")), jen.Id("m").Dot(m.name)).Op("=").List(jen.Id("m").Dot(m.name), x().Index(jen.Id("n"))),
					jen.Id("at").Op("=").Int32().Call(jen.Id("n")),
				)
			}
			g.Case(jen.Id("MsgUnknown")).Block(
				l().Dot("names").Op("=").Append(l().Dot("names"), jen.Id("m").Dot("TypeName")),
				jen.Id("at").Op("=").Int32().Call(jen.Len(l().Dot("names")).Op("-").Lit(1)),
			)
		})
		g.Add(l().Dot("at").Op("=").Append(l().Dot("at"), jen.Id("at")))
		g.If(jen.Len(jen.Id("m").Dot("Extra").Dot("Order")).Op("+").Len(jen.Id("m").Dot("Extra").Dot("Keys")).Op("==").Lit(0)).Block(
			l().Dot("extra").Op("=").Append(l().Dot("extra"), jen.Lit(-1)),
			jen.Return(),
		)
		x := func() *jen.Statement { return l().Dot("extras") }
		g.Id("n").Op(":=").Len(x())
		g.If(jen.Id("n").Op("<").Cap(x())).Block(
			x().Op("=").Add(x()).Index(jen.Empty(), jen.Id("n").Op("+").Lit(1)),
		).Else().Block(
			x().Op("=").Append(x(), values("Extras").Values()),
		)
		g.List(x().Index(jen.Id("n")), jen.Id("m").Dot("Extra")).Op("=").List(jen.Id("m").Dot("Extra"), x().Index(jen.Id("n")))
		g.Add(l().Dot("extra").Op("=").Append(l().Dot("extra"), jen.Int32().Call(jen.Id("n"))))
	})
	f.Line()
	f.Comment("Add appends m to the list, as a program building a CommandGroup does:")
	f.Comment("its kind's fields and extras are moved in, and m is left holding spare")
	f.Comment("storage to build the next message in.")
	f.Func().Params(l().Op("*").Id("Msgs")).Id("Add").Params(jen.Id("m").Op("*").Id("Msg")).Block(l().Dot("add").Call(jen.Id("m")))
	f.Line()
	f.Comment("scratch returns the Msg that decoding fills before add moves it in.")
	f.Func().Params(l().Op("*").Id("Msgs")).Id("scratch").Params().Op("*").Id("Msg").Block(
		jen.If(l().Dot("tmp").Op("==").Nil()).Block(l().Dot("tmp").Op("=").New(jen.Id("Msg"))),
		jen.Return(l().Dot("tmp")),
	)
}
