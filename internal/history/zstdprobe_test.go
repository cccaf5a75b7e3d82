package history_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/synth"
)

// firstZstdBlock is the size of the first block of the zstd frame at the
// start of z, read from its headers (RFC 8878, 3.1.1: frame header,
// 3.1.1.2: block header).
func firstZstdBlock(t *testing.T, z []byte) int {
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
	return int(binary.LittleEndian.Uint32([]byte{h[0], h[1], h[2], 0}) >> 3)
}

// TestZstdProbeLargeFirstBlock: a binary-form stream whose first zstd
// block is larger than 64 KiB (a random history compresses little; the
// test checks the block's size from the frame) is still told apart by the probe and
// decompressed synchronously; the probe has room for a block of the
// largest size zstd writes (128 KiB).
func TestZstdProbeLargeFirstBlock(t *testing.T) {
	var b bytes.Buffer
	if err := synth.Random(&b, 7, 64, 3000); err != nil {
		t.Fatal(err)
	}
	bin, err := history.ConvertBytes(b.Bytes(), "in", history.FormBinary)
	if err != nil {
		t.Fatal(err)
	}
	if n := firstZstdBlock(t, bin); n <= 64<<10 {
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
