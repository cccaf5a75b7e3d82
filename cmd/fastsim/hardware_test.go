package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHardwareCommand(t *testing.T) {
	code, stdout, _ := runCLI("hardware")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, name := range []string{"a100-40gb", "a100-80gb", "h100-sxm", "h200", "b200"} {
		if !strings.Contains(stdout, name) {
			t.Errorf("fastsim hardware does not list %s:\n%s", name, stdout)
		}
	}
	code, stdout, _ = runCLI("hardware", "h100-sxm")
	var spec struct {
		Name    string            `json:"name"`
		Sources map[string]string `json:"sources"`
	}
	if code != exitOK || json.Unmarshal([]byte(stdout), &spec) != nil || spec.Name != "h100-sxm" || len(spec.Sources) == 0 {
		t.Errorf("fastsim hardware h100-sxm: exit %d, %.200s", code, stdout)
	}
	// A printed preset, saved, is a spec file.
	path := filepath.Join(t.TempDir(), "mine.json")
	if err := os.WriteFile(path, []byte(stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := runCLI("hardware", path); code != exitOK || out != stdout {
		t.Errorf("fastsim hardware FILE: exit %d %s", code, stderr)
	}
	if code, _, stderr := runCLI("hardware", "tpu-v9"); code != exitInput || !strings.Contains(stderr, "h100-sxm") {
		t.Errorf("unknown preset: exit %d, %q", code, stderr)
	}
}

func TestHardwareFlags(t *testing.T) {
	hist := "../../examples/train_step.hist"
	ref := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := runCLI(append([]string{"replay", "--report-only"}, append(args, hist)...)...)
		if code != exitOK {
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
		return strings.SplitN(stdout, "\n", 2)[0] // the simulated time
	}
	// --costs reference is the default.
	if a, b := ref(), ref("--costs", "reference"); a != b {
		t.Errorf("--costs reference %q, default %q", b, a)
	}
	// Hardware changes the times, and two GPUs differ.
	a100, h100 := ref("--hardware", "a100-80gb"), ref("--hardware", "h100-sxm")
	if a100 == ref() || a100 == h100 {
		t.Errorf("reference %q, a100 %q, h100 %q", ref(), a100, h100)
	}
	// The SPMD controller is never slower than Monarch's.
	secs := func(line string) float64 {
		var v float64
		if _, err := fmt.Sscanf(strings.TrimPrefix(line, "simulated time"), "%g", &v); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		return v
	}
	if spmd, monarch := secs(ref("--hardware", "h100-sxm", "--controller", "none")), secs(h100); spmd > monarch || spmd <= 0 {
		t.Errorf("--controller none: %g s, monarch %g s", spmd, monarch)
	}
	for _, args := range [][]string{
		{"--costs", "reference", "--hardware", "h100-sxm"},
		{"--hardware", "tpu-v9"},
		{"--hardware", "/no/such/spec.json"},
		{"--controller", "mpi"},
	} {
		code, stdout, stderr := runCLI(append([]string{"replay", "--report-only"}, append(args, hist)...)...)
		if code != exitInput || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q (want exit 2 and one line naming the flag)", args, code, stdout, stderr)
		}
	}
	code, help, _ := runCLI("replay", "--help")
	if code != exitOK || !strings.Contains(help, "-hardware") || !strings.Contains(help, "-controller") {
		t.Errorf("replay --help lacks --hardware or --controller")
	}
	code, help, _ = runCLI("search", "--help")
	if code != exitOK || !strings.Contains(help, "-hardware") {
		t.Errorf("search --help lacks --hardware")
	}
}

// Ops the op table does not know are priced by default and reported: a
// warning line naming them, and unknown_ops in the summary.
func TestUnknownOpsReported(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "odd.hist")
	rank := `"ranks":[{"offset":0,"sizes":[],"strides":[]}]`
	lines := []string{
		`{"fastsim":"history","version":1,"world_size":1}`,
		`{"ts":0,` + rank + `,"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`,
		`{"ts":1,` + rank + `,"msg":{"type":"CallFunction","ident":1,"function":"torch.ops.aten.frobnicate.default","args":[],"kwargs":{},"result":[{"tensor":1,"storage":1,"nbytes":64,"dtype":"float32","shape":[16],"device":"cuda"}],"mutates":[],"stream":{"ref":1}}}`,
	}
	if err := os.WriteFile(hist, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	summary := filepath.Join(dir, "s.json")
	code, _, stderr := runCLI("replay", "--report-only", "--hardware", "h200", "--summary-json", summary, hist)
	if code != exitOK || !strings.Contains(stderr, "1 calls to 1 ops") || !strings.Contains(stderr, "aten.frobnicate") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	data, err := os.ReadFile(summary)
	if err != nil || !strings.Contains(string(data), `"unknown_ops":1`) {
		t.Errorf("summary %s (%v)", data, err)
	}
	if code, _, stderr := runCLI("replay", "--report-only", "--quiet", "--hardware", "h200", hist); code != exitOK || stderr != "" {
		t.Errorf("--quiet: exit %d, stderr %q", code, stderr)
	}
}

// search on hardware takes the GPU's memory from the spec unless given:
// the a100-40gb preset's driver-reported 42,405,855,232 bytes print as
// 42.4 GB.
func TestSearchOnHardware(t *testing.T) {
	args := []string{"search", "--world", "4", "--layers", "2", "--hidden", "64", "--seq", "16", "--batch", "4", "--steps", "1", "--hardware", "a100-40gb"}
	code, stdout, stderr := runCLI(args...)
	if code != exitOK || !strings.Contains(stdout, "fit in 42.4 GB") {
		t.Errorf("exit %d: %s %s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(append(args, "--gpu-memory-gb", "12")...)
	if code != exitOK || !strings.Contains(stdout, "fit in 12.0 GB") {
		t.Errorf("exit %d: %s %s", code, stdout, stderr)
	}
}

// A history that puts more ranks on a host than the hardware's hosts have
// GPUs gets a warning: placement follows the history.
func TestHostMismatchWarned(t *testing.T) {
	hist := filepath.Join(t.TempDir(), "wide.hist")
	all := `"ranks":[{"offset":0,"sizes":[16],"strides":[1]}]`
	lines := []string{
		`{"fastsim":"history","version":1,"world_size":16}`, // gpus_per_host defaults to 16
		`{"ts":0,` + all + `,"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`,
	}
	if err := os.WriteFile(hist, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, stderr := runCLI("replay", "--report-only", "--hardware", "b200", hist)
	if !strings.Contains(stderr, "puts 16 ranks on a host") || !strings.Contains(stderr, "b200 hosts have 8 GPUs") {
		t.Errorf("no warning: %q", stderr)
	}
	if _, _, stderr := runCLI("replay", "--report-only", hist); stderr != "" {
		t.Errorf("warned without --hardware: %q", stderr)
	}
}

// TestCostsRuntimeBound: a fixed runtime of 2^60 ns was accepted, and the
// eighth CallFunction on a stream then overflowed its int64 clock,
// reported at that history line. The costs file is at fault: exit 2, one
// line naming the file and the line of the key.
func TestCostsRuntimeBound(t *testing.T) {
	costs := filepath.Join(t.TempDir(), "costs.json")
	if err := os.WriteFile(costs, []byte("{\n  \"fixed\": {\n    \"call_function_ns\": 1152921504606846976\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI("replay", "--report-only", "--costs", costs, "../../examples/train_step.hist")
	if want := "fastsim replay: --costs: " + costs + ":3: bad costs file: fixed.call_function_ns"; code != exitInput || !strings.HasPrefix(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("exit %d, stderr %q: want exit 2 and one line starting %q", code, stderr, want)
	}
}
