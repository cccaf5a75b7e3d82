package sched

import "testing"

// TestPaged checks paged against a plain slice over sets that fill, empty
// and refill pages, and that a clone is independent.
func TestPaged(t *testing.T) {
	var p paged
	var pool pagePool
	want := make([]int32, 5*pageLen)
	set := func(i, v int32) {
		p.set(&pool, i, v)
		want[i] = v
	}
	for i := range want {
		set(int32(i), int32(i%7)) // every 7th is 0
	}
	for i := 0; i < len(want); i += 3 {
		set(int32(i), 0)
	}
	for i := pageLen; i < 2*pageLen; i++ { // empty page 1: it is recycled
		set(int32(i), 0)
	}
	if p.pages[1] != nil || len(pool.spare) != 1 {
		t.Fatalf("page 1 not recycled: %v, %d spare", p.pages[1] != nil, len(pool.spare))
	}
	set(pageLen+3, 9)
	if len(pool.spare) != 0 {
		t.Fatalf("spare page not reused")
	}
	cs, _ := clonePages(&p)
	c := cs[0]
	p.set(&pool, 2, 42)
	for i := range want {
		if got := c.get(int32(i)); got != want[i] {
			t.Fatalf("clone: get(%d) = %d, want %d", i, got, want[i])
		}
	}
	want[2] = 42
	for i := range want {
		if got := p.get(int32(i)); got != want[i] {
			t.Fatalf("get(%d) = %d, want %d", i, got, want[i])
		}
	}
	if p.get(-1) != 0 || p.get(1<<30) != 0 {
		t.Fatal("an index never set is not 0")
	}
}
