package jsonpos

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type doc struct {
	A int `json:"a"`
	B struct {
		C float64 `json:"c"`
	} `json:"b"`
}

// Each text's error is on the line its comment names, counted by hand.
func TestLine(t *testing.T) {
	for _, c := range []struct {
		text string
		line int
	}{
		{"\n\n{\n \"a\": 1,\n \"b\": {\n  \"c\": \"x\"\n }\n}\n", 6}, // the string given to c, a float
		{"{\n \"a\": 1,\n \"zz\": 3,\n \"b\": {}\n}", 3},             // the unknown key zz
		{"{\n \"a\": 1,\n \"b\": {\n  \"c\": 1 x\n }\n}", 4},         // x after c's value
		{"{\n \"a\": 1,\n \"b\": {\n  \"c\": 1\n }\n", 5},            // the text ends after line 5's brace
		{"{\"a\": 1.5}", 1}, // a fraction for an int, on the only line
		{"", 1},             // no value at all
	} {
		dec := json.NewDecoder(bytes.NewReader([]byte(c.text)))
		dec.DisallowUnknownFields()
		var d doc
		err := dec.Decode(&d)
		if err == nil {
			t.Fatalf("%q decoded", c.text)
		}
		if got := Line([]byte(c.text), err); got != c.line {
			t.Errorf("%q (%v): line %d, want %d", c.text, err, got, c.line)
		}
	}
}

// TestTrailing: the text after the first value starts on line 3 (the
// object closes on line 2, line 3 opens another).
func TestTrailing(t *testing.T) {
	text := []byte("{\"a\": 1\n}\n{}\n")
	dec := json.NewDecoder(bytes.NewReader(text))
	var d doc
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	if got := Trailing(text, dec.InputOffset()); got != 3 {
		t.Errorf("line %d, want 3", got)
	}
}

// TestInFile: a line joins the file name with a colon, no line with ": ".
func TestInFile(t *testing.T) {
	base := errors.New("bad spec: x")
	if got := InFile("f.json", &Error{Line: 7, Err: base}).Error(); got != "f.json:7: bad spec: x" {
		t.Errorf("with a line: %q", got)
	}
	if got := InFile("f.json", base).Error(); got != "f.json: bad spec: x" {
		t.Errorf("without: %q", got)
	}
	if !errors.Is(InFile("f.json", &Error{Line: 7, Err: base}), base) {
		t.Error("the cause is lost")
	}
}

// TestKey: each path's key is on the line its comment names, counted by
// hand; a path that is not there is line 1.
func TestKey(t *testing.T) {
	text := []byte("{\n \"c\": {\"x\": [1,\n 2]},\n \"b\": {\n  \"c\": 5,\n  \"a:b\\\"\": 6\n },\n \"a\": 1\n}\n")
	for _, c := range []struct {
		path []string
		line int
	}{
		{[]string{"c"}, 2},           // the top-level c, not b's
		{[]string{"b", "c"}, 5},      // b's c, past the array over lines 2-3
		{[]string{"b", `a:b"`}, 6},   // an escaped key
		{[]string{"a"}, 8},           // after the nested object
		{[]string{"c", "x", "y"}, 1}, // x is an array: its keys are indexes
		{[]string{"c", "x", "0"}, 2}, // x's first element, the 1 on line 2
		{[]string{"c", "x", "1"}, 3}, // its second, the 2 on line 3
		{[]string{"c", "x", "2"}, 1}, // past its end
		{[]string{"c", "x", "01"}, 1},
		{[]string{"c", "x", "-1"}, 1},
		{[]string{"zz"}, 1}, // not there
		{nil, 1},
	} {
		if got := Key(text, c.path...); got != c.line {
			t.Errorf("Key(%q): line %d, want %d", c.path, got, c.line)
		}
	}

	// Repeated keys and keys that differ in case: encoding/json keeps the
	// last value of those that match a field, so that is the line a
	// check's error names (lines counted by hand: line 1 is "{").
	dup := []byte("{\n \"layers\": 2,\n \"g\": {\"x\": 1},\n \"LAYERS\": -1,\n \"g\": {\n  \"x\": 3\n },\n \"h\": {\"x\": 1},\n \"h\": {}\n}\n")
	for _, c := range []struct {
		path []string
		line int
	}{
		{[]string{"layers"}, 4}, // "LAYERS" on line 4 is decoded last
		{[]string{"g", "x"}, 6}, // the second g's x
		{[]string{"h", "x"}, 8}, // the second h has no x: the first's stays
	} {
		if got := Key(dup, c.path...); got != c.line {
			t.Errorf("Key(%q) with repeated keys: line %d, want %d", c.path, got, c.line)
		}
	}
	// A map's keys are matched exactly: "mm" and "MM" are two entries.
	maps := []byte("{\n \"runtimes_ns\": {\n  \"mm\": -1,\n  \"MM\": 5\n }\n}\n")
	if got := Key(maps, "runtimes_ns", Exact("mm")); got != 3 {
		t.Errorf("Key(runtimes_ns, Exact(mm)): line %d, want 3", got)
	}
	if got := Key(maps, "runtimes_ns", Exact("MM")); got != 4 {
		t.Errorf("Key(runtimes_ns, Exact(MM)): line %d, want 4", got)
	}
	if got := Key(maps, "runtimes_ns", Exact("Mm")); got != 1 {
		t.Errorf("Key(runtimes_ns, Exact(Mm)): line %d, want 1 (not there)", got)
	}
	var kept struct {
		Layers int
		G, H   struct{ X int }
	}
	if err := json.Unmarshal(dup, &kept); err != nil || kept.Layers != -1 || kept.G.X != 3 || kept.H.X != 1 {
		t.Errorf("encoding/json kept layers %d, g.x %d and h.x %d (%v), want -1, 3 and 1: the lines above assume it", kept.Layers, kept.G.X, kept.H.X, err)
	}
}

// TestKeyArray: an element of an array of arrays is found on the line
// where it starts (lines counted by hand: the text's line 1 is "{").
func TestKeyArray(t *testing.T) {
	text := []byte("{\n \"k\": [\n  [1,\n   2],\n  [3,\n   4]\n ]\n}\n")
	for _, c := range []struct {
		path []string
		line int
	}{
		{[]string{"k"}, 2},           // the key
		{[]string{"k", "0"}, 3},      // [1, opens on line 3
		{[]string{"k", "1"}, 5},      // [3, opens on line 5
		{[]string{"k", "1", "1"}, 6}, // its 4
		{[]string{"k", "0", "1"}, 4}, // the first's 2
		{[]string{"k", "2"}, 1},      // past the end
	} {
		if got := Key(text, c.path...); got != c.line {
			t.Errorf("Key(%q): line %d, want %d", c.path, got, c.line)
		}
	}
}

// TestDescribe: a value of the wrong type is worded by its key and the
// JSON kinds found and wanted, never by the Go type it was read into.
func TestDescribe(t *testing.T) {
	type inner struct {
		N int     `json:"n"`
		F float64 `json:"f"`
	}
	type doc struct {
		Layers int                `json:"layers"`
		Name   string             `json:"name"`
		In     inner              `json:"in"`
		List   []string           `json:"list"`
		Peaks  map[string]float64 `json:"peaks"`
		Curve  [][2]float64       `json:"curve"`
		Ins    []inner            `json:"ins"`
		MI     map[int]float64    `json:"mi"`
		RT     map[string]float64 `json:"rt"`
	}
	for _, c := range []struct{ text, want string }{
		{"", "empty: no JSON value"},
		{" \n\t", "empty: no JSON value"},
		{`{"layers": "4"}`, "layers is a string, want a whole number"},
		// A whole number out of the field's range says the range; a
		// fraction is not a whole number.
		{`{"layers": 10000000000000000000}`, "layers is a number 10000000000000000000, want a whole number from -9223372036854775808 to 9223372036854775807"},
		{`{"in": {"n": 2.5}}`, "in.n is a number 2.5, want a whole number"},
		{`{"name": 4}`, "name is a number, want a string"},
		{`{"in": {"f": true}}`, "in.f is a bool, want a number"},
		{`{"list": {}}`, "list is an object, want an array"},
		{`[1, 2]`, "the JSON value is an array, want an object"},
		// encoding/json names struct fields only; the key of a map's
		// entry and an array's index come from the text.
		{`{"peaks": {"fp32": 19.5, "bf16": "312"}}`, "peaks.bf16 is a string, want a number"},
		{`{"curve": [[1, 0.5], [2, "x"]]}`, "curve[1][1] is a string, want a number"},
		{`{"ins": [{"n": 1}, {"f": 2, "n": [3]}], "name": "x"}`, "ins[1].n is an array, want a whole number"},
		{`{"name": "a", "in": {}, "list": [], "Layers": false}`, "Layers is a bool, want a whole number"},
		// A map key of the wrong type is named by itself, not by the
		// entry before it; keys with dots or empty ones are quoted.
		{`{"mi": {"1": 2, "abc": 3}}`, `mi has the key "abc", want a whole number`},
		{`{"rt": {"a b": "x"}}`, `rt["a b"] is a string, want a number`},
		{"{\"rt\": {\"bf\\nx\": \"x\"}}", `rt["bf\nx"] is a string, want a number`},
		{`{"rt": {"aten.gelu": 1, "aten.mm": "x"}}`, `rt["aten.mm"] is a string, want a number`},
		{`{"rt": {"": "x"}}`, `rt[""] is a string, want a number`},
	} {
		var d doc
		err := json.Unmarshal([]byte(c.text), &d)
		if err == nil {
			t.Fatalf("%s: decoded", c.text)
		}
		if got := Describe([]byte(c.text), err); got != c.want {
			t.Errorf("%s: %q, want %q", c.text, got, c.want)
		}
	}
	if got := Describe(nil, errors.New("json: unknown field \"x\"")); got != `unknown field "x"` {
		t.Errorf("other errors: %q", got)
	}
	if !Has([]byte(`{"a": {"b": 1}}`), "a", "b") || Has([]byte(`{"a": {"c": 1}}`), "a", "b") {
		t.Error("Has")
	}
}

// TestDescribeDeep: a bad value after a deeply nested one (9,000 arrays,
// under encoding/json's limit of 10,000) is named by its own key.
func TestDescribeDeep(t *testing.T) {
	const depth = 9000
	text := `{"in": {"n": 1}, "list": ` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `, "name": 5}`
	var d struct {
		In   any    `json:"in"`
		List any    `json:"list"`
		Name string `json:"name"`
	}
	err := json.Unmarshal([]byte(text), &d)
	if err == nil {
		t.Fatal("decoded")
	}
	if got, want := Describe([]byte(text), err), "name is a number, want a string"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// TestDescribeFar: past pathMaxOffset a value is named without a walk
// of the text: by the last name of encoding/json's field path (not the
// path, which holds an embedded struct's Go name: results.Layout.micro)
// and the key written just before it (a map's entry), read backward.
func TestDescribeFar(t *testing.T) {
	defer func(n int64) { pathMaxOffset = n }(pathMaxOffset)
	pathMaxOffset = 64 << 10
	type Layout struct {
		Micro int `json:"micro"`
	}
	var results struct {
		Results []struct {
			Layout
			Step float64 `json:"step_time_s"`
		} `json:"results"`
	}
	var costs struct {
		RT map[string]int `json:"runtimes_ns"`
	}
	var nested struct {
		M map[string]map[int]int `json:"m"`
	}
	var list []int
	far := func(head, entry, tail, last string) []byte {
		var b strings.Builder
		b.WriteString(head)
		for int64(b.Len()) <= pathMaxOffset {
			b.WriteString(entry)
		}
		b.WriteString(last + tail)
		return []byte(b.String())
	}
	for _, c := range []struct {
		text []byte
		into any
		want string
	}{
		{far(`{"results": [`, `{"micro": 1, "step_time_s": 2.5}, `, `]}`, `{"micro": "x", "step_time_s": 2.5}`), &results,
			"micro is a string, want a whole number"},
		{far(`{"runtimes_ns": {`, `"a": 1, `, `}}`, `"aten.gelu" :  "x\"y"`), &costs,
			`runtimes_ns["aten.gelu"] is a string, want a whole number`},
		{far(`{"runtimes_ns": {`, `"a": 1, `, `}}`, `"gelu": [1]`), &costs,
			"runtimes_ns.gelu is an array, want a whole number"},
		{far(`{"runtimes_ns": {`, `"a": 1, `, `}}`, `"a\"b": 1.5`), &costs,
			`runtimes_ns["a\"b"] is a number 1.5, want a whole number`},
		{far(`{"m": {"x": {`, `"1": 1, `, `}}}`, `"abc": 1`), &nested,
			`m has the key "abc", want a whole number`},
		{far(`[`, `1, `, `]`, `"x"`), &list,
			"a value is a string, want a whole number"},
	} {
		err := json.Unmarshal(c.text, c.into)
		if err == nil {
			t.Fatalf("%s: decoded", c.want)
		}
		if got := Describe(c.text, err); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

// TestDuplicate: a key given twice in one object is found at its second
// line, however deep, and an escaped key as encoding/json reads it;
// keys repeated across objects, and strings that are values, are not.
func TestDuplicate(t *testing.T) {
	for _, c := range []struct {
		text string
		line int
		ok   bool
	}{
		{"{\n \"layers\": 24,\n \"layers\": 2\n}", 3, true},
		{"{\"gpu\": {\"a\": 1,\n\n \"b\": [{\"x\": 1}, {\"x\": 2, \"x\": 3}]}}", 3, true},
		{"{\"a\": {\"x\": 1}, \"b\": {\"x\": 1}}", 0, false},
		{"{\"a\": 1, \"\\u0061\": 2}", 1, true},
		{"[\"a\", \"a\", {\"b\": \"a\", \"c\": \"b\"}]", 0, false},
		{"", 0, false},
	} {
		line, msg, ok := Duplicate([]byte(c.text))
		if ok != c.ok || line != c.line || ok && !strings.Contains(msg, "appears twice") {
			t.Errorf("%q: line %d, %q, %v; want line %d, %v", c.text, line, msg, ok, c.line, c.ok)
		}
	}
}
