package golden

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// goldenDir is the golden cases, testdata/golden at the repository root.
const goldenDir = "../../testdata/golden"

func expectedFiles(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(goldenDir, "*.expected.json"))
	if len(files) == 0 {
		t.Skipf("no golden files in %s", goldenDir)
	}
	return files
}

func TestLoadExpected(t *testing.T) {
	for _, path := range expectedFiles(t) {
		n, err := LoadExpected(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if len(n.Devices) == 0 {
			t.Errorf("%s: no devices", path)
		}
		if n.TraceMode != "everything" && n.TraceMode != "stream_only" {
			t.Errorf("%s: trace mode %q", path, n.TraceMode)
		}
		if diffs := Compare(n, n); len(diffs) != 0 {
			t.Errorf("%s: differs from itself: %v", path, diffs)
		}
	}
}

func TestLoadExpectedBorrow(t *testing.T) {
	expectedFiles(t)
	n, err := LoadExpected(filepath.Join(goldenDir, "borrow.expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	if n.ExecTimeS != 4.4e-05 || n.PeakMemoryMB != 0.08 || n.TraceMode != "everything" || len(n.Steps) != 0 {
		t.Errorf("header: %+v", n)
	}
	if got, want := n.Controller[0], (Event{"aten.randn", 3, 4}); got != want {
		t.Errorf("controller[0] = %v, want %v", got, want)
	}
	d := n.Devices["1"]
	if d == nil {
		t.Fatal("no device 1")
	}
	if got, want := d.Streams["other"], []Event{{"waiting for main", 8, 34}, {"aten.add_.Tensor", 34, 44}}; !reflect.DeepEqual(got, want) {
		t.Errorf("other = %v, want %v", got, want)
	}
	if got, want := d.Memory, [][2]float64{{4, 0.04}, {14, 0.08}}; !reflect.DeepEqual(got, want) {
		t.Errorf("memory = %v, want %v", got, want)
	}
}

func TestLoadExpectedErrors(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"syntax":  `{"controller":`,
		"event":   `{"controller":[["a",1]]}`,
		"unknown": `{"devicez":{}}`,
		"null":    `{"devices":{"0":null}}`,
	} {
		path := filepath.Join(dir, name+".json")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadExpected(path); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: got %v, want ErrFormat", name, err)
		}
	}
	if _, err := LoadExpected(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("missing file: no error")
	}
}

// smallTrace has metadata both before and after events, a grouped device
// process, a thread named like its process, a thread without events, an
// unrelated process and rounding noise.
const smallTrace = `{"traceEvents":[
{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"Controller"}},
{"name":"aten.mm","cat":"compute","ph":"X","ts":4,"dur":1,"pid":1,"tid":1,"args":{"command":1}},
{"name":"aten.add","cat":"compute","ph":"X","ts":3,"dur":1.0004,"pid":1,"tid":1,"args":{"command":0}},
{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"Controller"}},
{"name":"process_name","ph":"M","pid":2,"tid":0,"args":{"name":"Device 0: ranks 0..1, 4..5 (2 blocks of 2 every 4; 4 ranks)","ranks":"0-1,4-5"}},
{"name":"thread_name","ph":"M","pid":2,"tid":3,"args":{"name":"main"}},
{"name":"thread_name","ph":"M","pid":2,"tid":4,"args":{"name":"Device 0: ranks 0..1, 4..5 (2 blocks of 2 every 4; 4 ranks)"}},
{"name":"thread_name","ph":"M","pid":2,"tid":5,"args":{"name":"idle"}},
{"name":"b","cat":"compute","ph":"X","ts":14,"dur":10,"pid":2,"tid":3,"args":{"command":2}},
{"name":"a","cat":"compute","ph":"X","ts":14,"dur":10,"pid":2,"tid":3,"args":{"command":3}},
{"name":"a","cat":"compute","ph":"X","ts":4,"dur":10,"pid":2,"tid":3,"args":{"command":1}},
{"name":"aten.mm","cat":"compute","ph":"X","ts":4,"dur":1,"pid":2,"tid":4,"args":{"command":1}},
{"name":"memory","cat":"memory","ph":"C","ts":14,"pid":2,"args":{"allocated":0.08}},
{"name":"memory","cat":"memory","ph":"C","ts":4,"pid":2,"args":{"allocated":0.0400000004}},
{"name":"x","cat":"compute","ph":"X","ts":1,"dur":1,"pid":7,"tid":2,"args":{"command":1}},
{"name":"memory","cat":"memory","ph":"C","ts":1,"pid":6,"args":{"allocated":1}},
{"name":"late","cat":"compute","ph":"X","ts":0.5,"dur":0.0016,"pid":6,"tid":8,"args":{"command":1}},
{"name":"process_name","ph":"M","pid":7,"tid":0,"args":{"name":"Something else"}},
{"name":"thread_name","ph":"M","pid":6,"tid":8,"args":{"name":"comm"}},
{"name":"process_name","ph":"M","pid":6,"tid":0,"args":{"name":"Device 3"}}
]}
`

func TestFromTrace(t *testing.T) {
	controller, devices, err := FromTrace(strings.NewReader(smallTrace))
	if err != nil {
		t.Fatal(err)
	}
	if want := []Event{{"aten.add", 3, 4}, {"aten.mm", 4, 5}}; !reflect.DeepEqual(controller, want) {
		t.Errorf("controller = %v, want %v", controller, want)
	}
	group := &Device{
		Streams: map[string][]Event{
			"main": {{"a", 4, 14}, {"a", 14, 24}, {"b", 14, 24}},
			"idle": {},
		},
		Memory: [][2]float64{{14, 0.08}, {4, 0.04}},
	}
	want := map[string]*Device{
		"0": group, "1": group, "4": group, "5": group,
		"3": {
			Streams: map[string][]Event{"comm": {{"late", 0.5, 0.502}}},
			Memory:  [][2]float64{{1, 1}},
		},
	}
	if !reflect.DeepEqual(devices, want) {
		t.Errorf("devices:\n got %s\nwant %s", dump(devices), dump(want))
	}
	if devices["0"] == devices["1"] || &devices["0"].Memory[0] == &devices["1"].Memory[0] {
		t.Error("grouped ranks share their data")
	}
	if devices["0"].Streams["idle"] == nil {
		t.Error("a thread without events has a nil list")
	}
}

func dump(devices map[string]*Device) string {
	b, err := json.Marshal(devices)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func TestFromTraceZstd(t *testing.T) {
	var compressed bytes.Buffer
	enc, err := zstd.NewWriter(&compressed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Write([]byte(smallTrace)); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	readsAsPlain(t, &compressed, "zstd")
}

func TestFromTraceArrayForm(t *testing.T) {
	trace := `[{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"Device 0"}},
{"name":"n","ph":"X","ts":1,"dur":2,"pid":1,"tid":1}`
	_, devices, err := FromTrace(strings.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	if got := devices["0"].Streams["1"]; !reflect.DeepEqual(got, []Event{{"n", 1, 3}}) {
		t.Errorf("unnamed thread: got %v", devices["0"].Streams)
	}
}

func TestFromTraceErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		trace string
		err   error
	}{
		"empty":     {``, ErrFormat},
		"scalar":    {`3`, ErrFormat},
		"no events": {`{"otherData":{}}`, ErrFormat},
		"not array": {`{"traceEvents":{}}`, ErrFormat},
		"bad event": {`{"traceEvents":[{"ts":"x"}]}`, ErrFormat},
		"counter":   {`{"traceEvents":[{"ph":"C","pid":1,"args":{}}]}`, ErrFormat},
		"bad name":  {`{"traceEvents":[{"name":"process_name","ph":"M","pid":1,"args":{"name":"Device x"}}]}`, ErrFormat},
		"bad range": {`{"traceEvents":[{"name":"process_name","ph":"M","pid":1,"args":{"name":"Device 3","ranks":"3-1"}}]}`, ErrFormat},
		"huge rank": {`{"traceEvents":[{"name":"process_name","ph":"M","pid":1,"args":{"name":"Device 0","ranks":"0-99999999"}}]}`, ErrFormat},
		"too many":  {`{"traceEvents":[{"name":"process_name","ph":"M","pid":1,"args":{"name":"Device 0","ranks":"0-16777216"}}]}`, ErrLimit},
		"duplicate": {`{"traceEvents":[{"name":"process_name","ph":"M","pid":1,"args":{"name":"Device 0","ranks":"0-2"}},
{"name":"process_name","ph":"M","pid":2,"args":{"name":"Device 2"}}]}`, ErrDuplicateRank},
	} {
		if _, _, err := FromTrace(strings.NewReader(tc.trace)); !errors.Is(err, tc.err) {
			t.Errorf("%s: got %v, want %v", name, err, tc.err)
		}
	}
}

func TestParseDeviceName(t *testing.T) {
	for _, c := range []struct {
		name, ranks string
		want        []string
	}{
		{"Device 0", "", []string{"0"}},
		{"Device 12", "", []string{"12"}},
		{"Device 0: ranks 0..1, 4..5 (2 blocks of 2 every 4; 4 ranks)", "0-1,4-5", []string{"0", "1", "4", "5"}},
		{"Device 8: ranks 8..11 (4 ranks)", "8-11", []string{"8", "9", "10", "11"}},
		{"Device 3", "3", []string{"3"}},
		{"Device 0", "0-3,8-11,20", []string{"0", "1", "2", "3", "8", "9", "10", "11", "20"}},
	} {
		got, err := parseDeviceName(c.name, c.ranks)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseDeviceName(%q, %q) = %v, %v; want %v", c.name, c.ranks, got, err, c.want)
		}
	}
	for _, c := range [][2]string{{"Device ", ""}, {"Device -1", ""}, {"Device 1", "0-1"}, {"Device 0", "0-"}, {"Device 0", "a-b"}, {"Device 0", "0-1,,3"}, {"Device x: ranks", "0"}} {
		if _, err := parseDeviceName(c[0], c[1]); err == nil {
			t.Errorf("parseDeviceName(%q, %q) succeeded", c[0], c[1])
		}
	}
}

func sample() *Normal {
	return &Normal{
		ExecTimeS:    4.4e-05,
		PeakMemoryMB: 0.08,
		Steps:        [][2]float64{{0.000336, 8.3968}},
		TraceMode:    "everything",
		Controller:   []Event{{"aten.randn", 3, 4}, {"aten.mm", 4, 5}},
		Devices: map[string]*Device{
			"0": {
				Streams: map[string][]Event{"main": {{"SendTensor", 0, 111}, {"aten.mm", 111, 121}}},
				Memory:  [][2]float64{{4, 0.04}},
			},
			"2": {
				Streams: map[string][]Event{"main": {{"RecvTensor", 0, 111}, {"aten.mm", 111, 121}}},
				Memory:  [][2]float64{{4, 0.04}},
			},
		},
	}
}

func TestCompare(t *testing.T) {
	if diffs := Compare(sample(), sample()); len(diffs) != 0 {
		t.Errorf("equal forms differ: %v", diffs)
	}

	got := sample()
	got.Devices["2"].Streams["main"][0].End = 112
	checkDiffs(t, "changed time", Compare(sample(), got),
		`devices["2"].streams["main"][0]: want [RecvTensor 0 111], got [RecvTensor 0 112]`)

	got = sample()
	got.Devices["0"].Streams["main"] = got.Devices["0"].Streams["main"][:1]
	checkDiffs(t, "missing event", Compare(sample(), got),
		`devices["0"].streams["main"]: want 2 events, got 1`,
		`devices["0"].streams["main"][1]: want [aten.mm 111 121], got nothing`)

	got = sample()
	got.Devices["10"] = got.Devices["0"]
	checkDiffs(t, "extra device", Compare(sample(), got), `devices["10"]: unexpected device`)
	checkDiffs(t, "missing device", Compare(got, sample()), `devices["10"]: missing`)

	got = sample()
	got.Devices["0"].Streams["aux"] = []Event{}
	delete(got.Devices["0"].Streams, "main")
	checkDiffs(t, "stream names", Compare(sample(), got),
		`devices["0"].streams["aux"]: unexpected stream`,
		`devices["0"].streams["main"]: missing stream`)

	got = sample()
	got.Devices["0"].Memory[0][1] = 0.05
	got.ExecTimeS = 4.5e-05
	got.Steps = nil
	got.TraceMode = "stream_only"
	got.Controller[1].Name = "aten.add"
	checkDiffs(t, "values", Compare(sample(), got),
		`exec_time_s: want 0.000044, got 0.000045`,
		`steps: want 1 items, got 0`,
		`steps[0]: want [0.000336 8.3968], got nothing`,
		`trace_mode: want "everything", got "stream_only"`,
		`controller[1]: want [aten.mm 4 5], got [aten.add 4 5]`,
		`devices["0"].memory[0]: want [4 0.04], got [4 0.05]`)

	// A relative difference of 1e-9 is equal; so is rounding noise below
	// the normal form's precision, and tiny absolute differences near zero.
	got = sample()
	got.ExecTimeS *= 1 + 1e-9
	got.PeakMemoryMB *= 1 + 1e-9
	got.Steps[0][0] *= 1 - 1e-9
	got.Devices["2"].Streams["main"][1].End *= 1 + 1e-9
	got.Devices["2"].Streams["main"][0].Ts = 1e-12
	got.Devices["0"].Memory[0][1] += 4e-7
	if diffs := Compare(sample(), got); len(diffs) != 0 {
		t.Errorf("tiny differences reported: %v", diffs)
	}
	got.ExecTimeS *= 1 + 1e-5
	if diffs := Compare(sample(), got); len(diffs) != 1 {
		t.Errorf("relative 1e-5 difference: got %v", diffs)
	}
}

func TestCompareLimit(t *testing.T) {
	want, got := sample(), sample()
	for i := range 100 {
		want.Controller = append(want.Controller, Event{"x", float64(i), float64(i + 1)})
	}
	diffs := Compare(want, got)
	if len(diffs) != maxDiffs+1 || !strings.HasPrefix(diffs[maxDiffs], "... and ") {
		t.Errorf("got %d differences, last %q", len(diffs), diffs[len(diffs)-1])
	}
}

func checkDiffs(t *testing.T, name string, got []string, want ...string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", name, got, want)
	}
}

// TestFromTraceMatchesExpected writes each golden file's devices as a trace
// (one process per device, one grouped) and reads it back.
func TestFromTraceMatchesExpected(t *testing.T) {
	for _, path := range expectedFiles(t) {
		want, err := LoadExpected(path)
		if err != nil {
			t.Fatal(err)
		}
		trace := writeTrace(want)
		controller, devices, err := FromTrace(strings.NewReader(trace))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		got := *want
		got.Controller, got.Devices = controller, devices
		if diffs := Compare(want, &got); len(diffs) != 0 {
			t.Errorf("%s: %v", path, diffs)
		}
	}
}

// readsAsPlain checks that a compressed copy of smallTrace reads as the
// plain text does.
func readsAsPlain(t *testing.T, compressed io.Reader, form string) {
	t.Helper()
	c1, d1, err := FromTrace(strings.NewReader(smallTrace))
	if err != nil {
		t.Fatal(err)
	}
	c2, d2, err := FromTrace(compressed)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c1, c2) || !reflect.DeepEqual(d1, d2) {
		t.Errorf("%s trace reads differently from the plain one", form)
	}
}
