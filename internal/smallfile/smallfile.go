// Package smallfile reads whole the small JSON files a user names on the
// command line or through the API (models, hardware specs, cost models,
// timing files), never more than a bound, and no more than their first
// bytes when those cannot begin a JSON object: a device, a pipe that never
// ends or a history given by mistake ends in one error instead of a read
// that takes all the memory or never returns (os.ReadFile of /dev/zero
// does both).
package smallfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// headBytes is how much of a file Read looks at before reading on.
const headBytes = 64 << 10

// ErrTooLarge matches (errors.Is) the error Read returns for a file
// longer than its limit.
var ErrTooLarge = errors.New("file too large")

// tooLarge is that error: its text says the limit and whose it is.
type tooLarge struct {
	limit int64
	what  string
}

func (e *tooLarge) Error() string {
	return fmt.Sprintf("more than %d bytes, the most %s may hold", e.limit, e.what)
}

func (e *tooLarge) Is(target error) bool { return target == ErrTooLarge }

// Read returns the contents of the file at path, or an error wrapping
// ErrTooLarge, "more than LIMIT bytes, the most WHAT may hold", when it
// holds more than limit bytes. Errors opening or reading the file are
// os's, which name it.
//
// Every such file is a JSON object: when its first bytes show that it
// cannot be one (the first that is not white space is not '{'), Read
// returns those bytes alone, for the caller's decoder to refuse with the
// error it gives for them, instead of reading on to the limit (64 MiB of
// /dev/zero for a costs file took a second and 170 MB).
func Read(path string, limit int64, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, min(limit+1, headBytes))
	n, err := io.ReadFull(f, head)
	head = head[:n]
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return head, nil // the whole file
	}
	if err != nil {
		return nil, err
	}
	if t := bytes.TrimLeft(head, " \t\r\n"); len(t) > 0 && t[0] != '{' {
		return head, nil
	}
	rest, err := io.ReadAll(io.LimitReader(f, limit+1-int64(n)))
	if err != nil {
		return nil, err
	}
	data := append(head, rest...)
	if int64(len(data)) > limit {
		return nil, &tooLarge{limit, what}
	}
	return data, nil
}
