package jsonl

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/fastsim/fastsim/internal/values"
)

// Kind is the JSON type of the next value.
type Kind uint8

// The JSON kinds; KindEnd means no value is left on the line.
const (
	KindInvalid Kind = iota
	KindObject
	KindArray
	KindString
	KindNumber
	KindBool
	KindNull
	KindEnd
)

var kindNames = [...]string{"invalid JSON", "an object", "a list", "a string", "a number", "a boolean", "null", "the end of the line"}

// String names the kind with its article, for error messages ("a string").
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Scanner walks the JSON text of one line. The zero value is ready to use;
// call Reset with each line. Methods consume one value each; objects and
// arrays are walked with BeginObject/NextKey and BeginArray/NextElem.
// Byte slices it returns alias the line or an internal buffer and are valid
// until the next call that returns the same kind of slice.
type Scanner struct {
	buf   []byte
	pos   int
	depth int
	more  uint64 // bit d: the container at depth d has had an element
	high  bool   // a string held a byte >= 0x80 (see ResetUnchecked)

	keyBuf []byte // unescaped keys

	// The keys of the objects open at each depth, so that a key repeated
	// in one object is an error (JSON leaves it undefined, and decoders
	// would keep one value or the other).
	keys    []byte              // unescaped, back to back
	keyEnd  []int32             // end of each key in keys
	keyHash []uint64            // FNV-1a of each key
	objKeys [MaxDepth + 1]int32 // by depth: index of the open object's first key
	keyMaps []map[uint64]int32  // by depth: an index of a large object's keys
	strBuf  []byte              // unescaped string values

	intern map[string]string
	recent [64]string // the interned strings last returned, by a hash of their bytes

	// KeepExtra makes generated decoders record, in a message's Extras,
	// the fields the spec does not declare and the order of its keys (see
	// CaptureExtras). Off, they are skipped at no cost.
	KeepExtra bool
}

// Mark is a position in the line that Rewind returns to.
type Mark struct {
	pos, depth int
	more       uint64
	nkeys      int
}

// Reset starts scanning line. It fails if line is not valid UTF-8 or holds a
// NUL byte. The interned strings are kept.
func (s *Scanner) Reset(line []byte) error {
	s.ResetUnchecked(line)
	if err := CheckEncoding(line); err != nil {
		s.buf = nil
		return err
	}
	return nil
}

// ResetUnchecked starts scanning line like Reset but leaves its encoding
// unchecked, which spares a pass over every byte. The scanner accepts
// bytes of 0x80 and up only inside strings, and NonASCII reports whether
// a string read since held one; so after a line is read to its end
// without error and NonASCII is false, the line is ASCII without NUL
// bytes, as Reset checks. Otherwise (an error, or NonASCII) the caller
// calls CheckEncoding and reports its error first, as Reset would have.
func (s *Scanner) ResetUnchecked(line []byte) {
	s.buf, s.pos, s.depth, s.more, s.high = line, 0, 0, 0, false
	s.truncKeys(0)
}

// NonASCII reports whether a string read since ResetUnchecked held a byte
// of 0x80 or more.
func (s *Scanner) NonASCII() bool { return s.high }

// CheckEncoding returns the ErrEncoding that Reset returns for line (a
// NUL byte, or text that is not valid UTF-8), or nil.
func CheckEncoding(line []byte) error {
	if asciiText(line) {
		return nil
	}
	if i := bytes.IndexByte(line, 0); i >= 0 {
		return errorf(ErrEncoding, "NUL byte at column %d", i+1)
	}
	if !utf8.Valid(line) {
		return errorf(ErrEncoding, "the line is not valid UTF-8")
	}
	return nil
}

// asciiText reports whether line is ASCII without NUL bytes, eight bytes at
// a time: such a line is valid UTF-8, and Reset needs no further check.
func asciiText(line []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	var bad uint64
	// Four words at a time: independent loads, one loop test per 32 bytes.
	for ; i+32 <= len(line); i += 32 {
		p := line[i : i+32]
		w0 := binary.LittleEndian.Uint64(p)
		w1 := binary.LittleEndian.Uint64(p[8:])
		w2 := binary.LittleEndian.Uint64(p[16:])
		w3 := binary.LittleEndian.Uint64(p[24:])
		bad |= w0 | (w0-ones)&^w0 | w1 | (w1-ones)&^w1 | w2 | (w2-ones)&^w2 | w3 | (w3-ones)&^w3
	}
	for ; i+8 <= len(line); i += 8 {
		w := binary.LittleEndian.Uint64(line[i:])
		bad |= w | (w-ones)&^w
	}
	for ; i < len(line); i++ {
		c := uint64(line[i])
		bad |= c | ((c+0x7f)&0x80 ^ 0x80) // high bit when c >= 0x80 or c == 0
	}
	return bad&highs == 0
}

// Pos is the byte offset of the scanner in the line.
func (s *Scanner) Pos() int { return s.pos }

// Mark returns the current position, for Rewind.
func (s *Scanner) Mark() Mark { return Mark{s.pos, s.depth, s.more, len(s.keyHash)} }

// Rewind returns to a position returned by Mark on the same line.
func (s *Scanner) Rewind(m Mark) {
	s.pos, s.depth, s.more = m.pos, m.depth, m.more
	s.truncKeys(m.nkeys)
}

// truncKeys forgets the keys recorded after the first n.
func (s *Scanner) truncKeys(n int) {
	if n >= len(s.keyHash) {
		return
	}
	s.keyHash, s.keyEnd = s.keyHash[:n], s.keyEnd[:n]
	if n == 0 {
		s.keys = s.keys[:0]
	} else {
		s.keys = s.keys[:s.keyEnd[n-1]]
	}
}

// manyKeys is how many keys an object holds before its keys are indexed
// by a map rather than compared one by one.
const manyKeys = 16

// checkKey records key, which starts at byte at, as a key of the object open at the current depth;
// seen before in that object, it is an error.
func (s *Scanner) checkKey(key []byte, at int) error {
	h := uint64(14695981039346656037)
	for _, c := range key {
		h = (h ^ uint64(c)) * 1099511628211
	}
	first := int(s.objKeys[s.depth])
	n := len(s.keyHash) - first
	if n < manyKeys {
		for i := first; i < len(s.keyHash); i++ {
			if s.keyHash[i] == h && string(s.keyAt(i)) == string(key) {
				return duplicate(key, at)
			}
		}
	} else {
		for len(s.keyMaps) <= s.depth {
			s.keyMaps = append(s.keyMaps, nil)
		}
		m := s.keyMaps[s.depth]
		if m == nil {
			m = make(map[uint64]int32)
			s.keyMaps[s.depth] = m
		}
		if n == manyKeys {
			clear(m)
			for i := first; i < len(s.keyHash); i++ {
				m[s.keyHash[i]] = int32(i)
			}
		}
		// An entry may be stale (left by a rewind or by an earlier
		// object): it counts only if it names a key of this object
		// equal to this one.
		if i, ok := m[h]; ok && int(i) >= first && int(i) < len(s.keyHash) && string(s.keyAt(int(i))) == string(key) {
			return duplicate(key, at)
		}
		m[h] = int32(len(s.keyHash))
	}
	s.keys = append(s.keys, key...)
	s.keyEnd = append(s.keyEnd, int32(len(s.keys)))
	s.keyHash = append(s.keyHash, h)
	return nil
}

func (s *Scanner) keyAt(i int) []byte {
	from := int32(0)
	if i > 0 {
		from = s.keyEnd[i-1]
	}
	return s.keys[from:s.keyEnd[i]]
}

func duplicate(key []byte, at int) error {
	return errorf(ErrDuplicateKey, "key %q appears twice in one object (again at column %d)", key, at+1)
}

// pushObject opens an object: its key list starts empty.
func (s *Scanner) pushObject() error {
	if err := s.push(); err != nil {
		return err
	}
	s.objKeys[s.depth] = int32(len(s.keyHash))
	return nil
}

// startsWith reports whether the line continues with lit at the scanner.
func (s *Scanner) startsWith(lit string) bool {
	return len(s.buf)-s.pos >= len(lit) && string(s.buf[s.pos:s.pos+len(lit)]) == lit
}

// SkipText consumes text if the line continues with it, and reports
// whether it did. text must be one whole JSON value that this scanner
// accepted before at the same depth (a value is decided by its own
// bytes), so consuming it is reading it again.
func (s *Scanner) SkipText(text []byte) bool {
	if len(text) == 0 || len(s.buf)-s.pos < len(text) || string(s.buf[s.pos:s.pos+len(text)]) != string(text) {
		return false
	}
	s.pos += len(text)
	return true
}

// Bytes returns the line text between two positions.
func (s *Scanner) Bytes(from, to int) []byte { return s.buf[from:to:to] }

func (s *Scanner) ws() {
	for s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *Scanner) syntax(what string) error {
	if s.pos >= len(s.buf) {
		return errorf(ErrSyntax, "invalid JSON: %s at the end of the line", what)
	}
	c := s.buf[s.pos]
	if c >= 0x20 && c < 0x7f {
		return errorf(ErrSyntax, "invalid JSON at column %d: %s, found %q", s.pos+1, what, c)
	}
	return errorf(ErrSyntax, "invalid JSON at column %d: %s, found byte 0x%02x", s.pos+1, what, c)
}

// Kind skips whitespace and returns the kind of the next value without
// consuming it.
func (s *Scanner) Kind() Kind {
	s.ws()
	if s.pos >= len(s.buf) {
		return KindEnd
	}
	switch c := s.buf[s.pos]; c {
	case '{':
		return KindObject
	case '[':
		return KindArray
	case '"':
		return KindString
	case 't', 'f':
		return KindBool
	case 'n':
		return KindNull
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return KindNumber
		}
		return KindInvalid
	}
}

func (s *Scanner) want(what string, k Kind) error {
	if k == KindInvalid || k == KindEnd {
		return s.syntax("want a value")
	}
	return errorf(ErrType, "want %s, got %s", what, k)
}

// End checks that only whitespace is left on the line.
func (s *Scanner) End() error {
	s.ws()
	if s.pos != len(s.buf) {
		return s.syntax("want the end of the line")
	}
	return nil
}

func (s *Scanner) push() error {
	if s.depth >= MaxDepth {
		return errorf(ErrDepth, "objects and lists nest deeper than %d at column %d", MaxDepth, s.pos+1)
	}
	s.pos++
	s.depth++
	s.more &^= 1 << uint(s.depth-1)
	return nil
}

// BeginObject consumes the '{' of an object.
func (s *Scanner) BeginObject() error {
	if s.pos < len(s.buf) && s.buf[s.pos] == '{' {
		return s.pushObject()
	}
	if k := s.Kind(); k != KindObject {
		return s.want("an object", k)
	}
	return s.pushObject()
}

// BeginArray consumes the '[' of an array.
func (s *Scanner) BeginArray() error {
	if s.pos < len(s.buf) && s.buf[s.pos] == '[' {
		return s.push()
	}
	if k := s.Kind(); k != KindArray {
		return s.want("a list", k)
	}
	return s.push()
}

// NextKey moves to the next key of the object begun by BeginObject. It
// returns the unescaped key and true, with the scanner at the key's value
// (which the caller must consume), or false at the end of the object (which
// it consumes). A key the object already had is an ErrDuplicateKey.
func (s *Scanner) NextKey() (key []byte, ok bool, err error) {
	key, at, ok, err := s.NextKeyAt()
	if err != nil || !ok {
		return nil, ok, err
	}
	if err := s.checkKey(key, at); err != nil {
		return nil, false, err
	}
	return key, true, nil
}

// NextKeyAt is NextKey without the check for repeated keys: it also returns
// the key's byte offset, and the caller checks instead, either with a bit per
// key it knows (Duplicate makes the error) or with CheckKey for the others.
// Decoders generated from the spec use it so that known keys cost no lookup.
func (s *Scanner) NextKeyAt() (key []byte, at int, ok bool, err error) {
	b := s.buf
	i := s.pos
	if i < len(b) && b[i] <= ' ' {
		s.ws()
		i = s.pos
	}
	if i >= len(b) {
		return nil, 0, false, s.syntax("unterminated object")
	}
	bit := uint64(1) << uint(s.depth-1)
	c := b[i]
	if c == '}' {
		s.pos = i + 1
		s.truncKeys(int(s.objKeys[s.depth]))
		s.depth--
		return nil, 0, false, nil
	}
	if s.more&bit != 0 {
		if c != ',' {
			return nil, 0, false, s.syntax("want ',' or '}' in object")
		}
		i++
		s.pos = i
		if i < len(b) && b[i] <= ' ' {
			s.ws()
			i = s.pos
		}
	}
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false, s.syntax("want a key in object")
	}
	s.more |= bit
	at = i
	// A key without escapes, the usual case, is the line's bytes up to
	// the closing quote.
	j := plainRun(b, i+1)
	if j < len(b) && b[j] == '"' {
		key = b[i+1 : j : j]
		s.pos = j + 1
	} else if key, err = s.str(&s.keyBuf); err != nil {
		return nil, 0, false, err
	}
	i = s.pos
	if i < len(b) && b[i] == ':' {
		s.pos = i + 1
		return key, at, true, nil
	}
	s.ws()
	if s.pos >= len(b) || b[s.pos] != ':' {
		return nil, 0, false, s.syntax("want ':' after key")
	}
	s.pos++
	return key, at, true, nil
}

// plainRun returns the offset of the first byte of b from i on that is a
// quote, a backslash, a control character or not ASCII (which the slow
// paths read, noting it for NonASCII), or len(b): eight bytes at a time
// (the bytes of a word that equal a given byte have their high bit set by
// (w^c - 0x01..) &^ (w^c) & 0x80..; a byte of 0x80 or more has it set in
// w; the lowest such flag is exact).
func plainRun(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for i+8 <= len(b) {
		w := binary.LittleEndian.Uint64(b[i:])
		q := w ^ ('"' * ones)
		e := w ^ ('\\' * ones)
		m := (q-ones)&^q | (e-ones)&^e | (w-0x20*ones)&^w | w
		if m &= highs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < len(b) && plainByte[b[i]] {
		i++
	}
	return i
}

// plainByte marks the bytes plainRun passes: ASCII, not a quote, a
// backslash or a control character.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// Fields is the set of keys an object type declares, for NextField.
type Fields struct {
	names []string
	lits  []fieldLit // by field: `,"name":` as a compact writer puts it
}

// fieldLit is `,"name":` (the text between a value and the next field's
// value, as written compactly) in three little-endian words with the
// masks of their meaningful bytes, so that NextField compares it with the
// line in two or three loads instead of a call to compare memory. Keys
// longer than that, and the end of a line, compare text.
type fieldLit struct {
	text string
	w, m [3]uint64
	n    int // bytes to load: 16, 24, or 0 for a key too long
}

// NewFields returns the key set names (field i is names[i]).
func NewFields(names ...string) *Fields {
	f := &Fields{names: names}
	for _, n := range names {
		f.lits = append(f.lits, newLit(","+strconv.Quote(n)+":"))
	}
	return f
}

// newLit returns text as a fieldLit, for match.
func newLit(text string) fieldLit {
	l := fieldLit{text: text}
	switch {
	case len(text) <= 16:
		l.n = 16
	case len(text) <= 24:
		l.n = 24
	}
	for k := 0; k < len(text) && k < 24; k++ {
		l.w[k/8] |= uint64(text[k]) << (8 * (k % 8))
		l.m[k/8] |= 0xff << (8 * (k % 8))
	}
	return l
}

// match reports whether b continues at j with l's text, from its byte
// from on (0: with the comma, 1: without, compared from b[j-1], which
// must exist, with that byte masked out).
func (l *fieldLit) match(b []byte, j, from int) bool {
	if k := j - from; l.n != 0 && len(b)-k >= l.n {
		p := b[k : k+l.n]
		x := (binary.LittleEndian.Uint64(p)^l.w[0])&(l.m[0]&^(1<<(8*from)-1)) |
			(binary.LittleEndian.Uint64(p[8:])^l.w[1])&l.m[1]
		if l.n == 24 {
			x |= (binary.LittleEndian.Uint64(p[16:]) ^ l.w[2]) & l.m[2]
		}
		return x == 0
	}
	t := l.text[from:]
	return len(b)-j >= len(t) && string(b[j:j+len(t)]) == t
}

// NextField is NextKeyAt for an object whose keys are f: it also returns
// the key's field number in f, or -1 for a key f does not declare. Writers
// put the fields in order, so it first tries field hint as written
// compactly ("name": at the scanner) and reads the key the general way
// only when that fails.
func (s *Scanner) NextField(f *Fields, hint int) (field int, key []byte, at int, ok bool, err error) {
	b := s.buf
	i := s.pos
	if hint < len(f.lits) && i < len(b) {
		l := &f.lits[hint]
		bit := uint64(1) << uint(s.depth-1)
		if s.more&bit != 0 {
			// match, inlined for the usual key of at most 16 bytes.
			if l.n == 16 && len(b)-i >= 16 {
				p := b[i : i+16]
				if (binary.LittleEndian.Uint64(p)^l.w[0])&l.m[0]|(binary.LittleEndian.Uint64(p[8:])^l.w[1])&l.m[1] == 0 {
					n := len(l.text)
					s.pos = i + n
					return hint, p[2 : n-2 : n-2], i + 1, true, nil
				}
			} else if l.match(b, i, 0) {
				n := len(l.text)
				s.pos = i + n
				return hint, b[i+2 : i+n-2 : i+n-2], i + 1, true, nil
			}
		} else if b[i] == '"' && i > 0 && l.match(b, i, 1) {
			// The first key: the text without its comma, compared from
			// the byte before it (the '{'), masked out.
			n := len(l.text) - 1
			s.more |= bit
			s.pos = i + n
			return hint, b[i+1 : i+n-2 : i+n-2], i, true, nil
		}
	}
	key, at, ok, err = s.NextKeyAt()
	if err != nil || !ok {
		return -1, key, at, ok, err
	}
	for k, n := range f.names {
		if n == string(key) {
			return k, key, at, true, nil
		}
	}
	return -1, key, at, true, nil
}

// CheckKey records key, returned by NextKeyAt at offset at, as a key of the
// current object: seen before in that object (by CheckKey or NextKey), it is
// an ErrDuplicateKey.
func (s *Scanner) CheckKey(key []byte, at int) error { return s.checkKey(key, at) }

// Duplicate is the error for key, returned by NextKeyAt at offset at, when
// the object already had it.
func Duplicate(key []byte, at int) error { return duplicate(key, at) }

// NextElem moves to the next element of the array begun by BeginArray. It
// returns true with the scanner at the element (which the caller must
// consume) or false at the end of the array (which it consumes).
func (s *Scanner) NextElem() (bool, error) {
	s.ws()
	if s.pos >= len(s.buf) {
		return false, s.syntax("unterminated list")
	}
	bit := uint64(1) << uint(s.depth-1)
	if s.buf[s.pos] == ']' {
		s.pos++
		s.depth--
		return false, nil
	}
	if s.more&bit != 0 {
		if s.buf[s.pos] != ',' {
			return false, s.syntax("want ',' or ']' in list")
		}
		s.pos++
		s.ws()
		if s.pos < len(s.buf) && s.buf[s.pos] == ']' {
			return false, s.syntax("want a value after ','")
		}
	}
	s.more |= bit
	return true, nil
}

// SkipRest skips the remaining members of the current object, up to and
// including its '}'.
func (s *Scanner) SkipRest() error {
	for {
		_, ok, err := s.NextKey()
		if err != nil || !ok {
			return err
		}
		if err := s.Skip(); err != nil {
			return err
		}
	}
}

// Skip consumes and validates one value of any kind.
func (s *Scanner) Skip() error {
	switch k := s.Kind(); k {
	case KindObject:
		if err := s.pushObject(); err != nil {
			return err
		}
		return s.SkipRest()
	case KindArray:
		if err := s.push(); err != nil {
			return err
		}
		for {
			ok, err := s.NextElem()
			if err != nil || !ok {
				return err
			}
			if err := s.Skip(); err != nil {
				return err
			}
		}
	case KindString:
		return s.skipString()
	case KindNumber:
		_, _, err := s.number()
		return err
	case KindBool:
		_, err := s.Bool()
		return err
	case KindNull:
		if !s.Null() {
			return s.syntax("want a value")
		}
		return nil
	default:
		return s.syntax("want a value")
	}
}

func (s *Scanner) literal(lit string) bool {
	if len(s.buf)-s.pos >= len(lit) && string(s.buf[s.pos:s.pos+len(lit)]) == lit {
		s.pos += len(lit)
		return true
	}
	return false
}

// Null consumes a null and reports whether there was one.
func (s *Scanner) Null() bool {
	if s.Kind() != KindNull {
		return false
	}
	return s.literal("null")
}

// Bool consumes a boolean.
func (s *Scanner) Bool() (bool, error) {
	if k := s.Kind(); k != KindBool {
		return false, s.want("a boolean", k)
	}
	if s.literal("true") {
		return true, nil
	}
	if s.literal("false") {
		return false, nil
	}
	return false, s.syntax("want a value")
}

// number consumes a JSON number and returns its text and whether it is an
// integer (no fraction, no exponent).
func (s *Scanner) number() (text []byte, integer bool, err error) {
	start := s.pos
	b := s.buf
	i := s.pos
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		s.pos = i
		return nil, false, s.syntax("want a digit")
	}
	integer = true
	if i < len(b) && b[i] == '.' {
		integer = false
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			s.pos = i
			return nil, false, s.syntax("want a digit after '.'")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			s.pos = i
			return nil, false, s.syntax("want a digit in exponent")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	s.pos = i
	return b[start:i], integer, nil
}

// Int consumes an integer that fits in an int64.
func (s *Scanner) Int() (int64, error) {
	// The usual integer, at most 18 digits and so no overflow, is read in
	// one pass; anything else takes the general path below.
	b := s.buf
	i := s.pos
	if i < len(b) && b[i] <= ' ' {
		s.ws()
		i = s.pos
	}
	j := i
	neg := j < len(b) && b[j] == '-'
	if neg {
		j++
	}
	if j < len(b) && b[j] >= '0' && b[j] <= '9' {
		var u uint64
		u, j = digitRun(b, j)
		if j >= len(b) || !numberByte[b[j]] {
			s.pos = j
			if neg {
				return -int64(u), nil
			}
			return int64(u), nil
		}
	}
	return s.intSlow()
}

// numberByte marks the bytes that may continue a JSON number.
var numberByte = [256]bool{'0': true, '1': true, '2': true, '3': true, '4': true, '5': true, '6': true, '7': true, '8': true, '9': true, '.': true, 'e': true, 'E': true, '+': true, '-': true}

// intSlow is Int for every case, with its errors.
func (s *Scanner) intSlow() (int64, error) {
	if k := s.Kind(); k != KindNumber {
		return 0, s.want("an integer", k)
	}
	text, integer, err := s.number()
	if err != nil {
		return 0, err
	}
	if !integer {
		return 0, errorf(ErrType, "want an integer, got %s", text)
	}
	neg := text[0] == '-'
	if neg {
		text = text[1:]
	}
	var u uint64
	for _, c := range text {
		d := uint64(c - '0')
		if u > (1<<63)/10 || u*10 > 1<<63-d {
			return 0, errorf(values.ErrRange, "integer %s%s does not fit in 64 bits", sign(neg), text)
		}
		u = u*10 + d
	}
	if neg {
		return -int64(u), nil // -(1<<63) wraps to itself
	}
	if u > 1<<63-1 {
		return 0, errorf(values.ErrRange, "integer %s does not fit in 64 bits", text)
	}
	return int64(u), nil
}

func sign(neg bool) string {
	if neg {
		return "-"
	}
	return ""
}

// Ints consumes a list of integers, appending them to dst[:0].
func (s *Scanner) Ints(dst []int64) ([]int64, error) {
	if d, ok := s.intsFast(dst); ok {
		return d, nil
	}
	dst = dst[:0]
	if err := s.BeginArray(); err != nil {
		return dst, err
	}
	for {
		ok, err := s.NextElem()
		if err != nil || !ok {
			return dst, err
		}
		v, err := s.Int()
		if err != nil {
			return dst, err
		}
		dst = append(dst, v)
	}
}

// intsFast reads a list of small integers written without whitespace, the
// usual case, in one pass. Anything else (whitespace, large numbers,
// errors, the nesting limit) returns false with the scanner where it was,
// for Ints to read the general way.
func (s *Scanner) intsFast(dst []int64) ([]int64, bool) {
	b := s.buf
	i := s.pos
	if i >= len(b) || b[i] != '[' || s.depth >= MaxDepth {
		return dst, false
	}
	i++
	dst = dst[:0]
	if i < len(b) && b[i] == ']' {
		s.pos = i + 1
		return dst, true
	}
	for {
		neg := i < len(b) && b[i] == '-'
		if neg {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return dst, false
		}
		var u uint64
		u, i = digitRun(b, i)
		if i >= len(b) {
			return dst, false
		}
		v := int64(u)
		if neg {
			v = -v
		}
		switch b[i] {
		case ',':
			dst = append(dst, v)
			i++
		case ']':
			s.pos = i + 1
			return append(dst, v), true
		default:
			return dst, false
		}
	}
}

// Strings consumes a list of strings, appending them, interned, to dst[:0].
func (s *Scanner) Strings(dst []string) ([]string, error) {
	dst = dst[:0]
	if err := s.BeginArray(); err != nil {
		return dst, err
	}
	for {
		ok, err := s.NextElem()
		if err != nil || !ok {
			return dst, err
		}
		v, err := s.String()
		if err != nil {
			return dst, err
		}
		dst = append(dst, v)
	}
}

// Str consumes a string and returns it unescaped. The bytes alias the line
// or an internal buffer and are valid until the next call of Str.
func (s *Scanner) Str() ([]byte, error) {
	if s.pos < len(s.buf) && s.buf[s.pos] == '"' {
		return s.str(&s.strBuf)
	}
	if k := s.Kind(); k != KindString {
		return nil, s.want("a string", k)
	}
	return s.str(&s.strBuf)
}

// String consumes a string and returns it interned.
func (s *Scanner) String() (string, error) {
	b, err := s.Str()
	if err != nil {
		return "", err
	}
	return s.Intern(b), nil
}

// Intern returns a string equal to b. Equal byte strings give the same
// string, allocated once, until MaxInterned strings are held; longer or
// further strings are copied.
func (s *Scanner) Intern(b []byte) string {
	// A small cache in front of the map: a history names few strings
	// (functions, dtypes, streams) over and over.
	h := 0
	if len(b) > 0 {
		h = (len(b)*31 + int(b[0])*7 + int(b[len(b)-1])) & (len(s.recent) - 1)
		if v := s.recent[h]; v == string(b) {
			return v
		}
	}
	if v, ok := s.intern[string(b)]; ok {
		s.recent[h] = v
		return v
	}
	v := string(b)
	if len(b) <= MaxInternedBytes && len(s.intern) < MaxInterned {
		if s.intern == nil {
			s.intern = make(map[string]string)
		}
		s.intern[v] = v
	}
	return v
}

// str consumes the string at s.pos (a '"'), unescaping into *scratch when it
// holds escapes.
func (s *Scanner) str(scratch *[]byte) ([]byte, error) {
	b := s.buf
	start := s.pos + 1
	i := plainRun(b, start)
	for i < len(b) {
		c := b[i]
		if c == '"' {
			s.pos = i + 1
			return b[start:i:i], nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			s.pos = i
			return nil, s.syntax("control character in string")
		}
		if c >= 0x80 {
			s.high = true
		}
		i++
	}
	if i >= len(b) {
		s.pos = i
		return nil, s.syntax("unterminated string")
	}
	out := append((*scratch)[:0], b[start:i]...)
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			s.pos = i + 1
			*scratch = out
			return out, nil
		case c < 0x20:
			s.pos = i
			return nil, s.syntax("control character in string")
		case c != '\\':
			if c >= 0x80 {
				s.high = true
			}
			out = append(out, c)
			i++
			continue
		}
		i++
		if i >= len(b) {
			break
		}
		switch b[i] {
		case '"', '\\', '/':
			out = append(out, b[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(b, i+1)
			if !ok {
				s.pos = i
				return nil, s.syntax("want 4 hex digits after \\u")
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok2 := rune(-1), false
				if i+6 < len(b) && b[i+1] == '\\' && b[i+2] == 'u' {
					r2, ok2 = hex4(b, i+3)
				}
				if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			s.pos = i
			return nil, s.syntax("invalid escape in string")
		}
		i++
	}
	s.pos = i
	return nil, s.syntax("unterminated string")
}

func (s *Scanner) skipString() error {
	b := s.buf
	i := s.pos + 1
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			s.pos = i + 1
			return nil
		case c < 0x20:
			s.pos = i
			return s.syntax("control character in string")
		case c >= 0x80:
			s.high = true
		case c == '\\':
			i++
			if i >= len(b) {
				s.pos = i
				return s.syntax("unterminated string")
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if _, ok := hex4(b, i+1); !ok {
					s.pos = i
					return s.syntax("want 4 hex digits after \\u")
				}
				i += 4
			default:
				s.pos = i
				return s.syntax("invalid escape in string")
			}
		}
		i++
	}
	s.pos = i
	return s.syntax("unterminated string")
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// uintAt reads the JSON integer of at most 18 digits, without sign, that
// starts at b[i], and returns it and the offset after it; ok is false if
// b[i] is not a digit. A leading zero ends the number ("0" only), so
// whatever byte follows is the caller's to check: fast paths accept only
// the separator they expect and leave anything else to the general path.
func uintAt(b []byte, i int) (v int64, j int, ok bool) {
	if i >= len(b) || b[i]-'0' > 9 {
		return 0, i, false
	}
	u, j := digitRun(b, i)
	return int64(u), j, true
}

// digitRun reads the digits of a JSON integer that start at b[i], a digit:
// "0" alone when it is '0' (JSON has no leading zeros), else at most 18
// digits, so the value fits in 63 bits. It returns the value and the
// offset after the digits; the caller checks what follows (a 19th digit
// means a number too long for the fast paths).
//
// Eight bytes are read at a time: a byte is a digit when b-'0' is at most
// 9, i.e. when neither b-'0' nor b-'0'+0x76 has its high bit set (a borrow
// or carry runs only towards later bytes, past the first non-digit, so
// the lowest flag is exact); n digits are shifted to the top of the word
// (leading zeros) and combined in pairs, fours and eights by three
// multiplications: the method of simdjson's scalar
// parse_eight_digits_unrolled (src/fallback/numberparsing.h), which
// credits Johnny Lee, "Fast numeric string to int"
// (johnnylee-sde.github.io/Fast-numeric-string-to-int).
func digitRun(b []byte, i int) (u uint64, j int) {
	if b[i] == '0' {
		return 0, i + 1
	}
	if i+1 >= len(b) || b[i+1]-'0' > 9 {
		return uint64(b[i] - '0'), i + 1 // one digit: sizes, strides, refs
	}
	const zeros, adds, highs = 0x3030303030303030, 0x7676767676767676, 0x8080808080808080
	j = i
	for len(b)-j >= 8 {
		d := binary.LittleEndian.Uint64(b[j:]) - zeros
		n := 8
		if m := (d + adds | d) & highs; m != 0 {
			n = bits.TrailingZeros64(m) >> 3
		}
		n = min(n, 18-(j-i))
		if n == 0 {
			return u, j
		}
		v := d << (64 - 8*uint(n))
		v = (v & 0x0f0f0f0f0f0f0f0f) * 2561 >> 8
		v = (v & 0x00ff00ff00ff00ff) * 6553601 >> 16
		v = (v & 0x0000ffff0000ffff) * 42949672960001 >> 32
		u = u*pow10[n] + v
		j += n
		if n < 8 {
			return u, j
		}
	}
	for j < len(b) && j-i < 18 && b[j]-'0' <= 9 {
		u = u*10 + uint64(b[j]-'0')
		j++
	}
	return u, j
}

// pow10[n] is 10^n, for n <= 8.
var pow10 = [9]uint64{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000}

// hasAt reports whether b continues with lit at offset i.
func hasAt(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// typeKeyHash is checkKey's hash of "type".
var typeKeyHash = func() uint64 {
	h := uint64(14695981039346656037)
	for _, c := range []byte("type") {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}()

// ObjectType consumes the '{' of an object and finds the string value of
// its "type" key. When "type" is the object's first key (first), the
// scanner is left after its value, at the other members; otherwise it is
// back after the '{', with no key read. A missing "type" is an ErrMissing.
func (s *Scanner) ObjectType() (typ []byte, first bool, err error) {
	const lead = `{"type":"`
	b := s.buf
	if i := s.pos; s.depth < MaxDepth && hasAt(b, i, lead) {
		// Written compactly, the usual case: no key compared, no hash.
		if j := plainRun(b, i+len(lead)); j < len(b) && b[j] == '"' {
			s.pos = i
			if err := s.pushObject(); err != nil {
				return nil, false, err
			}
			s.more |= 1 << uint(s.depth-1)
			s.keys = append(s.keys, "type"...)
			s.keyEnd = append(s.keyEnd, int32(len(s.keys)))
			s.keyHash = append(s.keyHash, typeKeyHash)
			s.pos = j + 1
			return b[i+len(lead) : j : j], true, nil
		}
	}
	mark := s.Mark()
	if err := s.BeginObject(); err != nil {
		return nil, false, err
	}
	first = true
	for {
		key, ok, err := s.NextKey()
		if err != nil {
			return nil, false, err
		}
		if !ok {
			return nil, false, values.MissingError("type")
		}
		if string(key) == "type" {
			if typ, err = s.Str(); err != nil {
				return nil, false, values.FieldError("type", err)
			}
			break
		}
		first = false
		if err := s.Skip(); err != nil {
			return nil, false, err
		}
	}
	if !first {
		s.Rewind(mark)
		if err := s.BeginObject(); err != nil {
			return nil, false, err
		}
	}
	return typ, first, nil
}
