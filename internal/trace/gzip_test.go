package trace

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

func TestCompressionOf(t *testing.T) {
	for path, want := range map[string]Compression{
		"run.trace.json":     Plain,
		"run.trace.json.gz":  Gzip,
		"run.trace.json.zst": Zstd,
		"run":                Plain,
		"/dev/null":          Plain,
	} {
		if got := CompressionOf(path); got != want {
			t.Errorf("%s: %d, want %d", path, got, want)
		}
	}
}

// TestFileGzip writes a .json.gz trace and reads it back with a gzip reader:
// the same bytes as the plain Writer's.
func TestFileGzip(t *testing.T) {
	var want bytes.Buffer
	w := NewWriter(&want)
	writeSample(w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "trace.json.gz")
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	writeSample(f.W)
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < 2 || raw[0] != 0x1f || raw[1] != 0x8b {
		t.Fatalf("%s does not start with the gzip magic", path)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Error("decompressed .json.gz differs from the plain output")
	}
}

func TestOpenHint(t *testing.T) {
	if h := OpenHint("x.trace.json.zst"); !strings.Contains(h, "zstd -d x.trace.json.zst") || !strings.Contains(h, ".json.gz") {
		t.Errorf("zst hint %q names neither the decompression nor .json.gz", h)
	}
	for _, p := range []string{"x.json", "x.json.gz"} {
		if h := OpenHint(p); !strings.Contains(h, "Perfetto") || strings.Contains(h, "zstd") {
			t.Errorf("%s: hint %q", p, h)
		}
	}
}

// TestSpan writes a zero-length span as a thread-scoped instant event and
// a longer one as a complete event.
func TestSpan(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	w.Span(1, 2, "CommandGroup", 5000, 5000, 3)
	w.Span(1, 2, "aten.mm", 5000, 15000, 4)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := `{"traceEvents":[
{"name":"CommandGroup","cat":"compute","ph":"i","s":"t","ts":5,"pid":1,"tid":2,"args":{"command":3}},
{"name":"aten.mm","cat":"compute","ph":"X","ts":5,"dur":10,"pid":1,"tid":2,"args":{"command":4}}
]}
`
	if got := out.String(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
