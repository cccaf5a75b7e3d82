package trace

import (
	"bufio"
	"io"
	"math"
	"strconv"

	"github.com/fastsim/fastsim/internal/jsonl"
)

// bufferBytes is the size of the bufio.Writer between a Writer and its
// destination.
const bufferBytes = 256 << 10

// Writer streams Chrome trace events to an io.Writer. The zero value is not
// usable; call NewWriter. A Writer is not safe for concurrent use.
//
// The first error seen by any call is kept; later calls do nothing and Close
// returns that error.
type Writer struct {
	bw     *bufio.Writer
	buf    []byte // reused per event
	events int64  // number of events written so far
	err    error
	closed bool
}

// NewWriter returns a Writer that writes a trace to w, starting with the
// opening {"traceEvents":[. The caller must call Close to finish the JSON
// and flush it.
func NewWriter(w io.Writer) *Writer {
	tw := &Writer{
		bw:  bufio.NewWriterSize(w, bufferBytes),
		buf: make([]byte, 0, 512),
	}
	_, tw.err = tw.bw.WriteString(`{"traceEvents":[`)
	return tw
}

// begin starts a new event in w.buf, with the separator from the previous
// event. It reports false when the Writer already failed or was closed.
func (w *Writer) begin() bool {
	if w.err != nil || w.closed {
		return false
	}
	w.buf = w.buf[:0]
	if w.events > 0 {
		w.buf = append(w.buf, ',')
	}
	w.buf = append(w.buf, '\n')
	return true
}

// end writes the event in w.buf.
func (w *Writer) end() {
	w.events++
	_, w.err = w.bw.Write(w.buf)
}

// ProcessName writes the metadata event naming process pid:
// {"name":"process_name","ph":"M","pid":P,"tid":0,"args":{"name":NAME}}.
func (w *Writer) ProcessName(pid int64, name string) {
	w.metadata("process_name", pid, 0, name)
}

// GroupProcessName writes the metadata event naming a process that stands
// for a group of identical ranks, with every rank it stands for in
// args.ranks ("0-3,8,12-15": inclusive runs), for tools that expand a group
// back to its ranks; the name itself stays short:
// {"name":"process_name","ph":"M","pid":P,"tid":0,"args":{"name":NAME,"ranks":RANKS}}.
func (w *Writer) GroupProcessName(pid int64, name, ranks string) {
	if !w.begin() {
		return
	}
	b := append(w.buf, `{"name":"process_name","ph":"M","pid":`...)
	b = strconv.AppendInt(b, pid, 10)
	b = append(b, `,"tid":0,"args":{"name":`...)
	b = AppendString(b, name)
	b = append(b, `,"ranks":`...)
	b = AppendString(b, ranks)
	b = append(b, `}}`...)
	w.buf = b
	w.end()
}

// ThreadName writes the metadata event naming thread tid of process pid:
// {"name":"thread_name","ph":"M","pid":P,"tid":T,"args":{"name":NAME}}.
func (w *Writer) ThreadName(pid, tid int64, name string) {
	w.metadata("thread_name", pid, tid, name)
}

func (w *Writer) metadata(kind string, pid, tid int64, name string) {
	if !w.begin() {
		return
	}
	b := w.buf
	b = append(b, `{"name":"`...)
	b = append(b, kind...)
	b = append(b, `","ph":"M","pid":`...)
	b = strconv.AppendInt(b, pid, 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendInt(b, tid, 10)
	b = append(b, `,"args":{"name":`...)
	b = AppendString(b, name)
	b = append(b, `}}`...)
	w.buf = b
	w.end()
}

// Complete writes a complete event ("ph":"X", "cat":"compute") on thread tid
// of process pid, from startNs to endNs, with the engine's command index in
// args.command:
// {"name":N,"cat":"compute","ph":"X","ts":US,"dur":US,"pid":P,"tid":T,"args":{"command":C}}.
func (w *Writer) Complete(pid, tid int64, name string, startNs, endNs, command int64) {
	if !w.begin() {
		return
	}
	b := w.buf
	b = append(b, `{"name":`...)
	b = AppendString(b, name)
	b = append(b, `,"cat":"compute","ph":"X","ts":`...)
	b = AppendMicros(b, startNs)
	b = append(b, `,"dur":`...)
	b = AppendDuration(b, startNs, endNs)
	w.buf = appendWhere(b, pid, tid, command)
	w.end()
}

// AppendDuration appends the dur of a complete event from startNs to
// endNs: (endNs - startNs) / 1000 as an exact decimal, as AppendMicros
// writes it, unless a viewer that adds ts and dur in float64 (every
// viewer: JSON numbers are doubles) would find the event ending after
// endNs, past the start of the next event on its thread, and nest the two
// wrongly (13976.074 + 2.415 is 13978.489000000001 in doubles). Then it is
// end - ts computed in doubles, in its shortest decimal
// (2.414999999999963): the event then ends, in the viewer, exactly where
// it ends in the replay.
func AppendDuration(b []byte, startNs, endNs int64) []byte {
	// float64(n) / 1000 is the double nearest n / 1000, as a parser
	// reading AppendMicros' decimal makes it, for |n| < 2^53.
	ts, end := float64(startNs)/1000, float64(endNs)/1000
	if ts+float64(endNs-startNs)/1000 <= end {
		return AppendMicros(b, endNs-startNs)
	}
	// The difference is exact when end <= 2 ts (Sterbenz), and then ts +
	// d is end itself; otherwise it is within a rounding of it, and a step
	// or two down brings the sum back to end.
	d := end - ts
	for ts+d > end {
		d = math.Nextafter(d, 0)
	}
	return strconv.AppendFloat(b, d, 'f', -1, 64)
}

// Instant writes a thread-scoped instant event ("ph":"i", "s":"t") on
// thread tid of process pid at tsNs, with the engine's command index in
// args.command:
// {"name":N,"cat":"compute","ph":"i","s":"t","ts":US,"pid":P,"tid":T,"args":{"command":C}}.
//
// A zero-length span is written this way rather than as a complete event
// of zero duration: viewers that turn complete events into begin/end pairs
// (speedscope) cannot tell which of several events ending and beginning at
// the same time a zero-length one belongs inside, and leave it open.
func (w *Writer) Instant(pid, tid int64, name string, tsNs, command int64) {
	if !w.begin() {
		return
	}
	b := w.buf
	b = append(b, `{"name":`...)
	b = AppendString(b, name)
	b = append(b, `,"cat":"compute","ph":"i","s":"t","ts":`...)
	b = AppendMicros(b, tsNs)
	w.buf = appendWhere(b, pid, tid, command)
	w.end()
}

// appendWhere ends an event of thread tid of process pid with its
// command index: ,"pid":P,"tid":T,"args":{"command":C}}.
func appendWhere(b []byte, pid, tid, command int64) []byte {
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, pid, 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendInt(b, tid, 10)
	b = append(b, `,"args":{"command":`...)
	b = strconv.AppendInt(b, command, 10)
	return append(b, `}}`...)
}

// Span writes the span [startNs, endNs] as a complete event, or as an
// instant event when it has no length (see Instant).
func (w *Writer) Span(pid, tid int64, name string, startNs, endNs, command int64) {
	if endNs == startNs {
		w.Instant(pid, tid, name, startNs, command)
		return
	}
	w.Complete(pid, tid, name, startNs, endNs, command)
}

// Counter writes a memory counter event of process pid at tsNs, with the
// allocated bytes as megabytes in args.allocated:
// {"name":"memory","cat":"memory","ph":"C","ts":US,"pid":P,"args":{"allocated":MB}}.
func (w *Writer) Counter(pid int64, tsNs int64, allocatedBytes int64) {
	if !w.begin() {
		return
	}
	b := w.buf
	b = append(b, `{"name":"memory","cat":"memory","ph":"C","ts":`...)
	b = AppendMicros(b, tsNs)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, pid, 10)
	b = append(b, `,"args":{"allocated":`...)
	b = AppendMegabytes(b, allocatedBytes)
	b = append(b, `}}`...)
	w.buf = b
	w.end()
}

// Close writes the closing ]} and flushes. It returns the first error seen
// by any call, or ErrClosed if the Writer was already closed.
func (w *Writer) Close() error {
	if w.closed {
		if w.err != nil {
			return w.err
		}
		return ErrClosed
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	if _, err := w.bw.WriteString("\n]}\n"); err != nil {
		w.err = err
		return err
	}
	w.err = w.bw.Flush()
	return w.err
}

// AppendMicros appends ns / 1000 as an exact decimal: 44000 -> 44,
// 1500 -> 1.5, 1 -> 0.001, -1500 -> -1.5.
func AppendMicros(b []byte, ns int64) []byte {
	return appendScaled(b, ns, 1000, 3)
}

// AppendMegabytes appends bytes / 1e6 as an exact decimal: 40000 -> 0.04,
// 3145728 -> 3.145728.
func AppendMegabytes(b []byte, bytes int64) []byte {
	return appendScaled(b, bytes, 1000000, 6)
}

// appendScaled appends v / scale, where scale = 10^digits, without trailing
// zeros in the fraction and without a fraction when it is zero.
func appendScaled(b []byte, v int64, scale uint64, digits int) []byte {
	u := uint64(v)
	if v < 0 {
		b = append(b, '-')
		u = -u // two's complement: correct for math.MinInt64 too
	}
	b = strconv.AppendUint(b, u/scale, 10)
	frac := u % scale
	if frac == 0 {
		return b
	}
	for frac%10 == 0 {
		frac /= 10
		digits--
	}
	b = append(b, '.')
	var tmp [20]byte
	i := len(tmp)
	for ; digits > 0; digits-- {
		i--
		tmp[i] = byte('0' + frac%10)
		frac /= 10
	}
	return append(b, tmp[i:]...)
}

// AppendString appends s as a quoted JSON string (jsonl.AppendString: the
// one JSON string encoder of the project). Quotes, backslashes and control
// characters are escaped; invalid UTF-8 becomes U+FFFD, and U+2028 and
// U+2029 are escaped so the output is also valid JavaScript.
func AppendString(b []byte, s string) []byte { return jsonl.AppendString(b, s) }
