package sched

import (
	"cmp"
	"slices"
	"testing"
)

// TestMemLogEqualsSlice drives a memLog and a plain slice with the same
// appends (one event, runs shifted by a base, runs long enough to cross
// several segments), drops from the front (a few, most, all) and sorts of
// a tail, and checks after every step that the log holds exactly the
// slice's events, that chunks, appendTo and clone read them back, and
// that a log settled down to few events holds them in one segment again.
func TestMemLogEqualsSlice(t *testing.T) {
	var l memLog
	var want []memEvent
	seed := uint64(7)
	rnd := func(n int) int {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int((seed >> 33) % uint64(n))
	}
	next := int64(0)
	crossed, regrouped := 0, 0
	for step := range 6000 {
		switch r := rnd(10); {
		case r < 4:
			ev := memEvent{next, int64(rnd(100)) - 50}
			next++
			l.push(ev)
			want = append(want, ev)
		case r < 7:
			k := 1 + rnd(60)
			if rnd(20) == 0 {
				k = 1 + rnd(3*memSeg)
			}
			run := make([]memEvent, k)
			for i := range run {
				run[i] = memEvent{int64(i), int64(rnd(100)) - 50}
			}
			before := len(l.segs)
			l.pushShifted(run, next)
			for _, ev := range run {
				want = append(want, memEvent{ev.ns + next, ev.delta})
			}
			next += int64(k)
			if len(l.segs) > before+1 {
				crossed++
			}
		case r < 9:
			if len(want) == 0 {
				continue
			}
			p := rnd(min(len(want), 8) + 1)
			if rnd(3) == 0 {
				p = rnd(len(want) + 1)
			}
			l.drop(p)
			want = want[p:]
			if len(want) <= memSeg/4 && len(l.segs) == 1 && l.first == 0 {
				regrouped++
			}
		default:
			// Reverse a tail and sort it back: in place within a
			// segment, through a copy across segments.
			from := rnd(len(want) + 1)
			for i, j := from, len(want)-1; i < j; i, j = i+1, j-1 {
				*l.at(i), *l.at(j) = *l.at(j), *l.at(i)
			}
			l.sortFrom(from, func(ev []memEvent) {
				slices.SortStableFunc(ev, func(a, b memEvent) int { return cmp.Compare(a.ns, b.ns) })
			})
			slices.SortStableFunc(want[from:], func(a, b memEvent) int { return cmp.Compare(a.ns, b.ns) })
		}
		if l.Len() != len(want) {
			t.Fatalf("step %d: %d events, want %d", step, l.Len(), len(want))
		}
		if len(want) > 4096 && step%64 != 0 {
			continue // long logs are read back now and then
		}
		for i, w := range want {
			if *l.at(i) != w {
				t.Fatalf("step %d: event %d is %v, want %v", step, i, *l.at(i), w)
			}
		}
		if got := l.appendTo(nil, 0); !slices.Equal(got, want) {
			t.Fatalf("step %d: appendTo differs", step)
		}
		if len(want) > 0 {
			from, to := rnd(len(want)), len(want)
			to = from + rnd(to-from+1)
			var got []memEvent
			for c := range l.chunks(from, to) {
				got = append(got, c...)
			}
			if !slices.Equal(got, want[from:to]) {
				t.Fatalf("step %d: chunks %d..%d differ", step, from, to)
			}
		}
		if step%500 == 0 {
			c := l.clone()
			if got := c.appendTo(nil, 0); !slices.Equal(got, want) {
				t.Fatalf("step %d: clone differs", step)
			}
			if c.Len() > 0 {
				c.at(0).delta++ // shares nothing
				if *l.at(0) != want[0] {
					t.Fatalf("step %d: clone shares the log's events", step)
				}
			}
		}
		// Dropped segments are let go: the ones before the first kept
		// event are nil.
		for k := 0; k < l.first>>memSegShift; k++ {
			if l.segs[k] != nil {
				t.Fatalf("step %d: segment %d kept after its events were dropped", step, k)
			}
		}
	}
	if crossed == 0 || regrouped == 0 {
		t.Fatalf("the steps never crossed segments (%d) or settled back into one (%d)", crossed, regrouped)
	}
}
