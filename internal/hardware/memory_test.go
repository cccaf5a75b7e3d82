package hardware

import (
	"math"
	"testing"
)

// TestMemoryEfficiencyCurves redoes each preset's memory_efficiency curve
// from the published figures its sources cite, and checks the curve
// against the two properties the roofline relies on.
//
// e is the large-array fraction of the datasheet bandwidth, BabelStream's
// Triad rate over hbm_tbps: A100 80GB 1.70 / 2.039 TB/s (Azure ND A100 v4),
// A100 40GB 1,377.4 / 1,555 GB/s (ALCF Polaris), H100 SXM 2.97 / 3.35 and
// H200 4.15 / 4.8 TB/s (Azure ND H100 v5, ND H200 v5); B200 takes the
// H200's fraction (no published measurement). L is the main-memory
// latency, pointer-chasing cycles (markdewing/AI_kernels: A100 SXM 550,
// H100 SXM 700, B200 860; the H200 takes the H100's) over the boost clock
// (1,410 MHz for A100, 1,980 MHz for H100, H200 and B200). A kernel moving
// B bytes takes L + B / (e × HBM), so its efficiency is e × B / (B + B0)
// with B0 = e × HBM × L; the curve samples it at B = B0 × 2^j.
func TestMemoryEfficiencyCurves(t *testing.T) {
	cases := []struct {
		name      string
		triad     float64 // measured rate, GB/s
		hbm       float64 // datasheet, GB/s
		cycles    float64
		clockMHz  float64
		wantB0    float64 // bytes, by hand: e × HBM × L
		wantFracE float64 // e, rounded as the preset holds it
	}{
		// 0.8337 × 2,039 B/ns × 550 / 1.41 ns (390.07 ns) = 663,087 B.
		{"a100-80gb", 1700, 2039, 550, 1410, 663_087, 0.8337},
		{"aws-p4de", 1700, 2039, 550, 1410, 663_087, 0.8337},
		// 0.8858 × 1,555 × 390.07 = 537,291 B.
		{"a100-40gb", 1377.426, 1555, 550, 1410, 537_291, 0.8858},
		// 0.8866 × 3,350 × 700 / 1.98 (353.54 ns) = 1,050,038.9 B.
		{"h100-sxm", 2970, 3350, 700, 1980, 1_050_038.9, 0.8866},
		// 0.8646 × 4,800 × 353.54 = 1,467,200 B.
		{"h200", 4150, 4800, 700, 1980, 1_467_200, 0.8646},
		// 0.8646 × 8,000 × 860 / 1.98 (434.34 ns) = 3,004,266.7 B (e is
		// the H200's Triad over its 4,800 GB/s).
		{"b200", 4150, 4800, 860, 1980, 3_004_266.7, 0.8646},
	}
	for _, c := range cases {
		s, err := Preset(c.name)
		if err != nil {
			t.Fatal(err)
		}
		e := math.Round(c.triad/c.hbm*1e4) / 1e4
		if e != c.wantFracE {
			t.Errorf("%s: Triad %g of %g GB/s is %g, want %g", c.name, c.triad, c.hbm, e, c.wantFracE)
		}
		latencyNs := c.cycles / (c.clockMHz / 1e3)
		b0 := e * s.GPU.HBMTBps * 1e3 * latencyNs
		if math.Abs(b0-c.wantB0) > 1 {
			t.Errorf("%s: B0 %.0f bytes, want %.0f", c.name, b0, c.wantB0)
		}
		curve := s.GPU.MemoryEfficiency
		js := []int{-10, -9, -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 20}
		if len(curve) != len(js) {
			t.Fatalf("%s: %d points, want %d", c.name, len(curve), len(js))
		}
		for i, j := range js {
			k := math.Ldexp(1, j)
			x, y := math.Round(k*b0), e*k/(k+1)
			if math.Abs(curve[i][0]-x) > 1 || math.Abs(curve[i][1]/y-1) > 1e-5 {
				t.Errorf("%s: point %d is [%.0f, %g], want [%.0f, %g]", c.name, i, curve[i][0], curve[i][1], x, y)
			}
		}
		// A kernel moving B0 bytes reaches half of e; one of 10 TB e; one of
		// B0/1024 bytes still takes about the latency (B / (HBM × eff)).
		if got := curve.At(b0); math.Abs(got/(e/2)-1) > 1e-5 {
			t.Errorf("%s: efficiency at B0 %g, want %g", c.name, got, e/2)
		}
		if got := curve.At(1e13); math.Abs(got/e-1) > 1e-5 {
			t.Errorf("%s: efficiency at 10 TB %g, want %g", c.name, got, e)
		}
		small := b0 / 1024
		if ns := small / (s.GPU.HBMTBps * 1e3 * curve.At(small)); math.Abs(ns/latencyNs-1) > 0.01 {
			t.Errorf("%s: %.0f bytes take %.1f ns, want about the latency %.1f ns", c.name, small, ns, latencyNs)
		}
		// The time a kernel takes never falls as its bytes grow.
		prev := 0.0
		for b := 1.0; b < 1e13; b *= 1.1 {
			ns := b / (s.GPU.HBMTBps * 1e3 * curve.At(b))
			if ns < prev {
				t.Fatalf("%s: %g bytes take %g ns, less than a smaller kernel", c.name, b, ns)
			}
			prev = ns
		}
	}
}
