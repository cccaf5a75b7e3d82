package costs

import (
	"math"
	"sort"
	"testing"

	"github.com/fastsim/fastsim/internal/values"
)

// xlaH100 is OpenXLA's matmul performance table for sm_90 (H100 SXM),
// bf16 × bf16 -> bf16: batch, m, n, k and the measured FLOP/s
// (tensorflow/tensorflow, third_party/xla/xla/service/gpu/model/
// matmul_interpolator_data.h, kDefaultMatmulPTable, commit 372d578: the
// first 72 sm_90 entries of the file, in its order).
var xlaH100 = [][5]int64{
	{1, 1024, 2048, 256, 139519467775467}, {2, 256, 2048, 2048, 332247798870580},
	{1, 256, 2048, 256, 41838443890274}, {4, 512, 256, 256, 42366707070707},
	{1, 4096, 512, 512, 238821580071174}, {4, 4096, 256, 2048, 588674245614035},
	{1, 512, 256, 512, 21788592207792}, {2, 2048, 256, 512, 139230008298755},
	{2, 1024, 2048, 1024, 493447529411764}, {1, 256, 2048, 4096, 285873755058572},
	{2, 512, 2048, 2048, 525314003913894}, {4, 1024, 2048, 2048, 712739345502821},
	{1, 4096, 1024, 512, 343707370038412}, {1, 2048, 2048, 2048, 631984593290170},
	{4, 256, 256, 256, 22550021505376}, {2, 256, 256, 1024, 36954220264317},
	{1, 256, 512, 4096, 91678775956284}, {1, 256, 1024, 256, 22671913513513},
	{1, 4096, 4096, 256, 392162828341855}, {2, 256, 1024, 2048, 216131607085346},
	{2, 2048, 4096, 1024, 678724288242730}, {2, 4096, 512, 256, 211034163522012},
	{2, 4096, 4096, 2048, 763011394582711}, {4, 512, 2048, 1024, 487178686025408},
	{4, 1024, 512, 2048, 514244168582375}, {1, 2048, 512, 2048, 347714321243523},
	{2, 512, 512, 2048, 216480206451612}, {4, 4096, 512, 1024, 588997160724081},
	{2, 1024, 256, 256, 43690666666666}, {1, 4096, 4096, 4096, 783328793548203},
	{1, 512, 4096, 1024, 373345557719054}, {2, 256, 512, 2048, 119623643493761},
	{1, 512, 256, 4096, 91056803256445}, {2, 2048, 256, 4096, 378628050954291},
	{1, 256, 1024, 4096, 172294901155327}, {1, 4096, 2048, 512, 447019910074937},
	{1, 2048, 256, 1024, 135847902834008}, {2, 512, 1024, 2048, 349525333333333},
	{4, 1024, 1024, 2048, 626088527113702}, {4, 4096, 1024, 1024, 673839272969739},
	{4, 1024, 256, 1024, 218240208130081}, {2, 512, 256, 1024, 66576253968253},
	{4, 4096, 4096, 512, 619859436746254}, {1, 2048, 1024, 2048, 523265996101364},
	{4, 256, 2048, 1024, 358870930481283}, {2, 4096, 1024, 4096, 750605958755679},
	{2, 1024, 256, 4096, 306433168949771}, {2, 2048, 256, 256, 78766272300469},
	{1, 512, 256, 256, 11459846994535}, {4, 512, 256, 512, 77852510440835},
	{1, 1024, 256, 1024, 68338965376782}, {1, 4096, 256, 2048, 304694047673098},
	{1, 1024, 1024, 2048, 349981037809648}, {4, 4096, 512, 512, 441505684210526},
	{2, 4096, 1024, 256, 301612871910112}, {1, 256, 512, 256, 11459846994535},
	{2, 4096, 512, 4096, 729692031260618}, {2, 1024, 4096, 1024, 596523235555555},
	{4, 256, 256, 512, 41221660933660}, {1, 256, 4096, 2048, 324589426844014},
	{4, 2048, 2048, 2048, 725746417032781}, {1, 1024, 512, 2048, 220029062295081},
	{2, 4096, 2048, 4096, 783185953785750}, {4, 4096, 1024, 512, 542037204101593},
	{4, 4096, 4096, 256, 503874974234136}, {4, 2048, 512, 2048, 621378370370370},
	{1, 512, 2048, 1024, 232613046793760}, {1, 4096, 512, 1024, 370767204419889},
	{4, 512, 4096, 1024, 592245904026475}, {4, 256, 256, 4096, 171633923273657},
	{1, 1024, 2048, 2048, 524288000000000}, {2, 2048, 2048, 1024, 600191069871436},
}

// The roofline's GEMM kernel times against OpenXLA's measured H100
// table. XLA's times are kernel durations from its kernel tracer
// (xla/tools/matmul_perf_table_gen.cc: the median kernel time of 5 runs),
// with no launch in them, so the model's time is compared without its
// launch term too. The efficiency curve is a function of FLOPs alone
// (MAMF for large products, wave quantization of square ones below: every
// SM that has a tile works at MAMF speed, a best case), so it cannot see
// what the measurements show: a kernel's own fixed time (the smallest
// products here, 6.7e7 to 2.7e8 FLOPs, take 5.9 to 7.3 µs whatever their
// FLOPs) and the shape (few output tiles and a long k keep fewer SMs busy
// than a square product of the same FLOPs: m512 n256 k4096, 2^30 FLOPs at
// efficiency 0.0971 × 4^(2/3) = 0.244677, 4,435 ns modelled against 11,792
// measured). Both matter less as a product grows. Required, from those
// mechanisms: no product more than 5% slower than measured (a best case),
// and the median error of the products of 2^34 FLOPs or more less than
// half that of those under 2^30. Those two are relative, and a curve of
// 1.0 everywhere would pass them, so the products of 2^34 FLOPs or more
// are also held to an absolute bound: there the curve is a measurement
// (MAMF's, from 6.361e9 FLOPs on), and a product that large spends little
// of its time in a fixed start-up, so their median error must be within
// ±20% and none below -35%: a guard set a little outside today's errors
// (median -15%, worst -32%; a fixed start-up of 5.9 to 7.3 µs, what XLA's
// smallest products take, would alone put the smallest of these, 21.7 µs
// modelled, at -21% to -25%), which a curve of 1.0 everywhere fails (-31%
// and -41%), though a flat curve at MAMF's efficiency would not (the
// hardware package's curve tests catch that one). The small ones are not
// held to one: the model lacks their
// fixed kernel time, and no curve of FLOPs alone can give it. The errors
// themselves are logged: -70% to -1%, median -42%; under 2^30 FLOPs
// median -56%, from 2^34 -32% to -1%, median -15%. In a stream the launch
// term (2,060 ns on this preset) stands in for part of the fixed time:
// with it the totals are -45% to +0.3% off, median -23%.
func TestGEMMAgainstXLAMeasurements(t *testing.T) {
	r := NewRoofline(h100(t))
	var all, small, large, total []float64
	for _, p := range xlaH100 {
		b, m, n, k, flops := p[0], p[1], p[2], p[3], float64(p[4])
		c := call([]values.Tensor{tn("bfloat16", b, m, k), tn("bfloat16", b, k, n)}, "", tn("bfloat16", b, m, n))
		fl := 2 * b * m * n * k
		measuredNs := float64(fl) / flops * 1e9
		e := r.Estimate(c, "aten.bmm")
		rel := max(e.ComputeNs, e.MemoryNs)/measuredNs - 1
		all = append(all, rel)
		total = append(total, float64(e.Ns())/measuredNs-1)
		switch {
		case fl < 1<<30:
			small = append(small, rel)
		case fl >= 1<<34:
			large = append(large, rel)
		}
		if rel > 0.05 {
			t.Errorf("bmm %dx%dx%dx%d: model %+.0f%% off the measured %.0f ns: slower than a best case", b, m, n, k, 100*rel, measuredNs)
		}
	}
	median := func(v []float64) float64 { sort.Float64s(v); return v[len(v)/2] }
	mAll, mSmall, mLarge := median(all), median(small), median(large)
	t.Logf("%d products: error from %+.0f%% to %+.0f%%, median %+.0f%%; under 2^30 FLOPs (%d) median %+.0f%%, from 2^34 (%d) %+.0f%% to %+.0f%%, median %+.0f%%",
		len(all), 100*all[0], 100*all[len(all)-1], 100*mAll, len(small), 100*mSmall, len(large), 100*large[0], 100*large[len(large)-1], 100*mLarge)
	mTotal := median(total)
	t.Logf("with the launch (%g ns): from %+.1f%% to %+.1f%%, median %+.1f%%", r.Spec().GPU.LaunchOverheadNs, 100*total[0], 100*total[len(total)-1], 100*mTotal)
	if len(small) < 5 || len(large) < 5 || math.Abs(mLarge) >= math.Abs(mSmall)/2 {
		t.Errorf("median error %+.0f%% from 2^34 FLOPs (%d products) against %+.0f%% under 2^30 (%d): want less than half", 100*mLarge, len(large), 100*mSmall, len(small))
	}
	if len(large) > 0 && math.Abs(mLarge) > 0.20 {
		t.Errorf("median error %+.0f%% from 2^34 FLOPs (%d products): want within ±20%% of XLA's measured times, where the model's curve is MAMF's", 100*mLarge, len(large))
	}
	if len(large) > 0 && large[0] < -0.35 {
		t.Errorf("a product of 2^34 FLOPs or more is %+.0f%% off: want none below -35%%", 100*large[0])
	}
}
