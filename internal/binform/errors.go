package binform

import "errors"

// Sentinel errors of corrupt binary input; errors wrap one of them, or one
// of package values' (values.ErrLimit for a length or count over its limit,
// and the value errors), in a *values.Error with what is wrong. Test with
// errors.Is.
var (
	// ErrMagic: the stream does not start with Magic.
	ErrMagic = errors.New("not a binary history")
	// ErrVersion: the stream has a version this reader does not know.
	ErrVersion = errors.New("unsupported binary version")
	// ErrTruncated: the stream or a record ends early.
	ErrTruncated = errors.New("truncated")
	// ErrVarint: a varint is longer than 10 bytes or overflows 64 bits.
	ErrVarint = errors.New("bad varint")
	// ErrIndex: a string, blob or tensor reference is out of range.
	ErrIndex = errors.New("index out of range")
	// ErrCorrupt: a value is malformed (bad kind, unknown field bits, text
	// that is not UTF-8 or not JSON, bytes left over in a record, ...).
	ErrCorrupt = errors.New("corrupt binary history")
)
