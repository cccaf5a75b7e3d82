package history

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/jsonl"
	"github.com/fastsim/fastsim/internal/values"
	"github.com/klauspost/compress/zstd"
)

const hdr = `{"fastsim":"history","version":1,"world_size":4,"gpus_per_host":2}` + "\n"

const call = `{"ts":%d,"ranks":[{"offset":0,"sizes":[4],"strides":[1]}],"msg":{"type":"CallFunction","function":"f","args":[],"kwargs":{},"result":[{"tensor":1,"storage":1,"nbytes":8,"dtype":"float32","shape":[2],"device":"cuda"}],"mutates":[],"stream":{"ref":1}}}`

func readAll(t testing.TB, src []byte, name string) ([]Record, error) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(src), name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []Record
	for {
		var rec Record
		err := r.Next(&rec)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}

func TestErrors(t *testing.T) {
	rec := func(ts int, ranks, msg string) string {
		return `{"ts":` + itoa(ts) + `,"ranks":[` + ranks + `],"msg":` + msg + "}\n"
	}
	all := `{"offset":0,"sizes":[4],"strides":[1]}`
	del := `{"type":"DeleteRefs","refs":[1]}`
	tests := []struct {
		name, src string
		line      string // "FILE:LINE:" prefix wanted
		want      string // substring of the message
		is        error
	}{
		{"empty", "", "t.hist:", "no header: the file is empty", ErrHeader},
		{"blank only", "\n \n", "t.hist:", "no header", ErrHeader},
		{"not JSON header", "hello\n", "t.hist:1:", "invalid JSON", ErrHeader},
		{"header not object", "[1]\n", "t.hist:1:", "no header: line is a list", ErrHeader},
		{"no magic", `{"version":1,"world_size":2}` + "\n", "t.hist:1:", `no "fastsim":"history"`, ErrHeader},
		{"bad magic", `{"fastsim":"other","version":1,"world_size":2}` + "\n", "t.hist:1:", `"fastsim" is "other"`, ErrHeader},
		{"version", `{"fastsim":"history","version":2,"world_size":2}` + "\n", "t.hist:1:", "unsupported version 2", ErrVersion},
		{"no version", `{"fastsim":"history","world_size":2}` + "\n", "t.hist:1:", `missing field "version"`, ErrHeader},
		{"world 0", `{"fastsim":"history","version":1,"world_size":0}` + "\n", "t.hist:1:", `"world_size" is 0`, ErrHeader},
		{"world string", `{"fastsim":"history","version":1,"world_size":"4"}` + "\n", "t.hist:1:", `field "world_size": want an integer, got a string`, jsonl.ErrType},
		{"header after blank", "\n\n" + `{"fastsim":"history","version":3,"world_size":2}` + "\n", "t.hist:3:", "unsupported version 3", ErrVersion},
		{"not JSON", hdr + "{\"ts\":1,\n", "t.hist:2:", "invalid JSON", jsonl.ErrSyntax},
		{"trailing garbage", hdr + rec(1, all, del) + `{"step":0} x` + "\n", "t.hist:3:", "want the end of the line", jsonl.ErrSyntax},
		{"invalid utf8", hdr + "{\"step\":0,\"x\":\"\xff\"}\n", "t.hist:2:", "not valid UTF-8", jsonl.ErrEncoding},
		{"nul", hdr + "{\"step\":0}\x00\n", "t.hist:2:", "NUL byte", jsonl.ErrEncoding},
		// The encoding is checked after reading a line, whatever read it:
		// bad bytes in a kept string, a skipped one, a tree's raw text, a
		// key, after an error the line has, all give the encoding error.
		{"invalid utf8 function", hdr + rec(1, all, "{\"type\":\"CallFunction\",\"function\":\"f\xc3\",\"stream\":{\"ref\":1}}"), "t.hist:2:", "not valid UTF-8", jsonl.ErrEncoding},
		{"invalid utf8 kwargs", hdr + rec(1, all, "{\"type\":\"CallFunction\",\"function\":\"f\",\"kwargs\":{\"a\":[\"\xe2\x82\"]},\"stream\":{\"ref\":1}}"), "t.hist:2:", "not valid UTF-8", jsonl.ErrEncoding},
		{"invalid utf8 key", hdr + "{\"step\":0,\"\xff\":1}\n", "t.hist:2:", "not valid UTF-8", jsonl.ErrEncoding},
		{"invalid utf8 escaped", hdr + "{\"step\":0,\"x\":\"\\n\xff\"}\n", "t.hist:2:", "not valid UTF-8", jsonl.ErrEncoding},
		{"invalid utf8 after error", hdr + "{\"step\":\"0\",\"x\":\"\xff\"}\n", "t.hist:2:", "not valid UTF-8", jsonl.ErrEncoding},
		{"invalid utf8 outside string", hdr + "{\"step\":0}\xff\n", "t.hist:2:", "not valid UTF-8", jsonl.ErrEncoding},
		{"nul in string", hdr + "{\"step\":0,\"x\":\"a\x00\"}\n", "t.hist:2:", "NUL byte at column 17", jsonl.ErrEncoding},
		{"utf8 outside string", hdr + "{\"step\":0}\u00e9\n", "t.hist:2:", "want the end of the line", jsonl.ErrSyntax},
		{"neither", hdr + `{"tb":[]}` + "\n", "t.hist:2:", "neither a command", ErrRecord},
		{"record list", hdr + `[1,2]` + "\n", "t.hist:2:", "record is a list", ErrRecord},
		{"step and msg", hdr + `{"step":1,"ranks":[],"msg":` + del + "}\n", "t.hist:2:", `both "step" and a command`, ErrRecord},
		{"missing ts", hdr + `{"ranks":[],"msg":` + del + "}\n", "t.hist:2:", `missing field "ts"`, values.ErrMissing},
		{"missing ranks", hdr + `{"ts":1,"msg":` + del + "}\n", "t.hist:2:", `missing field "ranks"`, values.ErrMissing},
		{"missing msg", hdr + `{"ts":1,"ranks":[]}` + "\n", "t.hist:2:", `missing field "msg"`, values.ErrMissing},
		{"ts string", hdr + `{"ts":"1","ranks":[],"msg":` + del + "}\n", "t.hist:2:", `field "ts": want an integer, got a string`, jsonl.ErrType},
		{"ts float", hdr + `{"ts":1.5,"ranks":[],"msg":` + del + "}\n", "t.hist:2:", `field "ts": want an integer, got 1.5`, jsonl.ErrType},
		{"ts huge", hdr + `{"ts":99999999999999999999,"ranks":[],"msg":` + del + "}\n", "t.hist:2:", `does not fit in 64 bits`, values.ErrRange},
		{"msg no type", hdr + rec(1, all, `{"refs":[1]}`), "t.hist:2:", `field "msg": missing field "type"`, values.ErrMissing},
		{"msg missing field", hdr + rec(1, all, `{"type":"DeleteRefs"}`), "t.hist:2:", `field "msg": DeleteRefs: missing field "refs"`, values.ErrMissing},
		{"msg wrong type", hdr + rec(1, all, `{"type":"BorrowDrop","borrow":"x"}`), "t.hist:2:", `BorrowDrop: field "borrow": want an integer, got a string`, jsonl.ErrType},
		{"msg type late", hdr + rec(1, all, `{"refs":{},"type":"DeleteRefs"}`), "t.hist:2:", `DeleteRefs: field "refs": want a list, got an object`, jsonl.ErrType},
		{"group item", hdr + rec(1, all, `{"type":"CommandGroup","commands":[`+del+`,{"type":"DeleteRefs"}]}`), "t.hist:2:", `CommandGroup: field "commands": item 1: DeleteRefs: missing field "refs"`, values.ErrMissing},
		{"sizes strides", hdr + rec(1, `{"offset":0,"sizes":[2,2],"strides":[1]}`, del), "t.hist:2:", "2 sizes but 1 strides", values.ErrSlice},
		{"negative size", hdr + rec(1, `{"offset":0,"sizes":[-2],"strides":[1]}`, del), "t.hist:2:", "negative size -2", values.ErrSlice},
		{"rank outside", hdr + rec(1, `{"offset":2,"sizes":[3],"strides":[1]}`, del), "t.hist:2:", "rank 4 is outside the world of 4 ranks", values.ErrSlice},
		{"negative rank", hdr + rec(1, `{"offset":1,"sizes":[2],"strides":[-2]}`, del), "t.hist:2:", "rank -1 is outside the world", values.ErrSlice},
		{"huge stride", hdr + rec(1, `{"offset":0,"sizes":[2],"strides":[9223372036854775807]}`, del), "t.hist:2:", "reaches outside the world", values.ErrSlice},
		{"too many dims", hdr + rec(1, `{"offset":0,"sizes":[`+strings.Repeat("1,", 32)+`1],"strides":[`+strings.Repeat("0,", 32)+`0]}`, del), "t.hist:2:", "more than the limit of 32", values.ErrLimit},
		{"too many ranks", hdr + rec(1, `{"offset":0,"sizes":[65536,65536],"strides":[0,0]}`, del), "t.hist:2:", "more than 16777216 ranks", values.ErrLimit},
		{"slice missing offset", hdr + rec(1, `{"sizes":[],"strides":[]}`, del), "t.hist:2:", `missing field "offset"`, values.ErrMissing},
		{"send from_ranks", hdr + rec(1, all, `{"type":"SendTensor","result":{"tensor":2,"storage":2,"nbytes":0,"dtype":"float32","shape":[],"device":"cuda"},"tensor":{"tensor":1,"storage":1,"nbytes":0,"dtype":"float32","shape":[],"device":"cuda"},"from_ranks":{"offset":0,"sizes":[5],"strides":[1]},"to_ranks":{"offset":0,"sizes":[],"strides":[]},"from_stream":{"ref":1},"to_stream":{"ref":1}}`), "t.hist:2:", `SendTensor: field "from_ranks": rank 4 is outside`, values.ErrSlice},
		{"send in group", hdr + rec(1, all, `{"type":"CommandGroup","commands":[{"type":"SendTensor","result":{"tensor":2,"storage":2,"nbytes":0,"dtype":"float32","shape":[],"device":"cuda"},"tensor":{"tensor":1,"storage":1,"nbytes":0,"dtype":"float32","shape":[],"device":"cuda"},"from_ranks":{"offset":0,"sizes":[],"strides":[]},"to_ranks":{"offset":7,"sizes":[],"strides":[]},"from_stream":{"ref":1},"to_stream":{"ref":1}}]}`), "t.hist:2:", `field "to_ranks": rank 7 is outside`, values.ErrSlice},
		{"ts backwards", hdr + rec(5, all, del) + "\n" + rec(4, all, del), "t.hist:4:", "ts 4 goes backwards (the previous command's ts is 5)", ErrTime},
		{"tensor conflict", hdr + strings.ReplaceAll(call, "%d", "1") + "\n" + rec(2, all, `{"type":"CallFunction","function":"g","args":[{"tensor":1,"nbytes":16}],"stream":{"ref":1}}`), "t.hist:3:", `tensor 1: nbytes is 16 here but 8 in its first mention (line 2)`, values.ErrConflict},
		{"tensor dtype conflict", hdr + strings.ReplaceAll(call, "%d", "1") + "\n" + rec(2, all, `{"type":"DeleteRefs","refs":[]}`) + rec(3, all, `{"type":"Reduce","result":{"tensor":2,"storage":2,"nbytes":0,"dtype":"float32","shape":[],"device":"cuda"},"local_tensor":{"tensor":1,"dtype":"bf16"},"stream":{"ref":1},"reduction":"sum"}`), "t.hist:4:", `dtype is "bf16" here but "float32"`, values.ErrConflict},
		{"tensor bad device", hdr + rec(1, all, `{"type":"Reduce","result":{"tensor":2,"device":"tpu"},"local_tensor":{"tensor":1},"stream":{"ref":1},"reduction":"sum"}`), "t.hist:2:", `field "device": want "cuda" or "cpu", got "tpu"`, values.ErrRange},
		{"depth", hdr + rec(1, all, `{"type":"CallFunction","function":"f","args":`+strings.Repeat("[", 70)+strings.Repeat("]", 70)+`,"stream":{"ref":1}}`), "t.hist:2:", "nest deeper than 64", jsonl.ErrDepth},
		{"step string", hdr + `{"step":"1"}` + "\n", "t.hist:2:", `field "step": want an integer, got a string`, jsonl.ErrType},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readAll(t, []byte(tc.src), "t.hist")
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			var he *Error
			if !errors.As(err, &he) {
				t.Fatalf("error %T %v is not a *history.Error", err, err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tc.line+" ") || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want prefix %q and %q", msg, tc.line, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %v", msg, tc.is)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestAcceptsVariants(t *testing.T) {
	src := "\r\n" + strings.TrimSuffix(hdr, "\n") + "\r\n\r\n" +
		strings.ReplaceAll(call, "%d", "1") + "\r\n" +
		`{"msg":{"type":"Mystery","x":[1,{"a":null}]},"tb":[{"file":"a.py","line":3,"name":"f"}],"ranks":[],"ts":1}` + "\n" +
		`{"ts":2,"ranks":[{"offset":3,"sizes":[],"strides":[]}],"msg":{"stream":{"ref":1},"function":"g","type":"CallFunction","args":[{"x":{"tensor":1}},{"tensor":5,"storage":5,"nbytes":4,"dtype":"int64","shape":[],"device":"cpu"}]}}` + "\n" +
		`{"step":0}` // no final newline
	recs, err := readAll(t, []byte(src), "v.hist")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}
	if recs[0].Line != 4 || recs[0].Msg.Kind != gen.MsgCallFunction || recs[0].Ts != 1 {
		t.Errorf("record 0: %+v", recs[0])
	}
	if m := recs[1].Msg; m.Kind != gen.MsgUnknown || m.TypeName != "Mystery" {
		t.Errorf("record 1: kind %v type %q", m.Kind, m.TypeName)
	}
	cf := recs[2].Msg.CallFunction
	if recs[2].Line != 6 || len(cf.Args.Leaves) != 2 || cf.Args.Leaves[0].NBytes != 8 || !cf.Args.Leaves[1].CPU || cf.Args.Leaves[1].Idx != 1 {
		t.Errorf("record 2: %+v", cf.Args)
	}
	if !recs[3].IsStep || recs[3].Step != 0 || recs[3].Line != 7 || recs[3].Ts != 2 {
		t.Errorf("record 3: %+v", recs[3])
	}
}

func goldenFiles(t testing.TB) []string {
	files, _ := filepath.Glob("../../testdata/golden/*.hist")
	if len(files) == 0 {
		files, _ = filepath.Glob("testdata/fuzz-seed/*.hist")
	}
	if len(files) == 0 {
		t.Skip("no golden histories")
	}
	return files
}

// summary renders what a reader saw, for comparisons.
func summary(t testing.TB, r *Reader) string {
	var b strings.Builder
	var rec Record
	for {
		err := r.Next(&rec)
		if err == io.EOF {
			return b.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%d %d %s %v", rec.Line, rec.Ts, rec.Msg.TypeName, rec.Msg.CallFunction.Args.Leaves)
		for i := range rec.Ranks {
			fmt.Fprint(&b, " ", rec.Ranks[i].AppendRanks(nil))
		}
		if rec.IsStep {
			fmt.Fprint(&b, " step ", rec.Step)
		}
		b.WriteString("\n")
	}
}

func TestPlainZstdEquivalent(t *testing.T) {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	for _, f := range goldenFiles(t) {
		plain, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		zpath := filepath.Join(dir, "x.hist.zst")
		if err := os.WriteFile(zpath, enc.EncodeAll(plain, nil), 0o644); err != nil {
			t.Fatal(err)
		}
		rp, err := Open(f)
		if err != nil {
			t.Fatal(err)
		}
		rz, err := Open(zpath)
		if err != nil {
			t.Fatal(err)
		}
		if rp.Header() != rz.Header() {
			t.Errorf("%s: headers %+v and %+v", f, rp.Header(), rz.Header())
		}
		sp, sz := summary(t, rp), summary(t, rz)
		if sp != sz || sp == "" {
			t.Errorf("%s: plain and zstd differ", f)
		}
		rp.Close()
		rz.Close()
	}
}

func TestZstdTruncated(t *testing.T) {
	f := goldenFiles(t)[0]
	var plain []byte
	for _, g := range goldenFiles(t) {
		if b, _ := os.ReadFile(g); len(b) > len(plain) {
			plain, f = b, g
		}
	}
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	z := enc.EncodeAll(plain, nil)
	enc.Close()
	for _, cut := range []int{len(z) / 2, len(z) - 3} {
		_, err := readAll(t, z[:cut], "t.hist.zst")
		if !errors.Is(err, ErrZstd) {
			t.Fatalf("%s cut at %d: error %v, want ErrZstd", f, cut, err)
		}
		// A frame of one block (this one's 106 kB fit in one) gives out
		// no line before the cut: the error names the file alone
		// (TestZstdCutNamesLastLine checks the line of a longer one).
		var he *Error
		if !errors.As(err, &he) || !strings.HasPrefix(err.Error(), "t.hist.zst:") || (he.Line < 1) != strings.Contains(err.Error(), "before the first complete line") {
			t.Errorf("error %q lacks file and line", err)
		}
	}
	// Corrupt a byte in the middle.
	bad := bytes.Clone(z)
	bad[len(bad)/2] ^= 0xff
	if _, err := readAll(t, bad, "t.hist.zst"); err == nil {
		t.Errorf("corrupt frame: no error")
	}
}

func TestLineTooLong(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 256 MiB")
	}
	r := io.MultiReader(strings.NewReader(hdr+`{"step":0,"x":"`), &letters{n: jsonl.MaxLineBytes + 10})
	rd, err := NewReader(r, "long.hist")
	if err != nil {
		t.Fatal(err)
	}
	var rec Record
	err = rd.Next(&rec)
	if !errors.Is(err, ErrLineTooLong) || !strings.HasPrefix(err.Error(), "long.hist:2: ") {
		t.Fatalf("error %v, want ErrLineTooLong at line 2", err)
	}
}

// letters yields n bytes of 'a'.
type letters struct{ n int }

func (l *letters) Read(p []byte) (int, error) {
	if l.n == 0 {
		return 0, io.EOF
	}
	p = p[:min(len(p), l.n)]
	for i := range p {
		p[i] = 'a'
	}
	l.n -= len(p)
	return len(p), nil
}

// TestNonASCIIStrings: valid UTF-8 in strings (a function name, a dtype,
// a key and a value skipped in kwargs) is read as written; the encoding
// check that follows such a line finds nothing to report.
func TestNonASCIIStrings(t *testing.T) {
	src := hdr + `{"ts":1,"ranks":[{"offset":0,"sizes":[4],"strides":[1]}],"msg":{"type":"CallFunction","function":"f·é","args":[],"kwargs":{"clé":"naïve ✓"},"result":[{"tensor":1,"storage":1,"nbytes":8,"dtype":"flöat","shape":[2],"device":"cuda"}],"mutates":[],"stream":{"ref":1}}}` + "\n"
	recs, err := readAll(t, []byte(src), "t.hist")
	if err != nil {
		t.Fatal(err)
	}
	cf := recs[0].Msg.CallFunction
	if cf.Function != "f·é" || cf.Result.Leaves[0].Dtype != "flöat" || string(cf.Kwargs.Raw) != `{"clé":"naïve ✓"}` {
		t.Errorf("function %q, dtype %q, kwargs %s", cf.Function, cf.Result.Leaves[0].Dtype, cf.Kwargs.Raw)
	}
}
