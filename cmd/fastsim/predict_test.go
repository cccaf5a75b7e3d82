package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPredictJSON predicts a small GPT on one A100 and checks that the
// JSON's figures agree with each other and with the layout.
func TestPredictJSON(t *testing.T) {
	out := filepath.Join(t.TempDir(), "p.json")
	code, stdout, stderr := runCLI("predict", "--layers", "4", "--hidden", "1024", "--seq", "1024", "--world", "2", "--tp", "2",
		"--global-batch", "8", "--micro-batch", "2", "--json", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"step time", "model TFLOP/s per GPU", "model state", "activations"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var p predictJSON
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	if p.World != 2 || p.TP != 2 || p.DP != 1 || p.Hardware != "a100-80gb" || !p.Fits {
		t.Fatalf("%+v", p)
	}
	if math.Abs(p.TokensPerS*p.StepTimeS-8*1024) > 1e-6*8*1024 || math.Abs(p.MFU*312-p.TFLOPsPerGPU) > 1e-9 {
		t.Fatalf("figures disagree: %+v", p)
	}
	if math.Abs(p.ModelStateGiB+p.ActivationGiB-p.PeakMemoryGiB) > 1e-9 {
		t.Fatalf("memory split %g + %g != peak %g", p.ModelStateGiB, p.ActivationGiB, p.PeakMemoryGiB)
	}
}

func TestPredictBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"predict", "--layers", "4", "--hidden", "1024"},                                    // no --world
		{"predict", "--layers", "4", "--hidden", "1024", "--world", "6", "--tp", "4"},       // 6 not a multiple of 4
		{"predict", "--model", "llama2-7b", "--layers", "4", "--world", "8"},                // model and shape
		{"predict", "--model", "nosuch", "--world", "8"},                                    // unknown model
		{"predict", "--layers", "4", "--hidden", "1024", "--world", "1", "--hardware", "x"}, // unknown hardware
		{"predict", "--layers", "4", "--hidden", "1024", "--world", "2", "--grad-reduce", "later"},
		{"predict", "--layers", "4", "--hidden", "1024", "--world", "2", "--zero", "1", "--grad-reduce", "after-backward"},
		{"predict", "--layers", "4", "--hidden", "1024", "--world", "2", "--jobs", "0"},
		// Attention scores of 65,536 heads x 2^24 x 2^24 = 2^64 elements.
		{"predict", "--layers", "1", "--hidden", "1048576", "--heads", "65536", "--seq", "16777216", "--global-batch", "1", "--world", "1"},
	} {
		code, stdout, stderr := runCLI(args...)
		if code != exitInput || stdout != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q: want exit 2 and one line", args, code, stdout, stderr)
		}
	}
}

// TestPredictJobsChangeNothing: --jobs 1 (the workload written inline)
// and --jobs 2 (written on a goroutine of its own beside the replay)
// print the same report but for the line with the timing.
func TestPredictJobsChangeNothing(t *testing.T) {
	var reports []string
	for _, jobs := range []string{"1", "2"} {
		code, stdout, stderr := runCLI("predict", "--model", "megatron-1.7b", "--world", "16", "--tp", "2", "--pp", "4",
			"--global-batch", "16", "--schedule", "interleaved:2", "--jobs", jobs)
		if code != exitOK {
			t.Fatalf("--jobs %s: exit %d, %s", jobs, code, stderr)
		}
		var keep []string
		for _, l := range strings.Split(stdout, "\n") {
			if !strings.HasPrefix(l, "simulated") {
				keep = append(keep, l)
			}
		}
		reports = append(reports, strings.Join(keep, "\n"))
	}
	if reports[0] != reports[1] {
		t.Errorf("--jobs 1:\n%s\n--jobs 2:\n%s", reports[0], reports[1])
	}
}

// TestPredictMeshFlags: --tp 2^32 and --pp 2^32 multiply to 2^64, which
// wraps to 0 in an int; the world was divided by it. Each bad mesh is one
// line naming the flag, exit status 2.
func TestPredictMeshFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--world", "8", "--tp", "4294967296", "--pp", "4294967296"}, "fastsim predict: --tp 4294967296: want 1..8 (--world)"},
		{[]string{"--world", "8", "--tp", "4611686018427387904", "--pp", "4"}, "fastsim predict: --tp 4611686018427387904: want 1..8 (--world)"},
		{[]string{"--world", "1099511627776"}, "fastsim predict: --world 1099511627776: want 1..16777216 GPUs"},
		{nil, "fastsim predict: --world is required"},
	} {
		code, _, stderr := runCLI(append([]string{"predict", "--model", "llama3-8b"}, c.args...)...)
		if code != exitInput || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, c.want) {
			t.Errorf("%q: exit %d, %q; want %d and %q", c.args, code, stderr, exitInput, c.want)
		}
	}
}

// TestPredictMechanisms: the layout line and the JSON name the mechanism
// flags given (in predict.Mechanisms' order, whatever the command line's),
// and none when none is: "mechanisms none" and [] (not null).
func TestPredictMechanisms(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		flags []string
		line  string
		json  []string
	}{
		{nil, "; mechanisms none\n", []string{}},
		{[]string{"--blocking-p2p", "--grad-reduce", "after-backward"}, "; mechanisms --grad-reduce after-backward --blocking-p2p\n",
			[]string{"--grad-reduce after-backward", "--blocking-p2p"}},
		{[]string{"--flash-attention", "--apex-layer-norm", "--half-grad-reduce"}, "; mechanisms --half-grad-reduce --apex-layer-norm --flash-attention\n",
			[]string{"--half-grad-reduce", "--apex-layer-norm", "--flash-attention"}},
	} {
		out := filepath.Join(dir, "p.json")
		args := append([]string{"predict", "--layers", "2", "--hidden", "256", "--seq", "256", "--world", "2",
			"--global-batch", "4", "--micro-batch", "2", "--json", out}, c.flags...)
		code, stdout, stderr := runCLI(args...)
		if code != exitOK {
			t.Fatalf("%q: exit %d: %s", c.flags, code, stderr)
		}
		if layout, _, _ := strings.Cut(stdout, "\n"); !strings.HasPrefix(layout, "layout ") || !strings.HasSuffix(layout+"\n", c.line) {
			t.Errorf("%q: layout line %q, want it to end %q", c.flags, layout, c.line)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			Mechanisms []string `json:"mechanisms"`
		}
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatal(err)
		}
		if p.Mechanisms == nil || !slices.Equal(p.Mechanisms, c.json) {
			t.Errorf("%q: JSON mechanisms %#v, want %#v", c.flags, p.Mechanisms, c.json)
		}
	}
}

// TestPredictNotesTPAcrossHosts: a tensor-parallel group larger than a
// host (8 GPUs on a100-80gb), or groups that do not tile a host, are
// predicted with a note that says so; groups within hosts get none.
func TestPredictNotesTPAcrossHosts(t *testing.T) {
	for _, c := range []struct {
		tp, world, note string
	}{
		{"16", "16", "a tensor-parallel group of 16 spans hosts of 8 GPUs"},
		// Ranks 6-8 form a group across the first two hosts.
		{"3", "24", "tensor-parallel groups of 3 do not tile hosts of 8 GPUs"},
		{"8", "16", ""},
		{"4", "16", ""},
	} {
		code, stdout, stderr := runCLI("predict", "--layers", "2", "--hidden", "3072", "--heads", "48", "--seq", "256", "--world", c.world, "--tp", c.tp, "--global-batch", "16")
		if code != exitOK {
			t.Fatalf("tp %s: exit %d: %s", c.tp, code, stderr)
		}
		got := strings.Contains(stdout, "note ")
		if got != (c.note != "") || c.note != "" && !strings.Contains(stdout, c.note) {
			t.Errorf("tp %s: want note %q:\n%s", c.tp, c.note, stdout)
		}
	}
}
