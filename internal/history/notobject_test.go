package history

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// counted yields prefix and then zero bytes without end, counting what
// was read.
type counted struct {
	prefix string
	read   int
}

func (c *counted) Read(p []byte) (int, error) {
	n := 0
	if c.read < len(c.prefix) {
		n = copy(p, c.prefix[c.read:])
	} else {
		clear(p)
		n = len(p)
	}
	c.read += n
	return n, nil
}

// TestHeaderRefusedFromFirstBytes: text that does not begin with a JSON
// object and has no line end in the reader's first buffer, as line 1 or a
// later line, (/dev/zero, a
// binary file given by mistake) is refused from that buffer, plain or in
// zstd, however the source hands out its bytes; it was read as one line up
// to the 256 MiB limit first (ten seconds and a gigabyte).
func TestHeaderRefusedFromFirstBytes(t *testing.T) {
	for _, c := range []struct{ prefix, want string }{
		{"", "z.hist:1: no header: the line begins with byte 0x00 at column 1, not with a JSON object, and runs on past 64 KiB without a line end"},
		{"  \tabc", "z.hist:1: no header: the line begins with 'a' at column 4, not with a JSON object, and runs on past 64 KiB without a line end"},
		// Blank lines first: the line is counted.
		{"\n\n\x01", "z.hist:3: no header: the line begins with byte 0x01 at column 1, not with a JSON object, and runs on past 64 KiB without a line end"},
	} {
		src := &counted{prefix: c.prefix}
		_, err := NewReader(src, "z.hist")
		if !errors.Is(err, ErrHeader) || err.Error() != c.want {
			t.Errorf("%q: got %v, want %q", c.prefix, err, c.want)
		}
		if src.read > 2*rawBufBytes {
			t.Errorf("%q: read %d bytes before refusing, want at most %d", c.prefix, src.read, 2*rawBufBytes)
		}
	}
	// The same text in zstd: one frame of 1 MiB of zeros.
	var z bytes.Buffer
	w, _ := zstd.NewWriter(&z)
	w.Write(make([]byte, 1<<20))
	w.Close()
	if _, err := NewReader(&z, "z.hist.zst"); !errors.Is(err, ErrHeader) || err.Error() != "z.hist.zst:1: no header: the line begins with byte 0x00 at column 1, not with a JSON object, and runs on past 64 KiB without a line end" {
		t.Errorf("zstd: got %v", err)
	}
	// A line end within the first bytes leaves the line to the usual
	// checks.
	if _, err := NewReader(&counted{prefix: "x\n"}, "z.hist"); !errors.Is(err, ErrHeader) || strings.Contains(err.Error(), "without a line end") {
		t.Errorf("a short line 1: got %v", err)
	}
	// A record line alike, after a header: refused from the first
	// buffer, plain or in zstd, as a record.
	for _, zst := range []bool{false, true} {
		var src io.Reader = &counted{prefix: hdr + "  ["}
		if zst {
			var z bytes.Buffer
			w, _ := zstd.NewWriter(&z)
			w.Write([]byte(hdr + "  ["))
			w.Write(make([]byte, 1<<20))
			w.Close()
			src = &z
		}
		rd, err := NewReader(src, "z.hist")
		if err != nil {
			t.Fatal(err)
		}
		var rec Record
		err = rd.Next(&rec)
		if want := "z.hist:2: the record begins with '[' at column 3, not with a JSON object, and runs on past 64 KiB without a line end"; !errors.Is(err, ErrRecord) || err.Error() != want {
			t.Errorf("zstd %v: got %v, want %q", zst, err, want)
		}
		if c, ok := src.(*counted); ok && c.read > 2*rawBufBytes {
			t.Errorf("read %d bytes before refusing the record", c.read)
		}
	}
}

// TestHeaderNotWaitedFor: a writer that sends the header and then waits
// (a program streaming its history) gets its header read; the reader does
// not wait for more bytes before looking at line 1.
func TestHeaderNotWaitedFor(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte(hdr)) // and nothing more until the test ends
	done := make(chan error, 1)
	go func() {
		r, err := NewReader(pr, "pipe.hist")
		if err == nil && r.Header().WorldSize != 4 {
			err = errors.New("wrong header")
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the header was not read within 10 s: the reader waits for more bytes")
	}
}
