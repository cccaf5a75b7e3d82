package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fastsim/fastsim/internal/golden"
	"github.com/fastsim/fastsim/internal/synth"
)

// TestMain lets a test run the command as a child process: with
// FASTSIM_CHILD set, the test binary is fastsim itself.
func TestMain(m *testing.M) {
	if args := os.Getenv("FASTSIM_CHILD"); args != "" {
		os.Exit(run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func child(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FASTSIM_CHILD="+strings.Join(args, "\x1f"))
	return cmd
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestBadInputs replays every history of the error catalogue: each must end
// with exit status 2 and one line naming the file, the line and what is
// wrong, and that line must be the same grouped and ungrouped, in every
// trace mode that simulates streams, and, for errors in the history's form
// (everything a decoder finds), with --decode-only, in controller-only mode
// and from convert: validity does not depend on how a history is read.
func TestBadInputs(t *testing.T) {
	type bad struct {
		want   string
		engine bool // found by simulating streams, not by decoding
	}
	cases := map[string]bad{
		"not-json.hist:3:":                 {want: "invalid JSON"},
		"no-header.hist:1:":                {want: "no header"},
		"bad-header.hist:1:":               {want: `"world_size" is 0`},
		"unsupported-version.hist:1:":      {want: "version"},
		"neither-command-nor-step.hist:3:": {want: "neither a command"},
		"missing-field.hist:3:":            {want: `missing field "function"`},
		"wrong-type.hist:3:":               {want: `"ts"`},
		"slice-sizes-strides.hist:2:":      {want: "strides"},
		"slice-negative-size.hist:2:":      {want: "negative size"},
		"rank-outside-world.hist:2:":       {want: "outside the world"},
		"slice-overflow.hist:2:":           {want: "slice"},
		"ts-backwards.hist:3:":             {want: "backwards"},
		"tensor-disagrees.hist:4:":         {want: "first mention"},
		// The first mention of tensor 1 leaves out nbytes: it is the
		// error, not the later mention that gives 100.
		"tensor-first-mention-incomplete.hist:3:": {want: `tensor 1: its first mention lacks "nbytes"`},
		// Tensor 1 is deleted at line 4: the bare mention at line 5 would
		// begin a new tensor without its fields; it is named as what it
		// most likely is, a use after the deletion.
		"tensor-deleted-then-bare.hist:5:": {want: `tensor 1: not known here (never defined, or deleted before this use)`},
		"tensor-negative-shape.hist:3:":    {want: "tensor 1: negative size -1 in dimension 0 of its shape"},
		// "type" twice in a message; "alpha" twice inside kwargs.
		"duplicate-key.hist:3:":         {want: `key "type" appears twice in one object`},
		"duplicate-key-in-tree.hist:3:": {want: `field "kwargs": key "alpha" appears twice in one object`},
		"empty.hist:":                   {want: "empty"},
		"nul-byte.hist:3:":              {want: "NUL"},
		"invalid-utf8.hist:3:":          {want: "UTF-8"},
		"nesting-too-deep.hist:2:":      {want: "nest deeper than"},
		// A send to rank 5 of 2, 29 command groups deep: the path names
		// the outermost level, the 26 left out and the 2 innermost.
		"group-nested-deep.hist:4:": {want: `field "msg": CommandGroup: field "commands": item 0: … 26 levels … CommandGroup: field "commands": item 0: CommandGroup: field "commands": item 0: SendTensor: field "to_ranks": rank 5 is outside`},
		// Cut inside its one zstd block: no line of it decompresses.
		"truncated-zstd.hist.zst:": {want: "the zstd-compressed stream is truncated: it ends before the first complete line"},
		"corrupt-zstd.hist.zst:":   {want: "zstd"},
		// The same for S2's framing: the binary form of
		// examples/train_step.hist in one S2 block, cut at 3,000 of its
		// 7,135 bytes (the block holds every record, so none is read
		// whole), and whole with byte 3,000 flipped (the block's
		// checksum fails; the reader was on line 1, the binary header).
		"truncated-s2.fhist.s2:":    {want: "the S2-compressed stream is truncated: it ends before the first complete line"},
		"corrupt-s2.fhist.s2:1:":    {want: "truncated or corrupt S2 stream: s2: corrupt input, crc mismatch"},
		"step-negative.hist:3:":     {want: `field "step": negative step -1`},
		"tensor-bad-device.hist:3:": {want: `field "device": want "cuda" or "cpu", got "tpu"`},
		// A gzip stream, which is not one of the forms read, said so
		// rather than as a NUL byte in line 1.
		"gzip.hist.gz:1:":        {want: "the data is gzip-compressed"},
		"unknown-stream.hist:3:": {want: "unknown stream: stream 7", engine: true},
		// A CommandGroup numbered 2 after the CreateStream: its
		// sub-commands are 3 (f) and 4 (g, on the unknown stream), and
		// the error names the sub-command, not the group.
		"unknown-stream-in-group.hist:3:":        {want: "command 4 (CallFunction g): unknown stream: stream 7", engine: true},
		"input-not-on-stream.hist:3:":            {want: "input tensor 1 is neither on stream", engine: true},
		"borrow-first-use-before-create.hist:4:": {want: "unknown borrow 5", engine: true},
		"borrow-drop-twice.hist:9:":              {want: "unknown borrow 5", engine: true},
		"borrow-unknown.hist:5:":                 {want: "unknown borrow 9", engine: true},
		"send-rank-counts.hist:4:":               {want: "from 2 ranks to 1 ranks", engine: true},
		"send-repeated-rank.hist:4:":             {want: `"to_ranks": bad slice: names rank 0 more than once (a send pairs distinct ranks)`},
		"stream-created-twice.hist:3:":           {want: "stream already exists", engine: true},
		"memory-release-forbidden.hist:6:":       {want: "memory release the model forbids", engine: true},
		// Two sends exchanged both ways in one command: each rank's send
		// waits for a receive queued behind its own send; the Reduce at
		// line 5 queues behind them and is not the one named.
		"deadlock-send-both-ways.hist:4:": {want: `deadlock: task "SendTensor" (line 4) on stream "main" of rank 0 never runs: it waits for its peer "RecvTensor" (line 4)`, engine: true},
		// Two storages of 2^62 bytes alive at once on two streams of a
		// device: 2^63 bytes do not fit in an int64.
		"memory-overflow.hist:5:": {want: "int64 overflow: allocating 4611686018427387904 bytes", engine: true},
		// A ts 807 ns below the int64 maximum and a 10 µs runtime.
		"ts-overflow.hist:3:": {want: `int64 overflow: task "aten.ones" (line 3) on stream "main" sent at 9223372036854775000 ns cannot end`, engine: true},
		// The same two sends, then a step line, then a command on an
		// unknown stream: the step reports the deadlock first.
		"deadlock-before-step.hist:4:": {want: `deadlock: task "SendTensor" (line 4) on stream "main" of rank 0 never runs`, engine: true},
		// Rank 0 sends to itself: its receive queues behind its send.
		"deadlock-send-to-self.hist:4:": {want: `deadlock: task "SendTensor" (line 4) on stream "main" of rank 0 never runs`, engine: true},
	}
	files, _ := filepath.Glob("../../testdata/bad/*")
	if len(files) != len(cases) {
		t.Errorf("%d files in testdata/bad, %d cases here: keep them in step", len(files), len(cases))
	}
	for prefix, c := range cases {
		name := prefix[:strings.Index(prefix, ":")]
		t.Run(name, func(t *testing.T) {
			path := "../../testdata/bad/" + name
			check := func(args ...string) string {
				t.Helper()
				code, stdout, stderr := runCLI(args...)
				if code != exitInput {
					t.Fatalf("%q: exit %d, want %d; stderr %q", args, code, exitInput, stderr)
				}
				lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
				if len(lines) != 1 || stdout != "" {
					t.Fatalf("%q: want one line on stderr and nothing on stdout, got %q / %q", args, stderr, stdout)
				}
				if !strings.HasPrefix(lines[0], path+prefix[len(name):]) || !strings.Contains(lines[0], c.want) {
					t.Fatalf("%q: message %q, want it to start with %q and say %q", args, lines[0], path+prefix[len(name):], c.want)
				}
				return lines[0]
			}
			first := check("replay", "--report-only", "--group-workers=false", path)
			runs := [][]string{
				{"replay", "--report-only", "--group-workers", path},
				{"replay", "--report-only", "--group-workers", "--jobs", "4", path},
				{"replay", "--trace-mode", "stream-only", "--trace", filepath.Join(t.TempDir(), "t.json"), path},
				{"replay", "--trace-mode", "everything", "--group-workers", "--trace", filepath.Join(t.TempDir(), "t.json"), path},
			}
			if !c.engine {
				runs = append(runs,
					[]string{"replay", "--report-only", "--trace-mode", "controller-only", path},
					[]string{"replay", "--decode-only", path},
					[]string{"convert", path, filepath.Join(t.TempDir(), "out.fhist")},
					[]string{"convert", path, filepath.Join(t.TempDir(), "out.hist")},
				)
			}
			for _, args := range runs {
				if got := check(args...); got != first {
					t.Errorf("%q says %q, but ungrouped replay says %q", args, got, first)
				}
			}
		})
	}
}

// TestRedefinedTensorAccepted replays a history that deletes a tensor and
// defines its id anew with other fields: a DeleteRefs ends an id's life, so
// it is valid, and every way of reading it agrees (the same report in both
// modes that simulate streams, decode-only and convert accept it).
func TestRedefinedTensorAccepted(t *testing.T) {
	const all = `"ranks":[{"offset":0,"sizes":[2],"strides":[1]}]`
	hist := `{"fastsim":"history","version":1,"world_size":2}
{"ts":0,` + all + `,"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}
{"ts":10,` + all + `,"msg":{"type":"CallFunction","function":"f","args":[],"result":{"tensor":1,"storage":1,"nbytes":100,"dtype":"float32","shape":[25],"device":"cuda"},"stream":{"ref":1}}}
{"ts":20,` + all + `,"msg":{"type":"DeleteRefs","refs":[1]}}
{"ts":30,` + all + `,"msg":{"type":"CallFunction","function":"g","args":[],"result":{"tensor":1,"storage":1,"nbytes":400,"dtype":"float32","shape":[100],"device":"cuda"},"stream":{"ref":1}}}
{"ts":40,` + all + `,"msg":{"type":"CallFunction","function":"h","args":[{"tensor":1}],"result":[],"stream":{"ref":1}}}
`
	dir := t.TempDir()
	path := filepath.Join(dir, "redefine.hist")
	if err := os.WriteFile(path, []byte(hist), 0o644); err != nil {
		t.Fatal(err)
	}
	// f runs 10-10010 and frees its 100 bytes at its end (deleted at 20);
	// g allocates 400 bytes at 10010, after the release at the same time
	// (the smaller delta first): the peak is 400 bytes, 0.0004 MB.
	for _, args := range [][]string{
		{"replay", "--report-only", path},
		{"replay", "--report-only", "--group-workers", path},
		{"replay", "--report-only", "--trace-mode", "stream-only", path},
	} {
		code, out, errs := runCLI(args...)
		if code != exitOK || !strings.Contains(out, "peak memory          0.000400 MB") {
			t.Errorf("%q: exit %d, %q %q", args, code, out, errs)
		}
	}
	for _, args := range [][]string{
		{"replay", "--report-only", "--trace-mode", "controller-only", path},
		{"replay", "--decode-only", path},
		{"convert", path, filepath.Join(dir, "r.fhist")},
		{"convert", path, filepath.Join(dir, "r.hist")},
	} {
		if code, _, errs := runCLI(args...); code != exitOK {
			t.Errorf("%q: exit %d, %q", args, code, errs)
		}
	}
	code, out, errs := runCLI("replay", "--report-only", filepath.Join(dir, "r.fhist"))
	if code != exitOK || !strings.Contains(out, "peak memory          0.000400 MB") {
		t.Errorf("binary form: exit %d, %q %q", code, out, errs)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"replay"},
		{"replay", "a.hist", "b.hist"},
		{"replay", "--trace-mode", "sometimes", "x.hist"},
		{"replay", "--jobs", "0", "x.hist"},
		{"replay", "--trace", "t.json", "--report-only", "x.hist"},
		{"replay", "--no-such-flag", "x.hist"},
	} {
		if code, _, _ := runCLI(args...); code != exitInput {
			t.Errorf("%q: exit %d, want %d", args, code, exitInput)
		}
	}
	code, _, stderr := runCLI("replay", "/no/such/file.hist")
	if code != exitInput || !strings.Contains(stderr, "no such file") {
		t.Errorf("missing file: exit %d, %q", code, stderr)
	}
}

func TestHelpExplainsEveryFlag(t *testing.T) {
	code, help, _ := runCLI("replay", "--help")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, flag := range []string{"-trace", "-trace-mode", "-report-only", "-summary-json", "-group-workers", "-jobs", "-strict", "-partial-trace", "-cpuprofile", "-quiet"} {
		if !strings.Contains(help, flag) {
			t.Errorf("replay --help does not mention %s", flag)
		}
	}
}

// TestReplayOutputs runs the README's main job and checks the summary and
// that repeated runs (and --jobs) write byte-identical outputs.
func TestReplayOutputs(t *testing.T) {
	dir := t.TempDir()
	var traces, sums [][]byte
	for i, jobs := range []string{"1", "1", "2"} {
		tr := filepath.Join(dir, fmt.Sprintf("t%d.json.zst", i))
		sum := filepath.Join(dir, fmt.Sprintf("s%d.json", i))
		code, stdout, stderr := runCLI("replay", "--jobs", jobs, "--group-workers", "--trace", tr, "--summary-json", sum, "../../examples/train_step.hist")
		if code != exitOK || stderr != "" {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		if !strings.Contains(stdout, "simulated time") || !strings.Contains(stdout, "on device") {
			t.Fatalf("summary %q", stdout)
		}
		tb, _ := os.ReadFile(tr)
		sb, _ := os.ReadFile(sum)
		traces, sums = append(traces, tb), append(sums, sb)
	}
	for i := 1; i < len(traces); i++ {
		if !bytes.Equal(traces[0], traces[i]) || !bytes.Equal(sums[0], sums[i]) {
			t.Fatalf("run %d wrote different bytes than run 0", i)
		}
	}
	var s summaryJSON
	if err := json.Unmarshal(sums[0], &s); err != nil {
		t.Fatal(err)
	}
	// train_step is the golden random_105: compare with the reference's
	// figures for it.
	want, err := golden.LoadExpected("../../testdata/golden/random_105.expected.json")
	if err != nil {
		t.Fatal(err)
	}
	// The peak device is the lowest rank whose memory series reaches the
	// peak, read off the reference's own per-device series.
	wantDevice := int64(-1)
	for rank, d := range want.Devices {
		r, _ := strconv.ParseInt(rank, 10, 64)
		for _, m := range d.Memory {
			if m[1] == want.PeakMemoryMB && (wantDevice < 0 || r < wantDevice) {
				wantDevice = r
			}
		}
	}
	if s.PeakDevice != wantDevice || wantDevice < 0 {
		t.Fatalf("summary peak_device %d, the reference's series peak on rank %d", s.PeakDevice, wantDevice)
	}
	num := func(n json.Number) float64 {
		v, err := n.Float64()
		if err != nil {
			t.Fatalf("summary number %q: %v", n, err)
		}
		return v
	}
	got := &golden.Normal{ExecTimeS: num(s.ExecTimeS), PeakMemoryMB: num(s.PeakMemoryMB), TraceMode: want.TraceMode}
	for _, st := range s.Steps {
		got.Steps = append(got.Steps, [2]float64{num(st[0]), num(st[1])})
	}
	want.Controller, want.Devices = nil, nil
	if diffs := golden.Compare(want, got); s.WorldSize != 16 || len(diffs) > 0 {
		t.Fatalf("summary %+v differs from the reference: %v", s, diffs)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 6 {
		t.Fatalf("%d files in the output dir, want the 6 outputs and no temp file", len(entries))
	}
}

// bigHistory writes a training history large enough that writing its trace
// takes a while.
func bigHistory(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := synth.WriteTrain(f, synth.Train{PP: 2, DP: 4, TP: 1, Layers: 16, Hidden: 256, Seq: 128, Batch: 16, Micro: 4, Steps: 60}); err != nil {
		t.Fatal(err)
	}
}

// replayWritingTrace starts a replay of a large history with a trace to
// dir/out.json and returns once the trace's temporary file exists, so a
// signal sent then lands while the trace is being written.
func replayWritingTrace(t *testing.T) (cmd *exec.Cmd, dir, dest string) {
	t.Helper()
	dir = t.TempDir()
	hist := filepath.Join(dir, "big.hist")
	bigHistory(t, hist)
	dest = filepath.Join(dir, "out.json")
	cmd = child("replay", "--trace", dest, hist)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if tmp, _ := filepath.Glob(filepath.Join(dir, ".out.json.fastsim-tmp-*")); len(tmp) > 0 {
			return cmd, dir, dest
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the trace never started")
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// TestKillLeavesNoTrace kills a replay with SIGKILL while it writes its
// trace: nothing may be left at the destination.
func TestKillLeavesNoTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a large history")
	}
	cmd, _, dest := replayWritingTrace(t)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if _, err := os.Stat(dest); err == nil {
		// It may have finished in the instant before the kill; then the
		// file must be whole.
		data, _ := os.ReadFile(dest)
		if !json.Valid(data) {
			t.Fatal("a killed replay left a half-written trace at the destination")
		}
		t.Log("the replay finished before the kill landed; its trace is whole")
	}
}

// TestInterrupt sends SIGINT mid-replay: the report so far is printed,
// marked partial, exit status 130, and no trace unless --partial-trace.
// Sent twice 5 ms apart (as `timeout -s INT` delivers it), it is the same
// interrupt: still the report, not the second Ctrl-C's exit at once.
func TestInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	var hist bytes.Buffer
	if err := synth.WriteTrain(&hist, synth.Train{PP: 2, DP: 2, TP: 1, Layers: 8, Hidden: 64, Seq: 16, Batch: 8, Micro: 2, Steps: 40}); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(hist.String(), "\n")
	for _, c := range []struct {
		partial bool
		signals int
	}{{false, 1}, {true, 1}, {false, 2}} {
		partial := c.partial
		dir := t.TempDir()
		fifo := filepath.Join(dir, "in.hist")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skip("no named pipes here:", err)
		}
		dest := filepath.Join(dir, "out.json")
		cmd := child("replay", fmt.Sprintf("--partial-trace=%v", partial), "--trace", dest, fifo)
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		feedInterruptedN(cmd, w, lines, c.signals)
		err = cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
			t.Fatalf("partial-trace=%v, %d SIGINT: %v, want exit %d; output %q", partial, c.signals, err, exitInterrupted, out.String())
		}
		if !strings.Contains(out.String(), "PARTIAL") || !strings.Contains(out.String(), "simulated time") {
			t.Fatalf("output %q", out.String())
		}
		_, statErr := os.Stat(dest)
		if partial != (statErr == nil) {
			t.Fatalf("partial-trace=%v: trace present %v", partial, statErr == nil)
		}
	}
}

// TestTolerates replays a history with what the format allows: CRLF line
// ends, blank lines, extra fields, unknown message types (a warning, an
// error with --strict) and a multi-megabyte kwarg.
func TestTolerates(t *testing.T) {
	r := `"ranks":[{"offset":0,"sizes":[2],"strides":[1]}]`
	big := strings.Repeat("x", 3<<20)
	lines := []string{
		`{"fastsim":"history","version":1,"world_size":2,"recorder":"test","extra":{"a":[1,2]}}`,
		``,
		`{"ts":1,` + r + `,"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true,"device_mesh":7}}`,
		`{"ts":2,` + r + `,"msg":{"type":"Frobnicate","x":1}}`,
		``,
		`{"ts":3,` + r + `,"tb":[{"file":"train.py","line":31,"name":"forward"}],"msg":{"type":"CallFunction","function":"torch.ops.aten.randn.default","args":[],"kwargs":{"blob":"` + big + `"},"result":[{"tensor":1,"storage":1,"nbytes":40,"dtype":"float32","shape":[10],"device":"cuda"}],"mutates":[],"stream":{"ref":1},"factory":{"size":[10]}}}`,
		`{"ts":4,` + r + `,"msg":{"type":"Frobnicate"}}`,
		`{"step":0}`,
	}
	path := filepath.Join(t.TempDir(), "tolerant.hist")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\r\n")+"\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("replay", "--report-only", path)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The randn runs from its ts, 3 ns, for 10000 ns on both ranks and
	// allocates 40 bytes: 0.000010 s at six decimals.
	if !strings.Contains(stdout, "simulated time       0.000010 s") || !strings.Contains(stdout, "0.000040 MB") {
		t.Fatalf("summary %q", stdout)
	}
	if !strings.Contains(stdout, `warnings             2 (first: line 4: unknown message type "Frobnicate" skipped)`) {
		t.Fatalf("no warning for the unknown type in %q", stdout)
	}
	code, _, stderr = runCLI("replay", "--report-only", "--strict", path)
	if code != exitInput || !strings.Contains(stderr, "tolerant.hist:4:") || !strings.Contains(stderr, "Frobnicate") {
		t.Fatalf("--strict: exit %d, %q", code, stderr)
	}
}

// An ungrouped world of 2^20 ranks needs at least 2^20 x sched.RankBytes
// of state, over a 100 MiB budget whatever RankBytes is (it is more than
// 100 bytes): the replay is refused up front with exit status 3 and the
// hint, in one line, and with --group-workers it runs.
func TestMaxMemoryRefusesWorld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w20.hist")
	all := `"ranks":[{"offset":0,"sizes":[1048576],"strides":[1]}]`
	hist := `{"fastsim":"history","version":1,"world_size":1048576}
{"ts":0,` + all + `,"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}
`
	if err := os.WriteFile(path, []byte(hist), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("replay", "--report-only", "--max-memory", "100M", path)
	if code != exitLimit || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, path+":1: memory limit: 1048576 ranks need at least") || !strings.Contains(stderr, "--group-workers") {
		t.Fatalf("exit %d, %q %q", code, stdout, stderr)
	}
	if code, _, stderr := runCLI("replay", "--report-only", "--group-workers", "--max-memory", "100M", path); code != exitOK {
		t.Fatalf("grouped: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI("replay", "--max-memory", "lots", path); code != exitInput || !strings.Contains(stderr, "--max-memory") {
		t.Fatalf("bad flag: exit %d, %q", code, stderr)
	}
}

// TestControlCharactersEscaped: a function name holding an escape sequence
// and a newline is printed with them escaped, in an error line, in the
// hardware model's unknown-ops warning and in ops' table, so that what
// fastsim prints of a history stays on its line and cannot drive the
// terminal.
func TestControlCharactersEscaped(t *testing.T) {
	data, err := os.ReadFile("../../testdata/bad/unknown-stream-in-group.hist")
	if err != nil {
		t.Fatal(err)
	}
	name := "g\x1b[31mRED\nX\u0085"
	quoted, _ := json.Marshal(name)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.hist")
	if err := os.WriteFile(bad, bytes.Replace(data, []byte(`"function":"g"`), []byte(`"function":`+string(quoted)), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.hist")
	ex, err := os.ReadFile("../../examples/train_step.hist")
	if err != nil {
		t.Fatal(err)
	}
	renamed := bytes.Replace(ex, []byte(`"function":"torch.ops.aten.randn.default"`), []byte(`"function":`+string(quoted)), 1)
	if bytes.Equal(renamed, ex) {
		t.Fatal("no randn call in the example to rename")
	}
	if err := os.WriteFile(good, renamed, 0o644); err != nil {
		t.Fatal(err)
	}
	// An error line keeps its old way with a newline, a space (an error's
	// own text may hold one); the rest is escaped.
	for _, c := range []struct {
		args  []string
		code  int
		shown string
	}{
		{[]string{"replay", "--report-only", bad}, exitInput, `(CallFunction g\x1b[31mRED X\u0085)`},
		{[]string{"replay", "--report-only", "--hardware", "a100-80gb", good}, exitOK, `g\x1b[31mRED\nX\u0085`},
		{[]string{"ops", "--top", "0", good}, exitOK, `g\x1b[31mRED\nX\u0085`},
	} {
		code, stdout, stderr := runCLI(c.args...)
		all := stdout + stderr
		if code != c.code || !strings.Contains(all, c.shown) || strings.ContainsAny(all, "\x1b\u0085") || strings.Contains(all, "RED\n") {
			t.Errorf("%q: exit %d (want %d), output %q; want %s shown escaped and no raw escape or newline", c.args, code, c.code, all, c.shown)
		}
	}
}
