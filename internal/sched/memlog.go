package sched

import "iter"

// memLog holds one stream's memory events in the order they were
// recorded, in segments: the first grows fourfold up to memSeg events,
// and every later one is made memSeg long, so appending never moves what
// is already held. One array grown by copying moved each event about a
// third of a time and zeroed up to four times what it held; with a
// controller that costs nothing no event is final before the end
// (merge.go, settleMemory) unless the history promises its streams fixed
// (Options.FixedStreams), so every event of a long replay stays, and
// those copies, the zeroing and their page faults were about a sixth of
// the megatron-1t prediction's CPU before predictions made that promise
// (bench/RESULTS.md, "Memory events in segments").
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
// in it), made or grown if need be. When the kept events are few and no
// longer start at the front, they move there instead (compact): a stream
// that settles a little at a time then stays in one small array, with no
// segment made or grown. Each move copies at most memSeg/2 events after
// at least memSeg/2 were appended, so each event is copied at most once
// on average.
func (l *memLog) tail(k int) int {
	i := (l.first + l.n) >> memSegShift
	if l.first > 0 && l.n+k <= memSeg/2 && (i == len(l.segs) || len(l.segs[i])+k > cap(l.segs[i])) {
		l.compact(l.segs[l.first>>memSegShift][:0])
		i = 0
	}
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

// compact moves the kept events into dst (empty, of room enough) and
// makes it the first and only segment. dst may be the array the first
// kept event lies in: the events move towards its front, in order, and
// those that follow in the next segment land before where the moved ones
// were read from (they span two segments only when more than memSeg - n
// of the first are dropped, and n <= memSeg/2).
func (l *memLog) compact(dst []memEvent) {
	for c := range l.chunks(0, l.n) {
		dst = append(dst, c...)
	}
	clear(l.segs)
	l.segs = append(l.segs[:0], dst)
	l.first = 0
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

// drop drops the first p kept events. Segments left empty are let go,
// and their places in segs once they are half of it. When the events
// still kept are no more than those dropped and fit in half a segment,
// they move to the front of the first segment, or into a small array if
// they lie in a later one, whose 64 KiB a stream now holding few events
// should not keep (the copy costs at most what was dropped).
func (l *memLog) drop(p int) {
	if p <= 0 {
		return
	}
	from := l.first >> memSegShift
	l.first += p
	l.n -= p
	k0 := l.first >> memSegShift
	for k := from; k < k0 && k < len(l.segs); k++ {
		l.segs[k] = nil
	}
	if l.n <= p && l.n <= memSeg/2 {
		switch {
		case l.n == 0 && k0 == 0:
			l.compact(l.segs[0][:0]) // kept for the next events
		case l.n == 0:
			clear(l.segs)
			l.segs, l.first = l.segs[:0], 0
		case k0 == 0:
			l.compact(l.segs[0][:0])
		default:
			l.compact(make([]memEvent, 0, max(2*l.n, 64)))
		}
		return
	}
	if k0 > 0 && 2*k0 >= len(l.segs) {
		// Every segment is memSeg long from the second on, so the one
		// the first kept event lies in can be the first.
		m := copy(l.segs, l.segs[k0:])
		clear(l.segs[m:])
		l.segs = l.segs[:m]
		l.first -= k0 << memSegShift
	}
}

// clone is a copy of l sharing nothing with it.
func (l *memLog) clone() memLog {
	var c memLog
	for s := range l.chunks(0, l.n) {
		c.pushShifted(s, 0)
	}
	return c
}
