package pickle

import (
	"bytes"
	"errors"
	"math"
	"os/exec"
	"strings"
	"testing"
)

func pickled(t *testing.T, fill func(w *Writer)) []byte {
	t.Helper()
	var b bytes.Buffer
	w := NewWriter(&b)
	fill(w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestEncodings checks each value against its encoding worked out from the
// opcode table of CPython's pickletools: PROTO 2 = 80 02, then the value,
// then STOP '.'.
func TestEncodings(t *testing.T) {
	for _, tc := range []struct {
		name string
		fill func(w *Writer)
		want []byte // between PROTO and STOP
	}{
		{"None", func(w *Writer) { w.None() }, []byte{'N'}},
		{"True", func(w *Writer) { w.Bool(true) }, []byte{0x88}},
		{"False", func(w *Writer) { w.Bool(false) }, []byte{0x89}},
		{"0", func(w *Writer) { w.Int(0) }, []byte{'K', 0}},
		{"255", func(w *Writer) { w.Int(255) }, []byte{'K', 0xff}},
		{"256", func(w *Writer) { w.Int(256) }, []byte{'M', 0x00, 0x01}},
		{"65536", func(w *Writer) { w.Int(65536) }, []byte{'J', 0, 0, 1, 0}},
		{"-1", func(w *Writer) { w.Int(-1) }, []byte{'J', 0xff, 0xff, 0xff, 0xff}},
		// 2^31 = 0x80000000: four bytes would read negative, so a fifth 00.
		{"2^31", func(w *Writer) { w.Int(1 << 31) }, []byte{0x8a, 5, 0, 0, 0, 0x80, 0}},
		// -2^31-1 = ...FF FFFFFF 7FFFFFFF: 7f reads positive, so a fifth ff.
		{"-2^31-1", func(w *Writer) { w.Int(-(1 << 31) - 1) }, []byte{0x8a, 5, 0xff, 0xff, 0xff, 0x7f, 0xff}},
		{"maxint64", func(w *Writer) { w.Int(math.MaxInt64) }, []byte{0x8a, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}},
		{"minint64", func(w *Writer) { w.Int(math.MinInt64) }, []byte{0x8a, 8, 0, 0, 0, 0, 0, 0, 0, 0x80}},
		// 1.5 = 0x3FF8000000000000, big-endian.
		{"1.5", func(w *Writer) { w.Float(1.5) }, []byte{'G', 0x3f, 0xf8, 0, 0, 0, 0, 0, 0}},
		{"str", func(w *Writer) { w.String("ab") }, []byte{'X', 2, 0, 0, 0, 'a', 'b'}},
		{"list", func(w *Writer) { w.BeginList(); w.Int(1); w.None(); w.End() }, []byte{']', '(', 'K', 1, 'N', 'e'}},
		{"dict", func(w *Writer) { w.BeginDict(); w.Key("a"); w.Bool(true); w.End() }, []byte{'}', '(', 'X', 1, 0, 0, 0, 'a', 0x88, 'u'}},
	} {
		got := pickled(t, tc.fill)
		want := append(append([]byte{0x80, 2}, tc.want...), '.')
		if !bytes.Equal(got, want) {
			t.Errorf("%s: % x, want % x", tc.name, got, want)
		}
	}
}

func TestNestingErrors(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	w.BeginList()
	if err := w.Close(); !errors.Is(err, ErrNesting) {
		t.Errorf("open list at Close: %v", err)
	}
	w = NewWriter(&b)
	w.End()
	if err := w.Close(); !errors.Is(err, ErrNesting) {
		t.Errorf("End without Begin: %v", err)
	}
}

// TestPythonLoads has Python's own unpickler read a nested value and print
// it; the expected text is that value written as a Python literal.
func TestPythonLoads(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	data := pickled(t, func(w *Writer) {
		w.BeginDict()
		w.Key("segments")
		w.BeginList()
		w.BeginDict()
		w.Key("address")
		w.Int(1 << 40)
		w.Key("blocks")
		w.BeginList()
		w.End()
		w.End()
		w.End()
		w.Key("neg")
		w.Int(-(1 << 33))
		w.Key("f")
		w.Float(0.25)
		w.Key("s")
		w.String("aten.mm é")
		w.Key("n")
		w.None()
		w.Key("b")
		w.Bool(false)
		w.End()
	})
	cmd := exec.Command(py, "-c", "import pickle,sys; print(repr(pickle.loads(sys.stdin.buffer.read())))")
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	want := "{'segments': [{'address': 1099511627776, 'blocks': []}], 'neg': -8589934592, 'f': 0.25, 's': 'aten.mm é', 'n': None, 'b': False}"
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("python read\n%s\nwant\n%s", got, want)
	}
}
