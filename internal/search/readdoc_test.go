package search

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// endless is a reader of prefix and then zero bytes without end, which
// counts what was read from it.
type endless struct {
	prefix string
	read   int
}

func (e *endless) Read(p []byte) (int, error) {
	n := 0
	if e.read < len(e.prefix) {
		n = copy(p, e.prefix[e.read:])
	} else {
		clear(p)
		n = len(p)
	}
	e.read += n
	return n, nil
}

// TestReadDocRefusesFromItsFirstBytes: a file that does not begin a
// search document (binary bytes, /dev/zero, a history whose header is a
// whole object naming itself) is refused from its first 64 KiB; ReadDoc
// read up to its gigabyte limit first.
func TestReadDocRefusesFromItsFirstBytes(t *testing.T) {
	for _, c := range []struct {
		prefix, want string
	}{
		{"", `z:1: shards do not merge: invalid character '\x00' looking for beginning of value`},
		{"\n\n  x", `z:3: shards do not merge: invalid character 'x' looking for beginning of value`},
		{`{"fastsim":"history","version":1,"world_size":8}` + "\n{\"ts\":", `z:1: shards do not merge: not a fastsim search --json document (its "fastsim" field is "history")`},
	} {
		r := &endless{prefix: c.prefix}
		_, err := ReadDoc(r, "z")
		if !errors.Is(err, ErrMerge) || err.Error() != c.want {
			t.Errorf("%q: got %v, want %q", c.prefix, err, c.want)
		}
		if r.read > 64<<10 {
			t.Errorf("%q: read %d bytes before refusing, want at most 64 KiB", c.prefix, r.read)
		}
	}
	// A document that begins well, but whose first object is not whole
	// in those bytes, is read on (here to a NUL byte past them).
	r := &endless{prefix: `{"fastsim": "search", "version": 1, "results": [` + strings.Repeat(" ", 70<<10)}
	_, err := ReadDoc(io.LimitReader(r, 100<<10), "z")
	if !errors.Is(err, ErrMerge) || !strings.Contains(err.Error(), `invalid character '\x00'`) || r.read <= 70<<10 {
		t.Errorf("a long document: %v after %d bytes, want it read past 70 KiB", err, r.read)
	}
}
