// Package jsonl is the JSON-lines codec of a command history: it scans JSON
// lines without reflection, decodes the value kinds of package values from
// them and writes them back.
//
// A Scanner walks one line held in a []byte. Decoding a record allocates
// nothing in steady state: strings that are kept (dtypes, function names,
// stream names) are interned, slices are reused, and a tree's Raw text
// aliases the line. DecodeTensor resolves a tensor mention against a
// values.Registry: the first mention of a tensor id gives its fields, later
// mentions may give only the id. A Writer appends the JSON text of values.
//
// Writers put an object's keys in one order without whitespace, so the
// decoders first match that compact text (a field's key as masked words,
// a tensor, stream or slice object whole) and take the general path
// wherever a line differs, which accepts and rejects the same lines.
package jsonl
