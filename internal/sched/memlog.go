package sched

import "iter"

// memLog holds one stream's memory events in the order they were
// recorded, in segments: the first grows fourfold up to memSeg events,
// and every later one is made memSeg long, so appending never moves what
// is already held. One array grown by copying moved each event about a
// third of a time and zeroed up to four times what it held; with a
// controller that costs nothing no event is final before the end
// (merge.go, settleMemory), so every event of a long replay stays, and
// those copies, the zeroing and their page faults were about a sixth of
// the megatron-1t prediction's CPU (bench/RESULTS.md, "Memory events in
// segments").
//
// Events are addressed by their index among the kept ones: dropping the
// first p (settled and final) shifts every index down by p, as reslicing
// a slice did.
type memLog struct {
	segs  [][]memEvent // nil once every event in it is dropped
	first int          // index of the first kept event counted from segs[0][0]
	n     int          // kept events
}

// memSeg is the length of every segment but the first, which grows to
// it: 4,096 events, 64 KiB. A stream holding fewer events never makes
// one; a stream that held more and was settled down to a few goes back to
// its first segment (drop).
const (
	memSegShift = 12
	memSeg      = 1 << memSegShift
)

// Len is the number of kept events.
func (l *memLog) Len() int { return l.n }

// at is the kept event i (0 <= i < Len).
func (l *memLog) at(i int) *memEvent {
	a := l.first + i
	return &l.segs[a>>memSegShift][a&(memSeg-1)]
}

// tail is the segment the next k events go to (at most those that fit
// in it), made or grown if need be.
func (l *memLog) tail(k int) int {
	i := (l.first + l.n) >> memSegShift
	if i == len(l.segs) {
		var s []memEvent
		if i > 0 {
			s = make([]memEvent, 0, memSeg)
		}
		l.segs = append(l.segs, s)
	}
	if s := l.segs[i]; len(s)+k > cap(s) {
		// Only the first segment grows: fourfold, so that its events
		// are copied a third of a time on average, not once as
		// append's doubling would.
		g := make([]memEvent, len(s), min(memSeg, max(4*cap(s), len(s)+k, 64)))
		copy(g, s)
		l.segs[i] = g
	}
	return i
}

// push appends ev.
func (l *memLog) push(ev memEvent) {
	k := l.tail(1)
	l.segs[k] = append(l.segs[k], ev)
	l.n++
}

// pushShifted appends evs, each moved later by base.
func (l *memLog) pushShifted(evs []memEvent, base int64) {
	for len(evs) > 0 {
		c := min(len(evs), memSeg-(l.first+l.n)&(memSeg-1))
		k := l.tail(c)
		s := l.segs[k]
		n0 := len(s)
		s = s[:n0+c] // tail made room
		for i, ev := range evs[:c] {
			s[n0+i] = memEvent{ev.ns + base, ev.delta}
		}
		l.segs[k] = s
		l.n += c
		evs = evs[c:]
	}
}

// chunks yields the kept events from index from to index to, a
// segment's part at a time.
func (l *memLog) chunks(from, to int) iter.Seq[[]memEvent] {
	return func(yield func([]memEvent) bool) {
		for a, b := l.first+from, l.first+to; a < b; {
			k, off := a>>memSegShift, a&(memSeg-1)
			end := min(memSeg, off+b-a)
			if !yield(l.segs[k][off:end]) {
				return
			}
			a += end - off
		}
	}
}

// appendTo appends the kept events from index from on to dst.
func (l *memLog) appendTo(dst []memEvent, from int) []memEvent {
	for c := range l.chunks(from, l.n) {
		dst = append(dst, c...)
	}
	return dst
}

// sortFrom has sort put the kept events from index from on in order: in
// place when they lie in one segment, else in a copy written back.
func (l *memLog) sortFrom(from int, sort func([]memEvent)) {
	a, b := l.first+from, l.first+l.n
	if a >= b {
		return
	}
	if k := a >> memSegShift; k == (b-1)>>memSegShift {
		sort(l.segs[k][a&(memSeg-1) : (b-1)&(memSeg-1)+1])
		return
	}
	buf := l.appendTo(make([]memEvent, 0, l.n-from), from)
	sort(buf)
	for c := range l.chunks(from, l.n) {
		buf = buf[copy(c, buf):]
	}
}

// drop drops the first p kept events. Segments left empty are let go.
// When the events still kept are no more than those dropped, they move
// to the front of the first segment (the copy costs at most what was
// dropped, so each event is copied O(1) times), which keeps a stream
// that settles as it goes within its first segment.
func (l *memLog) drop(p int) {
	if p <= 0 {
		return
	}
	from := l.first >> memSegShift
	l.first += p
	l.n -= p
	for k := from; k < l.first>>memSegShift && k < len(l.segs); k++ {
		l.segs[k] = nil
	}
	if l.n > p || l.n > memSeg/2 {
		return
	}
	// The first segment is still there only while the kept events start
	// in it: they move towards its front, which append's copy allows.
	dst := l.segs[0][:0]
	if l.segs[0] == nil && l.n > 0 {
		dst = make([]memEvent, 0, max(2*l.n, 64))
	}
	for c := range l.chunks(0, l.n) {
		dst = append(dst, c...)
	}
	clear(l.segs[1:])
	l.segs = append(l.segs[:0], dst)
	l.first = 0
}

// clone is a copy of l sharing nothing with it.
func (l *memLog) clone() memLog {
	var c memLog
	for s := range l.chunks(0, l.n) {
		c.pushShifted(s, 0)
	}
	return c
}
