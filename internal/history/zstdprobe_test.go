package history_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/synth"
)

// firstZstdBlock is the size of the first block of the zstd frame at the
// start of z, and where it ends in z, read from its headers (RFC 8878,
// 3.1.1: frame header, 3.1.1.2: block header; a compressed block).
func firstZstdBlock(t *testing.T, z []byte) (size, end int) {
	t.Helper()
	if len(z) < 6 || !bytes.Equal(z[:4], []byte{0x28, 0xb5, 0x2f, 0xfd}) {
		t.Fatal("not a zstd frame")
	}
	fhd := z[4]
	single := fhd>>5&1 == 1
	n := 5
	if !single {
		n++ // Window_Descriptor
	}
	n += []int{0, 1, 2, 4}[fhd&3] // Dictionary_ID
	fcs := []int{0, 2, 4, 8}[fhd>>6]
	if fhd>>6 == 0 && single {
		fcs = 1
	}
	n += fcs
	h := z[n : n+3]
	size = int(binary.LittleEndian.Uint32([]byte{h[0], h[1], h[2], 0}) >> 3)
	return size, n + 3 + size
}

// TestZstdProbeLargeFirstBlock: a binary-form stream whose first zstd
// block is larger than 64 KiB (a random history whose header carries an
// undeclared key holding 80 KiB of random letters, which the binary form
// keeps verbatim and zstd hardly compresses; the test checks the block's
// size from the frame) is still told apart by the probe and
// decompressed synchronously; the probe has room for a block of the
// largest size zstd writes (128 KiB).
func TestZstdProbeLargeFirstBlock(t *testing.T) {
	var b bytes.Buffer
	if err := synth.Random(&b, 7, 64, 3000); err != nil {
		t.Fatal(err)
	}
	src := b.Bytes()
	hdrEnd := bytes.IndexByte(src, '\n')
	noise := make([]byte, 80<<10)
	x := uint64(7)
	for i := range noise {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		noise[i] = 'a' + byte(x%26)
	}
	src = slices.Concat(src[:hdrEnd-1], []byte(`,"note":"`), noise, []byte(`"}`), src[hdrEnd:])
	bin, err := history.ConvertBytes(src, "in", history.FormBinary)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := firstZstdBlock(t, bin); n <= 64<<10 {
		t.Fatalf("the first block is %d bytes: the test needs one past 64 KiB", n)
	}
	r, err := history.NewReader(bytes.NewReader(bin), "in")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.ZstdSync() {
		t.Error("a binary-form stream with a first block past 64 KiB went to the decoder that runs ahead")
	}
}

// TestZstdProbeWaitsForFirstBlockOnly: a program writing a binary-form
// history to a pipe sends the first zstd block in three writes (10
// bytes, all but its last byte, its last byte), then holds the rest back
// until the reader has the header. The probe asks for the bytes the
// first block lacks and no more, so NewReader returns; a probe that
// doubled its window (10, 20, 40, ... bytes, or twice what it had)
// waited for bytes past the block that were not coming.
func TestZstdProbeWaitsForFirstBlockOnly(t *testing.T) {
	var b bytes.Buffer
	if err := synth.Random(&b, 3, 64, 3000); err != nil {
		t.Fatal(err)
	}
	bin, err := history.ConvertBytes(b.Bytes(), "in", history.FormBinary)
	if err != nil {
		t.Fatal(err)
	}
	// (A frame's last block comes out only with the checksum after it:
	// the history must be longer than one block.)
	_, end := firstZstdBlock(t, bin)
	if end+8 > len(bin) {
		t.Fatalf("the stream is one block (%d bytes, the first ends at %d): the test needs more", len(bin), end)
	}
	for k := 10; k <= end; k *= 2 {
		if k == end {
			t.Fatalf("the first block ends at %d bytes, a doubling of 10: the test would not tell", end)
		}
	}
	pr, pw := io.Pipe()
	release := make(chan struct{})
	go func() {
		pw.Write(bin[:10])
		pw.Write(bin[10 : end-1])
		pw.Write(bin[end-1 : end])
		<-release
		pw.Write(bin[end:])
		pw.Close()
	}()
	type opened struct {
		r   *history.Reader
		err error
	}
	got := make(chan opened, 1)
	go func() {
		r, err := history.NewReader(pr, "pipe")
		got <- opened{r, err}
	}()
	select {
	case o := <-got:
		close(release)
		if o.err != nil {
			t.Fatal(o.err)
		}
		defer o.r.Close()
		if !o.r.ZstdSync() || o.r.Header().WorldSize != 64 {
			t.Errorf("binary form %v, world %d; want the binary form's decoder, world 64", o.r.ZstdSync(), o.r.Header().WorldSize)
		}
		n := 0
		var rec history.Record
		for {
			err := o.r.Next(&rec)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n == 0 {
			t.Error("no record read after the held-back bytes came")
		}
	case <-time.After(20 * time.Second):
		close(release)
		t.Fatal("NewReader still waits for bytes past the first zstd block")
	}
}
