// Package smallfile reads whole the small files a user names on the
// command line or through the API (models, hardware specs, cost models,
// timing files), never more than a bound: a device, a pipe that never ends
// or a history given by mistake ends in one error instead of a read that
// takes all the memory or never returns (os.ReadFile of /dev/zero does
// both).
package smallfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

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
func Read(path string, limit int64, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &tooLarge{limit, what}
	}
	return data, nil
}
