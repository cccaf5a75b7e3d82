package sched

import (
	"slices"
	"testing"
)

// TestMemEventsKeepOrder appends events to a stream, in runs of one to
// fifty as passes and commands do, and drops settled ones from the front,
// few or many at a time, as settlement does; it checks the events against
// a plain slice after every step, and that the arrays room makes stay few:
// with the unsettled events moved back to the front of their array, a new
// array is made only when they outgrow half of it. Without the move (room
// always making a new array when mem's capacity runs out) it is fifty.
func TestMemEventsKeepOrder(t *testing.T) {
	var st stream
	var want []memEvent
	seed := uint64(7)
	rnd := func(n uint64) int {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int((seed >> 33) % n)
	}
	arrays, next := 0, int64(0)
	for step := range 20000 {
		if rnd(3) > 0 {
			k := 1 + rnd(50)
			before := cap(st.memArr)
			if k == 1 {
				st.addMem(memEvent{next, 1})
				want = append(want, memEvent{next, 1})
				next++
			} else {
				st.room(k)
				for range k {
					st.mem = append(st.mem, memEvent{next, -1})
					want = append(want, memEvent{next, -1})
					next++
				}
			}
			if cap(st.memArr) != before {
				arrays++
			}
		} else if len(want) > 0 {
			// Settle few (the unsettled held back) or most.
			p := rnd(8)
			if rnd(4) == 0 {
				p = rnd(uint64(len(want) + 1))
			}
			p = min(p, len(want))
			st.sorted = len(st.mem)
			st.dropSettled(p)
			want = want[p:]
			if st.sorted != len(st.mem) {
				t.Fatalf("step %d: sorted %d after dropping %d, want %d", step, st.sorted, p, len(st.mem))
			}
		}
		if !slices.Equal(st.mem, want) {
			t.Fatalf("step %d: %d events differ from the %d expected", step, len(st.mem), len(want))
		}
	}
	if arrays > 20 {
		t.Fatalf("%d arrays made for at most %d events held", arrays, cap(st.memArr)/2)
	}
	t.Logf("%d arrays, the last of %d events", arrays, cap(st.memArr))
}
