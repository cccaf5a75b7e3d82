package trace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// fileMode is the permission of committed files.
const fileMode = 0o644

// File is a trace being written to a temporary file in the destination's
// directory. Commit renames it onto the destination; Abort removes it.
type File struct {
	// W receives the trace's events.
	W *Writer

	path string         // destination
	tmp  *os.File       // temporary file, nil once committed or aborted
	enc  io.WriteCloser // the compressor (gzip or zstd), nil for plain output
}

// Compression is how a trace file is compressed, chosen by its name.
type Compression uint8

const (
	Plain Compression = iota // NAME.json: what every viewer opens
	Gzip                     // NAME.json.gz: Perfetto and chrome://tracing open it as is
	Zstd                     // NAME.zst: smallest; viewers need it decompressed first
)

// CompressionOf picks the compression from path's name: ".gz" gzip, ".zst"
// zstd, anything else plain.
func CompressionOf(path string) Compression {
	switch {
	case strings.HasSuffix(path, ".gz"):
		return Gzip
	case strings.HasSuffix(path, ".zst"):
		return Zstd
	}
	return Plain
}

// OpenHint is one sentence telling how to open the trace at path.
func OpenHint(path string) string {
	if CompressionOf(path) == Zstd {
		return "Perfetto (ui.perfetto.dev) does not read zstd: decompress it first (zstd -d " + path + "), or write a .json.gz trace instead"
	}
	return "open it in Perfetto (ui.perfetto.dev: Open trace file) or chrome://tracing"
}

// newCompressor wraps w in the compressor c asks for, or returns nil for
// Plain.
func newCompressor(c Compression, w io.Writer) (io.WriteCloser, error) {
	switch c {
	case Gzip:
		return gzip.NewWriterLevel(w, gzip.DefaultCompression)
	case Zstd:
		return zstd.NewWriter(w)
	}
	return nil, nil
}

// Create starts a trace for path. The trace is written to a temporary file
// in path's directory, compressed as CompressionOf(path) says, and appears
// at path only on Commit.
func Create(path string) (*File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("trace: create %s: %w", path, err)
	}
	f := &File{path: path, tmp: tmp}
	var out io.Writer = tmp
	if enc, err := newCompressor(CompressionOf(path), tmp); enc != nil || err != nil {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			return nil, fmt.Errorf("trace: create %s: %w", path, err)
		}
		f.enc = enc
		out = enc
	}
	f.W = NewWriter(out)
	return f, nil
}

// Commit finishes the trace: it closes the Writer and the compressor,
// syncs and closes the temporary file and renames it onto the destination.
// On any error the temporary file is removed and the error returned. Commit
// returns ErrClosed if the File was already committed or aborted.
func (f *File) Commit() error {
	tmp := f.tmp
	if tmp == nil {
		return ErrClosed
	}
	f.tmp = nil
	err := f.W.Close()
	if f.enc != nil {
		err = errors.Join(err, f.enc.Close())
	}
	if err == nil {
		err = tmp.Chmod(fileMode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	err = errors.Join(err, tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), f.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("trace: commit %s: %w", f.path, err)
	}
	syncDir(filepath.Dir(f.path))
	return nil
}

// Abort closes and removes the temporary file. It does nothing after Commit
// or a previous Abort.
func (f *File) Abort() {
	tmp := f.tmp
	if tmp == nil {
		return
	}
	f.tmp = nil
	if f.enc != nil {
		f.enc.Close() // stop the encoder's goroutines; the output is discarded
	}
	tmp.Close()
	os.Remove(tmp.Name())
}

// WriteFileAtomic writes data to path through a temporary file in the same
// directory, synced and renamed into place, so path holds either its old
// content or all of data.
func WriteFileAtomic(path string, data []byte) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("trace: write %s: %w", path, err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(fileMode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	err = errors.Join(err, tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("trace: write %s: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return nil
}

// syncDir makes a rename in dir durable where the platform allows it; errors
// are ignored because not every file system supports syncing a directory.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}
