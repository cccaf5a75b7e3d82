package values

import (
	"math/rand/v2"
	"testing"
)

// TestIDTableLikeMap: random puts, gets and deletes on the open-addressing
// table give what a Go map gives (a property: the two hold the same pairs
// after every step), with ids both clustered (counted up, as a controller
// does) and spread.
func TestIDTableLikeMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tab idTable
	want := map[int64]int32{}
	next := int64(0)
	for step := 0; step < 200000; step++ {
		var id int64
		switch rng.IntN(3) {
		case 0:
			id = next
			next++
		case 1:
			id = next - 1 - rng.Int64N(min(next, 5000)+1)
		default:
			id = rng.Int64() - 1<<62
		}
		switch rng.IntN(5) {
		case 0, 1:
			v := rng.Int32N(1 << 30)
			tab.put(id, v)
			want[id] = v
		case 2, 3:
			tab.del(id)
			delete(want, id)
		default:
			got, ok := tab.get(id)
			w, wok := want[id]
			if ok != wok || got != w {
				t.Fatalf("step %d: get(%d) = %d, %v; want %d, %v", step, id, got, ok, w, wok)
			}
		}
		if tab.n != len(want) {
			t.Fatalf("step %d: %d entries, want %d", step, tab.n, len(want))
		}
	}
	for id, w := range want {
		if got, ok := tab.get(id); !ok || got != w {
			t.Fatalf("get(%d) = %d, %v; want %d", id, got, ok, w)
		}
	}
	tab.reset()
	for id := range want {
		if _, ok := tab.get(id); ok {
			t.Fatalf("after reset, %d is still there", id)
		}
	}
}
