// Package history reads command histories (the JSON-lines interchange format
// of docs/HISTORY.md), plain or zstd- or S2-compressed, or the binary form
// (.fhist, see internal/binform), one record at a time; the form is
// detected by magic bytes. It also writes histories in either form (Writer) and converts
// between them without loss (Convert).
//
// Reading is streamed: memory does not grow with the length of the file, and
// a Record is reused between calls, so reading allocates nothing per record
// in steady state. Every error is an *Error naming the file and the line.
package history

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/binform"
	"github.com/fastsim/fastsim/internal/jsonl"
	"github.com/fastsim/fastsim/internal/values"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Header is line 1 of a history.
type Header struct {
	Version     int64
	WorldSize   int64
	GPUsPerHost int64 // defaults to WorldSize
}

// Record is one line after the header: a command or a step.
type Record struct {
	Line   int64 // 1-based line number in the (decompressed) file
	IsStep bool  // a {"step":N} line
	Step   int64
	// Ts is the controller's clock in ns; on a step line, the ts of the
	// previous command (0 if none).
	Ts    int64
	Ranks []values.Slice // validated against the world
	Msg   gen.Msg        // the command; Kind is MsgInvalid on a step line
	// Extra holds the record's keys other than ts, ranks, msg and step
	// ("tb" frames, keys of later versions) as raw JSON, when the reader
	// keeps extras (Reader.KeepExtra) or the binary form carries them.
	Extra values.Extras
}

const (
	readBufBytes = 64 << 10
	// rawBufBytes is the raw input's buffer: room for the first block of
	// a zstd stream, which may be a whole block of 128 KiB (RFC 8878,
	// 3.1.1.2.4: Block_Maximum_Size) after the frame header (at most 18
	// bytes) and the block's own (3), so that the zstd probe (startZstd)
	// can always decompress it from the bytes buffered.
	rawBufBytes = 128<<10 + 64
	// zstd decoding limits: the largest window a frame may ask for, and the
	// most memory the decoder may use for it.
	zstdMaxWindowBytes = 1 << 27
	zstdMaxMemoryBytes = 1 << 30
)

// A compressed stream that has expanded past bombMinBytes to more than bombRatio
// times what was read of the file is refused as a decompression bomb.
// Histories compress 10x to 100x. (Variables so a test can lower them.)
var (
	bombMinBytes int64 = 1 << 30
	bombRatio    int64 = 5000
)

// counter counts the bytes read through it.
type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// errBomb is bombGuard's error: a fault of the compressed input (ErrZstd
// or ErrS2, as compErr wraps it), but not a truncated or corrupt frame.
var errBomb = errors.New("expands like a decompression bomb")

// errZstdCut is bombGuard's error for a zstd stream that ends inside a
// frame: the file was cut (a copy or download that did not finish), not
// damaged. Reader.fail says after which line. It wraps
// io.ErrUnexpectedEOF, the decoder's error, but is not equal to it, so
// that the binary form does not take it for its own data ending early.
var errZstdCut error = &msgError{msg: "the zstd-compressed stream is truncated", errs: []error{io.ErrUnexpectedEOF}}

// errS2Cut is errZstdCut's counterpart for an S2 stream that ends
// inside a chunk.
var errS2Cut error = &msgError{msg: "the S2-compressed stream is truncated", errs: []error{io.ErrUnexpectedEOF}}

// isCut reports whether err is a compressed stream's cut (errZstdCut,
// errS2Cut).
func isCut(err error) bool { return errors.Is(err, errZstdCut) || errors.Is(err, errS2Cut) }

// compErr is err, met reading a compressed stream (zstd, or S2 when s2),
// as a reader's error.
func compErr(err error, s2 bool) error {
	kind := ErrZstd
	if s2 {
		kind = ErrS2
	}
	if errors.Is(err, errBomb) || isCut(err) {
		return wrap(kind, "%v", err)
	}
	return wrap(kind, "%v: %v", kind, err)
}

// bombGuard stops a compressed stream that expands far beyond its input,
// and names a stream cut short.
type bombGuard struct {
	r   io.Reader
	in  *counter
	out int64
	// s2src is the S2 decoder's source, when the stream is S2's: the
	// decoder reports a stream that ends inside a chunk as corrupt, and
	// the source having ended under it is what tells the cut apart.
	s2src *eofSeen
}

func (g *bombGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	g.out += int64(n)
	switch {
	case err == nil || err == io.EOF:
	case g.s2src != nil:
		if err == s2.ErrCorrupt && g.s2src.eof {
			// The decoder asked for bytes past the end of its input:
			// io.ReadFull's short read, which it reports as ErrCorrupt.
			// Chunks are given out whole, so the lines read so far are.
			err = errS2Cut
		}
	case err == io.ErrUnexpectedEOF:
		// The decoder gives out every block it completed before it
		// reports the cut, so the lines read so far are whole.
		err = errZstdCut
	}
	if g.out > bombMinBytes && g.out > bombRatio*max(g.in.n, 1) {
		framing := "zstd"
		if g.s2src != nil {
			framing = "S2"
		}
		return n, fmt.Errorf("%s stream %w: %d bytes decompressed from %d, over %dx: refused", framing, errBomb, g.out, g.in.n, bombRatio)
	}
	return n, err
}

// eofSeen is a reader that notes when its source has ended.
type eofSeen struct {
	r   io.Reader
	eof bool
}

func (e *eofSeen) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		e.eof = true
	}
	return n, err
}

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// s2Magic starts an S2 stream: its stream identifier chunk (type 0xff,
// length 6, "S2sTwO"; the S2 framing of github.com/klauspost/compress/s2,
// after the Snappy framing format's section 4.1).
var s2Magic = []byte{0xff, 0x06, 0x00, 0x00, 'S', '2', 's', 'T', 'w', 'O'}

// gzipMagic starts a gzip stream (RFC 1952, 2.3.1: ID1 31, ID2 139).
var gzipMagic = []byte{0x1f, 0x8b}

// Reader reads the records of a history.
type Reader struct {
	in        counter   // the file's bytes read so far
	guard     bombGuard // between the zstd decoder and the line reader
	sendRanks []int64   // scratch for checking a send's ranks
	// KeepExtra makes Next keep what a replay does not need but a lossless
	// conversion does: message fields the spec does not declare, the order
	// of their keys, and record keys such as "tb" (Record.Extra,
	// gen.Msg.Extra). It slows JSON decoding; binary input always carries
	// them. Set it before the first call of Next.
	KeepExtra bool

	name   string
	raw    *bufio.Reader // the source
	lines  *bufio.Reader // the text: raw, or zbuf over dec
	zbuf   *bufio.Reader
	dec    *zstd.Decoder // the one reading the stream: dec1 or dec2
	dec1   *zstd.Decoder // synchronous (WithDecoderConcurrency(1))
	dec2   *zstd.Decoder // decompressing ahead on goroutines of its own
	peek   bytes.Reader  // the stream's first compressed bytes, for dec1 to probe
	s2dec  *s2.Reader    // the S2 stream's decoder
	s2src  eofSeen       // between raw and s2dec
	closer io.Closer
	zstd   bool
	s2     bool // the stream is S2-compressed

	long []byte // a line longer than the bufio buffer
	// unterminated: the last line read ended at the end of the input,
	// with no newline after it, as the last line of a copy cut short does.
	unterminated bool
	inHeader     bool // the header is being read (readLine names its errors so)
	line         int64
	sc           jsonl.Scanner
	reg          *values.Registry
	hdr          Header
	lastTs       int64
	hasTs        bool
	err          error // sticky

	// The last "ranks" value read, as written and decoded (checked
	// against the world).
	lastRanks struct {
		text   []byte
		slices []values.Slice
	}

	bin    binReader // the binary form
	rawHdr []byte    // the header line as written
}

// Open opens the history at path, plain, zstd or S2 (detected by magic bytes),
// and reads its header.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	r, err := NewReader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closer = f
	return r, nil
}

// NewReader reads a history from src, plain, zstd or S2 (detected by magic
// bytes); name is used in errors. It reads and validates the header (the
// first non-blank line).
func NewReader(src io.Reader, name string) (*Reader, error) {
	r := &Reader{reg: values.NewRegistry()}
	if err := r.Reset(src, name); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// NewBodyReader reads the records that follow a header, given as a value:
// src holds JSON lines (plain) from line 2 on, as a program feeding a
// simulation record by record writes them. h is checked as a header line
// would be; a zero Version is version 1 and a zero GPUsPerHost is
// WorldSize. Errors count the header as line 1.
func NewBodyReader(src io.Reader, name string, h Header) (*Reader, error) {
	r := &Reader{reg: values.NewRegistry(), name: name}
	if h.Version == 0 {
		h.Version = 1
	}
	if h.GPUsPerHost == 0 {
		h.GPUsPerHost = h.WorldSize
	}
	switch {
	case h.Version != 1:
		return nil, r.fail(1, wrap(ErrVersion, "unsupported version %d (this reader knows version 1)", h.Version))
	case h.WorldSize < 1 || h.WorldSize > values.MaxWorldSize:
		return nil, r.fail(1, wrap(ErrHeader, `bad header: "world_size" is %d, want 1 to %d`, h.WorldSize, values.MaxWorldSize))
	case h.GPUsPerHost < 1:
		return nil, r.fail(1, wrap(ErrHeader, `bad header: "gpus_per_host" is %d, want at least 1`, h.GPUsPerHost))
	}
	r.in = counter{r: src}
	r.raw = bufio.NewReaderSize(&r.in, rawBufBytes)
	r.lines = r.raw
	r.hdr, r.line = h, 1
	return r, nil
}

// Reset makes r read a new history from src, keeping its buffers, and reads
// the header. Tensors of the previous history must not be used after it.
func (r *Reader) Reset(src io.Reader, name string) error {
	if r.dec != nil {
		// JSON lines in zstd are decompressed ahead on the decoder's own
		// goroutines (dec2), which read r.raw until they are stopped:
		// stop them before r.raw is given the new source. Reset(nil)
		// returns once they have stopped; the next Reset re-arms it.
		r.dec.Reset(nil)
	}
	r.name, r.line, r.lastTs, r.hasTs, r.err, r.hdr, r.inHeader = name, 0, 0, false, nil, Header{}, false
	r.lastRanks.text = r.lastRanks.text[:0] // checked against another world
	r.reg.Reset()
	r.in = counter{r: src}
	if r.raw == nil {
		r.raw = bufio.NewReaderSize(&r.in, rawBufBytes)
	} else {
		r.raw.Reset(&r.in)
	}
	magic, _ := r.raw.Peek(len(s2Magic))
	r.zstd = bytes.HasPrefix(magic, zstdMagic)
	r.s2 = bytes.Equal(magic, s2Magic)
	r.lines = r.raw
	switch {
	case r.zstd:
		if err := r.startZstd(); err != nil {
			return r.fail(0, fmt.Errorf("%w: %v", ErrZstd, err))
		}
		r.lines = r.zbuf
	case r.s2:
		r.startS2()
		r.lines = r.zbuf
	}
	r.bin.on = false
	if magic, _ := r.lines.Peek(len(binform.Magic)); bytes.Equal(magic, binform.Magic) {
		return r.binHeader()
	}
	if magic, _ := r.lines.Peek(len(gzipMagic)); bytes.Equal(magic, gzipMagic) {
		// Otherwise reported as a NUL byte somewhere in line 1.
		return r.fail(1, wrap(ErrHeader, "no header: the data is gzip-compressed; a history is read plain, zstd-compressed or in the binary form (gunzip it, or recompress it with zstd)"))
	}
	return r.readHeader()
}

// startZstd sets r.dec and r.zbuf to decompress r.raw. The binary form
// is decompressed synchronously, on the goroutine reading it (dec1), and
// JSON lines by a decoder that decompresses ahead on goroutines of its own
// (dec2): the binary form's decoding is short enough that handing its
// blocks between goroutines, parking and waking them, costs more CPU than
// it saves wall time (bench/RESULTS.md, "The binary form's zstd decoded
// synchronously"). dec1 first decodes the stream's start from the
// compressed bytes buffered, up to the whole buffer (room for a zstd
// block of the largest size) when the first block needs them: the choice depends on the stream's bytes alone,
// not on how they arrive (a file, a pipe), so a damaged stream is named
// by one decoder's messages wherever it is read from. A stream whose
// start does not decode into the binary form's magic in that room goes to
// dec2.
func (r *Reader) startZstd() error {
	opts := []zstd.DOption{
		zstd.WithDecoderMaxWindow(zstdMaxWindowBytes),
		zstd.WithDecoderMaxMemory(zstdMaxMemoryBytes),
	}
	if r.dec1 == nil {
		dec, err := zstd.NewReader(nil, append(opts, zstd.WithDecoderConcurrency(1))...)
		if err != nil {
			return err
		}
		r.dec1 = dec
	}
	binaryForm := false
	for n := max(r.raw.Buffered(), 1); ; {
		start, perr := r.raw.Peek(n)
		var done bool
		binaryForm, done = r.probeZstd(start)
		if done || perr != nil || n == rawBufBytes {
			break
		}
		// Wait for the bytes the first block still lacks and no more: a
		// program writing its history to a pipe may send the rest much
		// later. Past the first block (its start did not decide), or
		// in a frame the headers do not describe, the window doubles.
		next := zstdFirstBlockEnd(start)
		if next <= n {
			next = 2 * n
		}
		n = min(max(next, r.raw.Buffered()), rawBufBytes)
	}
	r.dec = r.dec1
	if !binaryForm {
		// The probe's decoder holds a window's buffer (up to
		// zstdMaxWindowBytes): let it go while dec2 reads.
		r.dec1.Close()
		r.dec1 = nil
		if r.dec2 == nil {
			dec, err := zstd.NewReader(nil, append(opts, zstd.WithDecoderConcurrency(2))...)
			if err != nil {
				return err
			}
			r.dec2 = dec
		}
		r.dec = r.dec2
	}
	if err := r.dec.Reset(r.raw); err != nil {
		return err
	}
	r.guard = bombGuard{r: r.dec, in: &r.in}
	if r.zbuf == nil {
		r.zbuf = bufio.NewReaderSize(&r.guard, readBufBytes)
	} else {
		r.zbuf.Reset(&r.guard)
	}
	return nil
}

// startS2 sets r.s2dec and r.zbuf to decompress r.raw, an S2 stream. The
// decoder is synchronous: it decompresses on the goroutine that reads it,
// as the binary form's zstd is (startZstd).
func (r *Reader) startS2() {
	r.s2src = eofSeen{r: r.raw}
	if r.s2dec == nil {
		// Chunks of up to S2's largest block (4 MiB), which is what
		// ReaderMaxBlockSize allows for; the writer makes 1 MiB blocks.
		r.s2dec = s2.NewReader(&r.s2src, s2.ReaderMaxBlockSize(4<<20))
	} else {
		r.s2dec.Reset(&r.s2src)
	}
	r.guard = bombGuard{r: r.s2dec, in: &r.in, s2src: &r.s2src}
	if r.zbuf == nil {
		r.zbuf = bufio.NewReaderSize(&r.guard, readBufBytes)
	} else {
		r.zbuf.Reset(&r.guard)
	}
}

// zstdFirstBlockEnd is how many bytes of a zstd stream, of which start is
// the beginning, end its first frame's first block, read from the frame
// and block headers (RFC 8878, 3.1.1.1 and 3.1.1.2), with the frame's
// checksum when that block is its last; while start is too
// short to hold the headers, the least length that could, so more than
// len(start); 0 when start is not a zstd frame's (a skippable frame
// first, or not zstd) or its first block's type is the reserved one.
func zstdFirstBlockEnd(start []byte) int {
	if len(start) < 5 {
		return 5
	}
	if binary.LittleEndian.Uint32(start) != 0xFD2FB528 {
		return 0
	}
	fhd := start[4]
	single := fhd>>5&1 == 1
	n := 5
	if !single {
		n++ // Window_Descriptor
	}
	n += [4]int{0, 1, 2, 4}[fhd&3] // Dictionary_ID
	fcs := [4]int{0, 2, 4, 8}[fhd>>6]
	if fhd>>6 == 0 && single {
		fcs = 1
	}
	n += fcs // Frame_Content_Size
	if len(start) < n+3 {
		return n + 3
	}
	h := uint32(start[n]) | uint32(start[n+1])<<8 | uint32(start[n+2])<<16
	end := n + 3
	switch h >> 1 & 3 { // Block_Type
	case 0, 2: // raw, compressed: Block_Size bytes follow
		end += int(h >> 3)
	case 1: // RLE: one byte follows
		end++
	default: // reserved: damaged, which dec2 names
		return 0
	}
	if h&1 == 1 && fhd>>2&1 == 1 {
		// The frame's last block: the decoder checks the content's
		// checksum, 4 bytes after it, before it gives the block out.
		end += 4
	}
	return end
}

// probeZstd decompresses the start of a zstd stream from start, its
// first compressed bytes, with dec1: whether it begins with the binary
// form's magic, and whether that is known (false when start ends before
// enough of the stream decompresses).
func (r *Reader) probeZstd(start []byte) (binaryForm, known bool) {
	r.peek.Reset(start)
	if err := r.dec1.Reset(&r.peek); err != nil {
		return false, true
	}
	var magic [8]byte
	m := magic[:len(binform.Magic)]
	_, err := io.ReadFull(r.dec1, m)
	switch {
	case err == nil:
		return bytes.Equal(m, binform.Magic), true
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return false, false
	}
	return false, true // damaged: dec2 names it, as before
}

// Header returns the header read by NewReader.
func (r *Reader) Header() Header { return r.hdr }

// RawHeader returns the header line as written, unknown keys included (the
// binary form keeps it verbatim). It is valid until Reset.
func (r *Reader) RawHeader() []byte { return r.rawHdr }

// Registry returns the tensor registry of the history being read.
func (r *Reader) Registry() *values.Registry { return r.reg }

// Buffered is how many bytes of (decompressed) input are read ahead. At 0
// the next record may have to wait for its source: a program still
// writing standard input, say.
func (r *Reader) Buffered() int { return r.lines.Buffered() }

// Close releases the decoder and closes the file opened by Open.
func (r *Reader) Close() error {
	for _, d := range []*zstd.Decoder{r.dec1, r.dec2} {
		if d != nil {
			d.Close()
		}
	}
	r.dec, r.dec1, r.dec2 = nil, nil, nil
	if r.closer != nil {
		err := r.closer.Close()
		r.closer = nil
		return err
	}
	return nil
}

func (r *Reader) fail(line int64, err error) error {
	if errors.Is(err, syscall.EISDIR) {
		// However the path was opened: no line of it was read.
		line, err = 0, wrap(ErrRead, "a directory, not a history")
	}
	if isCut(err) {
		kind, cut := ErrZstd, errZstdCut
		if r.s2 {
			kind, cut = ErrS2, errS2Cut
		}
		// The cut is in line, the first one not read whole; before the
		// first there is no line to name (the stream ends inside its
		// first block, say), so the error names the file alone.
		unit := "line"
		if r.bin.on {
			unit = "record" // the binary form's lines are its records
		}
		if line <= 1 {
			line, err = 0, wrap(kind, "%v: it ends before the first complete %s", cut, unit)
		} else {
			err = wrap(kind, "%v: it ends after %s %d, the last complete one", cut, unit, line-1)
		}
	}
	if r.unterminated && line == r.line && line > 0 && !r.bin.on && !errors.Is(err, ErrRead) && !errors.Is(err, ErrZstd) && !errors.Is(err, ErrS2) {
		// A JSON line that does not parse and ends the input without its
		// newline is most likely where a copy was cut.
		err = &msgError{msg: err.Error() + " (the history ends inside this line, with no newline after it: a copy cut short?)", errs: []error{err}}
	}
	r.err = &Error{File: r.name, Line: line, Err: err}
	return r.err
}

// wrap returns an error with the formatted text that wraps sentinel and
// every error among args.
func wrap(sentinel error, format string, args ...any) error {
	e := &msgError{msg: fmt.Sprintf(format, args...), errs: []error{sentinel}}
	for _, a := range args {
		if err, ok := a.(error); ok && err != sentinel {
			e.errs = append(e.errs, err)
		}
	}
	return e
}

// readLine returns the next line without its "\n" or "\r\n"; io.EOF at the end.
func (r *Reader) readLine() ([]byte, error) {
	line, err := r.lines.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// Every line is a JSON object. Text that does not begin with one
		// and fills the buffer (64 KiB or more) without a line end
		// (/dev/zero, a binary file given by mistake) is refused here,
		// not after reading a line up to the limit (256 MiB: seconds,
		// and a gigabyte of memory).
		if t := bytes.TrimLeft(line, " \t\r"); len(t) > 0 && t[0] != '{' {
			b := fmt.Sprintf("byte 0x%02x", t[0])
			if t[0] > ' ' && t[0] < 0x7f {
				b = fmt.Sprintf("%q", t[0])
			}
			const long = "begins with %s at column %d, not with a JSON object, and runs on past 64 KiB without a line end"
			if r.inHeader {
				return nil, wrap(ErrHeader, "no header: the line "+long, b, len(line)-len(t)+1)
			}
			return nil, wrap(ErrRecord, "the record "+long, b, len(line)-len(t)+1)
		}
		r.long = append(r.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = r.lines.ReadSlice('\n')
			if len(r.long)+len(line) > jsonl.MaxLineBytes+2 {
				return nil, wrap(ErrLineTooLong, "line longer than the limit of %d bytes", jsonl.MaxLineBytes)
			}
			r.long = append(r.long, line...)
		}
		line = r.long
	}
	if err != nil && err != io.EOF {
		if r.zstd || r.s2 {
			return nil, compErr(err, r.s2)
		}
		return nil, wrap(ErrRead, "%v: %v", ErrRead, err)
	}
	if err == io.EOF && len(line) == 0 {
		return nil, io.EOF
	}
	r.unterminated = err == io.EOF
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
	}
	if len(line) > jsonl.MaxLineBytes {
		return nil, wrap(ErrLineTooLong, "line longer than the limit of %d bytes", jsonl.MaxLineBytes)
	}
	return line, nil
}

// nextLine returns the next non-blank line and counts lines.
func (r *Reader) nextLine() ([]byte, error) {
	for {
		line, err := r.readLine()
		if err == io.EOF {
			return nil, err
		}
		if err != nil {
			return nil, r.fail(r.line+1, err)
		}
		r.line++
		if len(line) > 0 && line[0] > ' ' || len(bytes.TrimLeft(line, " \t\r")) > 0 {
			return line, nil
		}
	}
}

func (r *Reader) readHeader() error {
	r.inHeader = true
	line, err := r.nextLine()
	r.inHeader = false
	if err == io.EOF {
		return r.fail(0, wrap(ErrHeader, "no header: the file is empty"))
	}
	if err != nil {
		return err
	}
	return r.parseHeader(line)
}

// parseHeader parses and validates the header line.
func (r *Reader) parseHeader(line []byte) error {
	s := &r.sc
	if err := s.Reset(line); err != nil {
		return r.fail(r.line, wrap(ErrHeader, "no header: %v", err))
	}
	if k := s.Kind(); k != jsonl.KindObject {
		if err := s.Skip(); err != nil {
			return r.fail(r.line, wrap(ErrHeader, "no header: %v", err))
		}
		return r.fail(r.line, wrap(ErrHeader, `no header: line is %s, want {"fastsim":"history","version":1,"world_size":N}`, k))
	}
	var magic, version, world, gpus bool
	h := Header{}
	if err := s.BeginObject(); err != nil {
		return r.fail(r.line, wrap(ErrHeader, "no header: %v", err))
	}
	for {
		key, ok, err := s.NextKey()
		if err != nil {
			return r.fail(r.line, wrap(ErrHeader, "bad header: %v", err))
		}
		if !ok {
			break
		}
		var v int64
		switch string(key) {
		case "fastsim":
			b, err := s.Str()
			if err != nil {
				return r.fail(r.line, wrap(ErrHeader, "bad header: %v", values.FieldError("fastsim", err)))
			}
			if string(b) != "history" {
				return r.fail(r.line, wrap(ErrHeader, `no header: "fastsim" is %q, want "history"`, b))
			}
			magic = true
			continue
		case "version":
			version = true
			v, err = s.Int()
			h.Version = v
		case "world_size":
			world = true
			v, err = s.Int()
			h.WorldSize = v
		case "gpus_per_host":
			gpus = true
			v, err = s.Int()
			h.GPUsPerHost = v
		default:
			err = s.Skip()
			if err != nil {
				return r.fail(r.line, wrap(ErrHeader, "bad header: %v", err))
			}
			continue
		}
		if err != nil {
			return r.fail(r.line, wrap(ErrHeader, "bad header: %v", values.FieldError(string(key), err)))
		}
	}
	if err := s.End(); err != nil {
		return r.fail(r.line, wrap(ErrHeader, "bad header: %v", err))
	}
	switch {
	case !magic:
		return r.fail(r.line, wrap(ErrHeader, `no header: line has no "fastsim":"history" key`))
	case !version:
		return r.fail(r.line, wrap(ErrHeader, `bad header: missing field "version"`))
	case h.Version != 1:
		return r.fail(r.line, wrap(ErrVersion, "unsupported version %d (this reader knows version 1)", h.Version))
	case !world:
		return r.fail(r.line, wrap(ErrHeader, `bad header: missing field "world_size"`))
	case h.WorldSize < 1 || h.WorldSize > values.MaxWorldSize:
		return r.fail(r.line, wrap(ErrHeader, `bad header: "world_size" is %d, want 1 to %d`, h.WorldSize, values.MaxWorldSize))
	case !gpus:
		h.GPUsPerHost = h.WorldSize
	case h.GPUsPerHost < 1:
		return r.fail(r.line, wrap(ErrHeader, `bad header: "gpus_per_host" is %d, want at least 1`, h.GPUsPerHost))
	}
	r.rawHdr = append(r.rawHdr[:0], line...)
	r.hdr = h
	return nil
}

// Which keys a record gave.
const (
	hasTs = 1 << iota
	hasRanks
	hasMsg
	hasStep
)

// Next reads the next record into rec. It returns io.EOF at the end of the
// file. rec is reused: its slices are valid until the next call. After an
// error, Next returns the same error again.
func (r *Reader) Next(rec *Record) error {
	if r.err != nil {
		return r.err
	}
	r.reg.ClearFresh()
	if r.bin.on {
		if err := r.nextBinary(rec); err != nil {
			return err
		}
	} else {
		line, err := r.nextLine()
		if err != nil {
			return err
		}
		if err := r.record(line, rec); err != nil {
			return r.fail(r.line, err)
		}
	}
	if !rec.IsStep {
		// The ids the record names get their dense indexes before its
		// deletions take effect: a DeleteRefs names tensors still known.
		rec.Msg.Index(r.reg)
		if r.bin.on {
			// The rows Index gave the deleted ids free their slots and
			// end their tensors, with no second lookup of the ids.
			r.bin.freeSlots(&rec.Msg, r.reg)
		} else {
			DeleteRefs(r.reg, &rec.Msg)
		}
	}
	return nil
}

// DeleteRefs ends, after the record that deletes them, the tensor ids a
// DeleteRefs names (in a CommandGroup too): a later mention of one of those
// ids begins a new tensor. The rule depends on the history alone, so every
// form, mode and tool accepts the same histories.
func DeleteRefs(reg *values.Registry, m *gen.Msg) {
	switch m.Kind {
	case gen.MsgDeleteRefs:
		for _, id := range m.DeleteRefs.Refs {
			reg.Delete(id)
		}
	case gen.MsgCommandGroup:
		deleteRefsIn(reg, &m.CommandGroup.Commands)
	}
}

func deleteRefsIn(reg *values.Registry, l *gen.Msgs) {
	for i := 0; i < l.Len(); i++ {
		switch l.Kind(i) {
		case gen.MsgDeleteRefs:
			for _, id := range l.DeleteRefsAt(i).Refs {
				reg.Delete(id)
			}
		case gen.MsgCommandGroup:
			deleteRefsIn(reg, &l.CommandGroupAt(i).Commands)
		}
	}
}

// recordFields are the keys of a record object, for NextField.
var recordFields = jsonl.NewFields("ts", "ranks", "msg", "step")

func (r *Reader) record(line []byte, rec *Record) error {
	rec.Line, rec.IsStep, rec.Step, rec.Ranks = r.line, false, 0, rec.Ranks[:0]
	rec.Extra.Reset()
	s := &r.sc
	s.KeepExtra = r.KeepExtra
	// The line's encoding is checked only when it matters (see
	// jsonl.Scanner.ResetUnchecked): a line read to its end that held only
	// ASCII needs no second pass. Its error comes first, as if checked
	// before reading.
	s.ResetUnchecked(line)
	err := r.recordFields(rec)
	if err != nil || s.NonASCII() {
		if encErr := jsonl.CheckEncoding(line); encErr != nil {
			return encErr
		}
	}
	return err
}

// recordFields reads the record that r.sc holds into rec.
func (r *Reader) recordFields(rec *Record) error {
	s := &r.sc
	r.reg.SetLine(r.line)
	if k := s.Kind(); k != jsonl.KindObject {
		if err := s.Skip(); err != nil {
			return err
		}
		return wrap(ErrRecord, `record is %s, want an object {"ts":...,"ranks":[...],"msg":{...}} or {"step":N}`, k)
	}
	if err := s.BeginObject(); err != nil {
		return err
	}
	var has uint8
	var ts int64
	next := 0
	for {
		f, key, at, ok, err := s.NextField(recordFields, next)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		next = f + 1
		switch string(key) {
		case "ts":
			if has&hasTs != 0 {
				return jsonl.Duplicate(key, at)
			}
			has |= hasTs
			if ts, err = s.Int(); err != nil {
				return values.FieldError("ts", err)
			}
		case "ranks":
			if has&hasRanks != 0 {
				return jsonl.Duplicate(key, at)
			}
			has |= hasRanks
			// Consecutive commands often go to the same ranks: the same
			// text as the last ranks read gives the same checked slices.
			if s.SkipText(r.lastRanks.text) {
				rec.Ranks = copySlices(rec.Ranks, r.lastRanks.slices)
				continue
			}
			start := s.Pos()
			if rec.Ranks, err = r.ranks(rec.Ranks); err != nil {
				return values.FieldError("ranks", err)
			}
			r.lastRanks.text = append(r.lastRanks.text[:0], s.Bytes(start, s.Pos())...)
			r.lastRanks.slices = copySlices(r.lastRanks.slices, rec.Ranks)
		case "msg":
			if has&hasMsg != 0 {
				return jsonl.Duplicate(key, at)
			}
			has |= hasMsg
			if err := gen.DecodeMsg(s, r.reg, &rec.Msg); err != nil {
				return values.FieldError("msg", err)
			}
		case "step":
			if has&hasStep != 0 {
				return jsonl.Duplicate(key, at)
			}
			has |= hasStep
			if rec.Step, err = s.Int(); err != nil {
				return values.FieldError("step", err)
			}
			if rec.Step < 0 {
				return values.FieldError("step", wrap(values.ErrRange, "negative step %d", rec.Step))
			}
		default: // "tb" and fields of later versions
			if err := s.CheckKey(key, at); err != nil {
				return err
			}
			if r.KeepExtra {
				k := s.Intern(key)
				s.Kind() // skip whitespace
				start := s.Pos()
				if err := s.Skip(); err != nil {
					return err
				}
				rec.Extra.Add(k, s.Bytes(start, s.Pos()))
				continue
			}
			if err := s.Skip(); err != nil {
				return err
			}
		}
	}
	if err := s.End(); err != nil {
		return err
	}
	switch {
	case has&hasStep != 0:
		if has&(hasMsg|hasRanks) != 0 {
			return wrap(ErrRecord, `record has both "step" and a command ("msg" or "ranks")`)
		}
		rec.IsStep = true
		rec.Msg.Kind, rec.Msg.TypeName = gen.MsgInvalid, ""
	case has == 0:
		return wrap(ErrRecord, `record is neither a command (no "msg") nor a step (no "step")`)
	case has&hasMsg == 0:
		return values.MissingError("msg")
	case has&hasTs == 0:
		return values.MissingError("ts")
	case has&hasRanks == 0:
		return values.MissingError("ranks")
	}
	if has&hasTs != 0 {
		if err := r.advanceTs(ts); err != nil {
			return err
		}
	}
	return r.finishRecord(rec)
}

// copySlices copies the slices src into dst[:0], reusing dst's storage.
func copySlices(dst, src []values.Slice) []values.Slice {
	dst = dst[:0]
	for i := range src {
		if len(dst) < cap(dst) {
			dst = dst[:len(dst)+1]
		} else {
			dst = append(dst, values.Slice{})
		}
		d := &dst[len(dst)-1]
		d.Offset = src[i].Offset
		d.Sizes = append(d.Sizes[:0], src[i].Sizes...)
		d.Strides = append(d.Strides[:0], src[i].Strides...)
	}
	return dst
}

// advanceTs moves the controller clock to a record's ts, which may not go
// backwards.
func (r *Reader) advanceTs(ts int64) error {
	if r.hasTs && ts < r.lastTs {
		return wrap(ErrTime, "ts %d goes backwards (the previous command's ts is %d)", ts, r.lastTs)
	}
	r.lastTs, r.hasTs = ts, true
	return nil
}

// finishRecord gives rec the clock and checks a command's message, in both
// forms.
func (r *Reader) finishRecord(rec *Record) error {
	rec.Ts = r.lastTs
	if !rec.IsStep {
		if err := r.checkMsg(&rec.Msg); err != nil {
			return values.FieldError("msg", err)
		}
	}
	return nil
}

// ranks decodes and validates a list of slices into dst[:0].
func (r *Reader) ranks(dst []values.Slice) ([]values.Slice, error) {
	s := &r.sc
	dst = dst[:0]
	if err := s.BeginArray(); err != nil {
		return dst, err
	}
	for {
		ok, err := s.NextElem()
		if err != nil || !ok {
			return dst, err
		}
		if len(dst) >= values.MaxRankSlices {
			return dst, wrap(values.ErrLimit, "more than %d slices", values.MaxRankSlices)
		}
		if len(dst) < cap(dst) {
			dst = dst[:len(dst)+1]
		} else {
			dst = append(dst, values.Slice{})
		}
		sl := &dst[len(dst)-1]
		if err := jsonl.DecodeSlice(s, sl); err != nil {
			return dst, wrap(err, "slice %d: %v", len(dst)-1, err)
		}
		if err := sl.Check(r.hdr.WorldSize); err != nil {
			return dst, wrap(err, "slice %d: %v", len(dst)-1, err)
		}
	}
}

// checkMsg validates the slices inside a message against the world.
func (r *Reader) checkMsg(m *gen.Msg) error {
	switch m.Kind {
	case gen.MsgSendTensor:
		return r.checkSend(&m.SendTensor)
	case gen.MsgCommandGroup:
		return r.checkMsgs(&m.CommandGroup.Commands)
	}
	return nil
}

func (r *Reader) checkMsgs(l *gen.Msgs) error {
	for i := 0; i < l.Len(); i++ {
		var err error
		switch l.Kind(i) {
		case gen.MsgSendTensor:
			err = r.checkSend(l.SendTensorAt(i))
		case gen.MsgCommandGroup:
			err = r.checkMsgs(&l.CommandGroupAt(i).Commands)
		}
		if err != nil {
			return fmt.Errorf("CommandGroup: %w", values.FieldError("commands", wrap(err, "item %d: %v", i, err)))
		}
	}
	return nil
}

// checkSend checks a SendTensor's slices: inside the world, and naming no
// rank twice, since a point-to-point send pairs distinct ranks.
func (r *Reader) checkSend(st *gen.SendTensor) error {
	for _, side := range [2]struct {
		name string
		s    *values.Slice
	}{{"from_ranks", &st.FromRanks}, {"to_ranks", &st.ToRanks}} {
		if err := side.s.Check(r.hdr.WorldSize); err != nil {
			return fmt.Errorf("SendTensor: %w", values.FieldError(side.name, err))
		}
		var rank int64
		var dup bool
		if rank, dup, r.sendRanks = side.s.Repeated(r.sendRanks); dup {
			return fmt.Errorf("SendTensor: %w", values.FieldError(side.name, fmt.Errorf("%w: names rank %d more than once (a send pairs distinct ranks)", values.ErrSlice, rank)))
		}
	}
	return nil
}

// String describes the reader's position, for debugging.
func (r *Reader) String() string { return r.name + ":" + strconv.FormatInt(r.line, 10) }
