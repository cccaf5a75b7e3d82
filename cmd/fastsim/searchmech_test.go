package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/search"
)

// TestSearchMechanismsEqualPredict: search takes predict's mechanism
// flags, and each layout it simulates with them has the step time and
// peak memory predict gives that layout with the same flags (both on the
// hardware model with no controller cost). The JSON records the
// mechanisms in its space, and the layouts differ from a search without
// them.
func TestSearchMechanismsEqualPredict(t *testing.T) {
	dir := t.TempDir()
	mfile := filepath.Join(dir, "model.json")
	if err := os.WriteFile(mfile, []byte(`{"name":"g","layers":4,"hidden":512,"heads":8,"vocab":1024,"seq":256,"bias":true,"tied":true,"dtype":"bfloat16"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	mech := []string{"--grad-reduce", "after-backward", "--half-grad-reduce", "--fp16-grads", "--apex-layer-norm", "--blocking-p2p", "--fp32-cross-entropy"}
	common := []string{"--model", mfile, "--hardware", "a100-80gb", "--recompute", "full"}
	searchOf := func(extra ...string) *search.Doc {
		t.Helper()
		return searchDoc(t, append(append(append([]string{}, common...), "--controller", "none", "--world", "8", "--global-batch", "8", "--zero", "0",
			"--schedule", "1f1b", "--no-prune"), extra...)...)
	}
	doc := searchOf(mech...)
	sp := doc.Space
	if sp.GradReduce != "after-backward" || !sp.HalfGradReduce || !sp.FP16Grads || !sp.ApexLayerNorm || !sp.BlockingP2P || !sp.FP32CrossEntropy || sp.FuseGradAccumulation || sp.NoScatterGather {
		t.Fatalf("the JSON's space %+v does not hold the mechanisms given", sp)
	}
	plain := searchOf()
	if len(plain.Results) != len(doc.Results) || len(doc.Results) < 4 {
		t.Fatalf("%d layouts with the mechanisms, %d without", len(doc.Results), len(plain.Results))
	}
	differ := 0
	pfile := filepath.Join(dir, "p.json")
	for i, r := range doc.Results {
		if plain.Results[i].StepTimeNs != r.StepTimeNs {
			differ++
		}
		args := append(append(append([]string{}, common...), "--world", "8", "--global-batch", "8", "--tp", strconv.Itoa(r.TP), "--pp", strconv.Itoa(r.PP),
			"--micro-batch", strconv.Itoa(r.MicroBatch), "--sequence-parallel="+strconv.FormatBool(r.SequenceParallel), "--quiet", "--json", pfile), mech...)
		var stdout, stderr bytes.Buffer
		if code := predictCmd(args, &stdout, &stderr); code != exitOK {
			t.Fatalf("predict %q: exit %d: %s", args, code, stderr.String())
		}
		var p struct {
			StepTimeS  float64  `json:"step_time_s"`
			PeakGiB    float64  `json:"peak_memory_gib"`
			Mechanisms []string `json:"mechanisms"`
		}
		data, err := os.ReadFile(pfile)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatalf("predict --json: %v: %s", err, data)
		}
		if got := int64(math.Round(p.StepTimeS * 1e9)); got != r.StepTimeNs {
			t.Errorf("layout %v: search step %d ns, predict %d ns", r.Layout, r.StepTimeNs, got)
		}
		if got := p.PeakGiB * (1 << 30); math.Abs(got-float64(r.PeakBytes)) > 1 {
			t.Errorf("layout %v: search peak %d bytes, predict %.0f", r.Layout, r.PeakBytes, got)
		}
		if strings.Join(p.Mechanisms, " ") != "--grad-reduce after-backward --half-grad-reduce --blocking-p2p --fp32-cross-entropy --apex-layer-norm --fp16-grads" {
			t.Errorf("predict ran with %q", p.Mechanisms)
		}
	}
	if differ == 0 {
		t.Error("every layout's step is the same with the mechanisms as without: they were not applied")
	}
}

// TestSearchMechanismFlagsRefused: the mechanism flags' own conflicts, and
// those with the ZeRO stages searched, are refused naming the flags.
func TestSearchMechanismFlagsRefused(t *testing.T) {
	base := []string{"--model", "megatron-1.7b", "--world", "8", "--global-batch", "8", "--quiet"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--grad-reduce", "later"}, `fastsim search: --grad-reduce "later": want overlap or after-backward`},
		{[]string{"--fp16-grads", "--zero", "0"}, "fastsim search: --fp16-grads: its 16-bit gradients are reduced in 16 bits; give --half-grad-reduce with it"},
		{[]string{"--fp16-grads", "--half-grad-reduce", "--fuse-grad-accumulation", "--zero", "0"}, "drop --fuse-grad-accumulation"},
		{[]string{"--fp16-grads", "--half-grad-reduce"}, "fastsim search: --fp16-grads: Megatron-LM ran it without ZeRO, and the space holds ZeRO stages 0,1,2,3 (--zero, --zeros); search with --zero 0"},
		{[]string{"--grad-reduce", "after-backward", "--zeros", "0,1"}, "fastsim search: --grad-reduce after-backward: Megatron-LM ran it without ZeRO, and the space holds ZeRO stages 0,1 (--zero, --zeros); search with --zero 0"},
		{[]string{"--grad-reduce", "after-backward", "--zero", "2"}, "search with --zero 0"},
		{[]string{"--workload", "toy", "--blocking-p2p"}, "--blocking-p2p: only the transformer workload reads it"},
	} {
		var stdout, stderr bytes.Buffer
		args := append(append([]string{}, base...), c.args...)
		if c.args[0] == "--workload" {
			args = append([]string{"--world", "8", "--quiet"}, c.args...)
		}
		if code := searchCmd(args, &stdout, &stderr); code != exitInput || !strings.Contains(stderr.String(), c.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("search %q: exit %d, %q; want exit %d and one line with %q", args, code, stderr.String(), exitInput, c.want)
		}
	}
}

// onlyStageZero reads a --zeros list as the search does, spaces and all.
func TestOnlyStageZero(t *testing.T) {
	for zeros, want := range map[string]bool{"": true, "0": true, " 0": true, "0 ": true, "1": false, "0,1": false, " 0, 2": false, "3,0": false} {
		if got := onlyStageZero(zeros); got != want {
			t.Errorf("onlyStageZero(%q) = %v, want %v", zeros, got, want)
		}
	}
}
