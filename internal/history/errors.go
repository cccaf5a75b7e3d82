package history

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
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
	// ErrS2: the S2 stream is truncated or corrupt.
	ErrS2 = errors.New("truncated or corrupt S2 stream")
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
// The path to a fault deep in nested command groups is cut to its
// outermost and innermost levels (capNesting).
func (e *Error) Error() string {
	msg := capNesting(e.Err.Error())
	if e.Line == 0 {
		return e.File + ": " + msg
	}
	return e.File + ":" + strconv.FormatInt(e.Line, 10) + ": " + msg
}

// Unwrap returns what is wrong.
func (e *Error) Unwrap() error { return e.Err }

// groupLevel is one level of the path to a fault inside nested command
// groups, as the decoders and the reader's checks write it: the item's
// index and ": " follow.
const groupLevel = `CommandGroup: field "commands": item `

// A path of more than wholeLevels levels is cut to its outermost level
// (which command of the record's group), the number of levels left out
// and its innermost innerLevels (where the fault is). A record may nest
// groups some 30 deep (the line's nesting limit) and each level is 40
// bytes, so the whole path would make a line over a kilobyte long.
const (
	wholeLevels = 6
	innerLevels = 2
)

var (
	// oneLevel matches a level of the path.
	oneLevel = regexp.MustCompile(regexp.QuoteMeta(groupLevel) + `\d+: `)
	// nestedPath matches a path of more than wholeLevels levels.
	nestedPath = regexp.MustCompile(`(?:` + oneLevel.String() + `){` + strconv.Itoa(wholeLevels+1) + `,}`)
)

// capNesting shortens msg's paths through nested command groups that
// have more than wholeLevels levels to "OUTERMOST … N levels …
// INNERMOST".
func capNesting(msg string) string {
	if strings.Count(msg, groupLevel) <= wholeLevels {
		return msg
	}
	return nestedPath.ReplaceAllStringFunc(msg, func(path string) string {
		levels := oneLevel.FindAllString(path, -1)
		n := len(levels)
		return levels[0] + "… " + strconv.Itoa(n-1-innerLevels) + " levels … " + strings.Join(levels[n-innerLevels:], "")
	})
}

// msgError is an error whose text is msg and which wraps errs.
type msgError struct {
	msg  string
	errs []error
}

func (e *msgError) Error() string   { return e.msg }
func (e *msgError) Unwrap() []error { return e.errs }
