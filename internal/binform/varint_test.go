package binform

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// varintValues are values around every length boundary of a varint (7
// bits a byte) and a few others.
func varintValues() []uint64 {
	vs := []uint64{0, 1, 2, 20000, 40000, 123456, 1<<21 + 5, 9_919_734, math.MaxUint64, math.MaxUint64 - 1}
	for s := 7; s < 64; s += 7 {
		vs = append(vs, 1<<s-1, 1<<s, 1<<s+1)
	}
	return vs
}

// TestUvarintAgreesWithEncodingBinary: the decoder's varints, signed and
// unsigned, read back what encoding/binary writes, at every length, with
// the record's body ending right after the varint and with the bytes of
// its block (a capacity beyond the body) after it, and at every offset.
// Property: Decoder.Uvarint(binary.AppendUvarint(v)) == v and it reads
// exactly the varint's bytes.
func TestUvarintAgreesWithEncodingBinary(t *testing.T) {
	d := NewDecoder(nil)
	for _, v := range varintValues() {
		enc := binary.AppendUvarint(nil, v)
		for lead := 0; lead < 9; lead++ {
			for _, tail := range []int{0, 1, 7, 16} {
				buf := make([]byte, lead, lead+len(enc)+tail)
				buf = append(buf, enc...)
				for i := range buf[len(buf):cap(buf)] {
					buf[len(buf):cap(buf)][i] = 0xff // continuation bytes beyond the body
				}
				for i := 0; i < lead; i++ {
					buf[i] = 0
				}
				d.Begin(buf)
				for i := 0; i < lead; i++ {
					d.Uvarint()
				}
				if got := d.Uvarint(); got != v || d.Err() != nil || d.Left() != 0 {
					t.Fatalf("uvarint %d (lead %d, tail %d): got %d, err %v, %d bytes left", v, lead, tail, got, d.Err(), d.Left())
				}
				s := int64(v)
				d.Begin(binary.AppendVarint(buf[:lead], s))
				for i := 0; i < lead; i++ {
					d.Uvarint()
				}
				if got := d.Int(); got != s || d.Err() != nil || d.Left() != 0 {
					t.Fatalf("int %d (lead %d, tail %d): got %d, err %v, %d bytes left", s, lead, tail, got, d.Err(), d.Left())
				}
			}
		}
	}
}

// TestUvarintTruncatedInBlock: a varint cut by the end of its record is
// an error even when the block's bytes after the record would complete it.
func TestUvarintTruncatedInBlock(t *testing.T) {
	d := NewDecoder(nil)
	for _, v := range varintValues() {
		enc := binary.AppendUvarint(nil, v)
		if len(enc) < 2 {
			continue
		}
		for cut := 1; cut < len(enc); cut++ {
			block := append(append([]byte(nil), enc...), make([]byte, 16)...)
			d.Begin(block[:cut])
			got := d.Uvarint()
			if !errors.Is(d.Err(), ErrTruncated) {
				t.Fatalf("uvarint %d cut at %d of %d bytes: got %d, err %v, want ErrTruncated", v, cut, len(enc), got, d.Err())
			}
		}
	}
}
