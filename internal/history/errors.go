package history

import (
	"errors"
	"strconv"
)

// Sentinel errors; an *Error wraps one of them, or an error of package jsonl
// (jsonl.ErrSyntax, jsonl.ErrType, ...), of package binform, or of package
// values (values.ErrMissing, values.ErrSlice, values.ErrConflict, ...). Test
// with errors.Is.
var (
	// ErrHeader: the file has no header, or line 1 is not a valid header.
	ErrHeader = errors.New("bad header")
	// ErrVersion: the header names a format version this reader does not know.
	ErrVersion = errors.New("unsupported version")
	// ErrRecord: a line is neither a command nor a step.
	ErrRecord = errors.New("bad record")
	// ErrTime: ts goes backwards.
	ErrTime = errors.New("ts goes backwards")
	// ErrLineTooLong: a line is longer than jsonl.MaxLineBytes.
	ErrLineTooLong = errors.New("line too long")
	// ErrZstd: the zstd frame is truncated or corrupt.
	ErrZstd = errors.New("truncated or corrupt zstd frame")
	// ErrRead: reading the file failed.
	ErrRead = errors.New("read error")
)

// Error is an error at a line of a history file.
type Error struct {
	File string
	Line int64 // 1-based; 0 when the error is not at a line
	Err  error
}

// Error returns "FILE:LINE: what is wrong", without LINE when it is 0.
func (e *Error) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Err.Error()
	}
	return e.File + ":" + strconv.FormatInt(e.Line, 10) + ": " + e.Err.Error()
}

// Unwrap returns what is wrong.
func (e *Error) Unwrap() error { return e.Err }

// msgError is an error whose text is msg and which wraps errs.
type msgError struct {
	msg  string
	errs []error
}

func (e *msgError) Error() string   { return e.msg }
func (e *msgError) Unwrap() []error { return e.errs }
