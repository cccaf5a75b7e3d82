package binform

import "github.com/fastsim/fastsim/internal/jsonl"

// Magic starts every binary history stream; Version follows it. 0xf5 never
// starts UTF-8 text, so a binary stream is never mistaken for JSON lines.
var Magic = []byte("\xf5FHIST")

// Version is the version of the binary form this package reads and writes.
const Version = 1

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
