package hardware

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPresetsLoadAndCite(t *testing.T) {
	want := []string{"a100-40gb", "a100-80gb", "aws-p4de", "b200", "h100-sxm", "h200"}
	got := Presets()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("presets %v, want %v", got, want)
	}
	for _, name := range got {
		s, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if s.Name != name {
			t.Errorf("%s: name %q", name, s.Name)
		}
		// Every preset cites the sources of its figures.
		for _, k := range []string{"gpu.peak_dense_tflops", "gpu.hbm", "gpu.gemm_efficiency", "gpu.memory_efficiency",
			"gpu.launch_overhead_ns", "host.nvlink_gbps", "host.nvlink_efficiency", "network.nic_gbps_per_gpu",
			"network.nic_efficiency", "network.step_latency_us", "host.nvlink_step_latency_us",
			"gpu.vector_fp32_tflops", "host.gpus_per_host"} {
			if s.Sources[k] == "" {
				t.Errorf("%s: no source for %s", name, k)
			}
		}
		if s.Host.NVLSGBps > 0 && (s.Sources["host.nvls_gbps"] == "" || s.Sources["host.nvls_latency_us"] == "") {
			t.Errorf("%s: NVLS figures without sources", name)
		}
		if s.Host.NVLSChannels > 0 && (s.Sources["host.nvls_channels"] == "" || s.Sources["host.nvls_chunk_bytes"] == "") {
			t.Errorf("%s: NVLS pipeline figures without sources", name)
		}
		if s.Network.TreeMaxGBpsPerChannel > 0 && s.Sources["network.tree_max_gbps_per_channel"] == "" {
			t.Errorf("%s: tree bandwidth cap without a source", name)
		}
		if (s.Network.Kind != "" || s.Network.PluginLatencyUs > 0) && (s.Sources["network.kind"] == "" || s.Sources["network.plugin_latency_us"] == "") {
			t.Errorf("%s: network kind or plugin latency without a source", name)
		}
		if len(s.Host.CollectiveEfficiency) > 0 && s.Sources["host.collective_efficiency"] == "" {
			t.Errorf("%s: collective efficiency curve without a source", name)
		}
		if s.Host.GPUsPerHost != 8 {
			t.Errorf("%s: %d GPUs per host, want 8 (DGX/HGX)", name, s.Host.GPUsPerHost)
		}
	}
}

// Datasheet figures the presets must carry, as published (see each
// preset's sources); the memory capacity is the total global memory the
// driver reports, in 10^9 bytes (deviceQuery's bytes, or PyTorch's
// total_memory in MiB x 2^20 where only that was found).
func TestPresetFigures(t *testing.T) {
	cases := []struct {
		name            string
		bf16, fp8, hbm  float64
		tbps, nvlinkGBs float64
	}{
		{"a100-40gb", 312, 0, 42.406, 1.555, 300},      // deviceQuery 42,405,855,232 bytes
		{"a100-80gb", 312, 0, 85.1, 2.039, 300},        // deviceQuery 85,100,068,864 bytes
		{"aws-p4de", 312, 0, 85.1, 2.039, 300},         // the same A100-SXM4-80GB
		{"h100-sxm", 989.4, 1978.9, 85.045, 3.35, 450}, // deviceQuery 85,045,477,376 bytes
		{"h200", 989.4, 1978.9, 150.11, 4.8, 450},      // 143,156 MiB = 150,109,945,856 bytes
		{"b200", 2250, 4500, 191.514, 8.0, 900},        // 182,642 MiB = 191,514,017,792 bytes
	}
	for _, c := range cases {
		s, err := Preset(c.name)
		if err != nil {
			t.Fatal(err)
		}
		g := s.GPU
		if g.PeakDenseTFLOPS["bf16"] != c.bf16 || g.PeakDenseTFLOPS["fp8"] != c.fp8 || g.HBMGB != c.hbm ||
			g.HBMTBps != c.tbps || s.Host.NVLinkGBps != c.nvlinkGBs {
			t.Errorf("%s: %+v %+v", c.name, g, s.Host)
		}
		if _, ok := g.PeakTFLOPS("float8_e4m3fn"); ok != (c.fp8 > 0) {
			t.Errorf("%s: fp8 support %v", c.name, ok)
		}
	}
}

func TestCurve(t *testing.T) {
	c := Curve{{10, 0.1}, {1000, 0.4}, {1e5, 0.8}}
	cases := []struct{ x, want float64 }{
		{1, 0.1},                  // below the first point: constant
		{10, 0.1},                 // on a point
		{100, 0.2},                // power law: 0.1 * (100/10)^(ln 4 / ln 100) = 0.1 * 10^0.30103 = 0.2
		{1000, 0.4},               // on a point
		{1e4, 0.4 * math.Sqrt(2)}, // 0.4 * 10^(ln 2 / ln 100) = 0.4 * 2^0.5
		{1e9, 0.8},                // above the last point: constant
	}
	for _, k := range cases {
		if got := c.At(k.x); math.Abs(got-k.want) > 1e-12 {
			t.Errorf("At(%g) = %g, want %g", k.x, got, k.want)
		}
	}
	if got := (Curve{}).At(5); got != 1 {
		t.Errorf("empty curve: %g", got)
	}
}

func TestParseErrors(t *testing.T) {
	good, _ := PresetJSON("h100-sxm")
	mutate := func(old, new string) string {
		s := strings.Replace(string(good), old, new, 1)
		if s == string(good) {
			t.Fatalf("%q not in the preset", old)
		}
		return s
	}
	for _, bad := range []string{
		`{`,
		`{"name":"x"}`,
		mutate(`"hbm_tbps": 3.35`, `"hbm_tbps": 0`),
		mutate(`"hbm_tbps": 3.35`, `"hbm_tbps": 3.35, "extra": 1`),
		mutate(`"nvlink_efficiency": 0.8222`, `"nvlink_efficiency": 1.5`),
		mutate(`"bf16": 989.4`, `"bf8": 989.4`),
		mutate(`"nvls_gbps": 476`, `"nvls_gbps": -1`),
		mutate(`"nvls_latency_us": 25`, `"nvls_latency_us": -25`),
		// An NVLS channel count and chunk out of range.
		mutate(`"nvls_channels": 16`, `"nvls_channels": -16`),
		mutate(`"nvls_chunk_bytes": 131072`, `"nvls_chunk_bytes": -1`),
		// A network kind the model does not know, a negative plugin
		// latency.
		mutate(`"tree_max_gbps_per_channel": 41.4`, `"tree_max_gbps_per_channel": 41.4, "kind": "omnipath"`),
		mutate(`"tree_max_gbps_per_channel": 41.4`, `"tree_max_gbps_per_channel": 41.4, "plugin_latency_us": -75`),
		// An NCCL release whose tuning constants the model does not hold.
		mutate(`"name": "h100-sxm",`, `"name": "h100-sxm", "nccl": "2.19",`),
		// A compute capability out of range; NCCL 2.27, whose LL cap
		// is per GPU generation, on a GPU that does not give its own.
		mutate(`"compute_capability": 90`, `"compute_capability": -90`),
		strings.Replace(mutate(`"name": "h100-sxm",`, `"name": "h100-sxm", "nccl": "2.27",`), `"compute_capability": 90,`, ``, 1),
		// Efficiency growing as fast as the size: 0.0243 at 2^25 FLOPs to
		// 0.9 at 2^28 grows 37x for 8x the size.
		mutate("0.0971", "0.9"),
		string(good) + "{}",
	} {
		if _, err := Parse([]byte(bad)); !errors.Is(err, ErrSpec) {
			t.Errorf("Parse accepted or misreported (%v): %.80s", err, bad)
		}
	}
	// Every release the model holds is accepted.
	for _, r := range NCCLReleases {
		s, err := Parse([]byte(mutate(`"name": "h100-sxm",`, `"name": "h100-sxm", "nccl": "`+r+`",`)))
		if err != nil {
			t.Errorf("nccl %q: %v", r, err)
		} else if s.NCCL != r {
			t.Errorf("nccl %q read as %q", r, s.NCCL)
		}
	}
	// A collective efficiency above 1, and sizes out of order (the A100
	// preset carries the curve).
	a100, _ := PresetJSON("a100-80gb")
	for _, m := range [][2]string{{"0.977", "1.5"}, {"1073741824.0", "1.0"}} {
		bad := strings.Replace(string(a100), m[0], m[1], 1)
		if bad == string(a100) {
			t.Fatalf("%q not in the a100-80gb preset", m[0])
		}
		if _, err := Parse([]byte(bad)); !errors.Is(err, ErrSpec) {
			t.Errorf("Parse accepted or misreported (%v) %s -> %s", err, m[0], m[1])
		}
	}
}

// TestLoadErrorLines: an error in a spec file's JSON names the file and
// the line it is on: a value of the wrong type (the preset's line 2 holds
// "name"), an unknown key (on the line after the preset's first), text
// after the object (on the preset's last line plus one).
func TestLoadErrorLines(t *testing.T) {
	data, _ := PresetJSON("h100-sxm")
	lines := strings.Count(strings.TrimRight(string(data), "\n"), "\n") + 1
	path := filepath.Join(t.TempDir(), "spec.json")
	for _, c := range []struct {
		text string
		line int
	}{
		{strings.Replace(string(data), `"name": "h100-sxm"`, `"name": 100`, 1), 2},
		{strings.Replace(string(data), "{\n", "{\n  \"gpuz\": 1,\n", 1), 2},
		{strings.TrimRight(string(data), "\n") + "\n[]\n", lines + 1},
	} {
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if want := fmt.Sprintf("%s:%d: bad hardware spec: ", path, c.line); !errors.Is(err, ErrSpec) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("got %v, want it to start with %q", err, want)
		}
	}
}

func TestLoad(t *testing.T) {
	if s, err := Load("a100-80gb"); err != nil || s.GPU.HBMGB != 85.1 {
		t.Fatalf("Load(preset) = %v, %v", s, err)
	}
	data, _ := PresetJSON("h200")
	path := filepath.Join(t.TempDir(), "mine.json")
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), `"name": "h200"`, `"name": "mine"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := Load(path); err != nil || s.Name != "mine" {
		t.Fatalf("Load(file) = %v, %v", s, err)
	}
	if _, err := Load("no-such-gpu"); !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), "h100-sxm") {
		t.Errorf("unknown name: %v (want the presets listed)", err)
	}
	if err := os.WriteFile(path, []byte(`{"name":"broken"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.HasPrefix(err.Error(), path+":") {
		t.Errorf("bad file: %v (want it named)", err)
	}
}

func TestDtypeKey(t *testing.T) {
	for in, want := range map[string]string{"bfloat16": "bf16", "torch.float16": "fp16", "float32": "fp32",
		"float8_e5m2": "fp8", "int64": ""} {
		if got := DtypeKey(in); got != want {
			t.Errorf("DtypeKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCheckBoundsRates: a rate or size far outside any hardware (1e-300
// TB/s of HBM, 1e300 TFLOP/s) is refused by name; a bandwidth of 1e-300
// priced ops past the largest time, and the replay blamed the history.
func TestCheckBoundsRates(t *testing.T) {
	data, _ := PresetJSON("h100-sxm")
	for _, m := range [][2]string{
		{`"hbm_tbps": 3.35`, `"hbm_tbps": 1e-300`},
		{`"bf16": 989.4`, `"bf16": 1e300`},
		{`"nic_gbps_per_gpu": 50`, `"nic_gbps_per_gpu": 1e-300`},
	} {
		bad := strings.Replace(string(data), m[0], m[1], 1)
		if bad == string(data) {
			t.Fatalf("%q not in the h100-sxm preset", m[0])
		}
		_, err := Parse([]byte(bad))
		name := strings.Trim(strings.Split(m[0], ":")[0], `"`)
		if !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", m[1], err)
		}
	}
}

// TestCheckErrorLines: a value Check refuses is blamed on the line of its
// key in the file. testdata/small.json is a complete spec of 32 lines;
// each case changes one value in place (no line moves), and the line is
// counted by hand in that file.
func TestCheckErrorLines(t *testing.T) {
	good, err := os.ReadFile("testdata/small.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(good); err != nil {
		t.Fatalf("testdata/small.json: %v", err)
	}
	path := filepath.Join(t.TempDir(), "hw.json")
	for _, c := range []struct {
		old, new string
		line     int
		what     string
	}{
		{`"name": "small"`, `"name": ""`, 2, "no name"},
		{`"bf16": 312`, `"bf8": 312`, 4, `gpu.peak_dense_tflops has "bf8"`},
		{`"fp32": 19.5}`, `"fp32": 0}`, 4, "gpu.peak_dense_tflops.fp32 is 0"},
		{`"fp16": 312, `, ``, 4, "gpu.peak_dense_tflops has no fp16 (bf16, fp16, fp32 are required)"},
		{`"hbm_tbps": 2.039`, `"hbm_tbps": -2`, 7, "gpu.hbm_tbps is -2, want 1e-06 to 1e+09"},
		// gpu.sms left out (the line emptied): blamed on "gpu", line 3.
		{`"sms": 108,`, ``, 3, `gpu.sms is 0, want 1 to 1048576 (the file gives no "gpu.sms")`},
		{`"gpus_per_host": 8`, `"gpus_per_host": 70000`, 18, "host.gpus_per_host is 70000, want 1 to 65536"},
		// The second point of gemm_efficiency opens on line 11, its
		// efficiency on line 12.
		{"0.5]", "1.5]", 11, "gpu.gemm_efficiency point 1 is [1e+09, 1.5]"},
		{"[1e3, 0.01]", "[1e3, 0]", 14, "gpu.memory_efficiency point 0"},
		// Below the floor: every copy would take decades.
		{"[1e3, 0.01]", "[1e3, 1e-300]", 14, "gpu.memory_efficiency point 0 is [1000, 1e-300]: want a size > 0 and an efficiency from 1e-06 to 1"},
		{`"launch_overhead_ns": 4000`, `"launch_overhead_ns": -1`, 15, "gpu.launch_overhead_ns is -1"},
		{`"nvlink_efficiency": 0.8`, `"nvlink_efficiency": 1.8`, 20, "host.nvlink_efficiency is 1.8"},
		{`"ll128": 1.25`, `"ll128": -1.25`, 21, "host.nvlink_step_latency_us.ll128 is -1.25"},
		{`"nic_efficiency": 0.9`, `"nic_efficiency": 0`, 25, "network.nic_efficiency is 0"},
		{`"nic_efficiency": 0.9`, `"nic_efficiency": 1e-9`, 25, "network.nic_efficiency is 1e-09, want a fraction from 1e-06 to 1"},
		{`"simple": 14`, `"simple": 2e6`, 29, "network.step_latency_us.simple is 2e+06"},
	} {
		bad := strings.Replace(string(good), c.old, c.new, 1)
		if bad == string(good) {
			t.Fatalf("%q not in testdata/small.json", c.old)
		}
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		want := fmt.Sprintf("%s:%d: bad hardware spec: %s", path, c.line, c.what)
		if !errors.Is(err, ErrSpec) || err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s -> %s: got %v, want it to start with %q", c.old, c.new, err, want)
		}
	}
	// The same values in a preset's text: Check's error, without a file
	// or line, and Parse's with the key's line (hbm_tbps is on line 15
	// of the h100-sxm preset, counted in presets/h100-sxm.json).
	data, _ := PresetJSON("h100-sxm")
	bad := strings.Replace(string(data), `"hbm_tbps": 3.35`, `"hbm_tbps": -2`, 1)
	if _, err := Parse([]byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "15: bad hardware spec: gpu.hbm_tbps is -2") {
		t.Errorf("Parse: %v", err)
	}
	s, _ := decode([]byte(bad))
	if err := s.Check(); err == nil || !strings.HasPrefix(err.Error(), "bad hardware spec: gpu.hbm_tbps is -2") {
		t.Errorf("Check: %v", err)
	}
}

// TestLoadTooLarge: a file past the size limit is refused naming the
// limit, not a size it does not have (it is read only up to the limit);
// one that cannot be a JSON object is refused from its first bytes.
func TestLoadTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(path, []byte("{"), 0o644); err != nil { // then zero bytes
		t.Fatal(err)
	}
	if err := os.Truncate(path, 3*MaxSpecBytes); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	want := fmt.Sprintf("%s: bad hardware spec: more than %d bytes, the most a hardware spec may hold", path, MaxSpecBytes)
	if !errors.Is(err, ErrSpec) || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	if err := os.WriteFile(path, []byte("\n\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 3*MaxSpecBytes); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path)
	want = fmt.Sprintf("%s:2: bad hardware spec: invalid character '\\x00' looking for beginning of value", path)
	if !errors.Is(err, ErrSpec) || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}
