package values

import (
	"math/rand/v2"
	"testing"
)

// TestIDIndexAgainstMap drives an idIndex the way a history does (ids
// counted up, most dying young, a few living long, some negative or far
// away, ids reused after removal) and checks every lookup against a map.
func TestIDIndexAgainstMap(t *testing.T) {
	for seed := uint64(0); seed < 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		var x idIndex
		want := map[int64]int32{}
		var live []int64
		next := int64(rng.IntN(100))
		idx := int32(0)
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
				idx++
				x.insert(id, idx, len(want)+1)
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
		if len(x.dense) > 4*(2*len(want)+4096) {
			t.Fatalf("seed %d: window of %d for %d live ids", seed, len(x.dense), len(want))
		}
	}
}
