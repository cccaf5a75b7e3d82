package binform

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/fastsim/fastsim/internal/jsonl"
)

// Magic starts every binary history stream; Version follows it. 0xf5 never
// starts UTF-8 text, so a binary stream is never mistaken for JSON lines.
var Magic = []byte("\xf5FHIST")

// Version is the version of the binary form this package reads and writes.
// Version 2 gathered records in blocks, each with a checksum; version 3
// writes trees holding tensors as shared templates; version 4 writes a
// record's ts as the change of its difference from the previous record's
// and a tensor definition's id as its difference from the previous
// definition's (FORMAT.md).
const Version = 4

// OldestVersion is the oldest version this package still reads: version 3
// differs from 4 only in how a record's ts and a definition's id are
// written (absolute differences), so its files stay readable.
const OldestVersion = 3

// ZstdWindowBytes is the zstd window a writer of the binary form asks for.
const ZstdWindowBytes = 1 << 20

// BlockBytes is the size past which a writer ends a block. A checksum per
// 64 KiB costs 4 bytes in 65,536 (a checksum per record, of tens of bytes
// each, made compressed files 1.7 times larger), and a reader holds one
// block at a time.
const BlockBytes = 64 << 10

// MaxBlockBytes bounds a block: one record of the largest size with its
// length.
const MaxBlockBytes = MaxRecordBytes + 10

// Checksum is the CRC-32C (Castagnoli) of a block's records, written after
// them as 4 bytes, little-endian. Castagnoli's polynomial is the one iSCSI
// (RFC 3720, section 12.1) and ext4 metadata use, with hardware support on
// x86 (SSE 4.2) and arm64, so checking every record costs little.
func Checksum(body []byte) uint32 { return crc32.Checksum(body, castagnoli) }

// ChecksumBytes is the size of a block's checksum.
const ChecksumBytes = 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record kinds: the first byte of a record body.
const (
	KindCommand = 1
	KindStep    = 2
)

// Limits on everything read from input. Every length and count is checked
// against one of them, and against the bytes left in its record, before
// anything is allocated for it.
const (
	// MaxRecordBytes is the longest record body (the JSON line limit).
	MaxRecordBytes = jsonl.MaxLineBytes
	// MaxHeaderBytes is the longest header.
	MaxHeaderBytes = 1 << 20
	// MaxTableEntries is the most strings (and the most blobs) interned.
	MaxTableEntries = 1 << 20
	// MaxTableBytes is the most bytes the string (and the blob) table holds.
	MaxTableBytes = 1 << 28
	// MaxInternBytes is the longest string or blob that joins a table;
	// longer ones are sent in full at every use.
	MaxInternBytes = 1 << 16
	// MaxDepth is the deepest nesting of messages (CommandGroup).
	MaxDepth = 32
	// MaxExtras is the most extra fields one message or record may carry.
	MaxExtras = 1 << 16
)

// interns reports whether a new entry of n bytes joins a table that holds
// count entries of total bytes. Encoder and Decoder apply the same rule, so
// their tables stay in step without saying so in the stream.
func interns(n, count, total int) bool {
	return n <= MaxInternBytes && count < MaxTableEntries && total+n <= MaxTableBytes
}

// MendChecksums returns a copy of a bare binary stream (magic, version,
// header, blocks) in which every block's checksum matches its records, as
// far as the stream can be parsed. Fuzz targets use it so that mutations
// reach the decoding of records rather than stopping at checksums.
func MendChecksums(data []byte) []byte {
	out := append([]byte(nil), data...)
	if len(out) < len(Magic) || string(out[:len(Magic)]) != string(Magic) {
		return out
	}
	pos := len(Magic)
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(out[pos:])
		if n <= 0 {
			return 0, false
		}
		pos += n
		return v, true
	}
	if _, ok := next(); !ok { // version
		return out
	}
	if n, ok := next(); !ok || n > uint64(len(out)-pos) { // header
		return out
	} else {
		pos += int(n)
	}
	for pos < len(out) {
		n, ok := next()
		if !ok || n == 0 || n > uint64(len(out)-pos) || len(out)-pos-int(n) < ChecksumBytes {
			return out
		}
		binary.LittleEndian.PutUint32(out[pos+int(n):], Checksum(out[pos:pos+int(n)]))
		pos += int(n) + ChecksumBytes
	}
	return out
}
