package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"
)

// unS2 is the stream an S2-framed src holds, decompressed by S2's own
// reader.
func unS2(t testing.TB, src []byte) []byte {
	t.Helper()
	out, err := io.ReadAll(s2.NewReader(bytes.NewReader(src)))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// inS2 is b in S2 framing, in chunks of blockBytes.
func inS2(t testing.TB, b []byte, blockBytes int) []byte {
	t.Helper()
	var out bytes.Buffer
	w := s2.NewWriter(&out, s2.WriterConcurrency(1), s2.WriterBlockSize(blockBytes))
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// readAllRecords reads src to its end and returns how many records it
// read and the error that ended it (nil at a clean end).
func readAllRecords(src []byte, name string) (int, error) {
	r, err := NewReader(bytes.NewReader(src), name)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	var rec Record
	for n := 0; ; n++ {
		if err := r.Next(&rec); err != nil {
			if err == io.EOF {
				err = nil
			}
			return n, err
		}
	}
}

// TestS2Form: .fhist.s2 names the binary form in S2 framing; JSON lines
// in S2 framing (written by any S2 writer, here in small chunks) read as
// the plain lines do.
func TestS2Form(t *testing.T) {
	if f, ok := FormOf("run.fhist.s2"); !ok || f != FormBinaryS2 {
		t.Errorf("FormOf(run.fhist.s2) = %v, %v", f, ok)
	}
	var src bytes.Buffer
	if err := writeRandom(&src, 3, 8, 500); err != nil {
		t.Fatal(err)
	}
	if got, want := dumpAll(t, inS2(t, src.Bytes(), 4<<10)), dumpAll(t, src.Bytes()); got != want {
		t.Fatalf("JSON lines in S2 decode differently:\n%s", firstDiff(want, got))
	}
}

// TestS2CutNamesLastRecord: an S2 stream cut inside a chunk is named as
// cut, after the last line or record read whole, as a zstd one is
// (TestZstdCutNamesLastLine); cut inside its first chunk it names the
// file alone (as "the first complete line": the binary form's magic is
// not read either, as with zstd). S2's decoder itself calls such a
// stream corrupt.
func TestS2CutNamesLastRecord(t *testing.T) {
	var src bytes.Buffer
	if err := writeRandom(&src, 1, 4, 3000); err != nil {
		t.Fatal(err)
	}
	z := inS2(t, src.Bytes(), 16<<10)
	for _, cut := range []int{len(z) / 3, len(z) / 2, len(z) - 5} {
		// The lines whole in what S2's reader gives out before its error.
		out, err := io.ReadAll(s2.NewReader(bytes.NewReader(z[:cut])))
		if !errors.Is(err, s2.ErrCorrupt) {
			t.Fatalf("cut at %d of %d bytes: S2's reader says %v, want %v", cut, len(z), err, s2.ErrCorrupt)
		}
		n := bytes.Count(out, []byte("\n"))
		if n < 2 {
			t.Fatalf("cut at %d of %d bytes: %d whole lines; the test needs some", cut, len(z), n)
		}
		_, err = readAllRecords(z[:cut], "t.s2")
		want := fmt.Sprintf("t.s2:%d: the S2-compressed stream is truncated: it ends after line %d, the last complete one", n+1, n)
		if !errors.Is(err, ErrS2) || !errors.Is(err, io.ErrUnexpectedEOF) || err.Error() != want {
			t.Errorf("JSON lines cut at %d of %d bytes: %v, want %q", cut, len(z), err, want)
		}
	}

	bin := inS2(t, convert(t, src.Bytes(), FormBinaryBare), 4<<10)
	cut := len(bin) - 5
	read, err := readAllRecords(bin[:cut], "t.fhist.s2")
	// The header is record 1, so the last record read is record read+1.
	want := fmt.Sprintf("t.fhist.s2:%d: the S2-compressed stream is truncated: it ends after record %d, the last complete one", read+2, read+1)
	if read == 0 || err == nil || err.Error() != want {
		t.Errorf("binary cut at %d of %d bytes, after %d records: %v, want %q", cut, len(bin), read, err, want)
	}

	one := convert(t, src.Bytes()[:bytes.IndexByte(src.Bytes(), '\n')+1], FormBinaryS2)
	for _, cut := range []int{len(s2Magic) + 2, len(one) - 1} {
		_, err := readAllRecords(one[:cut], "t.fhist.s2")
		var he *Error
		if !errors.As(err, &he) || he.Line != 0 || !errors.Is(err, ErrS2) ||
			err.Error() != "t.fhist.s2: the S2-compressed stream is truncated: it ends before the first complete line" {
			t.Errorf("a header-only binary history cut at %d of %d bytes: %v", cut, len(one), err)
		}
	}
}

// TestS2Corrupt: a damaged chunk is named as a fault of the S2 stream,
// not as a cut or as a bad record: one byte changed, or 64 bytes of the
// first chunk zeroed. Between them S2's decoder reports both of its
// faults: a chunk that does not decode (ErrCorrupt, what it also reports
// for a cut) and a CRC-32C mismatch.
func TestS2Corrupt(t *testing.T) {
	var src bytes.Buffer
	if err := writeRandom(&src, 2, 4, 2000); err != nil {
		t.Fatal(err)
	}
	undecodable := 0
	for name, z := range map[string][]byte{
		"JSON lines": inS2(t, src.Bytes(), 16<<10),
		"binary":     convert(t, src.Bytes(), FormBinaryS2),
	} {
		flipped := bytes.Clone(z)
		flipped[len(z)/2] ^= 0x40
		zeroed := bytes.Clone(z)
		clear(zeroed[len(s2Magic)+32 : len(s2Magic)+96])
		for how, bad := range map[string][]byte{"one byte changed": flipped, "64 bytes zeroed": zeroed} {
			_, err := readAllRecords(bad, "t.s2")
			if !errors.Is(err, ErrS2) || strings.Contains(err.Error(), "truncated:") || !strings.Contains(err.Error(), "s2: corrupt input") {
				t.Errorf("%s, %s: %v", name, how, err)
			}
			if err != nil && strings.HasSuffix(err.Error(), s2.ErrCorrupt.Error()) {
				undecodable++
			}
		}
	}
	if undecodable == 0 {
		t.Error("no damage made a chunk that does not decode: the test no longer tells a cut from ErrCorrupt")
	}
}

// TestS2DecompressionBomb: an S2 stream that expands past the bomb limit
// (64 MiB of blank lines, the limit lowered to 1 MiB) is refused, as a
// zstd one is (TestDecompressionBomb).
func TestS2DecompressionBomb(t *testing.T) {
	defer func(m, r int64) { bombMinBytes, bombRatio = m, r }(bombMinBytes, bombRatio)
	bombMinBytes = 1 << 20
	hist := append([]byte(`{"fastsim":"history","version":1,"world_size":1}`+"\n"), bytes.Repeat([]byte("\n"), 64<<20)...)
	z := inS2(t, hist, 4<<20)
	if len(z)*int(bombRatio) > len(hist) {
		t.Fatalf("the test bomb is %d bytes -> %d: not a bomb at ratio %d", len(z), len(hist), bombRatio)
	}
	_, err := readAllRecords(z, "bomb.hist.s2")
	var he *Error
	if !errors.As(err, &he) || !errors.Is(err, ErrS2) || !strings.Contains(err.Error(), "S2 stream expands like a decompression bomb") ||
		strings.Contains(err.Error(), "truncated or corrupt") {
		t.Fatalf("error %v, want a refused decompression bomb", err)
	}
}

// TestResetAcrossFramings: one Reader, Reset from one framing to the
// next (S2, zstd, none; JSON lines and the binary form), reads each as a
// fresh Reader does, and a cut S2 stream after a zstd one is still named
// as S2's cut: nothing of one framing's decoder state carries over. That
// zstd stream, JSON lines, is reset before it is read to its end, while
// its decoder's goroutines still decompress ahead from the buffer Reset
// reuses: under the race detector (.ci/run's second pass) this fails
// unless Reset stops them first.
func TestResetAcrossFramings(t *testing.T) {
	var b bytes.Buffer
	if err := writeRandom(&b, 5, 6, 400); err != nil {
		t.Fatal(err)
	}
	src := b.Bytes()
	want := dumpAll(t, src)
	forms := []struct {
		name string
		data []byte
	}{
		{"binary in S2", convert(t, src, FormBinaryS2)},
		{"binary in zstd", convert(t, src, FormBinary)},
		{"JSON lines in S2", inS2(t, src, 4<<10)},
		{"JSON lines", src},
		{"JSON lines in zstd", convert(t, src, FormJSONZstd)},
		{"binary in S2, again", convert(t, src, FormBinaryS2)},
		{"bare binary", convert(t, src, FormBinaryBare)},
	}
	r, err := NewReader(bytes.NewReader(forms[0].data), "in")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i, f := range forms {
		if i > 0 {
			if err := r.Reset(bytes.NewReader(f.data), "in"); err != nil {
				t.Fatalf("%s: %v", f.name, err)
			}
		}
		if got := dumpReader(t, r); got != want {
			t.Fatalf("%s after %d other framings decodes differently:\n%s", f.name, i, firstDiff(want, got))
		}
	}
	cut := inS2(t, src, 4<<10)
	if err := r.Reset(bytes.NewReader(convert(t, src, FormJSONZstd)), "in"); err != nil {
		t.Fatal(err)
	}
	if err := r.Reset(bytes.NewReader(cut[:len(cut)/2]), "cut.s2"); err != nil {
		t.Fatal(err)
	}
	var rec Record
	for err == nil {
		err = r.Next(&rec)
	}
	if !errors.Is(err, ErrS2) || !strings.Contains(err.Error(), "the S2-compressed stream is truncated: it ends after line") {
		t.Errorf("a cut S2 stream read after a zstd one: %v", err)
	}
}
