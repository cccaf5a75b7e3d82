package trace

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// writeSample writes the same events to w every time.
func writeSample(w *Writer) {
	w.ProcessName(0, "Controller")
	w.ThreadName(0, 1, "Controller")
	w.ProcessName(1, "Device 0")
	w.ThreadName(1, 2, "main")
	for i := range int64(5000) {
		w.Complete(0, 1, "aten.mm", i*1000, i*1000+1000, i)
		w.Complete(1, 2, "aten.mm", i*1000+500, i*1000+10500, i)
		w.Counter(1, i*1000+500, i*40000)
	}
}

// dirEntries lists the names in dir.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestFilePlainAndZstd(t *testing.T) {
	dir := t.TempDir()
	var want bytes.Buffer
	w := NewWriter(&want)
	writeSample(w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	plain := filepath.Join(dir, "trace.json")
	zst := filepath.Join(dir, "trace.json.zst")
	for _, path := range []string{plain, zst} {
		f, err := Create(path)
		if err != nil {
			t.Fatal(err)
		}
		writeSample(f.W)
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		f.Abort() // no-op after Commit
		if err := f.Commit(); !errors.Is(err, ErrClosed) {
			t.Errorf("second Commit: got %v, want ErrClosed", err)
		}
	}
	if got := dirEntries(t, dir); len(got) != 2 {
		t.Fatalf("directory holds %v, want only the two traces", got)
	}

	gotPlain, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotPlain, want.Bytes()) {
		t.Error("plain file differs from the Writer's output")
	}
	compressed, err := os.ReadFile(zst)
	if err != nil {
		t.Fatal(err)
	}
	if len(compressed) >= len(gotPlain) {
		t.Errorf("zstd output (%d bytes) is not smaller than plain (%d bytes)", len(compressed), len(gotPlain))
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	gotZst, err := dec.DecodeAll(compressed, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotZst, want.Bytes()) {
		t.Error("decompressed .zst differs from the plain output")
	}
}

func TestFileAbort(t *testing.T) {
	for _, name := range []string{"trace.json", "trace.json.zst"} {
		dir := t.TempDir()
		path := filepath.Join(dir, name)
		f, err := Create(path)
		if err != nil {
			t.Fatal(err)
		}
		writeSample(f.W)
		f.Abort()
		f.Abort()
		if got := dirEntries(t, dir); len(got) != 0 {
			t.Errorf("%s: Abort left %v", name, got)
		}
		if err := f.Commit(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s: Commit after Abort: got %v, want ErrClosed", name, err)
		}
		if got := dirEntries(t, dir); len(got) != 0 {
			t.Errorf("%s: Commit after Abort left %v", name, got)
		}
	}
}

func TestFileAbortKeepsExisting(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	writeSample(f.W)
	f.Abort()
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("Abort changed the destination to %q", got)
	}
}

func TestFileFailedWrite(t *testing.T) {
	for _, name := range []string{"trace.json", "trace.json.zst"} {
		dir := t.TempDir()
		path := filepath.Join(dir, name)
		f, err := Create(path)
		if err != nil {
			t.Fatal(err)
		}
		f.out.f.Close() // every later write to the file fails
		writeSample(f.W)
		if err := f.Commit(); err == nil {
			t.Errorf("%s: Commit succeeded after failed writes", name)
		}
		if got := dirEntries(t, dir); len(got) != 0 {
			t.Errorf("%s: failed Commit left %v", name, got)
		}
	}
}

func TestFileFailedRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.json")
	if err := os.Mkdir(path, 0o755); err != nil { // a directory cannot be replaced by a file
		t.Fatal(err)
	}
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	writeSample(f.W)
	if err := f.Commit(); err == nil {
		t.Fatal("Commit onto a directory succeeded")
	}
	if got := dirEntries(t, dir); len(got) != 1 || got[0] != "trace.json" {
		t.Errorf("failed Commit left %v", got)
	}
}

func TestCreateMissingDir(t *testing.T) {
	if _, err := Create(filepath.Join(t.TempDir(), "missing", "trace.json")); err == nil {
		t.Fatal("Create in a missing directory succeeded")
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.json")
	for _, data := range []string{`{"a":1}`, `{"a":2}`} {
		if err := WriteFileAtomic(path, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != data {
			t.Errorf("got %q, want %q", got, data)
		}
	}
	if got := dirEntries(t, dir); len(got) != 1 {
		t.Errorf("directory holds %v", got)
	}
	if err := WriteFileAtomic(filepath.Join(dir, "missing", "x"), nil); err == nil {
		t.Error("WriteFileAtomic into a missing directory succeeded")
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(sub, []byte("x")); err == nil {
		t.Error("WriteFileAtomic onto a directory succeeded")
	}
	if got := dirEntries(t, dir); len(got) != 2 {
		t.Errorf("failed write left %v", got)
	}
}

func ExampleFile() {
	dir, err := os.MkdirTemp("", "trace-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	f, err := Create(filepath.Join(dir, "run.trace.json.zst"))
	if err != nil {
		panic(err)
	}
	defer f.Abort() // removes the partial trace if Commit is never reached
	f.W.ProcessName(1, "Device 0")
	f.W.ThreadName(1, 2, "main")
	f.W.Complete(1, 2, "aten.mm", 0, 10000, 0)
	if err := f.Commit(); err != nil {
		panic(err)
	}
	// Output:
}
