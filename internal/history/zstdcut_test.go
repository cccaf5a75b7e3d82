package history_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/synth"
	"github.com/klauspost/compress/zstd"
)

// readCut reads every record of src and returns the error that ends it
// and how many records came before it.
func readCut(t *testing.T, src []byte) (int, error) {
	t.Helper()
	r, err := history.NewReader(bytes.NewReader(src), "t.zst")
	if err != nil {
		return 0, err
	}
	defer r.Close()
	var rec history.Record
	for n := 0; ; n++ {
		if err := r.Next(&rec); err != nil {
			if err == io.EOF {
				t.Fatal("a cut stream read to its end")
			}
			return n, err
		}
	}
}

// wholeLines is how many lines end, newline included, in what a
// synchronous decoder gives out of the cut stream z before its error: the
// lines a reader of z can have read whole.
func wholeLines(t *testing.T, z []byte) int {
	t.Helper()
	d, err := zstd.NewReader(bytes.NewReader(z), zstd.WithDecoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out, err := io.ReadAll(d)
	if err == nil {
		t.Fatal("the cut stream decodes whole")
	}
	return bytes.Count(out, []byte("\n"))
}

// TestZstdCutNamesLastLine: a zstd stream cut short is named as such,
// not as a fault of the line it cut. A history compressed into a single
// block (its first block is the frame's last), cut anywhere, has no line
// read whole: the error names the file alone. A longer one, cut between
// its blocks' ends, names the line after the last whole one, which it
// says it ends after, counted in what the decoder gives out before the
// cut; its binary form names the record after the last one read.
func TestZstdCutNamesLastLine(t *testing.T) {
	var small, long bytes.Buffer
	if err := synth.Random(&small, 1, 4, 20); err != nil {
		t.Fatal(err)
	}
	if err := synth.Random(&long, 1, 4, 3000); err != nil {
		t.Fatal(err)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()

	z := enc.EncodeAll(small.Bytes(), nil)
	if _, end := firstZstdBlock(t, z); end+4 < len(z) {
		t.Fatalf("the small history's frame has more than one block (the first ends at %d of %d bytes)", end, len(z))
	}
	bin, err := history.ConvertBytes(small.Bytes(), "in", history.FormBinary)
	if err != nil {
		t.Fatal(err)
	}
	for name, z := range map[string][]byte{"JSON lines": z, "binary": bin} {
		for _, cut := range []int{6, len(z) / 2, len(z) - 5, len(z) - 1} {
			_, err := readCut(t, z[:cut])
			var he *history.Error
			if !errors.As(err, &he) || !errors.Is(err, history.ErrZstd) || !errors.Is(err, io.ErrUnexpectedEOF) || he.Line != 0 ||
				err.Error() != "t.zst: the zstd-compressed stream is truncated: it ends before the first complete line" {
				t.Errorf("%s in one block cut at %d of %d bytes: %v", name, cut, len(z), err)
			}
		}
	}

	z = enc.EncodeAll(long.Bytes(), nil)
	for _, cut := range []int{len(z) / 3, len(z) / 2, len(z) - 5} {
		n := wholeLines(t, z[:cut])
		if n < 2 {
			t.Fatalf("cut at %d of %d bytes: %d whole lines; the test needs some", cut, len(z), n)
		}
		_, err := readCut(t, z[:cut])
		want := fmt.Sprintf("t.zst:%d: the zstd-compressed stream is truncated: it ends after line %d, the last complete one", n+1, n)
		if !errors.Is(err, history.ErrZstd) || err == nil || err.Error() != want {
			t.Errorf("JSON lines cut at %d of %d bytes: %v, want %q", cut, len(z), err, want)
		}
	}
	bin, err = history.ConvertBytes(long.Bytes(), "in", history.FormBinary)
	if err != nil {
		t.Fatal(err)
	}
	cut := len(bin) - 5
	read, err := readCut(t, bin[:cut])
	// The header is record 1, so the last record read is record read+1.
	want := fmt.Sprintf("t.zst:%d: the zstd-compressed stream is truncated: it ends after record %d, the last complete one", read+2, read+1)
	if read == 0 || err == nil || err.Error() != want || strings.Contains(err.Error(), "data ends inside") {
		t.Errorf("binary cut at %d of %d bytes, after %d records: %v, want %q", cut, len(bin), read, err, want)
	}
}
