package smallfile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	if err := os.WriteFile(path, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	// At the limit: read whole.
	if data, err := Read(path, 10, "a test file"); err != nil || string(data) != "0123456789" {
		t.Fatalf("at the limit: %q, %v", data, err)
	}
	// One byte over: refused, naming the limit.
	_, err := Read(path, 9, "a test file")
	if !errors.Is(err, ErrTooLarge) || err.Error() != "more than 9 bytes, the most a test file may hold" {
		t.Fatalf("over the limit: %v", err)
	}
	if _, err := Read(filepath.Join(dir, "none"), 10, "a test file"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := Read(dir, 10, "a test file"); err == nil {
		t.Fatal("a directory read as a file")
	}
}

// TestReadEndlessDevice: a file that never ends (/dev/zero) is refused
// after limit+1 bytes; os.ReadFile would read until memory ran out.
func TestReadEndlessDevice(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/dev/zero")
	}
	if _, err := Read("/dev/zero", 1<<20, "a test file"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("/dev/zero: %v", err)
	}
}
