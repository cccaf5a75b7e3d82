package jsonl

import (
	"errors"

	"github.com/fastsim/fastsim/internal/values"
)

// Sentinel errors of JSON text. Errors returned by this package wrap one of
// them, or one of package values' (values.ErrRange, values.ErrMissing,
// values.ErrSlice, values.ErrConflict, values.ErrLimit), in a *values.Error with
// what is wrong and where; test with errors.Is.
var (
	// ErrSyntax: the line is not valid JSON.
	ErrSyntax = errors.New("invalid JSON")
	// ErrEncoding: the line is not valid UTF-8 or holds a NUL byte.
	ErrEncoding = errors.New("invalid encoding")
	// ErrDepth: objects and arrays nest deeper than MaxDepth.
	ErrDepth = errors.New("nesting too deep")
	// ErrType: a value has the wrong JSON type ("want an integer, got a string").
	ErrType = errors.New("wrong type")
	// ErrDuplicateKey: a key is repeated within one JSON object.
	ErrDuplicateKey = errors.New("duplicate key")
)

func errorf(sentinel error, format string, args ...any) error {
	return values.Errorf(sentinel, format, args...)
}
