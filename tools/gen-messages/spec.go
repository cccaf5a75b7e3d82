package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// spec is a parsed messages.spec.
type spec struct {
	name     string // file name used in errors and the generated header
	messages []*message
	tables   []*table
	ids      []*idType // every id type: declared alone, or by its table
	enums    []*enumType
}

// enumType is a named integer type with its constants: an enumeration
// (`enum NAME BASE doc...`, then `value NAME doc...` lines: 0, 1, 2, ...)
// or a set of flags (`flags NAME BASE doc...`, then `flag NAME doc...`
// lines: 1, 2, 4, ...). Each constant is named NAME+VALUE. Columns may have
// the type.
type enumType struct {
	name   string
	base   string
	doc    string
	flags  bool
	values []enumValue
	line   int
}

type enumValue struct {
	name string
	doc  string
}

// enumBits is the width of the integer types an enum or flags may have.
var enumBits = map[string]int{"uint8": 8, "uint16": 16, "uint32": 32, "int8": 7, "int16": 15, "int32": 31}

// idType is a typed int32 index: a table's row id, or an id declared alone
// (`id NAME doc...`) for rows kept elsewhere (streams, names, groups).
type idType struct {
	name string
	doc  string
	line int
}

type message struct {
	name      string
	simulated bool
	line      int
	fields    []*field
	info      msgInfo
}

// msgInfo is what a message does beyond its fields, declared on its
// message line as key=value attributes (see messages.spec).
type msgInfo struct {
	silent         bool  // controller=silent: the controller records no event for it
	runtimeNs      int64 // runtime=NS: its tasks' default runtime
	localRuntimeNs int64 // local-runtime=NS: a SendTensor between identical slices
	eventRuntimeNs int64 // event-runtime=NS: the event tasks it queues
	launchNs       int64 // launch=NS: CPU-side launch cost (does not affect results)
}

// msgAttrs lists the message attributes with a nanosecond value.
var msgAttrs = map[string]func(*msgInfo) *int64{
	"runtime":       func(i *msgInfo) *int64 { return &i.runtimeNs },
	"local-runtime": func(i *msgInfo) *int64 { return &i.localRuntimeNs },
	"event-runtime": func(i *msgInfo) *int64 { return &i.eventRuntimeNs },
	"launch":        func(i *msgInfo) *int64 { return &i.launchNs },
}

type field struct {
	json     string // name in JSON
	goName   string // CamelCase
	kind     fieldKind
	optional bool
	indexed  string // an attribute of indexers: the reader gives the values dense indexes (GoNameIdx)
	line     int
}

type table struct {
	name    string
	idType  string
	line    int
	columns []*column
}

type column struct {
	name   string
	goType string
	def    string // value of a fresh row, as Go source ("" for the zero value)
	doc    string
	line   int
}

// columnTypes lists the Go types a column may have besides its table's id type.
var columnTypes = map[string]bool{
	"bool": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"uint8": true, "uint16": true, "uint32": true, "uint64": true,
	"float32": true, "float64": true,
}

// Limits of a spec.
const (
	maxMessages = 250 // MsgKind is a uint8 with Invalid and Unknown around them
	maxFields   = 64  // required fields are tracked in a uint64
)

// specError is an error at a line of the spec: "spec:line: reason".
type specError struct {
	file string
	line int
	msg  string
}

func (e *specError) Error() string { return fmt.Sprintf("%s:%d: %s", e.file, e.line, e.msg) }

// parseSpec parses the spec text src; name is used in errors and headers.
func parseSpec(name string, src []byte) (*spec, error) {
	sp := &spec{name: name}
	errf := func(line int, format string, args ...any) error {
		return &specError{file: name, line: line, msg: fmt.Sprintf(format, args...)}
	}
	var (
		curMsg   *message
		curTable *table
		curEnum  *enumType
		names    = map[string]int{} // Go names at package level -> line
	)
	declare := func(line int, goName string) error {
		if prev, ok := names[goName]; ok {
			return errf(line, "%s is already declared at line %d", goName, prev)
		}
		names[goName] = line
		return nil
	}
	for _, reserved := range []string{"MsgKind", "MsgInfo", "Info", "EachTensor", "Msg", "Handler", "Dispatch", "DecodeMsg", "KindOf", "Invalid", "Unknown", "Accepted", "Kind", "TypeName", "Extra", "FieldNames", "EncodeMsgBinary", "DecodeMsgBinary", "WriteMsgJSON"} {
		names[reserved] = 0
	}
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(nil, 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		tok := strings.Fields(text)
		if len(tok) == 0 {
			continue
		}
		if tok[0] != "value" && tok[0] != "flag" {
			curEnum = nil
		}
		switch tok[0] {
		case "message":
			curTable = nil
			if len(tok) < 3 {
				return nil, errf(line, "want `message NAME simulated|accepted [ATTR=VALUE...]`")
			}
			if !isExported(tok[1]) {
				return nil, errf(line, "message name %q is not an exported Go identifier", tok[1])
			}
			if err := declare(line, tok[1]); err != nil {
				if names[tok[1]] == 0 {
					return nil, errf(line, "message name %s is reserved", tok[1])
				}
				return nil, err
			}
			if err := declare(line, "Msg"+tok[1]); err != nil {
				return nil, errf(line, "message name %s: Msg%s clashes with a generated name", tok[1], tok[1])
			}
			m := &message{name: tok[1], line: line}
			switch tok[2] {
			case "simulated":
				m.simulated = true
			case "accepted":
			default:
				return nil, errf(line, "message %s: want simulated or accepted, got %q", tok[1], tok[2])
			}
			for _, a := range tok[3:] {
				key, val, ok := strings.Cut(a, "=")
				if !ok {
					return nil, errf(line, "message %s: attribute %q: want KEY=VALUE", m.name, a)
				}
				if key == "controller" {
					switch val {
					case "event":
					case "silent":
						m.info.silent = true
					default:
						return nil, errf(line, "message %s: controller=%s: want event or silent", m.name, val)
					}
					continue
				}
				dst, ok := msgAttrs[key]
				if !ok {
					return nil, errf(line, "message %s: unknown attribute %q (want controller, runtime, local-runtime, event-runtime or launch)", m.name, key)
				}
				n, err := strconv.ParseInt(val, 10, 64)
				if err != nil || n < 0 {
					return nil, errf(line, "message %s: %s=%s: want nanoseconds, a whole number >= 0", m.name, key, val)
				}
				*dst(&m.info) = n
			}
			if len(sp.messages) >= maxMessages {
				return nil, errf(line, "more than %d messages", maxMessages)
			}
			sp.messages = append(sp.messages, m)
			curMsg = m
		case "field":
			if curMsg == nil {
				return nil, errf(line, "field outside a message")
			}
			if !curMsg.simulated {
				return nil, errf(line, "field in accepted message %s (accepted messages carry any fields)", curMsg.name)
			}
			if len(tok) < 3 || len(tok) > 5 {
				return nil, errf(line, "want `field JSON_NAME KIND [optional] [indexed=%s]`", indexAttrs())
			}
			optional, indexed := false, ""
			for _, t := range tok[3:] {
				switch {
				case t == "optional" && !optional:
					optional = true
				case strings.HasPrefix(t, "indexed=") && indexerMethod(t[len("indexed="):]) != "" && indexed == "":
					indexed = t[len("indexed="):]
				default:
					return nil, errf(line, "want `field JSON_NAME KIND [optional] [indexed=%s]`, not %q", indexAttrs(), t)
				}
			}
			if !isJSONName(tok[1]) {
				return nil, errf(line, "field name %q: want letters, digits and '_', starting with a letter", tok[1])
			}
			if tok[1] == "type" {
				return nil, errf(line, `field name "type" is reserved for the message type`)
			}
			kind, ok := kindNamed(tok[2])
			if !ok {
				return nil, errf(line, "field %s: unknown kind %q", tok[1], tok[2])
			}
			if indexed != "" && !slices.Contains(kinds[kind].indexedBy, indexed) {
				return nil, errf(line, "field %s: indexed=%s needs a field of kind %s, not %s", tok[1], indexed, strings.Join(indexableBy(indexed), " or "), tok[2])
			}
			f := &field{json: tok[1], goName: camel(tok[1]), kind: kind, optional: optional, indexed: indexed, line: line}
			for _, g := range curMsg.fields {
				if g.json == f.json {
					return nil, errf(line, "field %s is already declared at line %d", f.json, g.line)
				}
				if g.goName == f.goName || (g.info().flag && "Has"+g.goName == f.goName) ||
					(f.info().flag && "Has"+f.goName == g.goName) ||
					(g.indexed != "" && g.goName+"Idx" == f.goName) || (f.indexed != "" && f.goName+"Idx" == g.goName) {
					return nil, errf(line, "field %s: its Go name clashes with field %s (line %d)", f.json, g.json, g.line)
				}
			}
			if len(curMsg.fields) >= maxFields {
				return nil, errf(line, "message %s has more than %d fields", curMsg.name, maxFields)
			}
			curMsg.fields = append(curMsg.fields, f)
		case "id":
			curMsg, curTable = nil, nil
			if len(tok) < 2 || !isExported(tok[1]) {
				return nil, errf(line, "want `id NAME [doc...]` with an exported Go identifier")
			}
			if err := declare(line, tok[1]); err != nil {
				return nil, err
			}
			sp.ids = append(sp.ids, &idType{name: tok[1], doc: strings.Join(tok[2:], " "), line: line})
		case "table":
			curMsg = nil
			if len(tok) != 3 {
				return nil, errf(line, "want `table NAME ID_TYPE`")
			}
			if !isExported(tok[1]) || !isExported(tok[2]) {
				return nil, errf(line, "table %q and id type %q must be exported Go identifiers", tok[1], tok[2])
			}
			if err := declare(line, tok[1]+"Table"); err != nil {
				return nil, err
			}
			if err := declare(line, tok[2]); err != nil {
				return nil, err
			}
			curTable = &table{name: tok[1], idType: tok[2], line: line}
			sp.ids = append(sp.ids, &idType{name: tok[2], doc: "indexes the rows of a " + tok[1] + "Table.", line: line})
			sp.tables = append(sp.tables, curTable)
		case "column":
			if curTable == nil {
				return nil, errf(line, "column outside a table")
			}
			if len(tok) < 3 {
				return nil, errf(line, "want `column NAME GO_TYPE [= DEFAULT] [doc...]`")
			}
			if !isExported(tok[1]) {
				return nil, errf(line, "column name %q is not an exported Go identifier", tok[1])
			}
			col := &column{name: tok[1], goType: tok[2], line: line}
			doc := tok[3:]
			if len(doc) > 0 && doc[0] == "=" {
				if len(doc) < 2 {
					return nil, errf(line, "column %s: `=` without a default", tok[1])
				}
				if _, err := strconv.ParseInt(doc[1], 10, 64); err != nil {
					return nil, errf(line, "column %s: default %q is not an integer", tok[1], doc[1])
				}
				col.def, doc = doc[1], doc[2:]
			}
			col.doc = strings.Join(doc, " ")
			switch tok[1] {
			case "Alloc", "Free", "Len", "Live", "Reset", "CopyRow", "Clone":
				return nil, errf(line, "column name %s clashes with a method of %sTable", tok[1], curTable.name)
			}
			for _, c := range curTable.columns {
				if c.name == tok[1] {
					return nil, errf(line, "column %s is already declared at line %d", c.name, c.line)
				}
			}
			curTable.columns = append(curTable.columns, col)
		case "enum", "flags":
			curMsg, curTable = nil, nil
			if len(tok) < 3 || !isExported(tok[1]) {
				return nil, errf(line, "want `%s NAME BASE [doc...]` with an exported Go identifier", tok[0])
			}
			if _, ok := enumBits[tok[2]]; !ok {
				return nil, errf(line, "%s %s: base type %q is not a sized integer type", tok[0], tok[1], tok[2])
			}
			if err := declare(line, tok[1]); err != nil {
				return nil, err
			}
			curEnum = &enumType{name: tok[1], base: tok[2], doc: strings.Join(tok[3:], " "), flags: tok[0] == "flags", line: line}
			sp.enums = append(sp.enums, curEnum)
		case "value", "flag":
			if curEnum == nil || curEnum.flags != (tok[0] == "flag") {
				return nil, errf(line, "%s outside %s", tok[0], map[bool]string{true: "flags", false: "an enum"}[tok[0] == "flag"])
			}
			if len(tok) < 2 || !isExported(tok[1]) {
				return nil, errf(line, "want `%s NAME [doc...]` with an exported Go identifier", tok[0])
			}
			if err := declare(line, curEnum.name+tok[1]); err != nil {
				return nil, err
			}
			n := len(curEnum.values) + 1
			if (curEnum.flags && n > enumBits[curEnum.base]) || (!curEnum.flags && n > 1<<enumBits[curEnum.base]) {
				return nil, errf(line, "%s %s: more values than %s holds", tok[0], tok[1], curEnum.base)
			}
			curEnum.values = append(curEnum.values, enumValue{name: tok[1], doc: strings.Join(tok[2:], " ")})
		default:
			return nil, errf(line, "unknown declaration %q (want message, field, id, table, column, enum, value, flags or flag)", tok[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, errf(line+1, "%v", err)
	}
	if len(sp.messages) == 0 {
		return nil, errf(line, "no messages")
	}
	ids := map[string]bool{}
	for _, id := range sp.ids {
		ids[id.name] = true
	}
	for _, e := range sp.enums {
		if len(e.values) == 0 {
			return nil, errf(e.line, "%s has no values", e.name)
		}
		ids[e.name] = true
	}
	for _, t := range sp.tables {
		if len(t.columns) == 0 {
			return nil, errf(t.line, "table %s has no columns", t.name)
		}
		for _, c := range t.columns {
			if !columnTypes[c.goType] && !ids[c.goType] {
				return nil, errf(c.line, "column %s: unsupported type %q (a basic type, a declared id, enum or flags)", c.name, c.goType)
			}
			if c.def != "" && (c.goType == "bool" || c.goType == "float32" || c.goType == "float64") {
				return nil, errf(c.line, "column %s: a default needs an integer type", c.name)
			}
		}
	}
	return sp, nil
}

// indexAttrs lists the indexed= attributes as the spec's syntax shows them.
func indexAttrs() string {
	var attrs []string
	for _, ix := range indexers {
		attrs = append(attrs, ix.attr)
	}
	return strings.Join(attrs, "|")
}

func isExported(s string) bool {
	return token.IsIdentifier(s) && token.IsExported(s)
}

func isJSONName(s string) bool {
	for i, r := range s {
		ok := r < unicode.MaxASCII && (unicode.IsLetter(r) || (i > 0 && (unicode.IsDigit(r) || r == '_')))
		if !ok {
			return false
		}
	}
	return s != ""
}

// camel turns a JSON name into an exported Go name: from_ranks -> FromRanks.
func camel(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if r == '_' {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}
