package soa

// Ring is a growable FIFO queue over one slice. Positions are absolute
// counters (Head, Tail) so a caller can remember where it pushed something
// and read it back later with At, as long as it has not been popped.
type Ring[T any] struct {
	buf  []T // len is a power of two, or 0
	head int64
	tail int64
}

// Len is the number of queued items.
func (r *Ring[T]) Len() int { return int(r.tail - r.head) }

// Head is the absolute position of the oldest item.
func (r *Ring[T]) Head() int64 { return r.head }

// Tail is the absolute position the next Push will use.
func (r *Ring[T]) Tail() int64 { return r.tail }

// Push appends v and returns its absolute position.
func (r *Ring[T]) Push(v T) int64 {
	if int(r.tail-r.head) == len(r.buf) {
		r.grow()
	}
	pos := r.tail
	r.buf[int(pos)&(len(r.buf)-1)] = v
	r.tail++
	return pos
}

// Front returns the oldest item; the ring must not be empty.
func (r *Ring[T]) Front() T { return r.buf[int(r.head)&(len(r.buf)-1)] }

// Back returns the newest item; the ring must not be empty.
func (r *Ring[T]) Back() T { return r.buf[int(r.tail-1)&(len(r.buf)-1)] }

// At returns the item at absolute position pos, which must be queued.
func (r *Ring[T]) At(pos int64) T { return r.buf[int(pos)&(len(r.buf)-1)] }

// Pop drops n items from the front.
func (r *Ring[T]) Pop(n int) { r.head += int64(n) }

// Clone returns an independent copy with the same positions.
func (r *Ring[T]) Clone() Ring[T] {
	c := Ring[T]{head: r.head, tail: r.tail}
	if r.buf != nil {
		c.buf = make([]T, len(r.buf))
		copy(c.buf, r.buf)
	}
	return c
}

func (r *Ring[T]) grow() {
	n := len(r.buf) * 2
	if n == 0 {
		n = 8
	}
	nb := make([]T, n)
	// Keep every item at pos&(n-1): positions stay valid across growth.
	for p := r.head; p < r.tail; p++ {
		nb[int(p)&(n-1)] = r.buf[int(p)&(len(r.buf)-1)]
	}
	r.buf = nb
}
