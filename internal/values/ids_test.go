package values

import (
	"math/rand/v2"
	"testing"
)

// TestIDIndexAgainstMap drives an idIndex the way a history does (ids
// counted up, most dying young, a few living long, some negative or far
// away, ids reused after removal) and checks every lookup against a map.
// Indexes are handed out as a pool does (a removed id's index is reused,
// and the column of ids by index keeps a removed id until then), so that a
// slide finds the ids it leaves behind both from the column and from the
// window's entries.
func TestIDIndexAgainstMap(t *testing.T) {
	for seed := uint64(0); seed < 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		var x idIndex
		want := map[int64]int32{}
		var live []int64
		var byIdx []int64 // the id last given each index
		var freeIdx []int32
		var gone []int64 // the last ids removed
		next := int64(rng.IntN(100))
		for op := 0; op < 100000; op++ {
			var id int64
			switch k := rng.IntN(100); {
			case k < 60:
				id = next
				next += 1 + int64(rng.IntN(3))
			case k < 62:
				id = -1 - int64(rng.IntN(1000))
			case k < 63:
				id = next + int64(rng.IntN(1<<30)) // far beyond
			case k < 66 && len(live) > 0:
				id = live[rng.IntN(len(live))] // an existing one: a find
			case k < 68 && len(gone) > 0:
				// A removed id defined again (a find, then an insert
				// when it is not live again already): its old index
				// may still name it in the column.
				id = gone[rng.IntN(len(gone))]
			default:
				// Remove a live id: mostly young ones, sometimes an old one.
				if len(live) == 0 {
					continue
				}
				j := len(live) - 1 - rng.IntN(min(len(live), 64))
				if rng.IntN(10) == 0 {
					j = rng.IntN(len(live))
				}
				id = live[j]
				x.remove(id, want[id])
				freeIdx = append(freeIdx, want[id])
				gone = append(gone[max(0, len(gone)-63):], id)
				delete(want, id)
				live[j] = live[len(live)-1]
				live = live[:len(live)-1]
				continue
			}
			got, ok := x.find(id)
			w, wok := want[id]
			if ok != wok || ok && got != w {
				t.Fatalf("seed %d op %d: find(%d) = %d %v, want %d %v", seed, op, id, got, ok, w, wok)
			}
			if !ok {
				var idx int32
				if k := len(freeIdx); k > 0 && rng.IntN(4) != 0 {
					// Any free index, older or younger than one a
					// removed id's column entry still names.
					f := rng.IntN(k)
					idx = freeIdx[f]
					freeIdx[f] = freeIdx[k-1]
					freeIdx = freeIdx[:k-1]
				} else {
					// Some freed indexes stay free for long: their
					// column entries name ids that are gone.
					idx = int32(len(byIdx))
					byIdx = append(byIdx, 0)
				}
				x.insert(id, idx, byIdx)
				byIdx[idx] = id
				want[id] = idx
				live = append(live, id)
			}
		}
		for id, w := range want {
			if got, ok := x.find(id); !ok || got != w {
				t.Fatalf("seed %d: at the end find(%d) = %d %v, want %d", seed, id, got, ok, w)
			}
		}
		// The window stays near the live ids: its length is bounded by
		// them, not by how many ids were ever seen.
		if len(x.dense) > 4*(2*len(byIdx)+4096) {
			t.Fatalf("seed %d: window of %d for %d live ids", seed, len(x.dense), len(want))
		}
	}
}

// TestIDIndexSlideSkipsStaleColumn: an id removed and defined again with
// another index is still named by its old index in the column of ids
// (until that index is reused); the slide that leaves it behind must move
// it with its live index, whichever comes first in the column.
func TestIDIndexSlideSkipsStaleColumn(t *testing.T) {
	var x idIndex
	ids := []int64{5, 10}
	x.insert(5, 0, ids[:0])
	x.insert(10, 1, ids[:1])
	x.remove(10, 1) // index 1 is free; the column still says 10
	x.remove(5, 0)
	x.insert(10, 0, ids) // 10 again, at index 0
	ids[0] = 10
	// An id far enough ahead to slide the window past 10; the column (2
	// ids) is shorter than what the window leaves, so the slide reads it.
	far := int64(10 + 2*len(ids) + 4096 + 100)
	x.insert(far, 1, ids)
	ids[1] = far
	if x.lo <= 10 {
		t.Fatalf("the window starts at %d: it did not slide past 10", x.lo)
	}
	if got, ok := x.find(10); !ok || got != 0 {
		t.Fatalf("find(10) = %d %v after the slide, want 0", got, ok)
	}
	if got, ok := x.find(far); !ok || got != 1 {
		t.Fatalf("find(%d) = %d %v, want 1", far, got, ok)
	}
}

// TestIDTable: the open-addressing table answers as a Go map does under a
// long run of random sets, finds and removes, with ids clustered (so that
// probes collide and removals shift entries back) and spread.
func TestIDTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tab idTable
	want := map[int64]int32{}
	for step := 0; step < 200000; step++ {
		var id int64
		if rng.IntN(2) == 0 {
			id = int64(rng.IntN(300)) // clustered
		} else {
			id = rng.Int64() - 1<<62 // spread, negative too
		}
		switch rng.IntN(3) {
		case 0:
			i := int32(rng.IntN(1 << 20))
			tab.set(id, i)
			want[id] = i
		case 1:
			tab.remove(id)
			delete(want, id)
		}
		got, ok := tab.find(id)
		w, wok := want[id]
		if ok != wok || got != w {
			t.Fatalf("step %d: find(%d) = %d, %v; want %d, %v", step, id, got, ok, w, wok)
		}
		if tab.n != len(want) {
			t.Fatalf("step %d: %d entries, want %d", step, tab.n, len(want))
		}
	}
	for id, w := range want {
		if got, ok := tab.find(id); !ok || got != w {
			t.Fatalf("find(%d) = %d, %v; want %d", id, got, ok, w)
		}
	}
	tab.reset()
	for id := range want {
		if _, ok := tab.find(id); ok {
			t.Fatalf("find(%d) after reset", id)
		}
	}
}

// TestWideWindowsAnswerAlike runs one sequence of definitions, deletions
// and look-ups on a registry with the default windows and on one with
// widened windows: tensors that live across many more ids than are alive
// at once (which the default windows leave to the hash tables), ids far
// ahead, and negative ones. Every answer must be the same.
func TestWideWindowsAnswerAlike(t *testing.T) {
	a, b := NewRegistry(), NewRegistry()
	b.WidenWindows(32)
	next := int64(1)
	var live []int64
	check := func(step int, id int64) {
		t.Helper()
		ia, ib := a.TensorIdx(id), b.TensorIdx(id)
		if ia != ib {
			t.Fatalf("step %d: tensor %d at %d, widened %d", step, id, ia, ib)
		}
		if ia >= 0 && a.StorageIdxOf(ia) != b.StorageIdxOf(ib) {
			t.Fatalf("step %d: tensor %d's storage at %d, widened %d", step, id, a.StorageIdxOf(ia), b.StorageIdxOf(ib))
		}
	}
	for step := 0; step < 20000; step++ {
		switch {
		case step%7 == 3 && len(live) > 0:
			// Delete one of the young half, so that old ones live long.
			k := len(live) - 1 - (step/7)%((len(live)+1)/2)
			id := live[k]
			live = append(live[:k], live[k+1:]...)
			a.Delete(id)
			b.Delete(id)
			check(step, id)
		default:
			id := next
			switch step % 101 {
			case 50:
				id = -id // negative
			case 77:
				id = next + 1<<40 // far ahead
			}
			next += 1 + int64(step%3)*40 // ids made faster than kept
			st := id
			if step%5 == 0 && len(live) > 0 {
				st = live[len(live)-1] // a view of the last one's storage
			}
			for _, r := range []*Registry{a, b} {
				if _, err := r.Define(id, st, 8, "float32", []int64{2}, false); err != nil {
					t.Fatal(err)
				}
			}
			live = append(live, id)
		}
		if step%97 == 0 {
			for _, id := range live {
				check(step, id)
			}
		}
	}
	if a.Len() != b.Len() || a.Storages() != b.Storages() {
		t.Fatalf("%d rows, %d storages; widened %d, %d", a.Len(), a.Storages(), b.Len(), b.Storages())
	}
}
