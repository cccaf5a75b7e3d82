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
			return stepped
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.IsStep {
			stepped = true
			if firstStep {
				return true
			}
			continue
		}
		fn(&rec)
	}
}
