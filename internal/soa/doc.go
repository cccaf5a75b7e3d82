// Package soa holds the engine's flat tables: struct-of-arrays columns
// indexed by small integer ids, free lists that recycle rows, FIFO rings and
// an intern table for names. Nothing here knows what a task or a stream
// means; internal/sched gives the columns their meaning.
//
// The task table itself is generated from the message spec (gen.TaskTable);
// Tasks below is an alias so the engine names every table from one place.
package soa

import "github.com/fastsim/fastsim/gen"

// Tasks is the generated struct-of-arrays task table.
type Tasks = gen.TaskTable

// TaskID addresses one row of Tasks.
type TaskID = gen.TaskID
