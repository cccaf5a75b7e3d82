package history

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestDecompressionBomb: a small zstd file that expands enormously (here 64
// MiB of blank lines from a few KiB, with the threshold lowered to 1 MiB)
// is refused with an error naming the file, not decompressed forever.
func TestDecompressionBomb(t *testing.T) {
	defer func(m, r int64) { bombMinBytes, bombRatio = m, r }(bombMinBytes, bombRatio)
	bombMinBytes = 1 << 20
	var z bytes.Buffer
	enc, err := zstd.NewWriter(&z, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		t.Fatal(err)
	}
	enc.Write([]byte(`{"fastsim":"history","version":1,"world_size":1}` + "\n"))
	blank := bytes.Repeat([]byte("\n"), 1<<20)
	for i := 0; i < 64; i++ {
		enc.Write(blank)
	}
	enc.Close()
	if z.Len()*int(bombRatio) > 64<<20 {
		t.Fatalf("the test bomb is only %d bytes -> 64 MiB: not a bomb at ratio %d", z.Len(), bombRatio)
	}
	r, err := NewReader(bytes.NewReader(z.Bytes()), "bomb.hist.zst")
	if err == nil {
		var rec Record
		for err == nil {
			err = r.Next(&rec)
		}
	}
	var he *Error
	if err == io.EOF || !errors.As(err, &he) || !errors.Is(err, ErrZstd) || !strings.Contains(err.Error(), "decompression bomb") {
		t.Fatalf("error %v, want a refused decompression bomb", err)
	}
	// A bomb is neither truncated nor corrupt, and says so once.
	if strings.Contains(err.Error(), "truncated or corrupt") {
		t.Errorf("error %v: a bomb called truncated or corrupt", err)
	}
}
