package smallfile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	const doc = `{"a": 1234}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	// At the limit: read whole.
	if data, err := Read(path, int64(len(doc)), "a test file"); err != nil || string(data) != doc {
		t.Fatalf("at the limit: %q, %v", data, err)
	}
	// One byte over: refused, naming the limit.
	_, err := Read(path, int64(len(doc))-1, "a test file")
	if !errors.Is(err, ErrTooLarge) || err.Error() != "more than 10 bytes, the most a test file may hold" {
		t.Fatalf("over the limit: %v", err)
	}
	// Over the limit past the first bytes looked at.
	big := "{" + strings.Repeat(" ", 3*headBytes) + "}"
	if err := os.WriteFile(path, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := Read(path, int64(len(big)), "a test file"); err != nil || string(data) != big {
		t.Fatalf("a long object at the limit: %d bytes, %v", len(data), err)
	}
	if _, err := Read(path, 2*headBytes, "a test file"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a long object over the limit: %v", err)
	}
	// Text that cannot be an object is returned from its first bytes
	// alone, for the decoder to refuse.
	notObj := "\n  [" + strings.Repeat("1,", 2*headBytes) + "1]"
	if err := os.WriteFile(path, []byte(notObj), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := Read(path, 1<<30, "a test file"); err != nil || string(data) != notObj[:headBytes] {
		t.Fatalf("not an object: %d bytes, %v; want its first %d", len(data), err, headBytes)
	}
	if _, err := Read(filepath.Join(dir, "none"), 10, "a test file"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := Read(dir, 10, "a test file"); err == nil {
		t.Fatal("a directory read as a file")
	}
}

// TestReadEndlessDevice: a file that never ends (/dev/zero) is read no
// further than its first bytes, which cannot begin an object;
// os.ReadFile read until memory ran out.
func TestReadEndlessDevice(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/dev/zero")
	}
	if data, err := Read("/dev/zero", 1<<30, "a test file"); err != nil || len(data) != headBytes {
		t.Fatalf("/dev/zero: %d bytes, %v", len(data), err)
	}
}
