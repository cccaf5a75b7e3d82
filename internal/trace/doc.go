// Package trace writes Chrome trace event JSON (the format Perfetto and
// chrome://tracing load) as a stream.
//
// A Writer never holds the trace in memory: every event is formatted into a
// reused buffer and handed to a bufio.Writer as soon as it is given, one event
// per line inside {"traceEvents":[ ... ]}. Formatting an event allocates
// nothing. Engine times are integer nanoseconds and are written as exact
// decimal microseconds (a complete event's dur as its end less its ts in
// doubles where the exact decimal would end it later in a viewer:
// AppendDuration); byte counts are written as exact decimal megabytes
// (bytes / 1e6).
//
// File wraps a Writer around a temporary file next to the destination,
// plain, gzip- or zstd-compressed by the destination's name, and renames it
// into place on Commit, so a reader never sees a partial trace.
package trace
