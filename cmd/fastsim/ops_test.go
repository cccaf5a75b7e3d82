package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fastsim/fastsim/internal/monarch"
)

// opsHistory: two ranks; a stream; aten.mm of a (3x4) and a (4x5) float32
// tensor at ts 2,000; a sum reduce of its (3x5) result at ts 3,000.
const opsHistory = `{"fastsim":"history","version":1,"world_size":2}
{"ts":1000,"ranks":[{"offset":0,"sizes":[2],"strides":[1]}],"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}
{"ts":1500,"ranks":[{"offset":0,"sizes":[2],"strides":[1]}],"msg":{"type":"PipeRecv","result":[{"tensor":1,"storage":1,"nbytes":48,"dtype":"float32","shape":[3,4],"device":"cpu"},{"tensor":2,"storage":2,"nbytes":80,"dtype":"float32","shape":[4,5],"device":"cpu"}],"stream":{"ref":1}}}
{"ts":2000,"ranks":[{"offset":0,"sizes":[2],"strides":[1]}],"msg":{"type":"CallFunction","function":"torch.ops.aten.mm.default","args":[{"tensor":1},{"tensor":2}],"result":{"tensor":3,"storage":3,"nbytes":60,"dtype":"float32","shape":[3,5],"device":"cuda"},"stream":{"ref":1}}}
{"ts":3000,"ranks":[{"offset":0,"sizes":[2],"strides":[1]}],"msg":{"type":"Reduce","result":{"tensor":4,"storage":4,"nbytes":60,"dtype":"float32","shape":[3,5],"device":"cuda"},"local_tensor":{"tensor":3},"stream":{"ref":1},"reduction":"sum"}}
{"step":0}
`

// TestOpsRoundTrip: ops lists the two kinds with the default times; a
// timing file keyed by those keys prices a replay with its times; ops with
// that file predicts them back.
func TestOpsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "ops.hist")
	os.WriteFile(hist, []byte(opsHistory), 0o644)
	const mmKey = "CallFunction:aten.mm:(3x4)x(4x5):float32"
	const redKey = "Reduce:reduce_scatter:(3x5):float32:2" // sum without scatter: the reference's label

	cat := filepath.Join(dir, "ops.json")
	code, stdout, stderr := runCLI("ops", "--json", cat, hist)
	if code != exitOK {
		t.Fatalf("ops: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, mmKey) || !strings.Contains(stdout, redKey) {
		t.Errorf("table %q", stdout)
	}
	var doc monarch.Catalogue
	data, _ := os.ReadFile(cat)
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	// One task per rank: 2 of each. Default runtimes: 10 us and 100 us.
	want := map[string][2]float64{mmKey: {2, 10}, redKey: {2, 100}}
	if len(doc.CommandTypes) != 2 {
		t.Fatalf("catalogue %s", data)
	}
	for _, e := range doc.CommandTypes {
		w, ok := want[e.TimingKey]
		if !ok || float64(e.Count) != w[0] || e.PredictedUs != w[1] || doc.Timing[e.TimingKey] != w[1] {
			t.Errorf("entry %+v (timing %v), want count and us %v", e, doc.Timing[e.TimingKey], w)
		}
	}
	mm := doc.CommandTypes[0]
	if mm.TimingKey != mmKey || len(mm.InputShapes) != 2 || mm.InputShapes[1][1] != 5 || mm.Dtype != "float32" || mm.FuncPath != "torch.ops.aten.mm.default" {
		t.Errorf("mm entry %+v", mm)
	}
	red := doc.CommandTypes[1]
	if red.NumDevices != 2 || red.TensorShape == nil || len(*red.TensorShape) != 2 {
		t.Errorf("reduce entry %+v", red)
	}

	// Times of 7 us and 30 us. By docs/SEMANTICS.md: the mm starts at
	// 2,000 and ends at 9,000; the reduce is queued behind it, both ranks
	// start it at 9,000, so it ends at 39,000 ns = 3.9e-05 s.
	timing := filepath.Join(dir, "timing.json")
	os.WriteFile(timing, []byte(`{"`+mmKey+`": 7, "`+redKey+`": 30}`), 0o644)
	sum := filepath.Join(dir, "sum.json")
	code, _, stderr = runCLI("replay", "--report-only", "--costs", timing, "--summary-json", sum, hist)
	if code != exitOK {
		t.Fatalf("replay: exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "has no time") {
		t.Errorf("every key was given, yet: %q", stderr)
	}
	var s summaryJSON
	data, _ = os.ReadFile(sum)
	if err := json.Unmarshal(data, &s); err != nil || s.ExecTimeS != "0.000039" {
		t.Errorf("exec %v s (%v), want 0.000039", s.ExecTimeS, err)
	}
	// The catalogue itself is a timing file: with the defaults in it, the
	// replay is the default one: 2,000 + 10,000 = 12,000, + 100,000.
	code, _, stderr = runCLI("replay", "--report-only", "--costs", cat, "--summary-json", sum, hist)
	data, _ = os.ReadFile(sum)
	json.Unmarshal(data, &s)
	if code != exitOK || s.ExecTimeS != "0.000112" {
		t.Errorf("catalogue as costs: exit %d (%s), exec %v, want 0.000112", code, stderr, s.ExecTimeS)
	}
	// A file lacking the reduce's key: its tasks take the fixed 100 us, and
	// the replay says so.
	partial := filepath.Join(dir, "partial.json")
	os.WriteFile(partial, []byte(`{"`+mmKey+`": 7}`), 0o644)
	code, _, stderr = runCLI("replay", "--report-only", "--costs", partial, hist)
	if code != exitOK || !strings.Contains(stderr, "no time for 1 command kind(s)") || !strings.Contains(stderr, redKey) {
		t.Errorf("missing key: exit %d, %q", code, stderr)
	}

	// ops with the timing file predicts its times.
	code, _, _ = runCLI("ops", "--json", cat, "--costs", timing, hist)
	data, _ = os.ReadFile(cat)
	json.Unmarshal(data, &doc)
	if code != exitOK || doc.Timing[mmKey] != 7 || doc.Timing[redKey] != 30 {
		t.Errorf("ops --costs timing: %v", doc.Timing)
	}
}

// TestTimingWithHardware: a timing file sets only its keys; with --hardware
// the rest are priced as the hardware prices them.
func TestTimingWithHardware(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "ops.hist")
	os.WriteFile(hist, []byte(opsHistory), 0o644)
	const mmKey = "CallFunction:aten.mm:(3x4)x(4x5):float32"
	const redKey = "Reduce:reduce_scatter:(3x5):float32:2"
	timing := filepath.Join(dir, "timing.json")
	os.WriteFile(timing, []byte(`{"`+mmKey+`": 7}`), 0o644)
	read := func(args ...string) monarch.Catalogue {
		t.Helper()
		cat := filepath.Join(dir, "cat.json")
		if code, _, stderr := runCLI(append(append([]string{"ops", "--json", cat}, args...), hist)...); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var doc monarch.Catalogue
		data, _ := os.ReadFile(cat)
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	hw := read("--hardware", "h100-sxm")
	both := read("--hardware", "h100-sxm", "--costs", timing)
	if both.Timing[mmKey] != 7 {
		t.Errorf("mm: %v us, want the file's 7", both.Timing[mmKey])
	}
	if both.Timing[redKey] != hw.Timing[redKey] || hw.Timing[redKey] == 100 {
		t.Errorf("reduce: %v us with the file, %v us on the hardware alone (the fixed runtime is 100)", both.Timing[redKey], hw.Timing[redKey])
	}
}

// TestOpsRejectsAsReplayDoes: ops drives the same simulation as replay, so
// a history whose tasks can never all run is bad input to both, with the
// same one-line error.
func TestOpsRejectsAsReplayDoes(t *testing.T) {
	for _, name := range []string{"deadlock-send-both-ways.hist", "deadlock-send-to-self.hist", "deadlock-before-step.hist"} {
		hist := filepath.Join("..", "..", "testdata", "bad", name)
		code, _, opsErr := runCLI("ops", hist)
		rcode, _, replayErr := runCLI("replay", "--report-only", hist)
		if code != exitInput || rcode != exitInput {
			t.Errorf("%s: ops exit %d, replay exit %d; want %d for both", name, code, rcode, exitInput)
		}
		if opsErr != replayErr || !strings.Contains(opsErr, "deadlock") {
			t.Errorf("%s: ops says %q, replay %q", name, opsErr, replayErr)
		}
	}
}

// TestProgressOfSynthOpsAndConvert: synth, ops (which replays the history
// as replay does) and convert draw a progress line when their standard
// error is a terminal (util-linux script gives them one) and they run over
// a second.
func TestProgressOfSynthOpsAndConvert(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("no script(1) to give the child a terminal")
	}
	dir := t.TempDir()
	hist := filepath.Join(dir, "long.hist")
	for _, c := range []struct {
		args []string
		line string
	}{
		{[]string{"synth", "--pp", "2", "--dp", "4", "--layers", "16", "--hidden", "256", "--seq", "128", "--batch", "16", "--micro", "4", "--steps", "250", hist}, "MB written"},
		{[]string{"ops", "--top", "1", hist}, "records replayed"},
		{[]string{"convert", hist, filepath.Join(dir, "long.fhist.zst")}, "fastsim convert: "},
	} {
		cmd := exec.Command("script", "-q", "-e", "-c", os.Args[0]+" -test.run=^$", "/dev/null")
		cmd.Env = append(os.Environ(), "FASTSIM_CHILD="+strings.Join(c.args, "\x1f"))
		began := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(began)
		if err != nil {
			t.Fatalf("%q: %v: %s", c.args, err, out)
		}
		drawn := bytes.Contains(out, []byte(c.line))
		t.Logf("%s: %v, progress drawn %v", c.args[0], took, drawn)
		if took > 1500*time.Millisecond && !drawn {
			t.Errorf("%s: no progress in %v: %q", c.args[0], took, out)
		}
	}
}

// TestOpsTableWholeNanoseconds: the table's microseconds are whole
// nanoseconds, at most three decimals (a float product of a count and a
// runtime printed 62.568000000000005), and its totals are each count
// times the runtime the --json catalogue gives.
func TestOpsTableWholeNanoseconds(t *testing.T) {
	js := filepath.Join(t.TempDir(), "ops.json")
	code, stdout, stderr := runCLI("ops", "--hardware", "h100-sxm", "--top", "0", "--json", js, example)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var cat monarch.Catalogue
	data, err := os.ReadFile(js)
	if err != nil || json.Unmarshal(data, &cat) != nil {
		t.Fatalf("catalogue: %v", err)
	}
	byKey := map[string]monarch.CommandType{}
	for _, e := range cat.CommandTypes {
		byKey[e.TimingKey] = e
	}
	rows := 0
	for _, line := range strings.Split(stdout, "\n") {
		f := strings.Fields(line)
		e, ok := byKey[func() string {
			if len(f) < 4 {
				return ""
			}
			return f[3]
		}()]
		if !ok {
			continue
		}
		rows++
		for _, v := range f[1:3] {
			if _, frac, _ := strings.Cut(v, "."); len(frac) > 3 {
				t.Errorf("%q: %s has more than three decimals", line, v)
			}
		}
		nsEach := int64(e.PredictedUs*1000 + 0.5)
		if want := strconv.FormatFloat(float64(int64(e.Count)*nsEach)/1000, 'f', -1, 64); f[2] != want {
			t.Errorf("%q: total %s, want %d x %d ns = %s us", line, f[2], e.Count, nsEach, want)
		}
	}
	if rows != len(cat.CommandTypes) {
		t.Errorf("%d rows matched of %d kinds:\n%s", rows, len(cat.CommandTypes), stdout)
	}
}
