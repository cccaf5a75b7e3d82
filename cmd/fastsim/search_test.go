package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
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
	files := []string{"search", "merge", "--quiet", "--json", p("merged.json"), "--csv", p("merged.csv")}
	for k := 0; k < 3; k++ {
		shard := p(fmt.Sprintf("shard-%d.json", k))
		if code := run(append(base, "--jobs", "2", "--shard", fmt.Sprintf("%d/3", k), "--json", shard), &out, &errb); code != exitOK {
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
