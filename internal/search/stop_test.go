package search

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestRunStop: a run whose Stop is closed after its second layout (one
// at a time) returns those two, ranked, as the whole run simulates them,
// with Stats.Stopped; with two at a time, every result it returns is one
// of the whole run's too.
func TestRunStop(t *testing.T) {
	s := small()
	whole, n, err := Run(context.Background(), s, Options{Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) < 4 {
		t.Fatalf("%d layouts; the test wants 4 or more", len(whole))
	}
	byIndex := map[int]Result{}
	for _, r := range whole {
		byIndex[r.Index] = r
	}
	for _, jobs := range []int{1, 2} {
		stop := make(chan struct{})
		var st Stats
		opt := Options{Jobs: jobs, Stats: &st, Stop: stop}
		opt.Progress = func(done, total int) {
			if done == 2 {
				close(stop)
			}
		}
		rs, layouts, err := Run(context.Background(), s, opt)
		if err != nil {
			t.Fatalf("jobs %d: %v", jobs, err)
		}
		if !st.Stopped || layouts != n || st.Simulated != len(rs) || len(rs) < 2 || len(rs) >= len(whole) || jobs == 1 && len(rs) != 2 {
			t.Errorf("jobs %d: %d results, stats %+v, %d layouts; want 2 (2 or more with 2 jobs, fewer than %d), stopped, of %d", jobs, len(rs), st, layouts, len(whole), n)
		}
		for i, r := range rs {
			if r != byIndex[r.Index] {
				t.Errorf("jobs %d: layout %d: %+v; the whole run's is %+v", jobs, r.Index, r, byIndex[r.Index])
			}
			if i > 0 && rs[i-1].StepTimeNs > r.StepTimeNs && rs[i-1].Fits == r.Fits {
				t.Errorf("jobs %d: results not ranked: %+v before %+v", jobs, rs[i-1], r)
			}
		}
	}
}

// TestRunStopAfterLast: a stop that comes as the last layout is done
// leaves the run whole: every result, not marked stopped.
func TestRunStopAfterLast(t *testing.T) {
	s := small()
	whole, _, err := Run(context.Background(), s, Options{Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var st Stats
	opt := Options{Jobs: 1, Stats: &st, Stop: stop}
	opt.Progress = func(done, total int) {
		if done == total {
			close(stop)
		}
	}
	rs, _, err := Run(context.Background(), s, opt)
	if err != nil || st.Stopped || len(rs) != len(whole) {
		t.Errorf("%d results, stopped %v (%v); want the whole run's %d, not stopped", len(rs), st.Stopped, err, len(whole))
	}
}

// TestPartialDocRefused: the result of a stopped search says so in its
// JSON, and neither ReadDoc nor Merge takes it for a shard's result.
func TestPartialDocRefused(t *testing.T) {
	s := small()
	ls, err := Enumerate(s)
	if err != nil {
		t.Fatal(err)
	}
	d := NewDoc(s, "x", Shard{K: 0, N: 1}, len(ls), []Result{{Index: 0, Layout: ls[0]}})
	d.Partial = true
	var b bytes.Buffer
	if err := d.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"partial": true`) {
		t.Fatalf("no \"partial\": true in\n%s", b.String())
	}
	if _, err := ReadDoc(&b, "p.json"); !errors.Is(err, ErrMerge) || !strings.Contains(err.Error(), "a partial result: the search was interrupted after 1 of the shard's") {
		t.Errorf("ReadDoc: %v; want a partial result refused", err)
	}
	if _, err := Merge([]*Doc{d}); !errors.Is(err, ErrMerge) || !strings.Contains(err.Error(), "partial") {
		t.Errorf("Merge: %v; want a partial result refused", err)
	}
}

// TestReadDocNotSearch: a JSON document that is not a search's (another
// "fastsim" document, or one with no "fastsim" field) is refused as such,
// before a field of its own is named as unknown; a search document with a
// field it does not have still has the field named.
func TestReadDocNotSearch(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"exec_time_s":0.5,"peak_memory_mb":1,"commands":2}`, `p.json:1: shards do not merge: not a fastsim search --json document (it has no "fastsim" field)`},
		{"{\"fastsim\":\"history\",\"version\":1,\"world_size\":4}\n{\"ts\":0}\n", `p.json:1: shards do not merge: not a fastsim search --json document (its "fastsim" field is "history")`},
		{"{\"name\":\"gpt\",\n\"fastsim\":\"predict\"}", `p.json:2: shards do not merge: not a fastsim search --json document (its "fastsim" field is "predict")`},
		{`{"fastsim": [1, 2]}`, `p.json:1: shards do not merge: not a fastsim search --json document (its "fastsim" field is [1,2])`},
		{`{"fastsim":"search","version":1,"name":"x"}`, `p.json:1: shards do not merge: unknown field "name"`},
		{`{"FastSim":"search","version":1,"name":"x"}`, `p.json:1: shards do not merge: unknown field "name"`},
	} {
		_, err := ReadDoc(strings.NewReader(c.doc), "p.json")
		if !errors.Is(err, ErrMerge) || err.Error() != c.want {
			t.Errorf("%s: %v; want %q", c.doc, err, c.want)
		}
	}
}
