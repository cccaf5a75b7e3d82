package workload_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/workload"
)

// eachRecord writes j's history and calls fn with each of its command
// records, in order: up to its first step record when firstStep, else to
// its end. It reports whether it met a step record.
func eachRecord(t *testing.T, j workload.Job, firstStep bool, fn func(*history.Record)) (stepped bool) {
	t.Helper()
	allRecords(t, j, func(rec *history.Record) bool {
		if rec.IsStep {
			stepped = true
			return !firstStep
		}
		fn(rec)
		return true
	})
	return stepped
}

// allRecords writes j's history and calls fn with each of its records,
// step records too, in order, while fn returns true.
func allRecords(t *testing.T, j workload.Job, fn func(*history.Record) bool) {
	t.Helper()
	var b bytes.Buffer
	if err := workload.Write(&b, j); err != nil {
		t.Fatal(err)
	}
	r, err := history.NewReader(&b, "job")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rec history.Record
	for {
		err := r.Next(&rec)
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !fn(&rec) {
			return
		}
	}
}
