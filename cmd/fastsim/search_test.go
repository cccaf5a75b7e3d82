package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSearchShardsCLI: three shards merged by 'search merge' write the same
// JSON and CSV as the unsharded search; bad input exits 2.
func TestSearchShardsCLI(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	base := []string{"search", "--world", "8", "--layers", "4", "--hidden", "64", "--seq", "32", "--batch", "8",
		"--gpus-per-host", "4", "--costs", "../../examples/costs.json", "--quiet"}
	var out, errb bytes.Buffer
	if code := run(append(base, "--json", p("whole.json"), "--csv", p("whole.csv")), &out, &errb); code != exitOK {
		t.Fatalf("search: exit %d: %s", code, errb.String())
	}
	mergedEqualsWhole(t, p, append(base, "--jobs", "2"))
	for _, args := range [][]string{
		{"search"}, // no --world
		{"search", "--world", "8", "--shard", "8/8"}, // K out of range
		{"search", "--world", "8", "--costs", p("missing.json")},
		{"search", "merge", p("shard-0.json")}, // shards 1 and 2 missing
	} {
		if code := run(args, &out, &errb); code != exitInput {
			t.Errorf("%v: exit %d, want %d", args, code, exitInput)
		}
	}
}

// TestSearchPinnedShardsCLI: a transformer search with every way of
// training pinned (one schedule, recomputation, sequence parallelism and
// ZeRO stage) writes each record's way out; its shards merge into the
// unsharded search's JSON and CSV, the layout behind each index checked.
func TestSearchPinnedShardsCLI(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	base := []string{"search", "--world", "8", "--layers", "4", "--hidden", "64", "--seq", "32", "--global-batch", "8",
		"--steps", "2", "--gpus-per-host", "4", "--schedule", "1f1b", "--recompute", "none", "--zero", "0",
		"--sequence-parallel=false", "--quiet"}
	var out, errb bytes.Buffer
	if code := run(append(base, "--json", p("whole.json"), "--csv", p("whole.csv")), &out, &errb); code != exitOK {
		t.Fatalf("search: exit %d: %s", code, errb.String())
	}
	mergedEqualsWhole(t, p, base)
}

// TestSearchPruneCLI: over the real space (every schedule, recomputation,
// sequence parallelism and ZeRO stage by default), the pruned search and
// --no-prune rank the same layout first; a dimension given both pinned and
// as a list is refused.
func TestSearchPruneCLI(t *testing.T) {
	dir := t.TempDir()
	base := []string{"search", "--world", "4", "--layers", "4", "--hidden", "64", "--seq", "32", "--global-batch", "4",
		"--gpus-per-host", "4", "--hardware", "a100-80gb", "--controller", "none", "--quiet"}
	first := func(extra ...string) string {
		t.Helper()
		csv := filepath.Join(dir, "out.csv")
		var out, errb bytes.Buffer
		if code := run(append(append(base, extra...), "--csv", csv), &out, &errb); code != exitOK {
			t.Fatalf("%v: exit %d: %s", extra, code, errb.String())
		}
		data, err := os.ReadFile(csv)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(data, []byte("\n"))
		if len(lines) < 3 {
			t.Fatalf("%v: CSV %q", extra, data)
		}
		// The layout, its step and memory, how it trains: not the bounds,
		// which --no-prune does not compute.
		return string(bytes.Join(bytes.Split(lines[1], []byte(","))[:15], []byte(",")))
	}
	if a, b := first(), first("--no-prune"); a != b {
		t.Errorf("best layout pruned %q, unpruned %q", a, b)
	}
	var out, errb bytes.Buffer
	if code := run(append(base, "--schedule", "1f1b", "--schedules", "1f1b"), &out, &errb); code != exitInput {
		t.Errorf("--schedule with --schedules: exit %d, want %d", code, exitInput)
	}
}

// TestSearchToyCLI: the toy workload's search, whose layouts go to the
// engine as typed records, merges from three shards into the same JSON
// and CSV as the unsharded search; --cpuprofile writes a profile, and an
// unwritable one is refused before the search runs.
func TestSearchToyCLI(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	base := []string{"search", "--workload", "toy", "--world", "16", "--layers", "4", "--hidden", "64", "--seq", "32", "--batch", "8",
		"--gpus-per-host", "4", "--quiet"}
	var out, errb bytes.Buffer
	if code := run(append(base, "--json", p("whole.json"), "--csv", p("whole.csv"), "--cpuprofile", p("cpu.pprof")), &out, &errb); code != exitOK {
		t.Fatalf("search: exit %d: %s", code, errb.String())
	}
	// A pprof profile is gzip-compressed protobuf.
	if data, err := os.ReadFile(p("cpu.pprof")); err != nil || len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		t.Errorf("--cpuprofile: not a profile (%v)", err)
	}
	mergedEqualsWhole(t, p, base)
	errb.Reset()
	if code := run(append(base, "--cpuprofile", p("missing/cpu.pprof")), &out, &errb); code != exitInput || !bytes.Contains(errb.Bytes(), []byte("--cpuprofile")) {
		t.Errorf("unwritable --cpuprofile: exit %d, %q", code, errb.String())
	}
}

// mergedEqualsWhole runs search base as three shards, merges them, and
// checks that the merge wrote the same JSON and CSV as the unsharded
// search already wrote to whole.json and whole.csv (p names the files).
func mergedEqualsWhole(t *testing.T, p func(string) string, base []string) {
	t.Helper()
	var out, errb bytes.Buffer
	files := []string{"search", "merge", "--quiet", "--json", p("merged.json"), "--csv", p("merged.csv")}
	for k := 0; k < 3; k++ {
		shard := p(fmt.Sprintf("shard-%d.json", k))
		if code := run(append(base, "--shard", fmt.Sprintf("%d/3", k), "--json", shard), &out, &errb); code != exitOK {
			t.Fatalf("shard %d: exit %d: %s", k, code, errb.String())
		}
		files = append(files, shard)
	}
	if code := run(files, &out, &errb); code != exitOK {
		t.Fatalf("merge: exit %d: %s", code, errb.String())
	}
	for _, pair := range [][2]string{{"whole.json", "merged.json"}, {"whole.csv", "merged.csv"}} {
		a, _ := os.ReadFile(p(pair[0]))
		b, _ := os.ReadFile(p(pair[1]))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s and %s differ", pair[0], pair[1])
		}
	}
}

// TestSearchProgressQuiet runs a search with its standard error on a
// terminal (util-linux script gives it one): it draws a progress line,
// and with --quiet it draws none.
func TestSearchProgressQuiet(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("no script(1) to give the child a terminal")
	}
	base := []string{"search", "--workload", "toy", "--world", "4", "--layers", "2", "--batch", "4"}
	for _, quiet := range []bool{false, true} {
		args := base
		if quiet {
			args = append(args, "--quiet")
		}
		cmd := exec.Command("script", "-q", "-e", "-c", os.Args[0]+" -test.run=^$", "/dev/null")
		cmd.Env = append(os.Environ(), "FASTSIM_CHILD="+strings.Join(args, "\x1f"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v: %s", args, err, out)
		}
		if drawn := bytes.Contains(out, []byte("fastsim search: ")); drawn == quiet {
			t.Errorf("quiet %v: progress drawn %v: %q", quiet, drawn, out)
		}
	}
}

// TestGPUMemoryFlag: a GPU memory that is not a number, under a byte or
// over 1e9 GB is refused naming --gpu-memory-gb (NaN passed the old test,
// which only NaN fails both ways, and a space check spoke of the space).
func TestGPUMemoryFlag(t *testing.T) {
	for _, v := range []string{"NaN", "1e-12", "0", "-1", "1e30", "+Inf"} {
		code, _, stderr := runCLI("search", "--world", "4", "--workload", "toy", "--layers", "2", "--batch", "4", "--quiet", "--gpu-memory-gb", v)
		if code != exitInput || !strings.HasPrefix(stderr, "fastsim search: --gpu-memory-gb ") {
			t.Errorf("%s: exit %d, %q", v, code, stderr)
		}
	}
	if code, _, stderr := runCLI("search", "--world", "4", "--workload", "toy", "--layers", "2", "--batch", "4", "--quiet", "--gpu-memory-gb", "1e-9"); code != exitOK {
		t.Errorf("one byte: exit %d, %q", code, stderr)
	}
}
