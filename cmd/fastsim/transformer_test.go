package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSynthModelCLI writes a transformer history with every transformer
// flag, replays it grouped, and checks that bad flags exit 2 naming the
// flag.
func TestSynthModelCLI(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "llama.hist")
	var so, se bytes.Buffer
	args := []string{"synth", "--model", "llama2-7b", "--tp", "2", "--pp", "3", "--dp", "2", "--micro-batch", "1",
		"--global-batch", "12", "--schedule", "interleaved:2", "--recompute", "selective", "--sequence-parallel",
		"--zero", "1", "--flash-attention", "--steps", "1", out}
	// 32 layers do not split into 3 stages x 2 chunks.
	if code := run(args, &so, &se); code != exitInput || !strings.Contains(se.String(), "32 layers") {
		t.Fatalf("synth: exit %d: %s", code, se.String())
	}
	model := filepath.Join(dir, "m.json")
	if err := os.WriteFile(model, []byte(`{"name":"m","layers":6,"hidden":128,"heads":4,"kv_heads":2,"ffn":256,"vocab":300,"seq":64,"gated":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	args[2] = model
	se.Reset()
	if code := run(args, &so, &se); code != exitOK {
		t.Fatalf("synth: exit %d: %s", code, se.String())
	}
	so.Reset()
	if code := run([]string{"replay", "--group-workers", "--report-only", out}, &so, &se); code != exitOK || !strings.Contains(so.String(), "12 workers") {
		t.Fatalf("replay: exit %d: %s %s", code, so.String(), se.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"synth", "--model", "megatron-1.7b", "--layers", "3", out}, "--layers"},
		{[]string{"synth", "--schedule", "gpipe", out}, "--schedule"},
		{[]string{"synth", "--model", "megatron-1.7b", "--schedule", "pipedream", out}, "--schedule"},
		{[]string{"synth", "--model", "megatron-1.7b", "--recompute", "some", out}, "--recompute"},
		{[]string{"synth", "--model", "megatron-1.7b", "--zero", "4", out}, "--zero 4: want 0, 1, 2 or 3"},
		// As predict refuses them: nothing to shard, nothing to split.
		{[]string{"synth", "--model", "megatron-1.7b", "--dp", "1", "--zero", "1", out}, "--zero 1: ZeRO shards over the data-parallel replicas and --dp is 1"},
		{[]string{"synth", "--model", "megatron-1.7b", "--tp", "1", "--sequence-parallel", out}, "--sequence-parallel: it splits over the tensor-parallel shards and --tp is 1"},
		{[]string{"synth", "--model", "nope", out}, "--model"},
		{[]string{"synth", "--model", "megatron-1.7b", "--tp", "5", out}, "tp 5"},
		{[]string{"synth", "--model", "megatron-1.7b", "--dp", "2", "--global-batch", "2", "--zero", "1", "--fp16-grads", out}, "--fp16-grads: Megatron-LM's fp16 optimizer of 2021 ran without ZeRO; drop --zero 1"},
		{[]string{"synth", "--model", "megatron-1.7b", "--fuse-grad-accumulation", "--fp16-grads", out}, "ran without gradient accumulation fusion; drop --fuse-grad-accumulation"},
		{[]string{"synth", "--model", "megatron-1.7b", "--dp", "2", "--global-batch", "2", "--grad-reduce", "after-backward", "--zero", "2", out}, "--grad-reduce after-backward is Megatron-LM's local DDP"},
		{[]string{"synth", "--model", "megatron-1.7b", "--dp", "2", "--global-batch", "2", "--fp16-grads", out}, "--fp16-grads: its 16-bit gradients are reduced in 16 bits; give --half-grad-reduce"},
		{[]string{"synth", "--model", "toy", "--fp16-grads", out}, "--fp16-grads"},
	} {
		se.Reset()
		if code := run(c.args, &so, &se); code != exitInput || !strings.Contains(se.String(), c.want) {
			t.Errorf("%v: exit %d, %q (want 2 and %q)", c.args, code, se.String(), c.want)
		}
	}
	so.Reset()
	if code := run([]string{"synth", "--help"}, &so, &se); code != exitOK {
		t.Fatalf("--help: exit %d", code)
	}
}

// TestBatchFlagsBounded: a micro-batch whose product with the replicas
// wraps an int64 (2^62 x 8 = 2^65 wraps to 0) made predict divide by zero;
// the batch flags are now bounded and name themselves.
func TestBatchFlagsBounded(t *testing.T) {
	for _, c := range []struct {
		flag string
		args []string
	}{
		{"--micro-batch", []string{"predict", "--model", "llama3-8b", "--world", "8", "--micro-batch", "4611686018427387904", "--global-batch", "8"}},
		{"--global-batch", []string{"predict", "--model", "llama3-8b", "--world", "8", "--global-batch", "9223372036854775807"}},
		{"--micro-batch", []string{"synth", "--model", "llama3-8b", "--micro-batch", "0", "x.hist"}},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != exitInput || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, ": "+c.flag+" ") {
			t.Errorf("%q: exit %d, %q; want %d naming %s", c.args, code, stderr, exitInput, c.flag)
		}
	}
}

// TestModelHelpMatchesCommand: the --model help offers 'toy' only where
// --model toy is accepted (synth); predict and search refuse it, so their
// help must not offer it.
func TestModelHelpMatchesCommand(t *testing.T) {
	for _, c := range []struct {
		cmd    string
		accept bool
		args   []string
	}{
		{"synth", true, []string{"synth", "--model", "toy", filepath.Join(t.TempDir(), "toy.hist")}},
		{"predict", false, []string{"predict", "--model", "toy", "--world", "4"}},
		{"search", false, []string{"search", "--model", "toy", "--world", "4", "--batch", "4", "--quiet"}},
	} {
		_, help, _ := runCLI(c.cmd, "--help")
		_, modelHelp, _ := strings.Cut(help, "  -model NAME\n")
		modelHelp, _, _ = strings.Cut(modelHelp, "\n  -")
		if offered := strings.Contains(modelHelp, "'toy'"); offered != c.accept {
			t.Errorf("%s --help offers toy: %v, want %v: %q", c.cmd, offered, c.accept, modelHelp)
		}
		if code, _, stderr := runCLI(c.args...); (code == exitOK) != c.accept {
			t.Errorf("%q: exit %d, %q", c.args, code, stderr)
		}
	}
}
