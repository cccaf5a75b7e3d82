package values

import (
	"math/rand/v2"
	"testing"
)

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
