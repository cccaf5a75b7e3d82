// Package soa holds what the engine's flat tables share and what is not
// generated: FIFO rings of row ids and an intern table for names. Nothing
// here knows what a task or a stream means, nor imports the message layer;
// the tables themselves are generated from the message spec (gen.TaskTable,
// gen.TensorTable, ...), and internal/sched gives their columns meaning.
package soa
