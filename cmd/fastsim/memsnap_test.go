package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// checkSnapshot is run by Python: it loads the snapshot with pickle, checks
// the layout of torch.cuda.memory._snapshot's docstring, replays the
// alloc/free entries into a running total and compares that series with the
// memory counter the Chrome trace holds for the same device.
const checkSnapshot = `
import json, pickle, sys
snap_path, trace_path, process, device, hosts = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
d = pickle.load(open(snap_path, 'rb'))
assert set(d) == {'segments', 'device_traces'}, d.keys()
assert len(d['device_traces']) == hosts, len(d['device_traces'])
for i, t in enumerate(d['device_traces']):
    assert (len(t) > 0) == (i == device), (i, len(t))
running, series, live = 0, [], {}
entries = d['device_traces'][device]
i = 0
while i < len(entries):
    e = entries[i]
    assert set(e) == {'action', 'addr', 'size', 'stream', 'frames'}, e
    assert all(set(f) == {'filename', 'line', 'name'} for f in e['frames']), e
    if e['action'] == 'alloc':
        assert e['addr'] not in live
        live[e['addr']] = e['size']
        running += e['size']
        i += 1
    else:
        assert e['action'] == 'free_requested', e
        done = entries[i + 1]
        assert done['action'] == 'free_completed' and done['addr'] == e['addr'] and done['size'] == e['size'], (e, done)
        assert live.pop(e['addr']) == e['size'], e
        running -= e['size']
        i += 2
    series.append(running)
segs = d['segments']
assert len(segs) == 1, len(segs)
s = segs[0]
assert s['device'] == device
active = [b for b in s['blocks'] if b['state'] == 'active_allocated']
assert {b['address']: b['size'] for b in active} == live, 'active blocks are not the live allocations'
assert s['allocated_size'] == sum(live.values()) == running
at = s['address']
for b in s['blocks']:
    assert b['address'] == at, (b, at)
    at += b['size']
assert at == s['address'] + s['total_size']
trace = json.load(open(trace_path))['traceEvents']
pid = [e['pid'] for e in trace if e['ph'] == 'M' and e['name'] == 'process_name' and e['args']['name'] == process]
assert len(pid) == 1, process
counters = [e['args']['allocated'] for e in trace if e['ph'] == 'C' and e['pid'] == pid[0]]
assert len(counters) == len(series), (len(counters), len(series))
for c, r in zip(counters, series):
    assert abs(c - r / 1e6) < 1e-9, (c, r)
print('ok', len(series), max(series))
`

// TestMemorySnapshot writes the example's memory snapshot for its peak
// device (rank 8, on a host of 8 GPUs: CUDA device 0) and for rank 13
// (device 5), and has Python check each against the trace. Grouped and
// ungrouped replays must write the same bytes.
func TestMemorySnapshot(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "check.py")
	os.WriteFile(script, []byte(checkSnapshot), 0o644)
	tr := filepath.Join(dir, "t.json")
	for _, tc := range []struct {
		args    []string
		process string
		device  string
	}{
		{nil, "Device 8", "0"},
		{[]string{"--memory-device", "13"}, "Device 13", "5"},
	} {
		snap := filepath.Join(dir, "s.pickle")
		args := append([]string{"replay", "--trace", tr, "--memory-snapshot", snap}, tc.args...)
		code, stdout, stderr := runCLI(append(args, example)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr)
		}
		if !strings.Contains(stdout, "memory_viz") {
			t.Errorf("no note on the snapshot in %q", stdout)
		}
		out, err := exec.Command(py, script, snap, tr, tc.process, tc.device, "8").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "ok") {
			t.Fatalf("%v: python: %v\n%s", tc.args, err, out)
		}
		ungrouped, _ := os.ReadFile(snap)
		gsnap := filepath.Join(dir, "g.pickle")
		code, _, stderr = runCLI(append([]string{"replay", "--report-only", "--group-workers", "--memory-snapshot", gsnap}, append(tc.args, example)...)...)
		if code != exitOK {
			t.Fatalf("grouped: exit %d: %s", code, stderr)
		}
		if grouped, _ := os.ReadFile(gsnap); !bytes.Equal(grouped, ungrouped) {
			t.Errorf("%v: grouped and ungrouped snapshots differ", tc.args)
		}
	}
}

func TestMemorySnapshotFlags(t *testing.T) {
	for _, args := range [][]string{
		{"replay", "--memory-device", "3", example},
		{"replay", "--memory-device", "-2", "--memory-snapshot", "x.pickle", example},
	} {
		if code, _, stderr := runCLI(args...); code != exitInput || !strings.Contains(stderr, "--memory-device") {
			t.Errorf("%q: exit %d, %q", args, code, stderr)
		}
	}
	snap := filepath.Join(t.TempDir(), "s.pickle")
	code, _, stderr := runCLI("replay", "--report-only", "--memory-snapshot", snap, "--memory-device", "16", example)
	if code != exitInput || !strings.Contains(stderr, "--memory-device") || !strings.Contains(stderr, "outside the world") {
		t.Errorf("rank 16 of 16: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(snap); err == nil {
		t.Error("a snapshot was written for a rank outside the world")
	}
}

// TestHTMLFlag: --html writes the page next to the other outputs; an
// unwritable destination fails before the replay, naming the flag.
func TestHTMLFlag(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "r.html")
	code, stdout, stderr := runCLI("replay", "--report-only", "--html", page, example)
	if code != exitOK || !strings.Contains(stdout, "html report") {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	if data, err := os.ReadFile(page); err != nil || strings.Count(string(data), "<svg") != 4 {
		t.Errorf("page: %v, %d plots", err, strings.Count(string(data), "<svg"))
	}
	code, stdout, stderr = runCLI("replay", "--report-only", "--html", filepath.Join(dir, "no", "r.html"), example)
	if code != exitInput || stdout != "" || !strings.HasPrefix(stderr, "fastsim replay: --html:") {
		t.Errorf("unwritable: exit %d, %q, %q", code, stdout, stderr)
	}
}
