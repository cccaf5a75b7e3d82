// Package pickle writes Python pickles (protocol 2) as a stream: enough of
// the format to write None, booleans, integers of any int64 value, floats,
// strings, lists and dicts, nested to any depth, which is what a PyTorch
// CUDA memory snapshot holds.
//
// The opcodes and their encodings are those of CPython's Lib/pickle.py and
// Lib/pickletools.py (the "genops" table documents each): PROTO 0x80,
// NONE 'N', NEWTRUE 0x88, NEWFALSE 0x89, BININT1 'K' (uint8), BININT2 'M'
// (uint16 little-endian), BININT 'J' (int32 little-endian), LONG1 0x8a
// (length byte, then little-endian two's complement), BINFLOAT 'G' (float64
// big-endian), BINUNICODE 'X' (uint32 little-endian length, UTF-8),
// EMPTY_LIST ']', EMPTY_DICT '}', MARK '(', APPENDS 'e', SETITEMS 'u',
// STOP '.'. Containers are written as the empty container, a MARK, the
// items, and APPENDS or SETITEMS, as CPython's own pickler batches them, so
// a container's items stream out without being counted first.
package pickle

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"math"
)

// Opcodes (pickletools).
const (
	opProto     = 0x80
	opNone      = 'N'
	opNewTrue   = 0x88
	opNewFalse  = 0x89
	opBinInt1   = 'K'
	opBinInt2   = 'M'
	opBinInt    = 'J'
	opLong1     = 0x8a
	opBinFloat  = 'G'
	opBinUni    = 'X'
	opEmptyList = ']'
	opEmptyDict = '}'
	opMark      = '('
	opAppends   = 'e'
	opSetItems  = 'u'
	opStop      = '.'
)

// ErrNesting is returned when containers are closed in the wrong order or
// left open at Close.
var ErrNesting = errors.New("pickle: containers not closed in order")

// Writer writes one pickled value. Call the value methods in the order a
// depth-first walk of the value visits it: BeginList, its items, End;
// BeginDict, then key and value alternately, End. Close writes STOP and
// flushes. The first error is kept and returned by Close.
type Writer struct {
	bw   *bufio.Writer
	open []byte // kinds of the open containers: 'l' or 'd'
	err  error
	buf  [16]byte
}

// NewWriter starts a protocol 2 pickle on w.
func NewWriter(w io.Writer) *Writer {
	pw := &Writer{bw: bufio.NewWriterSize(w, 64<<10)}
	pw.bytes(opProto, 2)
	return pw
}

func (w *Writer) bytes(b ...byte) {
	if w.err == nil {
		_, w.err = w.bw.Write(b)
	}
}

// None writes None.
func (w *Writer) None() { w.bytes(opNone) }

// Bool writes True or False.
func (w *Writer) Bool(v bool) {
	if v {
		w.bytes(opNewTrue)
	} else {
		w.bytes(opNewFalse)
	}
}

// Int writes an int: the shortest of BININT1, BININT2, BININT and LONG1
// that holds v.
func (w *Writer) Int(v int64) {
	switch {
	case v >= 0 && v <= math.MaxUint8:
		w.bytes(opBinInt1, byte(v))
	case v >= 0 && v <= math.MaxUint16:
		w.bytes(opBinInt2, byte(v), byte(v>>8))
	case v >= math.MinInt32 && v <= math.MaxInt32:
		b := w.buf[:5]
		b[0] = opBinInt
		binary.LittleEndian.PutUint32(b[1:], uint32(int32(v)))
		w.bytes(b...)
	default:
		// LONG1: the fewest little-endian two's-complement bytes whose
		// top bit is v's sign.
		b := w.buf[:2]
		b[0] = opLong1
		u := uint64(v)
		n := 0
		for {
			b = append(b, byte(u))
			n++
			rest := v >> (8 * n)
			last := b[len(b)-1]
			if (rest == 0 && last&0x80 == 0) || (rest == -1 && last&0x80 != 0) || n == 8 {
				break
			}
			u >>= 8
		}
		b[1] = byte(n)
		w.bytes(b...)
	}
}

// Float writes a float.
func (w *Writer) Float(v float64) {
	b := w.buf[:9]
	b[0] = opBinFloat
	binary.BigEndian.PutUint64(b[1:], math.Float64bits(v))
	w.bytes(b...)
}

// String writes a str (s must be UTF-8; invalid bytes make Python's
// unpickler fail, so callers pass names and paths they read as text).
func (w *Writer) String(s string) {
	b := w.buf[:5]
	b[0] = opBinUni
	binary.LittleEndian.PutUint32(b[1:], uint32(len(s)))
	w.bytes(b...)
	if w.err == nil {
		_, w.err = w.bw.WriteString(s)
	}
}

// BeginList opens a list; its items follow, then End.
func (w *Writer) BeginList() {
	w.bytes(opEmptyList, opMark)
	w.open = append(w.open, 'l')
}

// BeginDict opens a dict; keys and values follow alternately, then End.
func (w *Writer) BeginDict() {
	w.bytes(opEmptyDict, opMark)
	w.open = append(w.open, 'd')
}

// End closes the innermost open list or dict.
func (w *Writer) End() {
	if len(w.open) == 0 {
		if w.err == nil {
			w.err = ErrNesting
		}
		return
	}
	kind := w.open[len(w.open)-1]
	w.open = w.open[:len(w.open)-1]
	if kind == 'l' {
		w.bytes(opAppends)
	} else {
		w.bytes(opSetItems)
	}
}

// Key writes a dict key that is a string (the common case).
func (w *Writer) Key(k string) { w.String(k) }

// Close writes STOP and flushes. It returns the first error of any call,
// or ErrNesting if a container is still open.
func (w *Writer) Close() error {
	if w.err == nil && len(w.open) > 0 {
		w.err = ErrNesting
	}
	w.bytes(opStop)
	if w.err != nil {
		return w.err
	}
	return w.bw.Flush()
}
