package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// event is the decoded form of every event kind the Writer emits.
type event struct {
	Name string          `json:"name"`
	Cat  *string         `json:"cat"`
	Ph   string          `json:"ph"`
	Ts   *json.Number    `json:"ts"`
	Dur  *json.Number    `json:"dur"`
	Pid  int64           `json:"pid"`
	Tid  *int64          `json:"tid"`
	Args json.RawMessage `json:"args"`
}

func decode(t *testing.T, data []byte) []map[string]json.RawMessage {
	t.Helper()
	var doc struct {
		TraceEvents []map[string]json.RawMessage `json:"traceEvents"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, data)
	}
	return doc.TraceEvents
}

func TestWriterFields(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	w.ProcessName(1, "Device 0")
	w.ThreadName(1, 2, "main")
	w.Complete(1, 2, "aten.mm", 4000, 14000, 7)
	w.Counter(1, 4000, 40000)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := `{"traceEvents":[
{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"Device 0"}},
{"name":"thread_name","ph":"M","pid":1,"tid":2,"args":{"name":"main"}},
{"name":"aten.mm","cat":"compute","ph":"X","ts":4,"dur":10,"pid":1,"tid":2,"args":{"command":7}},
{"name":"memory","cat":"memory","ph":"C","ts":4,"pid":1,"args":{"allocated":0.04}}
]}
`
	if got := out.String(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	evs := decode(t, out.Bytes())
	if len(evs) != 4 {
		t.Fatalf("got %d events, want 4", len(evs))
	}
	keys := [][]string{
		{"name", "ph", "pid", "tid", "args"},
		{"name", "ph", "pid", "tid", "args"},
		{"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"},
		{"name", "cat", "ph", "ts", "pid", "args"},
	}
	for i, ev := range evs {
		if len(ev) != len(keys[i]) {
			t.Errorf("event %d has %d fields, want %v", i, len(ev), keys[i])
		}
		for _, k := range keys[i] {
			if _, ok := ev[k]; !ok {
				t.Errorf("event %d lacks %q", i, k)
			}
		}
	}
	var typed event
	if err := json.Unmarshal(mustMarshal(t, evs[2]), &typed); err != nil {
		t.Fatal(err)
	}
	if typed.Ph != "X" || *typed.Cat != "compute" || typed.Ts.String() != "4" || typed.Dur.String() != "10" {
		t.Errorf("complete event decoded as %+v", typed)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWriterEmpty(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if evs := decode(t, out.Bytes()); len(evs) != 0 {
		t.Fatalf("got %d events", len(evs))
	}
	if err := w.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: got %v, want ErrClosed", err)
	}
}

func TestWriterEscaping(t *testing.T) {
	names := []string{
		`plain`,
		`quote " and backslash \`,
		"controls \x00\x01\x1f\t\n\r\b\f\x7f",
		"unicode é 漢字 🙂",
		"invalid \xff\xfe utf8",
		"separators \u2028\u2029",
		"</script>&<>",
		"",
	}
	var out bytes.Buffer
	w := NewWriter(&out)
	for i, name := range names {
		w.ProcessName(int64(i), name)
		w.ThreadName(int64(i), 1, name)
		w.Complete(int64(i), 1, name, 0, 1, 0)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Count(out.String(), "\n") != 3*len(names)+2 {
		t.Errorf("escaping broke the one-event-per-line layout:\n%s", out.String())
	}
	evs := decode(t, out.Bytes())
	for i, name := range names {
		want := string([]rune(name)) // each invalid byte becomes U+FFFD
		var meta struct {
			Args struct{ Name string } `json:"args"`
		}
		if err := json.Unmarshal(mustMarshal(t, evs[3*i]), &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Args.Name != want {
			t.Errorf("process name %q decoded as %q", want, meta.Args.Name)
		}
		var x struct{ Name string }
		if err := json.Unmarshal(mustMarshal(t, evs[3*i+2]), &x); err != nil {
			t.Fatal(err)
		}
		if x.Name != want {
			t.Errorf("event name %q decoded as %q", want, x.Name)
		}
	}
}

func TestAppendString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`a"b`, `"a\"b"`},
		{`a\b`, `"a\\b"`},
		{"\x00", `"\u0000"`},
		{"\x1f", `"\u001f"`},
		{"\n\r\t", `"\n\r\t"`},
		{"\xff", `"\ufffd"`},
		{"\u2028", `"\u2028"`},
		{"é", `"é"`},
	} {
		if got := string(AppendString(nil, tc.in)); got != tc.want {
			t.Errorf("AppendString(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestAppendDecimal(t *testing.T) {
	for _, tc := range []struct {
		ns   int64
		want string
	}{
		{0, "0"},
		{1, "0.001"},
		{10, "0.01"},
		{100, "0.1"},
		{999, "0.999"},
		{1000, "1"},
		{1500, "1.5"},
		{1501, "1.501"},
		{44000, "44"},
		{123456789, "123456.789"},
		{-1, "-0.001"},
		{-1500, "-1.5"},
		{-44000, "-44"},
		{math.MaxInt64, "9223372036854775.807"},
		{math.MinInt64, "-9223372036854775.808"},
	} {
		if got := string(AppendMicros(nil, tc.ns)); got != tc.want {
			t.Errorf("AppendMicros(%d) = %s, want %s", tc.ns, got, tc.want)
		}
	}
	for _, tc := range []struct {
		bytes int64
		want  string
	}{
		{0, "0"},
		{1, "0.000001"},
		{40000, "0.04"},
		{80000, "0.08"},
		{1000000, "1"},
		{3145728, "3.145728"},
		{4194304, "4.194304"},
		{-40000, "-0.04"},
		{math.MinInt64, "-9223372036854.775808"},
	} {
		if got := string(AppendMegabytes(nil, tc.bytes)); got != tc.want {
			t.Errorf("AppendMegabytes(%d) = %s, want %s", tc.bytes, got, tc.want)
		}
	}
}

// failWriter accepts n bytes and then fails.
type failWriter struct {
	n   int
	err error
}

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k := f.n
		f.n = 0
		return k, f.err
	}
	f.n -= len(p)
	return len(p), nil
}

func TestWriterKeepsFirstError(t *testing.T) {
	errDisk := errors.New("disk full")
	fw := &failWriter{n: 100, err: errDisk}
	w := NewWriter(fw)
	for i := range 100000 { // far more than the bufio buffer
		w.Complete(1, 1, "op", int64(i), int64(i+1), int64(i))
	}
	if w.err == nil {
		t.Fatal("no error recorded after the destination failed")
	}
	written := w.events
	w.Counter(1, 0, 0)
	if w.events != written {
		t.Error("an event was written after an error")
	}
	if err := w.Close(); !errors.Is(err, errDisk) {
		t.Fatalf("Close: got %v, want %v", err, errDisk)
	}
	if err := w.Close(); !errors.Is(err, errDisk) {
		t.Fatalf("second Close: got %v, want %v", err, errDisk)
	}
}

func BenchmarkComplete(b *testing.B) {
	w := NewWriter(io.Discard)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		w.Complete(3, 7, "aten.add_.Tensor", int64(i)*1000, int64(i)*1000+1500, int64(i))
	}
	b.StopTimer()
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkCounter(b *testing.B) {
	w := NewWriter(io.Discard)
	b.ReportAllocs()
	for i := range b.N {
		w.Counter(3, int64(i)*1000, int64(i)*4096)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

func TestCompleteAllocatesNothing(t *testing.T) {
	w := NewWriter(io.Discard)
	i := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		i++
		w.Complete(3, 7, "name \"quoted\"\n", i*1000, i*1000+1, i)
		w.Counter(3, i*1000, i)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per event", allocs)
	}
}

func ExampleWriter() {
	var out bytes.Buffer
	w := NewWriter(&out)
	w.ProcessName(1, "Controller")
	w.ThreadName(1, 1, "Controller")
	w.Complete(1, 1, "aten.mm", 3000, 4500, 2)
	if err := w.Close(); err != nil {
		panic(err)
	}
	io.Copy(os.Stdout, &out)
	// Output:
	// {"traceEvents":[
	// {"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"Controller"}},
	// {"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"Controller"}},
	// {"name":"aten.mm","cat":"compute","ph":"X","ts":3,"dur":1.5,"pid":1,"tid":1,"args":{"command":2}}
	// ]}
}

// TestDurationEndsWhereTheEventEnds: read back as doubles, as a viewer
// reads JSON, ts + dur never passes the event's end (the next event's
// start on its thread) and stays within a nanosecond of it; where the
// exact decimal does not overshoot it is written as before. The pair from
// a trace where it overshot, 13976.074 + 2.415 (13978.489000000001), and
// a sweep of starts and lengths.
func TestDurationEndsWhereTheEventEnds(t *testing.T) {
	check := func(start, end int64) {
		t.Helper()
		dur := string(AppendDuration(nil, start, end))
		d, err := strconv.ParseFloat(dur, 64)
		if err != nil {
			t.Fatalf("%d..%d: dur %q: %v", start, end, dur, err)
		}
		ts, _ := strconv.ParseFloat(string(AppendMicros(nil, start)), 64)
		e, _ := strconv.ParseFloat(string(AppendMicros(nil, end)), 64)
		if ts+d > e || e-(ts+d) > 1e-3 {
			t.Fatalf("%d..%d: ts %v + dur %q = %v, end %v", start, end, ts, dur, ts+d, e)
		}
		if exact := string(AppendMicros(nil, end-start)); ts+mustFloat(t, exact) <= e && dur != exact {
			t.Fatalf("%d..%d: dur %q, want the exact %q", start, end, dur, exact)
		}
	}
	check(13976074, 13978489)
	if got := string(AppendDuration(nil, 13976074, 13978489)); got == "2.415" {
		t.Errorf("13976074..13978489 ns: dur %s, which overshoots", got)
	}
	overshot := 0
	for start := int64(0); start < 3_000_000_000_000; start = start*7/4 + 12_345 {
		for _, n := range []int64{1, 7, 999, 1000, 2415, 123_457, 9_876_543} {
			check(start, start+n)
			ts, e := float64(start)/1000, float64(start+n)/1000
			if ts+float64(n)/1000 > e {
				overshot++
			}
		}
	}
	if overshot == 0 {
		t.Error("no case of the sweep overshoots with the exact decimal: it tests nothing")
	}
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
