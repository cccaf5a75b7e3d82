package workload

import (
	"math/rand/v2"
	"testing"
)

// A mailbox returns every message in flight by its microbatch, whatever
// the order of sends and receives and however many are in flight (its
// slots grow), against a map of what was sent and not yet taken.
func TestMailboxKeepsEveryMessageInFlight(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		var b mailbox
		want := map[int]int64{} // in flight: microbatch -> the borrow id sent
		next := 0
		for op := 0; op < 300; op++ {
			if len(want) == 0 || r.IntN(3) > 0 && len(want) < 40 {
				// Send the next microbatch; now and then skip some, as
				// the receive order of a schedule need not be dense.
				next += 1 + r.IntN(3)*r.IntN(2)
				m := b.put(next)
				if m.ok {
					t.Fatalf("round %d: put(%d) gave a slot in use (microbatch %d)", round, next, m.mb)
				}
				*m = message{out: &outSend{borrow: int64(1000 + next)}, mb: next, ok: true}
				want[next] = int64(1000 + next)
			} else {
				// Receive one in flight, not always the oldest.
				var mb int
				for k := range want {
					mb = k
					break
				}
				m := b.at(mb)
				if m == nil || m.out.borrow != want[mb] {
					t.Fatalf("round %d: at(%d) = %+v, want the message of borrow %d", round, mb, m, want[mb])
				}
				*m = message{}
				delete(want, mb)
			}
			for mb := max(0, next-50); mb <= next; mb++ {
				id, in := want[mb]
				if m := b.at(mb); in != (m != nil) || in && m.out.borrow != id {
					t.Fatalf("round %d: at(%d) = %+v, in flight %v", round, mb, m, in)
				}
			}
		}
		if len(want) > 4 && len(b.slots) < len(want) {
			t.Fatalf("round %d: %d slots hold %d messages", round, len(b.slots), len(want))
		}
	}
}
