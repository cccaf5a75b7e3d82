package history

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readErrFrom reads every record of a history from src and returns the error
// that ended it (nil at a clean end).
func readErrFrom(src io.Reader, name string) error {
	r, err := NewReader(src, name)
	if err != nil {
		return err
	}
	defer r.Close()
	var rec Record
	for {
		if err := r.Next(&rec); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// TestZstdDecoderByForm: a zstd stream of the binary form is decompressed
// synchronously and one of JSON lines by the decoder that runs ahead,
// whether the stream arrives at once or a byte at a time (the choice is
// the stream's, not its source's: the probe reads on until the first
// block decompresses); both ways decode the same records, and a truncated
// stream fails with the same one-line error either way.
func TestZstdDecoderByForm(t *testing.T) {
	var b bytes.Buffer
	if err := writeTrain(&b, trainShape{PP: 2, DP: 2, TP: 2, Layers: 2, Hidden: 64, Seq: 16, Batch: 8, Micro: 2, Steps: 3}); err != nil {
		t.Fatal(err)
	}
	bin := convert(t, b.Bytes(), FormBinary)
	jz := convert(t, b.Bytes(), FormJSONZstd)
	for _, c := range []struct {
		name string
		src  io.Reader
		sync bool
	}{
		{"binary", bytes.NewReader(bin), true},
		{"JSON lines", bytes.NewReader(jz), false},
		{"binary, a byte at a time", iotest.OneByteReader(bytes.NewReader(bin)), true},
		{"JSON lines, a byte at a time", iotest.OneByteReader(bytes.NewReader(jz)), false},
	} {
		r, err := NewReader(c.src, "in")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := r.ZstdSync(); got != c.sync {
			t.Errorf("%s: synchronous decoder %v, want %v", c.name, got, c.sync)
		}
		r.Close()
	}
	want := dumpAll(t, b.Bytes())
	if got := dumpAll(t, bin); got != want {
		t.Fatalf("binary (synchronous) decodes differently:\n%s", firstDiff(want, got))
	}
	// dumpAll's reader, fed a byte at a time.
	r, err := NewReader(iotest.OneByteReader(bytes.NewReader(bin)), "in")
	if err != nil {
		t.Fatal(err)
	}
	var recs, recs2 int
	var rec Record
	for r.Next(&rec) == nil {
		recs++
	}
	r.Close()
	r, _ = NewReader(bytes.NewReader(bin), "in")
	for r.Next(&rec) == nil {
		recs2++
	}
	r.Close()
	if recs != recs2 || recs == 0 {
		t.Fatalf("records: %d read a byte at a time, %d at once", recs, recs2)
	}

	// Truncated anywhere past the zstd magic: the same error from both
	// decoders, one line, an *Error naming the file.
	for cut := 5; cut < len(bin); cut += max(1, len(bin)/97) {
		data := bin[:cut]
		e1 := readErrFrom(bytes.NewReader(data), "t.fhist.zst")
		e2 := readErrFrom(iotest.OneByteReader(bytes.NewReader(data)), "t.fhist.zst")
		if e1 == nil || e2 == nil {
			t.Fatalf("cut at %d of %d: errors %v and %v, want both", cut, len(bin), e1, e2)
		}
		if e1.Error() != e2.Error() {
			t.Errorf("cut at %d of %d: read at once %q, a byte at a time %q", cut, len(bin), e1, e2)
		}
		var he *Error
		if !errors.As(e1, &he) || strings.Contains(e1.Error(), "\n") || !strings.HasPrefix(e1.Error(), "t.fhist.zst:") {
			t.Errorf("cut at %d: %q is not one line naming the file", cut, e1)
		}
	}
}
