package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPredictRefusesNoOpLayouts: --zero above 0 with one data-parallel
// replica and --sequence-parallel with one tensor-parallel shard train as
// the layout without them; predict refuses them, as search leaves them
// out, instead of reporting them under a name that says otherwise.
func TestPredictRefusesNoOpLayouts(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		// 8 GPUs / (tp 8 x pp 1) = dp 1.
		{[]string{"--world", "8", "--tp", "8", "--zero", "1"}, "fastsim predict: --zero 1: "},
		{[]string{"--world", "8", "--tp", "8", "--zero", "3"}, "fastsim predict: --zero 3: "},
		{[]string{"--world", "8", "--pp", "8", "--sequence-parallel"}, "fastsim predict: --sequence-parallel: "},
	} {
		code, stdout, stderr := runCLI(append([]string{"predict", "--model", "llama3-8b"}, c.args...)...)
		if code != exitInput || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, c.want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestPredictModelFileName: a model file without "name" is named by the
// file's base name, not "".
func TestPredictModelFileName(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny-gpt.json")
	if err := os.WriteFile(model, []byte(`{"layers": 2, "hidden": 256, "heads": 4, "vocab": 1000, "seq": 128}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "p.json")
	code, stdout, stderr := runCLI("predict", "--model", model, "--world", "2", "--json", out)
	if code != exitOK || !strings.HasPrefix(stdout, "layout               tiny-gpt on 2 x ") {
		t.Fatalf("exit %d, %q, %q", code, stdout, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc.Model != "tiny-gpt" {
		t.Errorf("model %q, %v; want tiny-gpt", doc.Model, err)
	}
}
