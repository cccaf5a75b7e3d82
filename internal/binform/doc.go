// Package binform holds the low-level encoding of the binary history form
// (.fhist): varint buffers, the interned string and blob tables, tensor
// references by dense index, and the framing of records. The per-message
// encoders and decoders are generated from the message spec into package
// gen (gen/binary.go) and call the Encoder and Decoder of this package;
// package history reads and writes whole files.
//
// The layout, in brief (FORMAT.md has the details):
//
//	file    = zstd( stream )            (a reader also accepts the stream bare)
//	stream  = magic "\xf5FHIST" version:uvarint(1) header record* end
//	header  = len:uvarint raw-JSON-header-line
//	record  = len:uvarint body          (len >= 1, at most MaxRecordBytes)
//	end     = 0x00                      (a record length of 0), then nothing
//	body    = kind:byte(1 command, 2 step) ...
//
// Integers are LEB128 varints (signed ones zigzag-encoded). A string or a
// raw JSON blob is a reference: 0 followed by its length and bytes the first
// time (it then joins a table), or 1+index into the table after. A tensor's
// first mention is a definition carrying all its fields, listed at the head
// of the record that first mentions it; every mention is then its dense
// index.
package binform
