package jsonl

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors. Errors returned by this package wrap one of them with what
// is wrong and where; test with errors.Is.
var (
	// ErrSyntax: the line is not valid JSON.
	ErrSyntax = errors.New("invalid JSON")
	// ErrEncoding: the line is not valid UTF-8 or holds a NUL byte.
	ErrEncoding = errors.New("invalid encoding")
	// ErrDepth: objects and arrays nest deeper than MaxDepth.
	ErrDepth = errors.New("nesting too deep")
	// ErrType: a value has the wrong JSON type ("want an integer, got a string").
	ErrType = errors.New("wrong type")
	// ErrRange: a number does not fit the field or is outside its allowed range.
	ErrRange = errors.New("out of range")
	// ErrMissing: a required field is absent.
	ErrMissing = errors.New("missing field")
	// ErrSlice: a slice of ranks is malformed or reaches outside the world.
	ErrSlice = errors.New("bad slice")
	// ErrConflict: a later mention of a tensor disagrees with its first mention.
	ErrConflict = errors.New("tensor disagrees with its first mention")
	// ErrLimit: the input exceeds one of the limits in limits.go.
	ErrLimit = errors.New("limit exceeded")
	// ErrDuplicateKey: a key is repeated within one JSON object.
	ErrDuplicateKey = errors.New("duplicate key")
)

// Error is an error of this package: Error() is the text, Unwrap the sentinel.
// Its text says what is wrong without repeating the sentinel.
type Error struct {
	Msg string
	Err error
}

// Error returns the message.
func (e *Error) Error() string { return e.Msg }

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }

func errorf(sentinel error, format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...), Err: sentinel}
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
