package costs

import (
	"math"
	"testing"

	"github.com/fastsim/fastsim/internal/hardware"
)

// The a100-80gb preset's collective efficiency curve is derived from one
// published sweep, the Azure ND A100 v4 table of testdata/nccl-tests/
// published.json: at each of its sizes the factor e on the NVLink
// bandwidth term that makes the model's time (without the curve) equal
// the measured time 2(n-1)/n·S/busbw. This test redoes that derivation by
// bisection on the model itself and requires the preset's points to be
// its values rounded to three places, so the preset cannot drift from its
// source. The rows it is derived from are then no check of it
// (TestNCCLTestsPublished marks them "source").
func TestCollectiveEfficiencyDerivation(t *testing.T) {
	a, err := hardware.Preset("a100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	var src *ncclTable
	tables := loadNCCLTables(t)
	for i := range tables {
		if tables[i].Name == "azure-nd-a100-v4" {
			src = &tables[i]
		}
	}
	if src == nil || src.Check != "source" {
		t.Fatal("published.json: no azure-nd-a100-v4 table marked as the curve's source")
	}
	curve := a.Host.CollectiveEfficiency
	if len(curve) != len(src.Points) {
		t.Fatalf("preset curve has %d points, the source table %d", len(curve), len(src.Points))
	}
	p := Placement{Ranks: src.Ranks, Hosts: src.Hosts, MaxPerHost: src.PerHost}
	for i, pt := range src.Points {
		S, busbw := pt[0], pt[1]
		measured := Factor(AllReduce, src.Ranks) * S / busbw // ns
		// The model's time falls as e grows: bisect for time = measured.
		lo, hi := 0.05, 2.0
		for range 60 {
			mid := (lo + hi) / 2
			c := *a
			c.Host.CollectiveEfficiency = hardware.Curve{{1, mid}} // one point: e at every size
			if hardwareCollective(&c, AllReduce, S, p) > measured {
				lo = mid
			} else {
				hi = mid
			}
		}
		e := (lo + hi) / 2
		if curve[i][0] != S || math.Abs(curve[i][1]-e) > 0.0005 {
			t.Errorf("point %d: preset [%g, %g], derived [%g, %.4f]", i, curve[i][0], curve[i][1], S, e)
		}
	}
	// The curve is transferred unchanged to the preset of the same
	// NVSwitch host (a100-40gb). Hopper presets carry none: their NVLS
	// medium sizes are priced by the NVLS kernel's pipeline fill
	// (nvlsAllReduce), and no Hopper ring sweep measures a curve.
	s, err := hardware.Preset("a100-40gb")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Host.CollectiveEfficiency) != len(curve) {
		t.Fatalf("a100-40gb: curve of %d points, a100-80gb's has %d", len(s.Host.CollectiveEfficiency), len(curve))
	}
	for i := range curve {
		if s.Host.CollectiveEfficiency[i] != curve[i] {
			t.Errorf("a100-40gb point %d: %v, a100-80gb has %v", i, s.Host.CollectiveEfficiency[i], curve[i])
		}
	}
	for _, name := range []string{"h100-sxm", "h200"} {
		s, err := hardware.Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Host.CollectiveEfficiency) != 0 {
			t.Errorf("%s carries a collective efficiency curve; no Hopper sweep is its source", name)
		}
	}
}
