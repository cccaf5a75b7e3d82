package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSearchInterrupt: Ctrl-C during a search (one of about 10 s) stops
// it with exit status 130 and still writes the layouts simulated so far:
// the table, --json marked "partial": true with as many results as the
// first line says were simulated, --csv with those rows; search merge
// refuses that JSON.
func TestSearchInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	dir := t.TempDir()
	js, csv := filepath.Join(dir, "p.json"), filepath.Join(dir, "p.csv")
	cmd := child("search", "--world", "64", "--layers", "16", "--no-prune", "--jobs", "1", "--json", js, "--csv", csv)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // some layouts are simulated, far from all
	interruptAndWait(t, cmd, "searching", &out, &errb)
	m := regexp.MustCompile(`^PARTIAL: search interrupted \(Ctrl-C\) after (\d+) of (\d+) layouts were simulated`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("stdout %q, stderr %q; want the PARTIAL line first", out.String(), errb.String())
	}
	n, _ := strconv.Atoi(m[1])
	total, _ := strconv.Atoi(m[2])
	if n >= total {
		t.Errorf("%d of %d layouts simulated; want fewer than all", n, total)
	}
	if !strings.Contains(out.String(), "\n  rank ") && n > 0 {
		t.Errorf("no table: %q", out.String())
	}
	data, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Partial bool              `json:"partial"`
		Results []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || !doc.Partial || len(doc.Results) != n {
		t.Errorf("--json: partial %v, %d results (%v); want partial, %d", doc.Partial, len(doc.Results), err, n)
	}
	rows, err := os.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(rows), "\n"); got != n+1 {
		t.Errorf("--csv: %d lines; want a header and %d rows", got, n)
	}
	code, _, stderr := runCLI("search", "merge", js)
	if code != exitInput || !strings.Contains(stderr, js+":") || !strings.Contains(stderr, "a partial result") {
		t.Errorf("merge: exit %d, %q; want %d and the partial result named", code, stderr, exitInput)
	}
}

// TestMergeNotSearch: search merge of a file that is another of
// fastsim's outputs (a replay's --summary-json, a predict --json, a
// history) says it is not a search's --json, in one line with exit
// status 2, not which of its fields a search document lacks.
func TestMergeNotSearch(t *testing.T) {
	dir := t.TempDir()
	summary, pred := filepath.Join(dir, "s.json"), filepath.Join(dir, "p.json")
	if code, _, stderr := runCLI("replay", "--report-only", "--quiet", "--summary-json", summary, example); code != exitOK {
		t.Fatalf("replay: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI("predict", "--world", "8", "--tp", "2", "--pp", "1", "--layers", "4", "--hidden", "512", "--hardware", "a100-80gb", "--json", pred); code != exitOK {
		t.Fatalf("predict: exit %d, %q", code, stderr)
	}
	for _, c := range []struct{ file, why string }{
		{summary, `it has no "fastsim" field`},
		{pred, `it has no "fastsim" field`},
		{example, `its "fastsim" field is "history"`},
	} {
		code, stdout, stderr := runCLI("search", "merge", c.file)
		want := fmt.Sprintf("fastsim search merge: %s:1: shards do not merge: not a fastsim search --json document (%s)\n", c.file, c.why)
		if code != exitInput || stdout != "" || stderr != want {
			t.Errorf("merge %s: exit %d, %q; want %d, %q", c.file, code, stderr, exitInput, want)
		}
	}
}
