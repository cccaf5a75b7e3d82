package history

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/binform"
)

// TestVersion3Read: a file of the binary form's version 3 (written by the
// last version 3 build, bare and in zstd, from the golden borrow history)
// still reads, to the records of its JSON lines: version 4 changed only
// how a record's ts and a definition's id are written. A version outside
// 3..4 is refused in one line naming the file and the header's line.
func TestVersion3Read(t *testing.T) {
	src, err := os.ReadFile("../../testdata/golden/borrow.hist")
	if err != nil {
		t.Fatal(err)
	}
	want := dumpAll(t, src)
	for _, name := range []string{"testdata/v3/borrow.fhist", "testdata/v3/borrow.fhist.zst"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := dumpAll(t, data); got != want {
			t.Errorf("%s: reads differently from its JSON lines:\n%s", name, firstDiff(want, got))
		}
	}
	bare, err := os.ReadFile("testdata/v3/borrow.fhist")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		v    byte
		want string
	}{
		{2, "v.fhist:1: unsupported binary version 2 (this reader knows versions 3 to 4): convert the history's JSON-lines form again"},
		{5, "v.fhist:1: unsupported binary version 5 (this reader knows versions 3 to 4)"},
	} {
		b := append([]byte(nil), bare...)
		b[len(binform.Magic)] = c.v
		_, err := readAll(t, b, "v.fhist")
		if err == nil || err.Error() != c.want || !errors.Is(err, ErrVersion) {
			t.Errorf("version %d: %v, want %q", c.v, err, c.want)
		}
	}
}

// steadyHistory is a history whose commands come 20,000 ns apart, each
// defining the tensor whose id follows the previous one's, past 2^20.
func steadyHistory(n int) []byte {
	all := `"ranks":[{"offset":0,"sizes":[2],"strides":[1]}]`
	var b strings.Builder
	b.WriteString(`{"fastsim":"history","version":1,"world_size":2}` + "\n")
	fmt.Fprintf(&b, `{"ts":20000,%s,"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`+"\n", all)
	for i := range n {
		fmt.Fprintf(&b, `{"ts":%d,%s,"msg":{"type":"CallFunction","function":"f","args":[],"kwargs":{},"result":[{"tensor":%d,"storage":%d,"nbytes":8,"dtype":"float32","shape":[2],"device":"cuda"}],"stream":{"ref":1}}}`+"\n",
			40000+20000*i, all, 3_000_000+i, 3_000_000+i)
	}
	return []byte(b.String())
}

// TestSteadyRecordsShort: in the bare binary stream of steadyHistory, every
// record after the first gives its ts as one byte 0 (the same difference
// as the record before), and every definition after the first gives its
// id as one byte 2 (zigzag of 1: the previous definition's id, plus one),
// as FORMAT.md says (a record: kind, flags, ts_change, then a command's
// ndefs and each definition's id_delta). The history reads back the same
// from both forms (roundTrip).
func TestSteadyRecordsShort(t *testing.T) {
	const n = 40
	src := steadyHistory(n)
	roundTrip(t, "steady", src)
	bare := convert(t, src, FormBinaryBare)
	p := len(binform.Magic)
	if v, k := binary.Uvarint(bare[p:]); v != binform.Version || k != 1 {
		t.Fatalf("version %d", v)
	}
	p++
	hdr, k := binary.Uvarint(bare[p:])
	p += k + int(hdr)
	blockLen, k := binary.Uvarint(bare[p:])
	p += k
	block := bare[p : p+int(blockLen)]
	var bodies [][]byte
	for q := 0; q < len(block); {
		l, k := binary.Uvarint(block[q:])
		bodies = append(bodies, block[q+k:q+k+int(l)])
		q += k + int(l)
	}
	if len(bodies) != n+1 {
		t.Fatalf("%d records in the first block, want %d", len(bodies), n+1)
	}
	for i, body := range bodies[1:] {
		if body[0] != binform.KindCommand || body[2] != 0 {
			t.Fatalf("record %d: kind %d, ts_change byte %#x, want a command and 0: % x", i+3, body[0], body[2], body[:8])
		}
		if body[3] != 1 {
			t.Fatalf("record %d: %d definitions, want 1", i+3, body[3])
		}
		if i > 0 && body[4] != 2 {
			t.Fatalf("record %d: id_delta byte %#x, want 2 (one more than the previous definition's id): % x", i+3, body[4], body[:8])
		}
	}
}

// TestRoundTripTsAndIds: ts differences that change, repeat, go to zero,
// jump by 2^62 and wrap, on steps too; definitions whose ids go up, down,
// past 2^40 and below zero, with deletions and ids defined again: the
// binary form reads back as JSON lines do (roundTrip).
func TestRoundTripTsAndIds(t *testing.T) {
	all := `"ranks":[{"offset":0,"sizes":[2],"strides":[1]}]`
	def := func(ts int64, ids ...int64) string {
		var res []string
		for _, id := range ids {
			res = append(res, fmt.Sprintf(`{"tensor":%d,"storage":%d,"nbytes":8,"dtype":"float32","shape":[2],"device":"cuda"}`, id, id))
		}
		return fmt.Sprintf(`{"ts":%d,%s,"msg":{"type":"CallFunction","function":"f","args":[],"kwargs":{},"result":[%s],"stream":{"ref":1}}}`+"\n", ts, all, strings.Join(res, ","))
	}
	src := `{"fastsim":"history","version":1,"world_size":2}` + "\n" +
		`{"ts":5,` + all + `,"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}` + "\n" +
		def(5, 7) + def(9, 6, 8) + def(13, 1<<40) + `{"step":0}` + "\n" +
		def(13, -3) + def(1000, 2) + def(1001, 3) + `{"step":1}` + "\n" + `{"step":2}` + "\n" +
		`{"ts":1002,` + all + `,"msg":{"type":"DeleteRefs","refs":[7,1099511627776,2]}}` + "\n" +
		def(1<<62, 7, 2) + def(1<<62+1, 1<<40) + def(1<<62+1, 9) +
		`{"ts":9223372036854775807,` + all + `,"msg":{"type":"DeleteRefs","refs":[9]}}` + "\n" +
		def(9223372036854775807, 9, -9223372036854775808)
	roundTrip(t, "ts and ids", []byte(src))
}
