package binform

import (
	"errors"
	"fmt"
)

// Sentinel errors of corrupt binary input; errors wrap one of them with what
// is wrong. Test with errors.Is.
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
	// ErrLimit: a length or count is over its limit.
	ErrLimit = errors.New("limit exceeded")
	// ErrCorrupt: a value is malformed (bad kind, unknown field bits, text
	// that is not UTF-8 or not JSON, bytes left over in a record, ...).
	ErrCorrupt = errors.New("corrupt binary history")
)

// Error is an error of this package: Error() is the text, Unwrap the sentinel.
type Error struct {
	Msg string
	Err error
}

// Error returns the message.
func (e *Error) Error() string { return e.Msg }

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error wrapping sentinel.
func Errorf(sentinel error, format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...), Err: sentinel}
}
