package costs

import (
	"math"
	"testing"

	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/values"
)

// TestLaunchOverheads checks that the presets' launch_overhead_ns makes
// the model reproduce the measurement it comes from: RRZE-HPC/gpu-benches
// gpu-small-kernels, a streaming SCALE kernel (A[i] = B[i] * 0.25) on
// 4,096 doubles (4,096 × 2 × 8 = 65,536 bytes moved) queued back to back
// on one stream, one launch each, printed in whole GB/s: A100-SXM4-80GB
// (a100_80.txt) 25 GB/s, 65,536 / 25 = 2,621.4 ns a kernel; H200
// (h200.txt) 27 GB/s, 2,427.3 ns. That is the whole start-to-start time,
// the kernel's own run included, and the model prices a kernel as its
// roofline time plus the launch, so the launch is the measured time minus
// the model's price of the kernel alone, aten.mul of float64[4096] into
// float64[4096], 65,536 bytes over HBM × the memory-efficiency curve:
//
//   - a100-80gb: 65,536 B between [41,443, 0.0490412] and [82,886,
//     0.0926333]: exponent ln(0.0926333/0.0490412)/ln 2 = 0.91754,
//     0.0490412 × (65,536/41,443 = 1.58135)^0.91754 = 0.074675;
//     65,536 / (2,039 × 0.074675) = 430.4 ns; launch 2,621.4 − 430.4 =
//     2,191.0 -> 2,190 (to 10 ns); total 430.4 + 2,190 = 2,620.4 -> 2,621.
//   - h200: between [45,850, 0.0262] and [91,700, 0.0508588]: exponent
//     ln(0.0508588/0.0262)/ln 2 = 0.95693, 0.0262 × (65,536/45,850 =
//     1.42936)^0.95693 = 0.036877; 65,536 / (4,800 × 0.036877) = 370.2
//     ns; launch 2,427.3 − 370.2 = 2,057.1 -> 2,060; total 370.2 + 2,060
//     = 2,430.2 -> 2,431.
//
// The files print whole GB/s, so 25 GB/s is 24.5..25.5: 65,536 / 25.5 =
// 2,570.0 to 65,536 / 24.5 = 2,674.9 ns; 27 GB/s is 2,383.1 to 2,473.1 ns.
// The launch is the host's and the GPU front end's part, not the memory's,
// so the A100 40GB and p4de (an A100-SXM4-80GB) take the A100 80GB's
// 2,190, the H100 SXM the H200's 2,060 (the same GH100 die), and the B200
// the H200's (assumed: no measurement).
func TestLaunchOverheads(t *testing.T) {
	const bytes = 4096 * 2 * 8
	measured := []struct {
		name     string
		gbps     float64 // the row's best column
		memoryNs float64 // by hand, above
		totalNs  int64   // by hand, above
	}{
		{"a100-80gb", 25, 430.4, 2621},
		{"h200", 27, 370.2, 2431},
	}
	for _, m := range measured {
		s, err := hardware.Preset(m.name)
		if err != nil {
			t.Fatal(err)
		}
		e := NewRoofline(s).Estimate(call([]values.Tensor{tn("float64", 4096)}, "", tn("float64", 4096)), "aten.mul.Tensor")
		if e.Bytes != bytes {
			t.Errorf("%s: the kernel moves %g bytes, want %d", m.name, e.Bytes, bytes)
		}
		if math.Abs(e.MemoryNs-m.memoryNs) > 0.05 {
			t.Errorf("%s: the kernel alone is %.2f ns, want %g", m.name, e.MemoryNs, m.memoryNs)
		}
		if e.Ns() != m.totalNs {
			t.Errorf("%s: the kernel with its launch is %d ns, want %d", m.name, e.Ns(), m.totalNs)
		}
		lo, hi := bytes/(m.gbps+0.5), bytes/(m.gbps-0.5)
		if ns := float64(e.Ns()); ns < lo || ns > hi {
			t.Errorf("%s: the kernel with its launch is %g ns, outside the measured %.1f..%.1f (%g GB/s)", m.name, ns, lo, hi, m.gbps)
		}
		if launch := math.Round((bytes/m.gbps-m.memoryNs)/10) * 10; launch != s.GPU.LaunchOverheadNs {
			t.Errorf("%s: %d B / %g GB/s − %g ns rounds to %g, the preset has %g", m.name, bytes, m.gbps, m.memoryNs, launch, s.GPU.LaunchOverheadNs)
		}
	}
	presets := []struct {
		name   string
		wantNs float64 // by hand, above
	}{
		{"a100-80gb", 2190},
		{"aws-p4de", 2190},
		{"a100-40gb", 2190},
		{"h200", 2060},
		{"h100-sxm", 2060},
		{"b200", 2060},
	}
	for _, p := range presets {
		s, err := hardware.Preset(p.name)
		if err != nil {
			t.Fatal(err)
		}
		if s.GPU.LaunchOverheadNs != p.wantNs {
			t.Errorf("%s: launch_overhead_ns %g, want %g", p.name, s.GPU.LaunchOverheadNs, p.wantNs)
		}
	}
	if n := len(hardware.Presets()); n != len(presets) {
		t.Errorf("%d presets, %d checked here", n, len(presets))
	}
}
