package trace

import "errors"

// ErrClosed is returned by Writer.Close when the Writer was already closed,
// and by File.Commit when the File was already committed or aborted.
var ErrClosed = errors.New("trace: already closed")

// ErrShuttingDown is returned by CreateOutput after RemoveTemps.
var ErrShuttingDown = errors.New("the process is shutting down")
