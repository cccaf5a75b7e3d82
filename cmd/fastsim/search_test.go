package main

import (
	"bytes"
	"encoding/json"
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
	// The last shard read from standard input ("-") merges the same.
	last, err := os.Open(files[len(files)-1])
	if err != nil {
		t.Fatal(err)
	}
	defer last.Close()
	cmd := child(append([]string{"search", "merge", "--quiet", "--json", p("stdin-merged.json")}, append(files[7:len(files)-1], "-")...)...)
	cmd.Stdin = last
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("merge with a shard on standard input: %v: %s", err, msg)
	}
	for _, pair := range [][2]string{{"whole.json", "merged.json"}, {"whole.csv", "merged.csv"}, {"whole.json", "stdin-merged.json"}} {
		a, _ := os.ReadFile(p(pair[0]))
		b, _ := os.ReadFile(p(pair[1]))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s and %s differ", pair[0], pair[1])
		}
	}
}

// TestSearchMergeReportCLI: a pruned search on the hardware model and the
// merge of its three shards print the same first line (the layouts
// enumerated, pruned by memory, pruned by the step-time bound, written),
// the same costs line (the hardware by its name and hash) and the same
// table; only the second line differs (what the run simulated; the merge
// says why it has no such count). The JSON of both records the counts,
// which add up to the layouts.
func TestSearchMergeReportCLI(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	// GPUs of 3 MB: some layouts' memory bound exceeds them (the
	// vocabulary is small so that the logits do not dwarf the rest).
	base := []string{"search", "--world", "4", "--layers", "4", "--hidden", "64", "--seq", "32", "--vocab", "256", "--global-batch", "4",
		"--gpus-per-host", "4", "--hardware", "a100-80gb", "--controller", "none", "--gpu-memory-gb", "0.003",
		"--schedules", "1f1b,gpipe", "--zeros", "0,1"}
	var whole, errb bytes.Buffer
	if code := run(append(base, "--json", p("whole.json"), "--csv", p("whole.csv"), "--top", "0"), &whole, &errb); code != exitOK {
		t.Fatalf("search: exit %d: %s", code, errb.String())
	}
	files := []string{"search", "merge", "--top", "0"}
	for k := 0; k < 3; k++ {
		shard := p(fmt.Sprintf("shard-%d.json", k))
		var out bytes.Buffer
		if code := run(append(base, "--shard", fmt.Sprintf("%d/3", k), "--json", shard, "--jobs", "1"), &out, &errb); code != exitOK {
			t.Fatalf("shard %d: exit %d: %s", k, code, errb.String())
		}
		if !strings.HasPrefix(out.String(), fmt.Sprintf("search: shard %d/3: ", k)) {
			t.Errorf("shard %d's report starts %q", k, strings.SplitN(out.String(), "\n", 2)[0])
		}
		files = append(files, shard)
	}
	var merged bytes.Buffer
	if code := run(append(files, "--json", p("merged.json")), &merged, &errb); code != exitOK {
		t.Fatalf("merge: exit %d: %s", code, errb.String())
	}
	w := strings.Split(whole.String(), "\n")
	m := strings.Split(merged.String(), "\n")
	if len(w) < 5 || len(w) != len(m) {
		t.Fatalf("search printed\n%s\nmerge printed\n%s", whole.String(), merged.String())
	}
	if !strings.HasPrefix(w[0], "search: ") || !strings.Contains(w[0], "layouts enumerated") || w[0] != m[0] {
		t.Errorf("first lines: search %q, merge %q", w[0], m[0])
	}
	if !strings.HasPrefix(w[1], "search: ") || !strings.Contains(w[1], "simulated") || !strings.HasPrefix(m[1], "search merge: 3 shards") {
		t.Errorf("second lines: search %q, merge %q", w[1], m[1])
	}
	if !strings.HasPrefix(w[2], "costs: hardware a100-80gb (hardware:sha256:") || w[2] != m[2] {
		t.Errorf("costs lines: search %q, merge %q", w[2], m[2])
	}
	if a, b := strings.Join(w[3:], "\n"), strings.Join(m[3:], "\n"); a != b {
		t.Errorf("tables differ:\n%s\nvs\n%s", a, b)
	}
	a, _ := os.ReadFile(p("whole.json"))
	b, _ := os.ReadFile(p("merged.json"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Error("whole.json and merged.json differ")
	}
	var doc struct {
		Layouts   int               `json:"layouts"`
		Memory    *int              `json:"pruned_by_memory"`
		TimeBound *int              `json:"pruned_by_time_bound"`
		Results   []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(a, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Memory == nil || doc.TimeBound == nil || *doc.Memory == 0 || *doc.TimeBound == 0 || *doc.Memory+*doc.TimeBound+len(doc.Results) != doc.Layouts {
		t.Errorf("JSON counts: %d layouts, pruned by memory %v and by the step-time bound %v, %d results", doc.Layouts, doc.Memory, doc.TimeBound, len(doc.Results))
	} else if want := fmt.Sprintf("search: %d layouts enumerated, %d pruned by memory, %d pruned by the step-time bound", doc.Layouts, *doc.Memory, *doc.TimeBound); !strings.HasPrefix(w[0], want) {
		t.Errorf("first line %q, want it to start %q (the JSON's counts)", w[0], want)
	}
	// The CSV holds a line per result, after its header.
	c, _ := os.ReadFile(p("whole.csv"))
	if n := strings.Count(string(c), "\n") - 1; n != len(doc.Results) {
		t.Errorf("CSV: %d lines, JSON: %d results", n, len(doc.Results))
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
