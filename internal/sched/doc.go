// Package sched is the replay engine: it applies decoded commands to the
// simulated workers and runs their streams to a fixpoint, exactly as
// docs/SEMANTICS.md describes.
//
// Where things are:
//   - engine.go: the Engine, its options and one command's life (controller
//     event, handler, fixpoint).
//   - handlers.go: one method per simulated message (gen.Handler).
//   - run.go: tasks entering streams and the worklist that moves stream heads
//     PENDING -> EXECUTING -> EXECUTED. Only streams whose head may have
//     changed are visited.
//   - memory.go: tensors, storages and the memory model's checks.
//   - report.go: exec time, peak memory and the trace.
//
// All state is flat: tasks, tensors, storages and collectives are rows in
// internal/soa tables addressed by int32 ids; a stream's queue and its
// tasks' tensors are rings of ids. A "worker" is an index; state per worker
// is kept so that one worker can later stand for a group of identical ranks.
package sched
