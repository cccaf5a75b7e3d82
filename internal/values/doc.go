// Package values holds the values a command history's records carry,
// whatever form the history is read from: tensors, streams, slices of ranks
// and trees (JSON values with tensors at any depth), the extra fields a
// lossless conversion keeps, the Registry that resolves tensor references
// and gives every id of a history its dense index, the limits on values, and
// the errors about them.
//
// Both codecs (internal/jsonl for JSON lines, internal/binform for the
// binary form) fill these values and import this package; it imports
// neither, nor anything else of the module, so the engine sees values
// without depending on a codec.
package values
