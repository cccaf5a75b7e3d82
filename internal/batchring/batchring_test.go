package batchring

import (
	"sync"
	"testing"
)

// TestOrderAndEnd: batches arrive in the order given, through a ring of
// two, with the producer and the consumer on two goroutines; Next returns
// nil once the producer has ended and every batch was taken.
func TestOrderAndEnd(t *testing.T) {
	q := New(2, func(b *[]int) { *b = make([]int, 0, 4) })
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer q.End()
		for i := range 1000 {
			b := q.Free()
			*b = append((*b)[:0], i, -i)
			q.Give(i%7 == 0)
		}
	}()
	n := 0
	for b := q.Next(); b != nil; b = q.Next() {
		if len(*b) != 2 || (*b)[0] != n || (*b)[1] != -n {
			t.Fatalf("batch %d holds %v", n, *b)
		}
		n++
		q.Done()
	}
	wg.Wait()
	if n != 1000 {
		t.Errorf("%d batches, want 1000", n)
	}
}

// TestStop: a producer waiting for a free batch leaves once the consumer
// stops (Free returns nil), and Each visits every batch.
func TestStop(t *testing.T) {
	q := New(2, func(b *int) {})
	done := make(chan int)
	go func() {
		given := 0
		for b := q.Free(); b != nil; b = q.Free() {
			*b = given
			given++
			q.Give(false)
		}
		done <- given
	}()
	if b := q.Next(); b == nil || *b != 0 {
		t.Fatalf("first batch %v", b)
	}
	q.Done()
	q.Stop()
	if given := <-done; given < 2 || given > 3 {
		t.Errorf("the producer gave %d batches before it left, want 2 or 3 (a ring of 2, one taken)", given)
	}
	seen := 0
	q.Each(func(*int) { seen++ })
	if seen != 2 {
		t.Errorf("Each visited %d batches, want 2", seen)
	}
}
