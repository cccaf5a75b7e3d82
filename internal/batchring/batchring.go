// Package batchring hands batches from a producer goroutine to a consumer
// goroutine through a fixed ring of batches reused from one to the next,
// so that nothing is allocated per item in steady state and the two
// goroutines meet once a batch, under a mutex.
//
// A goroutine that must wait parks (it does not spin: on a shared machine
// a spinning goroutine takes a core from the one it waits for), and is
// woken only once the ring is half full (the consumer) or half free (the
// producer), or when the producer asks (a last batch, an input run dry)
// or ends: a woken thread may wait a scheduling slice for a core, so each
// wake-up should bring a long run of work, not one batch.
package batchring

import "sync"

// Ring is the batches in flight: bufs[head..tail) (modulo its length) are
// filled and wait for the consumer, the others belong to the producer.
type Ring[B any] struct {
	mu         sync.Mutex
	filled     sync.Cond // the consumer waits on it for filled batches
	emptied    sync.Cond // the producer waits on it for free ones
	bufs       []B
	head, tail int  // batches taken by the consumer, and given by the producer, so far
	conWaits   bool // the consumer waits on filled
	proWaits   bool // the producer waits on emptied
	ended      bool // the producer gives no more batches
	quit       bool // the consumer takes no more batches: the producer leaves
}

// New returns a ring of n batches, each made ready by init.
func New[B any](n int, init func(*B)) *Ring[B] {
	q := &Ring[B]{bufs: make([]B, n)}
	q.filled.L, q.emptied.L = &q.mu, &q.mu
	for i := range q.bufs {
		init(&q.bufs[i])
	}
	return q
}

// Free waits for a batch the producer may fill; nil once the consumer has
// stopped (Stop).
func (q *Ring[B]) Free() *B {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.tail-q.head == len(q.bufs) && !q.quit {
		q.proWaits = true
		q.emptied.Wait()
	}
	if q.quit {
		return nil
	}
	return &q.bufs[q.tail%len(q.bufs)]
}

// Give hands the batch Free returned to the consumer; wake wakes a
// waiting consumer now (a last batch, or no more input for a while)
// rather than once the ring is half full.
func (q *Ring[B]) Give(wake bool) {
	q.mu.Lock()
	q.tail++
	if q.conWaits && (wake || 2*(q.tail-q.head) >= len(q.bufs)) {
		q.conWaits = false
		q.filled.Signal()
	}
	q.mu.Unlock()
}

// End says the producer gives no more batches.
func (q *Ring[B]) End() {
	q.mu.Lock()
	q.ended = true
	q.conWaits = false
	q.filled.Signal()
	q.mu.Unlock()
}

// Next waits for the next filled batch; nil once the producer has ended
// (End) and every batch was taken.
func (q *Ring[B]) Next() *B {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.tail == q.head && !q.ended {
		q.conWaits = true
		q.filled.Wait()
	}
	if q.tail == q.head {
		return nil
	}
	return &q.bufs[q.head%len(q.bufs)]
}

// Done hands the batch Next returned back to the producer.
func (q *Ring[B]) Done() {
	q.mu.Lock()
	q.head++
	if q.proWaits && 2*(len(q.bufs)-(q.tail-q.head)) >= len(q.bufs) {
		q.proWaits = false
		q.emptied.Signal()
	}
	q.mu.Unlock()
}

// Stop tells the producer to leave: Free returns nil from now on.
func (q *Ring[B]) Stop() {
	q.mu.Lock()
	q.quit = true
	q.emptied.Signal()
	q.mu.Unlock()
}

// Each calls fn with every batch of the ring, in order of the ring; only
// once neither goroutine uses the ring any more.
func (q *Ring[B]) Each(fn func(*B)) {
	for i := range q.bufs {
		fn(&q.bufs[i])
	}
}
