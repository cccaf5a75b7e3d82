package hardware

import (
	"math"
	"testing"
)

// TestGEMMEfficiencyCurves redoes each preset's gemm_efficiency curve from
// the figures its sources cite: the large-GEMM efficiency is the measured
// maximum achievable matmul FLOPS (MAMF, stas00/ml-engineering's table)
// over the dense bf16 peak, and a square d × d × d GEMM of 128 × 128
// output tiles, d·d/16,384 of them, keeps only tiles/SMs of the GPU busy
// while it has fewer tiles than SMs (wave quantization), so its
// efficiency is MAMF × tiles / SMs, sampled at d = 256, 512 and 1,024 (4,
// 16 and 64 tiles) at x = 2·d³ FLOPs and MAMF from d = 128·√SMs on.
func TestGEMMEfficiencyCurves(t *testing.T) {
	cases := []struct {
		name  string
		mamf  float64 // by hand: MAMF / peak, as the table rounds it
		sms   float64
		lastX float64 // 2 × (128·√SMs)³, to four figures
	}{
		// 267.9 / 312 = 0.8587, the table's 85.9%; 128·√108 = 1,330.2,
		// 2 × 1,330.2³ = 4.708e9.
		{"a100-80gb", 0.859, 108, 4.708e9},
		{"a100-40gb", 0.859, 108, 4.708e9},
		{"aws-p4de", 0.859, 108, 4.708e9},
		// 792.1 / 989 = 0.8009; 128·√132 = 1,470.6, 2 × 1,470.6³ = 6.361e9.
		{"h100-sxm", 0.801, 132, 6.361e9},
		// GH200: 821.0 / 989 = 0.8301.
		{"h200", 0.830, 132, 6.361e9},
		// 1,745.0 / 2,250 = 0.7756, the table's 77.6%; 128·√148 = 1,557.2,
		// 2 × 1,557.2³ = 7.552e9; 0.776 × 4 / 148 = 0.0210, × 16 / 148 =
		// 0.0839, × 64 / 148 = 0.3356.
		{"b200", 0.776, 148, 7.552e9},
	}
	for _, c := range cases {
		s, err := Preset(c.name)
		if err != nil {
			t.Fatal(err)
		}
		g := s.GPU
		if float64(g.SMs) != c.sms {
			t.Errorf("%s: %d SMs, want %g", c.name, g.SMs, c.sms)
		}
		want := Curve{
			{2 * 256 * 256 * 256, c.mamf * 4 / c.sms},
			{2 * 512 * 512 * 512, c.mamf * 16 / c.sms},
			{2 * 1024 * 1024 * 1024, c.mamf * 64 / c.sms},
			{c.lastX, c.mamf},
		}
		if len(g.GEMMEfficiency) != len(want) {
			t.Fatalf("%s: %d points, want %d", c.name, len(g.GEMMEfficiency), len(want))
		}
		for i, p := range g.GEMMEfficiency {
			// The preset holds each efficiency to four decimals.
			if p[0] != want[i][0] || math.Abs(p[1]-want[i][1]) > 5e-5 {
				t.Errorf("%s point %d: %v, want [%g %.4f]", c.name, i, p, want[i][0], want[i][1])
			}
		}
		if got := 2 * math.Pow(128*math.Sqrt(c.sms), 3); math.Abs(got/c.lastX-1) > 5e-4 {
			t.Errorf("%s: tiles = SMs at %g FLOPs, want %g", c.name, got, c.lastX)
		}
	}
}
