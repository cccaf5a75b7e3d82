package trace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// fileMode is the permission of committed files.
const fileMode = 0o644

// File is a trace being written to an Output: a temporary file in the
// destination's directory, renamed onto it by Commit, or, for standard
// output, a device or a pipe, the destination itself. Abort discards it.
type File struct {
	// W receives the trace's events.
	W *Writer

	out *Output
	enc io.WriteCloser // the compressor (gzip or zstd), nil for plain output
	// closed is set by Commit and Abort.
	closed bool
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

// Create starts a trace for path ("-": standard output), compressed as
// CompressionOf(path) says. A regular file appears at path only on Commit.
func Create(path string) (*File, error) {
	out, err := CreateOutput(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	f := &File{out: out}
	w := out.W
	enc, err := newCompressor(CompressionOf(path), w)
	if err != nil {
		out.Abort()
		return nil, fmt.Errorf("trace: create %s: %w", path, err)
	}
	if enc != nil {
		f.enc = enc
		w = enc
	}
	f.W = NewWriter(w)
	return f, nil
}

// Commit finishes the trace: it closes the Writer and the compressor and
// commits the Output. On any error the temporary file is removed and the
// error returned. Commit returns ErrClosed if the File was already
// committed or aborted.
func (f *File) Commit() error {
	if f.closed {
		return ErrClosed
	}
	f.closed = true
	err := f.W.Close()
	if f.enc != nil {
		err = errors.Join(err, f.enc.Close())
	}
	if err != nil {
		f.out.Abort()
		return fmt.Errorf("trace: %s: %w", f.out.path, err)
	}
	if err := f.out.Commit(); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}

// Abort discards the trace (a temporary file is removed). It does nothing
// after Commit or a previous Abort.
func (f *File) Abort() {
	if f.closed {
		return
	}
	f.closed = true
	if f.enc != nil {
		f.enc.Close() // stop the encoder's goroutines; the output is discarded
	}
	f.out.Abort()
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
