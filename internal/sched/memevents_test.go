package sched

import (
	"cmp"
	"fmt"
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
		// Every segment after the first is memSeg long, and the places
		// of let-go segments are given back once they are half of segs.
		for k := 1; k < len(l.segs); k++ {
			if s := l.segs[k]; s != nil && cap(s) != memSeg {
				t.Fatalf("step %d: segment %d of capacity %d", step, k, cap(s))
			}
		}
		if k0 := l.first >> memSegShift; k0 > 0 && 2*k0 >= len(l.segs) {
			t.Fatalf("step %d: %d of %d segments let go and still in segs", step, k0, len(l.segs))
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

// TestMemLogSteadyState keeps K events and drops P at a time, as a
// stream that settles a little at a time does, over many times memSeg
// events: the log must stay in one small array (no segment made, none
// grown past what K + P need), as the single array it replaces did.
// Without the move to the front when a segment runs out, it walks
// through a new 64 KiB segment every 4,096 events.
func TestMemLogSteadyState(t *testing.T) {
	for _, c := range []struct{ k, p, maxCap int }{{8, 7, 64}, {100, 25, 256}, {1000, 250, 4096}} {
		var l memLog
		var want []memEvent
		for i := range 20 * memSeg {
			ev := memEvent{int64(i), int64(i%7) - 3}
			l.push(ev)
			want = append(want, ev)
			if l.Len() >= c.k+c.p {
				l.drop(c.p)
				want = want[c.p:]
			}
			if len(l.segs) != 1 || cap(l.segs[0]) > c.maxCap {
				t.Fatalf("K %d, P %d, after %d events: %d segments, the first of capacity %d (want one, at most %d)",
					c.k, c.p, i+1, len(l.segs), cap(l.segs[0]), c.maxCap)
			}
		}
		if got := l.appendTo(nil, 0); !slices.Equal(got, want) {
			t.Fatalf("K %d, P %d: the kept events differ", c.k, c.p)
		}
	}
}

// TestShortcutsExactLongLogs replays random histories long enough that
// streams' memory logs run through many segments (with the controller
// that costs nothing every event is kept; with Monarch's, an idle
// stream holding memory holds settlement back), and compares settled,
// traced, grouped and parallel replays with the unsettled, ungrouped
// reference, as TestShortcutsExactRandom does on shorter ones; it also
// checks that some log did leave its first segment.
func TestShortcutsExactLongLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("long histories")
	}
	runs := []xrun{
		{name: "settled", settle: true, batch: true, jobs: 1},
		{name: "settled traced", settle: true, keep: true, batch: true, jobs: 1},
		{name: "grouped settled", grouped: true, settle: true, batch: true, jobs: 2},
	}
	segments := 0
	for seed, world := range []int{2, 4} {
		text := xhistory(uint64(100+seed), world, 2, false, 40000)
		for _, ctrl := range []Controller{ControllerMonarch, ControllerNone} {
			if err := xagree(t, text, world, Everything, ctrl, runs, fmt.Sprintf("seed %d", seed)); err != "" {
				t.Fatalf("seed %d world %d: the reference replay failed: %s", seed, world, err)
			}
		}
		segments = max(segments, longestLog(t, text, world))
	}
	if segments < 2 {
		t.Fatalf("no stream's memory log left its first segment (at most %d)", segments)
	}
}

// longestLog is the most segments any stream's memory log of text's
// replay (controller none, every event kept) lies in.
func longestLog(t *testing.T, text string, world int) int {
	t.Helper()
	e, err := replayWith(t, Options{Mode: Everything, Controller: ControllerNone, KeepEvents: true, Jobs: 1}, text)
	if err != nil {
		t.Fatalf("world %d: %v", world, err)
	}
	defer e.Close()
	most := 0
	for _, g := range e.gs {
		for s := range g.streams {
			n := 0
			for _, seg := range g.streams[s].mem.segs {
				if seg != nil {
					n++
				}
			}
			most = max(most, n)
		}
	}
	return most
}
