package sched

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fastsim/fastsim/gen"
)

// The insertion sorts of memory events and of a DeleteRefs' hits give what
// slices.SortFunc gives, on nearly sorted input (the insertion path), on
// shuffled input (events past their budget of moves), and on runs longer
// than the hits' insertion limit.
func TestSortsMatchLibrary(t *testing.T) {
	byTime := func(a, b memEvent) int {
		if c := cmp.Compare(a.ns, b.ns); c != 0 {
			return c
		}
		return cmp.Compare(a.delta, b.delta)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 5, 31, 33, 100, 1000} {
		for _, shuffle := range []int{0, 1, 3, n} {
			ev := make([]memEvent, n)
			for i := range ev {
				ev[i] = memEvent{ns: int64(i / 3), delta: int64(r.IntN(7) - 3)}
			}
			for range shuffle {
				if n > 1 {
					i, j := r.IntN(n), r.IntN(n)
					ev[i], ev[j] = ev[j], ev[i]
				}
			}
			want := slices.Clone(ev)
			slices.SortFunc(want, byTime)
			sortEvents(ev, byTime)
			if !slices.Equal(ev, want) {
				t.Fatalf("sortEvents, %d events, %d swaps: got %v, want %v", n, shuffle, ev, want)
			}

			hits := make([]deleteHit, n)
			for i := range hits {
				hits[i] = deleteHit{s: 0, k: int32(i)}
			}
			for i := range hits {
				hits[i].s = gen.StreamID(r.IntN(4))
			}
			wantH := slices.Clone(hits)
			slices.SortFunc(wantH, func(a, b deleteHit) int {
				return cmp.Or(cmp.Compare(a.s, b.s), cmp.Compare(a.k, b.k))
			})
			sortHits(hits)
			if !slices.Equal(hits, wantH) {
				t.Fatalf("sortHits, %d hits: got %v, want %v", n, hits, wantH)
			}
		}
	}
}

// addTask leaves a task's State, Wait, Waiters, NextWaiter and Borrow as
// TaskTable.Alloc gives them: Pending and -1, for a new row and for a
// recycled one alike.
func TestTaskAllocInitialState(t *testing.T) {
	var tk gen.TaskTable
	a := tk.Alloc()
	tk.State[a], tk.Wait[a], tk.Waiters[a], tk.NextWaiter[a], tk.Borrow[a] = gen.TaskStateExecuted, 3, 4, 5, 6
	tk.Free(a)
	for _, id := range []gen.TaskID{tk.Alloc(), tk.Alloc()} { // recycled, then new
		if tk.State[id] != gen.TaskStatePending || tk.Wait[id] != -1 || tk.Waiters[id] != -1 || tk.NextWaiter[id] != -1 || tk.Borrow[id] != -1 {
			t.Errorf("task %d: state %d, wait %d, waiters %d, next waiter %d, borrow %d; want pending and -1s",
				id, tk.State[id], tk.Wait[id], tk.Waiters[id], tk.NextWaiter[id], tk.Borrow[id])
		}
	}
}
