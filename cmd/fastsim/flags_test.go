package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fastsim/fastsim/internal/memlimit"
)

// TestContradictoryReplayFlags: a flag about an output that the other
// flags say is not written is refused in one line naming both, with exit
// status 2 and nothing written (each was accepted and ignored: a
// controller-only replay wrote a snapshot of 0 allocations).
func TestContradictoryReplayFlags(t *testing.T) {
	dir := t.TempDir()
	snap, sum := filepath.Join(dir, "s.pickle"), filepath.Join(dir, "s.json")
	for _, c := range []struct {
		args []string
		want []string // in the message
	}{
		{[]string{"replay", "--trace-mode", "controller-only", "--report-only", "--memory-snapshot", snap, example}, []string{"--memory-snapshot", "controller-only"}},
		// The page's memory, busy time and operations are all of streams,
		// which controller-only does not simulate: it was accepted and
		// showed "peak memory 0.000000 MB on device -1" and empty plots.
		{[]string{"replay", "--trace-mode", "controller-only", "--report-only", "--html", filepath.Join(dir, "co.html"), example}, []string{"--html", "controller-only"}},
		{[]string{"replay", "--trace-mode", "controller-only", "--trace", filepath.Join(dir, "co.json"), "--html", filepath.Join(dir, "co.html"), example}, []string{"--html", "controller-only"}},
		{[]string{"replay", "--partial-trace", "--report-only", example}, []string{"--partial-trace", "--report-only"}},
		{[]string{"replay", "--partial-trace", "--decode-only", example}, []string{"--partial-trace", "--decode-only"}},
		{[]string{"replay", "--overwrite-summary", "--report-only", example}, []string{"--overwrite-summary", "--summary-json"}},
	} {
		code, stdout, stderr := runCLI(c.args...)
		ok := code == exitInput && stdout == "" && strings.Count(stderr, "\n") == 1 && strings.HasPrefix(stderr, "fastsim replay: ")
		for _, w := range c.want {
			ok = ok && strings.Contains(stderr, w)
		}
		if !ok {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and one line naming %q", c.args, code, stdout, stderr, exitInput, c.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("refused replays wrote %v", ents)
	}
	// The same flags where they do apply are accepted.
	for _, args := range [][]string{
		{"replay", "--report-only", "--memory-snapshot", snap, example},
		{"replay", "--report-only", "--summary-json", sum, "--overwrite-summary", example},
		{"replay", "--partial-trace", "--trace", filepath.Join(dir, "t.json"), example},
		// Accepted: --partial-trace has an interrupted replay write the
		// page too (this run is not interrupted; the flags are checked).
		{"replay", "--partial-trace", "--report-only", "--html", filepath.Join(dir, "p.html"), example},
	} {
		if code, _, stderr := runCLI(args...); code != exitOK {
			t.Errorf("%q: exit %d, %q", args, code, stderr)
		}
	}
}

// TestFailedOutputKeepsReport: an output that cannot be written after the
// replay succeeded (the device is full) is reported in one line named by
// its flag, exit status 1, after the report, which is printed whole and
// names no trace (it said "trace: /dev/full: ..." without the command or
// the flag, and threw the report away).
func TestFailedOutputKeepsReport(t *testing.T) {
	if st, err := os.Stat("/dev/full"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Skip("no /dev/full device")
	}
	dir := t.TempDir()
	trace, page := filepath.Join(dir, "t.json.gz"), filepath.Join(dir, "p.html")
	for _, c := range []struct {
		args  []string
		flags []string // the failures, one line each, in this order
		named bool     // the report names the trace, which was written
	}{
		{[]string{"replay", "--trace", "/dev/full", example}, []string{"--trace"}, false},
		{[]string{"replay", "--report-only", "--html", "/dev/full", example}, []string{"--html"}, false},
		{[]string{"replay", "--trace", "/dev/full", "--html", "/dev/full", example}, []string{"--html", "--trace"}, false},
		// A page that fails does not keep the trace from being written,
		// nor a snapshot that fails the page.
		{[]string{"replay", "--trace", trace, "--html", "/dev/full", example}, []string{"--html"}, true},
		{[]string{"replay", "--trace", trace, "--memory-snapshot", "/dev/full", "--html", page, example}, []string{"--memory-snapshot"}, true},
	} {
		os.Remove(trace)
		os.Remove(page)
		code, stdout, stderr := runCLI(c.args...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		ok := code == exitError && len(lines) == len(c.flags)
		for i := 0; ok && i < len(lines); i++ {
			ok = strings.HasPrefix(lines[i], "fastsim replay: "+c.flags[i]+": ") && strings.Contains(lines[i], "no space left on device")
		}
		if !ok {
			t.Errorf("%q: exit %d, stderr %q; want %d and a line naming each of %v", c.args, code, stderr, exitError, c.flags)
		}
		// train_step is the golden random_105, whose reference time is
		// 0.0123025 s (testdata/golden/random_105.expected.json), a half
		// microsecond rounded up.
		if !strings.Contains(stdout, "simulated time       0.012303 s") || strings.Contains(stdout, "trace    ") != c.named {
			t.Errorf("%q: report %q; want it whole, naming the trace: %v", c.args, stdout, c.named)
		}
		if c.named {
			if st, err := os.Stat(trace); err != nil || st.Size() == 0 {
				t.Errorf("%q: trace not written (%v)", c.args, err)
			}
		}
		if slices.Contains(c.args, page) {
			if st, err := os.Stat(page); err != nil || st.Size() == 0 {
				t.Errorf("%q: page not written (%v)", c.args, err)
			}
		}
	}

	// A rank outside the world is a usage error, found once the history
	// is read: exit 2, and nothing more is written, the trace included.
	os.Remove(trace)
	code, _, stderr := runCLI("replay", "--trace", trace, "--memory-snapshot", filepath.Join(dir, "m.pickle"), "--memory-device", "99", example)
	if code != exitInput || !strings.Contains(stderr, "--memory-device: rank 99 is outside the world") {
		t.Errorf("--memory-device 99: exit %d, %q; want %d and the rank named", code, stderr, exitInput)
	}
	if _, err := os.Stat(trace); err == nil {
		t.Errorf("--memory-device 99: the trace was written after the usage error")
	}
}

// TestProgressLineClears: each redraw of replay's progress line clears
// the line it returns to (it returned with \r alone, so "about 9s left..."
// kept the last "." of "about 10s left...").
func TestProgressLineClears(t *testing.T) {
	for _, got := range []string{progressLine(5000, 1<<20, 4<<20, 10*time.Second), progressLine(7, 100, -1, time.Second)} {
		if !strings.HasPrefix(got, "\r\033[K") {
			t.Errorf("%q does not clear the line it redraws", got)
		}
	}
}

// TestReportSingular: one step, one worker and one group are said so
// ("1 steps on 1 workers (1 simulated groups)" before). The history is
// one rank running one function, then one step mark.
func TestReportSingular(t *testing.T) {
	hist := filepath.Join(t.TempDir(), "one.hist")
	const one = `"ranks":[{"offset":0,"sizes":[1],"strides":[1]}]`
	data := `{"fastsim":"history","version":1,"world_size":1}
{"ts":0,` + one + `,"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}
{"ts":10,` + one + `,"msg":{"type":"CallFunction","function":"f","args":[],"result":{"tensor":1,"storage":1,"nbytes":100,"dtype":"float32","shape":[25],"device":"cuda"},"stream":{"ref":1}}}
{"step":0}
`
	if err := os.WriteFile(hist, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("replay", "--report-only", hist)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"(1 step; the last took", "on 1 worker (1 simulated group)\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, " 1 steps") || strings.Contains(stdout, " 1 workers") || strings.Contains(stdout, " 1 simulated groups") {
		t.Errorf("report says a plural of one:\n%s", stdout)
	}
	// A history of one record (a step line; the header is none): decoding
	// and converting it say "1 record".
	oneRec := filepath.Join(t.TempDir(), "onerec.hist")
	if err := os.WriteFile(oneRec, []byte("{\"fastsim\":\"history\",\"version\":1,\"world_size\":1}\n{\"step\":0}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, stdout, _ := runCLI("replay", "--decode-only", oneRec); code != exitOK || !strings.HasPrefix(stdout, "decoded 1 record in") {
		t.Errorf("decode-only: exit %d, %q", code, stdout)
	}
	if code, stdout, _ := runCLI("convert", oneRec, filepath.Join(t.TempDir(), "one.fhist")); code != exitOK || !strings.Contains(stdout, ": 1 record in") {
		t.Errorf("convert: exit %d, %q", code, stdout)
	}
}

// TestPlural: one is singular, every other count plural.
func TestPlural(t *testing.T) {
	for n, want := range map[int64]string{0: "0 steps", 1: "1 step", 2: "2 steps", -1: "-1 steps"} {
		if got := plural(n, "step"); got != want {
			t.Errorf("plural(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestCutShort: after a stop, only a read given up for it means "nothing
// was replayed"; another failure that came after the stop (the memory
// limit, a bad record) is reported as itself.
func TestCutShort(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("stdin:1: reading the header: %w", os.ErrDeadlineExceeded), true},
		{fmt.Errorf("h.hist:1: %w", errInterrupted), true},
		{fmt.Errorf("h.hist:1: %w", memlimit.ErrLimit), false},
		{errors.New("h.hist:1: not JSON"), false},
	} {
		if got := cutShort(c.err); got != c.want {
			t.Errorf("cutShort(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestMemoryDeviceRefusedAtTheHeader: a --memory-device outside the world
// is refused as soon as the header gives the world, not after the replay:
// one line, exit 2, without the ungrouped replay's hint for a large world
// and before the engine meets line 3, which names a stream never created
// (an error of its own at the end of a replay), and nothing is written.
func TestMemoryDeviceRefusedAtTheHeader(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "w.hist")
	const world = largeWorld + 1
	body := fmt.Sprintf(`{"fastsim":"history","version":1,"world_size":%d}`+"\n", world) +
		fmt.Sprintf(`{"ts":0,"ranks":[{"offset":0,"sizes":[%d],"strides":[1]}],"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`+"\n", world) +
		fmt.Sprintf(`{"ts":1,"ranks":[{"offset":0,"sizes":[%d],"strides":[1]}],"msg":{"type":"CallFunction","ident":1,"function":"f","args":[],"kwargs":{},"result":[],"mutates":[],"stream":{"ref":7}}}`+"\n", world)
	if err := os.WriteFile(hist, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	trace, summary, snap := filepath.Join(dir, "t.json"), filepath.Join(dir, "s.json"), filepath.Join(dir, "m.pickle")
	want := fmt.Sprintf("fastsim replay: --memory-device: rank %d is outside the world of %d\n", world, world)
	for _, extra := range [][]string{nil, {"--partial-trace"}, {"--group-workers"}} {
		args := append([]string{"replay", "--trace", trace, "--summary-json", summary, "--memory-snapshot", snap, "--memory-device", fmt.Sprint(world)}, extra...)
		code, stdout, stderr := runCLI(append(args, hist)...)
		if code != exitInput || stdout != "" || stderr != want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and %q", extra, code, stdout, stderr, exitInput, want)
		}
		for _, p := range []string{trace, summary, snap} {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("%v: %s written", extra, p)
			}
		}
	}
}
