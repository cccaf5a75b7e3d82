package history

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/binform"
	"github.com/fastsim/fastsim/internal/values"
	"github.com/klauspost/compress/zstd"
)

// bareBinary converts src to the binary form and strips the zstd frame, so
// that the fuzzer mutates the records themselves (the reader accepts a bare
// stream as well).
func bareBinary(t testing.TB, src []byte) []byte {
	return unzstd(t, convert(t, src, FormBinary))
}

// unzstd decompresses a zstd frame.
func unzstd(t testing.TB, z []byte) []byte {
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	b, err := dec.DecodeAll(z, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWriteFuzzSeeds rewrites testdata/fuzz-binary from the small JSON
// seeds of testdata/fuzz-seed when FASTSIM_UPDATE_SEEDS is set.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("FASTSIM_UPDATE_SEEDS") == "" {
		t.Skip("set FASTSIM_UPDATE_SEEDS=1 to rewrite testdata/fuzz-binary")
	}
	old, _ := filepath.Glob("testdata/fuzz-binary/*.fhist")
	for _, p := range old {
		os.Remove(p)
	}
	files, _ := filepath.Glob("testdata/fuzz-seed/*.hist")
	for _, p := range files {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(p), ".hist") + ".fhist"
		if err := os.WriteFile(filepath.Join("testdata/fuzz-binary", name), bareBinary(t, src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzBinary feeds arbitrary bytes after the binary magic to the reader: it
// must return records or *Error values, never panic, and never allocate far
// beyond its input (every length is checked before allocating).
func FuzzBinary(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/fuzz-binary/*.fhist")
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, p := range largeSeeds("../../testdata/golden/*.hist") {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(bareBinary(f, b))
	}
	f.Add(append(append([]byte{}, binform.Magic...), 1, 2, '{', '}'))
	f.Fuzz(func(t *testing.T, data []byte) {
		// A mutation almost always breaks a checksum; half the inputs get
		// theirs mended, so that the fuzzer explores the records' decoding.
		if len(data) > 0 && data[len(data)-1]&1 != 0 {
			data = binform.MendChecksums(data)
		}
		r, err := NewReader(bytes.NewReader(data), "fuzz.fhist")
		if err != nil {
			var he *Error
			if !errors.As(err, &he) {
				t.Fatalf("error %T is not *Error", err)
			}
			return
		}
		defer r.Close()
		r.KeepExtra = true
		var rec Record
		var out bytes.Buffer
		w, err := NewWriter(&out, FormJSON, r.Header(), r.RawHeader())
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 1<<16; i++ {
			err := r.Next(&rec)
			if err == io.EOF {
				break
			}
			if err != nil {
				var he *Error
				if !errors.As(err, &he) {
					t.Fatalf("error %T is not *Error: %v", err, err)
				}
				return
			}
			_ = gen.Dispatch(nopHandler{}, &rec.Msg)
			// The reader checked the record as its JSON line would be
			// checked: writing that line cannot fail.
			if err := w.Write(&rec, r.Registry()); err != nil {
				t.Fatalf("writing JSON of an accepted record: %v", err)
			}
		}
		w.Close()
		// What was written as JSON must read back, every record of it.
		back, err := NewReader(bytes.NewReader(out.Bytes()), "back.hist")
		if err != nil {
			t.Fatalf("JSON written from a valid binary does not read: %v", err)
		}
		defer back.Close()
		for {
			if err := back.Next(&rec); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("JSON written from a valid binary does not read: %v", err)
			}
		}
	})
}

// TestBinaryErrors: corrupt binary input gives FILE:N: errors naming what
// is wrong, never a panic.
func TestBinaryErrors(t *testing.T) {
	src, err := os.ReadFile("../../testdata/golden/to_mesh.hist")
	if err != nil {
		t.Skip(err)
	}
	good := bareBinary(t, src)
	records := bytes.Count(bytes.TrimRight(src, "\n"), []byte("\n")) + 1   // the header is record 1
	hdrEnd := len(binform.Magic) + 1 + 1 + int(good[len(binform.Magic)+1]) // magic, version, header length, header
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte{}, good...)) }
	// framed is the header, then a block of one record of body, with a
	// correct checksum (so that what is tested is the body's decoding).
	framed := func(body ...byte) []byte {
		block := append([]byte{byte(len(body))}, body...)
		b := append([]byte{}, good[:hdrEnd]...)
		b = append(b, byte(len(block)))
		b = append(b, block...)
		return binary.LittleEndian.AppendUint32(b, binform.Checksum(block))
	}
	// framedRaw is the header, then a block of exactly these bytes.
	framedRaw := func(block ...byte) []byte {
		b := append([]byte{}, good[:hdrEnd]...)
		b = append(b, byte(len(block)))
		b = append(b, block...)
		return binary.LittleEndian.AppendUint32(b, binform.Checksum(block))
	}
	const tail0 = `,"nbytes":0,"dtype":"","shape":[],"device":"cuda"}`
	tests := []struct {
		name string
		data []byte
		want string
		is   error
	}{
		{"bad version", mut(func(b []byte) []byte { b[len(binform.Magic)] = 9; return b }), "fuzz.fhist:1: unsupported binary version 9", ErrVersion},
		{"truncated header", good[:len(binform.Magic)+4], "fuzz.fhist:1: the binary history is truncated: it ends inside the header", binform.ErrTruncated},
		{"truncated record", good[:hdrEnd+5], "fuzz.fhist:2: the binary history is truncated: it ends inside a block of records, after the header, before the first record", binform.ErrTruncated},
		// Every record is whole; only the end marker (one byte) is missing.
		{"no end marker", good[:len(good)-1], fmt.Sprintf("fuzz.fhist:%d: the binary history is truncated: it ends after record %d, the last complete one, without its end marker", records+1, records), binform.ErrTruncated},
		// Cut inside the last block: the records of the blocks before it
		// are whole (to_mesh.hist's records fit in one block).
		{"truncated last block", good[:len(good)-3], "fuzz.fhist:2: the binary history is truncated: it ends inside a block of records, after the header, before the first record", binform.ErrTruncated},
		{"data after end", append(append([]byte{}, good...), 7), "data after the end marker", binform.ErrCorrupt},
		{"bad varint", append(append([]byte{}, good[:hdrEnd]...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), "fuzz.fhist:2: bad varint", binform.ErrVarint},
		{"huge record", append(append([]byte{}, good[:hdrEnd]...), 0xff, 0xff, 0xff, 0xff, 0x0f), "fuzz.fhist:2: block of", values.ErrLimit},
		{"bad kind", framed(9, 0, 0), "fuzz.fhist:2: record kind 9", binform.ErrCorrupt},
		{"string index", framed(1, 0, 0, 0, 0, byte(gen.MsgUnknown)<<1, 5), "fuzz.fhist:2: field \"msg\": : string 4 out of range", binform.ErrIndex},
		// A reference to a tensor never defined is an error, as a first
		// mention without its fields is in JSON lines: by slot (18 is slot
		// 17, of none defined), or by id (0, then 18: zigzag for 9).
		{"undefined tensor slot", framed(1, 0, 0, 0, 0, byte(gen.MsgSendTensor)<<1, 0x3f, 18), `field "msg": SendTensor: field "result": tensor slot 17 is referred to but holds no tensor`, binform.ErrCorrupt},
		{"undefined tensor", framed(1, 0, 0, 0, 0, byte(gen.MsgSendTensor)<<1, 0x3f, 0, 18), `field "msg": SendTensor: field "result": tensor 9 is referred to but not defined`, binform.ErrCorrupt},
		{"missing field", framed(1, 0, 0, 0, 0, byte(gen.MsgBorrowDrop)<<1, 0), `BorrowDrop: missing field "borrow"`, nil},
		// One bit flipped in the first record: the block's checksum says so
		// before any record of it is decoded.
		{"bad checksum", mut(func(b []byte) []byte { b[hdrEnd+3] ^= 0x10; return b }), "fuzz.fhist:2: block checksum", binform.ErrCorrupt},
		// A block whose one record claims more bytes than the block holds.
		{"record past its block", framedRaw(5, 1, 2), "fuzz.fhist:2: a record's length does not fit in its block", binform.ErrCorrupt},
		// Tensor 1 defined (id 1, storage 1, then its fields as text: a
		// new blob of 50 bytes, 0 bytes, dtype "", no dimensions) by a
		// BorrowDrop, which mentions no tensor.
		{"defined, not mentioned", framed(slices.Concat([]byte{1, 0, 0, 1, 2, 0, 0, byte(len(tail0))}, []byte(tail0), []byte{0, byte(gen.MsgBorrowDrop) << 1, 1, 2})...), "tensor 1 is defined by a record that does not mention it", binform.ErrCorrupt},
		// The same definition with its fields written otherwise than a
		// JSON-lines writer writes them (a space).
		{"definition not canonical", framed(slices.Concat([]byte{1, 0, 0, 1, 2, 0, 0, byte(len(tail0) + 1)}, []byte(" "+tail0), []byte{0, byte(gen.MsgBorrowDrop) << 1, 1, 2})...), "tensor 1: its definition: its fields are not written as a JSON-lines writer writes them", binform.ErrCorrupt},
		{"too many slices", framed(1, 0, 0, 0, 0xff, 0x7f), "rank slices", nil},
		// A CommandGroup of one BorrowDrop (borrow 1: zigzag 2) whose key
		// order names its one field twice: the decoder finds the order odd
		// and the reader names what is wrong in the sub-command.
		{"sub-command key order twice", framed(1, 0, 0, 0, 0, byte(gen.MsgCommandGroup)<<1, 1, 1, byte(gen.MsgBorrowDrop)<<1|1, 1, 2, 2, 1, 1, 0), `BorrowDrop: key order names field "borrow" twice`, binform.ErrCorrupt},
		// The same sub-command with a valid order (its field, then one
		// extra) whose extra field is named "borrow", as its declared field
		// is: only the extra fields' check finds it (the orders are valid).
		{"sub-command extra key declared", framed(slices.Concat([]byte{1, 0, 0, 0, 0, byte(gen.MsgCommandGroup) << 1, 1, 1, byte(gen.MsgBorrowDrop)<<1 | 1, 1, 2, 2, 1, 0, 1, 0, 6}, []byte("borrow"), []byte{1, 1, '1'})...), `BorrowDrop: key "borrow" appears twice`, binform.ErrCorrupt},
	}
	for _, tc := range tests {
		_, err := readAll(t, tc.data, "fuzz.fhist")
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		var he *Error
		if !errors.As(err, &he) {
			t.Errorf("%s: error %T is not *Error: %v", tc.name, err, err)
		}
		if !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: error %q, want %q (%v)", tc.name, err, tc.want, tc.is)
		}
	}
	bad := append([]byte("\xf5FHIS"), 'X')
	if _, err := readAll(t, bad, "x.fhist"); err == nil || !errors.Is(err, ErrHeader) {
		t.Errorf("bad magic: %v", err)
	}
}
