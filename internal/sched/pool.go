package sched

import (
	"sync/atomic"
	"time"
)

// The parallel sections of a replay are short (after one command, a group's
// work is often a task or two) and come one after another, microseconds
// apart. Starting goroutines for each section, or waking parked ones, costs
// more than the work: a woken thread takes microseconds to run. So the
// helpers are started once (with errgroup, which bounds and collects them),
// spin between sections while sections keep coming, park when the replay
// pauses, and leave after a longer idle spell; they are started again when
// needed. A section has one chunk per goroutine, and chunk k goes to helper
// k section after section, so a group's data stays in one core's cache (a
// group handed to whichever core is free moves its tables between caches
// every command, which costs more than the work). A chunk is claimed with a
// bit in an atomic word, so a section never waits for a helper that is
// parked or gone: after a short wait the caller takes whatever nobody
// claimed. The word carries the section's number in its high half, so a
// helper late from one section can never claim a chunk of the next.
type pool struct {
	state   atomic.Uint64 // section<<32 | bit k set once chunk k is claimed
	done    atomic.Int32  // chunks of the current section finished
	chunks  atomic.Int32  // chunks in the current section
	helpers atomic.Int32  // helpers alive
	wake    chan struct{} // a token wakes one parked helper
	stop    atomic.Bool
}

// spin waits a little without entering the scheduler (a Gosched would let
// the scheduler move goroutines between threads) and without writing
// memory another core might read: it only computes in registers.
//
//go:noinline
func spin() int {
	x := 0
	for i := 0; i < 64; i++ {
		x += i ^ x
	}
	return x
}

const (
	claimWait  = 200                   // spins the caller waits for helpers to claim
	spinRounds = 20000                 // spins (about a millisecond) before a helper parks
	idleExit   = 50 * time.Millisecond // parked that long, a helper leaves
)

// parallel runs chunks 0..n-1 of the section set up in e.batch and e.secOp
// on the caller and up to Jobs-1 helpers, and returns when all are done.
func (e *Engine) parallel(n int) {
	p := &e.pool
	if p.wake == nil {
		p.wake = make(chan struct{}, e.opt.Jobs)
	}
	p.chunks.Store(int32(n))
	p.done.Store(0)
	section := p.state.Load()>>32 + 1
	p.state.Store(section << 32) // publishes the section: nothing claimed yet
	for want := int32(min(e.opt.Jobs-1, n-1)); p.helpers.Load() < want; {
		k := int(p.helpers.Add(1))
		e.eg.Go(func() error { e.helper(k); return nil })
	}
	for i := 0; i < e.opt.Jobs-1; i++ {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	e.claim(section, 0)
	// Give the helpers a moment to take their chunks, then take the rest.
	for i := 0; i < claimWait && p.state.Load()&(1<<n-1) != 1<<n-1; i++ {
		//lint:ignore SA4017 spin only burns cycles; its result keeps the loop from being compiled away
		spin()
	}
	for k := 1; k < n; k++ {
		e.claim(section, k)
	}
	for p.done.Load() < int32(n) {
		//lint:ignore SA4017 spin only burns cycles; its result keeps the loop from being compiled away
		spin()
	}
}

// claim runs chunk k of section unless someone has claimed it (or another
// section has begun).
func (e *Engine) claim(section uint64, k int) {
	p := &e.pool
	for {
		v := p.state.Load()
		if v>>32 != section || int32(k) >= p.chunks.Load() || v&(1<<k) != 0 {
			return
		}
		if p.state.CompareAndSwap(v, v|1<<k) {
			e.runChunk(k)
			p.done.Add(1)
			return
		}
	}
}

// helper k works on chunk k of each section as it is published.
func (e *Engine) helper(k int) {
	p := &e.pool
	seen := p.state.Load() >> 32
	idle := 0
	for !p.stop.Load() {
		if s := p.state.Load() >> 32; s != seen {
			seen = s
			e.claim(s, k)
			idle = 0
			continue
		}
		if idle++; idle < spinRounds {
			//lint:ignore SA4017 spin only burns cycles; its result keeps the loop from being compiled away
			spin()
			continue
		}
		t := time.NewTimer(idleExit)
		select {
		case <-p.wake:
			t.Stop()
			idle = 0
		case <-t.C:
			p.helpers.Add(-1)
			return
		}
	}
	p.helpers.Add(-1)
}

// Close stops the engine's helper goroutines. An engine that is dropped
// without Close lets them leave on their own after a short idle spell.
func (e *Engine) Close() {
	e.pool.stop.Store(true)
	for i := 0; i < e.opt.Jobs; i++ {
		select {
		case e.pool.wake <- struct{}{}:
		default:
		}
	}
	_ = e.eg.Wait()
	e.pool.stop.Store(false)
}
