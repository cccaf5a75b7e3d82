package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fastsim/fastsim/internal/values"
)

// valid reports whether the scanner accepts line as exactly one JSON value.
func valid(line []byte) bool {
	var s Scanner
	if s.Reset(line) != nil {
		return false
	}
	return s.Skip() == nil && s.End() == nil
}

var jsonCases = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e10`, `-1E-2`, `true`, `false`, `null`,
	` { "a" : [ 1 , 2 , { "b" : null } ] , "c" : "d\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00" } `,
	`"\ud800"`, `"\udc00x"`, `"é中😀"`,
	`{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a" 1}`, `{"a":}`, `{1:2}`, `[1 2]`, `01`, `1.`, `.5`, `-`, `1e`, `+1`,
	`"abc`, `"\x"`, `"\u12"`, "\"a\tb\"", `tru`, `nul`, `[`, `{`, `{"a":1`, `[1]]`, `{}{}`, `NaN`, `"\u00"`,
	strings.Repeat("[", 64) + strings.Repeat("]", 64),
}

func TestSkipMatchesEncodingJSON(t *testing.T) {
	for _, c := range jsonCases {
		if got, want := valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("%q: scanner valid=%v, encoding/json valid=%v", c, got, want)
		}
	}
	deep := strings.Repeat("[", 65) + strings.Repeat("]", 65)
	var s Scanner
	s.Reset([]byte(deep))
	if err := s.Skip(); !errors.Is(err, ErrDepth) {
		t.Errorf("depth 65: %v, want ErrDepth", err)
	}
}

func TestStrMatchesEncodingJSON(t *testing.T) {
	for _, c := range []string{`"plain"`, `"a\"b\\c\/d"`, `"\b\f\n\r\t"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`, `"\ud800"`, `"\ud800\u0041"`, `"\udc00"`, `"x\ud83d"`} {
		var want string
		if err := json.Unmarshal([]byte(c), &want); err != nil {
			t.Fatal(err)
		}
		var s Scanner
		s.Reset([]byte(c))
		got, err := s.Str()
		if err != nil || string(got) != want {
			t.Errorf("%s: got %q %v, want %q", c, got, err, want)
		}
	}
}

func TestEncodingErrors(t *testing.T) {
	var s Scanner
	if err := s.Reset([]byte("\"a\xffb\"")); !errors.Is(err, ErrEncoding) {
		t.Errorf("invalid UTF-8: %v", err)
	}
	if err := s.Reset([]byte("{}\x00")); !errors.Is(err, ErrEncoding) {
		t.Errorf("NUL: %v", err)
	}
}

func TestInt(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "-0": 0, "42": 42, "-42": -42, "9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63} {
		var s Scanner
		s.Reset([]byte(in))
		if got, err := s.Int(); err != nil || got != want {
			t.Errorf("%s: %d %v", in, got, err)
		}
	}
	for in, want := range map[string]string{
		"9223372036854775808": "does not fit", "-9223372036854775809": "does not fit", "1.0": "want an integer, got 1.0",
		"1e3": "want an integer, got 1e3", `"1"`: "want an integer, got a string", "[]": "want an integer, got a list", "": "invalid JSON",
	} {
		var s Scanner
		s.Reset([]byte(in))
		if _, err := s.Int(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}

func TestObjectWalk(t *testing.T) {
	var s Scanner
	s.Reset([]byte(` {"a\u0041" : [1, "x"], "b":{}} `))
	if err := s.BeginObject(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for {
		k, ok, err := s.NextKey()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		keys = append(keys, string(k))
		if err := s.Skip(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.End(); err != nil || !reflect.DeepEqual(keys, []string{"aA", "b"}) {
		t.Errorf("keys %q, end %v", keys, err)
	}
}

func TestInternNoAlloc(t *testing.T) {
	var s Scanner
	b := []byte("float32")
	first := s.Intern(b)
	if n := testing.AllocsPerRun(100, func() { _ = s.Intern(b) }); n != 0 || s.Intern(b) != first {
		t.Errorf("Intern allocates %v", n)
	}
}

// FuzzScanner checks that the scanner never panics and accepts exactly the
// JSON that encoding/json accepts (within the depth limit).
func FuzzScanner(f *testing.F) {
	for _, c := range jsonCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := valid(data)
		if got && !json.Valid(data) {
			t.Fatalf("%q: scanner accepts invalid JSON", data)
		}
		// A key repeated within one object is an error of the history format,
		// which encoding/json lets through.
		dup := json.Valid(data) && hasDuplicateKey(data)
		if got && dup {
			t.Fatalf("%q: scanner accepts a repeated key", data)
		}
		// The scanner rejects invalid UTF-8, which encoding/json lets through.
		if !got && !dup && json.Valid(data) && utf8.Valid(data) && !strings.ContainsRune(string(data), 0) && strings.Count(string(data), "[")+strings.Count(string(data), "{") <= MaxDepth {
			t.Fatalf("%q: scanner rejects valid JSON", data)
		}
		var s Scanner
		if s.Reset(data) == nil {
			var tr values.Tree
			_ = DecodeTree(&s, values.NewRegistry(), &tr)
		}
	})
}

// hasDuplicateKey reports whether valid JSON repeats a key within one
// object, walking encoding/json's tokens with a set of keys per open object.
func hasDuplicateKey(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object bool
		keys   map[string]bool
		key    bool // the next string token in an object is a key
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		top := len(stack) - 1
		k, isString := tok.(string)
		if top >= 0 && stack[top].object && stack[top].key && isString {
			if stack[top].keys[k] {
				return true
			}
			stack[top].keys[k] = true
			stack[top].key = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{object: true, keys: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:top]
		}
		// A value ended: in an object, a key comes next.
		if top = len(stack) - 1; top >= 0 && stack[top].object {
			stack[top].key = true
		}
	}
}

// TestPlainRun checks the word-at-a-time search against the byte loop it
// replaces, for every stopping byte at every offset of a 20-byte string:
// it stops at a quote, a backslash, a control character or a byte that is
// not ASCII.
func TestPlainRun(t *testing.T) {
	slow := func(b []byte, i int) int {
		for i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= 0x20 && b[i] < 0x80 {
			i++
		}
		return i
	}
	for _, stop := range []byte{'"', '\\', 0, 0x1f, '\n', 0x80, 0xc3, 0xff} {
		for at := 0; at <= 20; at++ {
			for _, fill := range []byte{'a', 0x20, 0x7f, 0x80, 0xff, '#', ']'} {
				b := bytes.Repeat([]byte{fill}, 20)
				if at < 20 {
					b[at] = stop
				}
				for from := 0; from <= 20; from++ {
					if got, want := plainRun(b, from), slow(b, from); got != want {
						t.Fatalf("plainRun(%q, %d) = %d, want %d", b, from, got, want)
					}
				}
			}
		}
	}
}

// TestNextField checks that NextField reads the same keys as NextKeyAt,
// whether or not they come in the order of the hint, escaped or spaced,
// and numbers them by the declared names (-1 for others).
func TestNextField(t *testing.T) {
	f := NewFields("a", "bb", "ccc")
	for _, line := range []string{
		`{"a":1,"bb":2,"ccc":3}`,
		`{"ccc":3,"a":1,"bb":2}`,
		`{"a":1,"x":0,"bb":2}`,
		`{ "a" :1 , "bb":2,"\u0063cc":3}`,
		`{"bb":{"a":1},"a":[1,2]}`,
		`{}`,
		`{"a":1,}`,
		`{"a"1}`,
		`{"a":1 "bb":2}`,
	} {
		var s1, s2 Scanner
		if err := s1.Reset([]byte(line)); err != nil {
			t.Fatal(err)
		}
		if err := s2.Reset([]byte(line)); err != nil {
			t.Fatal(err)
		}
		if err := s1.BeginObject(); err != nil {
			t.Fatal(err)
		}
		if err := s2.BeginObject(); err != nil {
			t.Fatal(err)
		}
		next := 0
		for {
			field, key, at, ok, err := s1.NextField(f, next)
			key2, at2, ok2, err2 := s2.NextKeyAt()
			if string(key) != string(key2) || at != at2 || ok != ok2 || (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) || s1.Pos() != s2.Pos() {
				t.Fatalf("%s: NextField = %q %d %v %v at %d, NextKeyAt = %q %d %v %v at %d", line, key, at, ok, err, s1.Pos(), key2, at2, ok2, err2, s2.Pos())
			}
			if err != nil || !ok {
				break
			}
			want := -1
			for i, n := range []string{"a", "bb", "ccc"} {
				if n == string(key) {
					want = i
				}
			}
			if field != want {
				t.Fatalf("%s: key %q is field %d, want %d", line, key, field, want)
			}
			next = field + 1
			if err := s1.Skip(); err != nil {
				break
			}
			if err := s2.Skip(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestASCIIText checks the word-at-a-time test against its definition
// (every byte in 1..0x7f) with each kind of byte at every offset.
func TestASCIIText(t *testing.T) {
	for n := 0; n <= 20; n++ {
		for at := 0; at < n; at++ {
			for _, c := range []byte{0, 1, 'a', 0x7f, 0x80, 0x81, 0xc3, 0xff} {
				b := bytes.Repeat([]byte{'x'}, n)
				b[at] = c
				want := c >= 1 && c <= 0x7f
				if got := asciiText(b); got != want {
					t.Fatalf("asciiText(%q) = %v, want %v", b, got, want)
				}
			}
		}
	}
	if !asciiText(nil) {
		t.Error("asciiText(nil) = false, want true")
	}
}
