// Package jsonpos finds the line of a JSON text that an encoding/json
// decoding error is about, so that the files fastsim reads as JSON (models,
// hardware specs, cost models) report FILE:LINE like a history does.
package jsonpos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// Error is an error about one line of a JSON text: "LINE: what is wrong".
type Error struct {
	Line int
	Err  error
}

func (e *Error) Error() string { return strconv.Itoa(e.Line) + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// At returns err, from decoding data, as an Error at the line it is about.
func At(data []byte, err error) error { return &Error{Line: Line(data, err), Err: err} }

// InFile names the file an error is about: "FILE:LINE: ..." when err is
// an Error, else "FILE: ...".
func InFile(name string, err error) error {
	if _, ok := err.(*Error); ok {
		return fmt.Errorf("%s:%w", name, err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// Trailing returns the line of the first byte after offset that is not
// white space: where text follows a decoder's first value (its
// InputOffset).
func Trailing(data []byte, offset int64) int {
	offset = min(max(offset, 0), int64(len(data)))
	rest := bytes.TrimLeft(data[offset:], " \t\r\n")
	return lineAt(data, int64(len(data)-len(rest))+1)
}

// Line returns the 1-based line of data that err, from decoding data as
// the first JSON value of a json.Decoder, is about: where a syntax error
// or a value of the wrong type was found, the first key named by an
// unknown-field error (encoding/json gives it no offset), or the last line
// when the text ends early. It returns 1 for anything else.
func Line(data []byte, err error) int {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return lineAt(data, se.Offset)
	case errors.As(err, &te):
		return lineAt(data, te.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return lineAt(data, int64(len(bytes.TrimRight(data, " \t\r\n"))))
	}
	if name, ok := strings.CutPrefix(err.Error(), `json: unknown field "`); ok {
		name = strings.TrimSuffix(name, `"`)
		key := regexp.MustCompile(regexp.QuoteMeta(`"`+name+`"`) + `\s*:`)
		if loc := key.FindIndex(data); loc != nil {
			return lineAt(data, int64(loc[0])+1)
		}
	}
	return 1
}

// Has reports whether data's JSON object holds the key at path.
func Has(data []byte, path ...string) bool {
	_, ok := keyOffset(json.NewDecoder(bytes.NewReader(data)), path)
	return ok
}

// Describe words a decoding error, err from decoding data (the text the
// error's offsets are in), for a file's reader: a value of the
// wrong type by its key and the kinds found and wanted ("layers is a JSON
// string, want a number"), not by the Go type it was read into; other
// errors without encoding/json's "json: " prefix.
func Describe(data []byte, err error) string {
	// A blank input: io.EOF from a Decoder, a syntax error from Unmarshal.
	var se *json.SyntaxError
	if (errors.Is(err, io.EOF) || errors.As(err, &se)) && len(bytes.TrimSpace(data)) == 0 {
		return "empty: no JSON value"
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return strings.TrimPrefix(err.Error(), "json: ")
	}
	want := "a value of another kind"
	if te.Type != nil {
		switch te.Type.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			want = "a whole number"
			if n := strings.TrimPrefix(te.Value, "number "); n != te.Value && wholeText(n) {
				// A whole number the type cannot hold.
				bits := te.Type.Bits()
				if te.Type.Kind() >= reflect.Uint {
					want = fmt.Sprintf("a whole number from 0 to %d", uint64(1)<<bits-1)
				} else {
					want = fmt.Sprintf("a whole number from %d to %d", int64(-1)<<(bits-1), int64(1)<<(bits-1)-1)
				}
			}
		case reflect.Float32, reflect.Float64:
			want = "a number"
		case reflect.String:
			want = "a string"
		case reflect.Bool:
			want = "true or false"
		case reflect.Struct, reflect.Map:
			want = "an object"
		case reflect.Slice, reflect.Array:
			want = "an array"
		}
	}
	// encoding/json names struct fields only, by their Go names where
	// they are embedded: the key of a map's entry ("bf16" under
	// peak_dense_tflops) and an array's index come from the text. Past
	// pathMaxOffset the walk of tokens to the error (about 10 MB/s) would
	// take longer than the decoding did: the last name of encoding/json's
	// path and the key written just before the value (keyBefore), with
	// the line, say where it is.
	if te.Offset <= pathMaxOffset {
		p, key, isKey := pathAt(data, te.Offset)
		switch {
		case isKey:
			if p == "" {
				p = "the JSON object"
			}
			return fmt.Sprintf("%s has the key %q, want %s", p, key, want)
		case p != "":
			return fmt.Sprintf("%s is %s, want %s", p, article(te.Value), want)
		case te.Field == "":
			return fmt.Sprintf("the JSON value is %s, want %s", article(te.Value), want)
		}
	}
	field := te.Field
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		field = field[i+1:]
	}
	// A map's key of the wrong type is reported as a number (encoding/json
	// reads keys for integer maps as numbers), at the quote that opens it.
	keyErr := strings.HasPrefix(te.Value, "number ") && te.Offset > 0 && te.Offset <= int64(len(data)) && data[te.Offset-1] == '"'
	if key, ok, isKey := keyBefore(data, te.Offset, keyErr); ok {
		if isKey {
			if field == "" {
				field = "the JSON object"
			}
			return fmt.Sprintf("%s has the key %q, want %s", field, key, want)
		}
		if !strings.EqualFold(key, field) { // an entry of the map field names
			field = appendKey([]byte(field), key)
		}
	}
	if field == "" {
		return fmt.Sprintf("a value is %s, want %s", article(te.Value), want)
	}
	return fmt.Sprintf("%s is %s, want %s", field, article(te.Value), want)
}

// wholeText reports whether n, a JSON number's text, has no fraction or
// exponent.
func wholeText(n string) bool {
	n = strings.TrimPrefix(n, "-")
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		if n[i] < '0' || n[i] > '9' {
			return false
		}
	}
	return true
}

// appendKey appends key to path as pathAt writes it: after a dot, or
// quoted in brackets when it is not a plain key.
func appendKey(path []byte, key string) string {
	if !plainKey(key) {
		return string(append(strconv.AppendQuote(append(path, '['), key), ']'))
	}
	if len(path) > 0 {
		path = append(path, '.')
	}
	return string(append(path, key...))
}

// keyBefore reads data backward from end, where a value ends as
// encoding/json reports it, to the key written before that value: the key
// and true, or false when the value is an array's element or the text is
// not as expected. With keyErr, end is just past the quote that opens a
// map's key of the wrong type: it is that key, true, true. It reads only
// the value and the key, however long the text.
func keyBefore(data []byte, end int64, keyErr bool) (key string, ok, isKey bool) {
	if end <= 0 || end > int64(len(data)) {
		return "", false, false
	}
	i := int(end)
	space := func(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
	// openQuote is the index of the quote that opens the string whose
	// closing quote is at j, or -1.
	openQuote := func(j int) int {
		for k := j - 1; k >= 0; k-- {
			if data[k] != '"' {
				continue
			}
			n := 0
			for b := k - 1; b >= 0 && data[b] == '\\'; b-- {
				n++
			}
			if n%2 == 0 {
				return k
			}
		}
		return -1
	}
	unquote := func(a, b int) (string, bool) {
		var k string
		return k, json.Unmarshal(data[a:b+1], &k) == nil
	}
	if keyErr {
		for j := i; j < len(data); j++ {
			if data[j] == '\\' {
				j++
			} else if data[j] == '"' {
				k, ok := unquote(i-1, j)
				return k, ok, ok
			}
		}
		return "", false, false
	}
	start := i - 1
	switch c := data[i-1]; {
	case c == '"':
		if start = openQuote(i - 1); start < 0 {
			return "", false, false
		}
	case c == '[' || c == '{':
	default:
		for start > 0 && !strings.ContainsRune(",:[{ \t\r\n", rune(data[start-1])) {
			start--
		}
	}
	j := start - 1
	for j >= 0 && space(data[j]) {
		j--
	}
	if j < 0 || data[j] != ':' {
		return "", false, false
	}
	for j--; j >= 0 && space(data[j]); j-- {
	}
	if j < 0 || data[j] != '"' {
		return "", false, false
	}
	a := openQuote(j)
	if a < 0 {
		return "", false, false
	}
	k, ok := unquote(a, j)
	return k, ok, false
}

// pathMaxOffset is the furthest into a text that Describe walks to name a
// value by its path (8 MiB: a hardware spec or model file is at most 1 MiB;
// a cost model can be 64 MiB and a search's results hundreds). A variable
// so that a test can lower it.
var pathMaxOffset int64 = 8 << 20

// pathAt is the path in data of the value that ends where encoding/json
// reported a value of the wrong type, offset: object keys joined by dots,
// array elements by their index in brackets ("gpu.peak_dense_tflops.bf16",
// "gpu.gemm_efficiency[2][0]"), a key of other characters than ASCII letters,
// digits, '_' and '-' quoted in brackets (`runtimes_ns["aten.gelu"]`); ""
// for the top value, or when data does not read as JSON up to there. When
// what ends there is a map's key (of the wrong type for the map's keys),
// it is the path of the map, the key and true. The path is written once,
// when the token reaching offset is read: the walk costs a token at a
// time, whatever the depth.
func pathAt(data []byte, offset int64) (path, key string, isKey bool) {
	type frame struct {
		object  bool
		key     string
		index   int
		wantKey bool
	}
	var stack []frame
	render := func() string {
		var b []byte
		for _, f := range stack {
			switch {
			case !f.object:
				b = append(strconv.AppendInt(append(b, '['), int64(f.index), 10), ']')
			case !plainKey(f.key):
				b = append(strconv.AppendQuote(append(b, '['), f.key), ']')
			default:
				if len(b) > 0 {
					b = append(b, '.')
				}
				b = append(b, f.key...)
			}
		}
		return string(b)
	}
	// next moves the enclosing object or array past a value.
	next := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].object {
				stack[n-1].wantKey = true
			} else {
				stack[n-1].index++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", "", false
		}
		reached := dec.InputOffset() >= offset
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:n-1]
				next()
				continue
			}
			k, _ := tok.(string)
			if reached { // a map's key of the wrong type
				stack = stack[:n-1]
				return render(), k, true
			}
			stack[n-1].key = k
			stack[n-1].wantKey = false
			continue
		}
		if tok == json.Delim(']') {
			stack = stack[:len(stack)-1]
			next()
			continue
		}
		if reached { // the value: a scalar, or the start of an object or array
			return render(), "", false
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{object: true, wantKey: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		default:
			next()
		}
	}
}

// plainKey reports whether a key can stand in a path as it is: ASCII letters,
// digits, '_' and '-' only, and at least one.
func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// article puts "a" or "an" before a JSON kind as encoding/json names it
// ("array", "number 1.5", "string").
func article(v string) string {
	if v != "" && strings.ContainsRune("aeiou", rune(v[0])) {
		return "an " + v
	}
	return "a " + v
}

// lineAt is the line holding the byte before offset: a decoder reports an
// error after reading the byte that caused it.
func lineAt(data []byte, offset int64) int {
	offset = min(max(offset-1, 0), int64(len(data)))
	return 1 + bytes.Count(data[:offset], []byte("\n"))
}

// Key returns the line of the key at path (object keys from the top, as
// "fixed", "reduce_ns"; in an array, an element's decimal index, as
// "gemm_efficiency", "2") in data, a JSON object, so that a value decoded
// well but out of range can be blamed on its line: the line of the key,
// or of where the element starts; 1 if path is not there. A key is found
// as encoding/json decodes it into a struct field: by a case-insensitive
// match, the last of several that match, since that one's value is the
// one the decoder keeps and a check refuses. A key of a map, which
// encoding/json matches exactly, is given as Exact(key).
func Key(data []byte, path ...string) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	if off, ok := keyOffset(dec, path); ok {
		return lineAt(data, off)
	}
	return 1
}

// exactMark starts a path element that Exact made.
const exactMark = "\x00"

// Exact marks name, in a path given to Key, as a key of a map: matched
// exactly ("mm" is not "MM"), where a struct field's name is matched
// without regard to case.
func Exact(name string) string { return exactMark + name }

// keyOffset reads the object or array dec is at up to path's key or
// element and returns the offset just after that key, or just after the
// element's first token.
func keyOffset(dec *json.Decoder, path []string) (int64, bool) {
	if len(path) == 0 {
		return 0, false
	}
	tok, err := dec.Token()
	if err != nil {
		return 0, false
	}
	switch tok {
	case json.Delim('{'):
		// Every key is read: a later one that matches takes the place of
		// an earlier one, as it does when encoding/json decodes.
		var at int64
		found := false
		want, exact := strings.CutPrefix(path[0], exactMark)
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return 0, false
			}
			name, _ := k.(string)
			if exact && name != want || !exact && !strings.EqualFold(name, want) {
				if !skip(dec) {
					return 0, false
				}
				continue
			}
			if len(path) == 1 {
				at, found = dec.InputOffset(), true
				if !skip(dec) {
					return 0, false
				}
				continue
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return 0, false
			}
			// v ends where the decoder now is: the offset within v, moved
			// to where v starts in the whole text. A later object that
			// lacks the path leaves the earlier match: encoding/json
			// decodes it into the same struct or map, which keeps what
			// it does not name.
			if off, ok := keyOffset(json.NewDecoder(bytes.NewReader(v)), path[1:]); ok {
				at, found = dec.InputOffset()-int64(len(v))+off, true
			}
		}
		return at, found
	case json.Delim('['):
		i, err := strconv.Atoi(path[0])
		if err != nil || i < 0 || strconv.Itoa(i) != path[0] {
			return 0, false
		}
		for ; dec.More(); i-- {
			if i == 0 {
				if len(path) == 1 {
					if _, err := dec.Token(); err != nil {
						return 0, false
					}
					return dec.InputOffset(), true
				}
				return keyOffset(dec, path[1:])
			}
			if !skip(dec) {
				return 0, false
			}
		}
	}
	return 0, false
}

// skip reads past the value dec is at.
func skip(dec *json.Decoder) bool {
	var v json.RawMessage
	return dec.Decode(&v) == nil
}

// Duplicate finds a key given twice in one object of data, which
// encoding/json accepts, keeping the last (a model file's "layers": 24,
// "layers": 2 would train 2 layers); a history's lines are refused for it
// too. data must be valid JSON: decode it first. It returns the line of
// the second and what is wrong, or ok false when no key repeats.
func Duplicate(data []byte) (line int, msg string, ok bool) {
	type frame struct {
		object, wantKey bool
		keys            map[string]bool
	}
	var stack []frame
	for i := 0; i < len(data); {
		switch data[i] {
		case '{':
			stack = append(stack, frame{object: true, wantKey: true})
		case '[':
			stack = append(stack, frame{})
		case '}', ']':
			stack = stack[:len(stack)-1]
		case ',':
			if top := len(stack) - 1; stack[top].object {
				stack[top].wantKey = true
			}
		case '"':
			j := i + 1
			for data[j] != '"' {
				if data[j] == '\\' {
					j++
				}
				j++
			}
			j++
			if top := len(stack) - 1; top >= 0 && stack[top].wantKey {
				f := &stack[top]
				f.wantKey = false
				key := string(data[i+1 : j-1])
				if bytes.IndexByte(data[i+1:j-1], '\\') >= 0 {
					// As encoding/json compares keys: unescaped.
					json.Unmarshal(data[i:j], &key)
				}
				if f.keys[key] {
					return lineAt(data, int64(i)), fmt.Sprintf("key %q appears twice in one object", key), true
				}
				if f.keys == nil {
					f.keys = make(map[string]bool)
				}
				f.keys[key] = true
			}
			i = j
			continue
		}
		i++
	}
	return 0, "", false
}
