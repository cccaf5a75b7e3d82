package sched

import (
	"errors"
	"fmt"
)

// Errors a replay can meet. Each is returned wrapped with the command that
// caused it; callers add the file and line.
var (
	ErrUnknownStream   = errors.New("unknown stream")
	ErrStreamExists    = errors.New("stream already exists")
	ErrStreamsFixed    = errors.New("stream created after the first task, which Options.FixedStreams promises no history does (create every stream before the first task, or replay without FixedStreams)")
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

// RecoverInternal, deferred at the top of a goroutine, turns a panic on
// it into an ErrInternal in *err: a panic on a goroutine other than the
// command line's would end the process with a stack dump, past the one
// boundary that reports it in one line.
func RecoverInternal(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%w: %v", ErrInternal, p)
	}
}
