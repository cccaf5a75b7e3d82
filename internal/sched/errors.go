package sched

import "errors"

// Errors a replay can meet. Each is returned wrapped with the command that
// caused it; callers add the file and line.
var (
	ErrUnknownStream   = errors.New("unknown stream")
	ErrStreamExists    = errors.New("stream already exists")
	ErrMissingTensor   = errors.New("tensor not available")
	ErrTensorInUse     = errors.New("tensor produced again while still in use")
	ErrBorrow          = errors.New("borrow out of order")
	ErrNoTaskToWaitFor = errors.New("no task to wait for")
	ErrRankCount       = errors.New("rank counts differ")
	ErrStreams         = errors.New("unsupported stream pair")
	ErrMemory          = errors.New("memory release the model forbids")
	ErrNotCPU          = errors.New("tensor is not a CPU tensor")
	ErrRankRepeat      = errors.New("a send names a rank twice")
	ErrOptions         = errors.New("bad options")
	ErrDeadlock        = errors.New("deadlock")
	ErrOverflow        = errors.New("int64 overflow")
	// ErrStopped: Options.Interrupt asked the engine to stop mid-command.
	ErrStopped = errors.New("stopped")
	// ErrInternal: a broken invariant inside the engine (a bug, not the
	// input's fault), turned from a panic into an error.
	ErrInternal = errors.New("internal error")
)
