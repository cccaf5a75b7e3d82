package hardware

import (
	"math"
	"testing"
)

// TestLaunchOverheads redoes each preset's launch_overhead_ns from the
// published figures its source cites: RRZE-HPC/gpu-benches (commit
// 1038c5d) gpu-small-kernels, kernels launched back to back on one
// stream, one launch each, its smallest row (4,096 doubles read and
// written: 4,096 × 2 × 8 = 65,536 bytes) at the best block size, printed
// in whole GB/s. The time per kernel is 65,536 B over that rate, rounded
// to 10 ns: A100-SXM4-80GB (a100_80.txt) 25 GB/s, 2,621.4 ns -> 2,620;
// H200 (h200.txt) 27 GB/s, 2,427.3 ns -> 2,430. The A100 40GB and p4de
// take the A100 80GB's (same die), the H100 SXM the H200's (the same
// GH100 die), and the B200 the H200's (assumed: no measurement).
func TestLaunchOverheads(t *testing.T) {
	const bytes = 4096 * 2 * 8
	cases := []struct {
		name   string
		gbps   float64 // the row's best column
		wantNs float64 // by hand, above
	}{
		{"a100-80gb", 25, 2620},
		{"aws-p4de", 25, 2620},
		{"a100-40gb", 25, 2620},
		{"h200", 27, 2430},
		{"h100-sxm", 27, 2430},
		{"b200", 27, 2430},
	}
	for _, c := range cases {
		s, err := Preset(c.name)
		if err != nil {
			t.Fatal(err)
		}
		ns := math.Round(bytes/c.gbps/10) * 10
		if ns != c.wantNs {
			t.Errorf("%s: %d B / %g GB/s rounds to %g ns, want %g", c.name, bytes, c.gbps, ns, c.wantNs)
		}
		if s.GPU.LaunchOverheadNs != c.wantNs {
			t.Errorf("%s: launch_overhead_ns %g, want %g", c.name, s.GPU.LaunchOverheadNs, c.wantNs)
		}
	}
	if n := len(Presets()); n != len(cases) {
		t.Errorf("%d presets, %d checked here", n, len(cases))
	}
}
