// Package jsonl scans JSON lines without reflection and holds the value kinds
// of a command history: tensors, streams, slices of ranks and trees.
//
// A Scanner walks one line held in a []byte. Decoding a record allocates
// nothing in steady state: strings that are kept (dtypes, function names,
// stream names) are interned, slices are reused, and a tree's Raw text
// aliases the line. A Registry resolves tensor references: the first mention
// of a tensor id gives its fields, later mentions may give only the id.
package jsonl
