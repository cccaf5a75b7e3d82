package values

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors of values, shared by both codecs (internal/jsonl and
// internal/binform) and by the engine. Errors wrap one of them with what is
// wrong and where; test with errors.Is.
var (
	// ErrRange: a number does not fit the field or is outside its allowed range.
	ErrRange = errors.New("out of range")
	// ErrMissing: a required field is absent.
	ErrMissing = errors.New("missing field")
	// ErrSlice: a slice of ranks is malformed or reaches outside the world.
	ErrSlice = errors.New("bad slice")
	// ErrRank: a rank, or a slice of ranks, lies outside the world.
	ErrRank = errors.New("rank outside the world")
	// ErrConflict: a later mention of a tensor disagrees with its first mention.
	ErrConflict = errors.New("tensor disagrees with its first mention")
	// ErrLimit: the input exceeds one of the limits on input (limits.go here,
	// and those of each codec).
	ErrLimit = errors.New("limit exceeded")
)

// Error is a message that wraps a sentinel: Error() is the text, Unwrap the
// sentinel. Its text says what is wrong without repeating the sentinel.
// Both codecs return it.
type Error struct {
	Msg string
	Err error
}

// Error returns the message.
func (e *Error) Error() string { return e.Msg }

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the formatted message wrapping sentinel.
func Errorf(sentinel error, format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...), Err: sentinel}
}

func errorf(sentinel error, format string, args ...any) error {
	return Errorf(sentinel, format, args...)
}

// rankError is a slice that reaches outside the world: it is both an
// ErrSlice (the slice is bad) and an ErrRank (a rank lies outside).
type rankError struct{ msg string }

func (e *rankError) Error() string   { return e.msg }
func (e *rankError) Unwrap() []error { return []error{ErrSlice, ErrRank} }

func rankErrorf(format string, args ...any) error {
	return &rankError{msg: fmt.Sprintf(format, args...)}
}

// FieldError wraps err with the name of the field it was found in:
// `field "ts": want an integer, got a string`.
func FieldError(field string, err error) error {
	return &fieldError{field: field, err: err}
}

type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string { return "field " + strconv.Quote(e.field) + ": " + e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

// MissingError reports that the required field is absent.
func MissingError(field string) error {
	return &Error{Msg: "missing field " + strconv.Quote(field), Err: ErrMissing}
}
