package validation

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// a100PeakTFLOPs is the A100's dense 16-bit peak both papers divide by:
// Narayanan et al. Section 5, "The peak device throughput of an A100 GPU
// with 16-bit precision is 312 teraFLOP/s."
const a100PeakTFLOPs = 312.0

const gib = 1 << 30

func load(t *testing.T) []Point {
	t.Helper()
	ps, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func byID(t *testing.T, ps []Point, id string) *Point {
	t.Helper()
	for i := range ps {
		if ps[i].ID == id {
			return &ps[i]
		}
	}
	t.Fatalf("no point %q", id)
	return nil
}

func value(t *testing.T, p *Point, quantity, kind string) float64 {
	t.Helper()
	m, ok := p.Get(quantity, kind)
	if !ok {
		t.Fatalf("%s: no %s %s", p.ID, kind, quantity)
	}
	return m.Value
}

func withPrefix(ps []Point, prefix string) []*Point {
	var out []*Point
	for i := range ps {
		if strings.HasPrefix(ps[i].ID, prefix) {
			out = append(out, &ps[i])
		}
	}
	return out
}

// TestLoadRolesAndCoverage: the file loads, the development set is exactly
// Korthikanti's 22B and 175B runs and Narayanan's 7.5B and 145.6B rows, and every Table 5 and Table 1 row is
// present.
func TestLoadRolesAndCoverage(t *testing.T) {
	ps := load(t)
	dev := 0
	for _, p := range ps {
		if p.Role == RoleDevelopment {
			dev++
			if !strings.HasPrefix(p.ID, "korthikanti-22b-") && !strings.HasPrefix(p.ID, "korthikanti-175b-") &&
				p.ID != "narayanan-7p5b" && p.ID != "narayanan-145p6b" {
				t.Errorf("%s is development; only the 22B and 175B runs and Narayanan's 7.5B and 145.6B rows should be", p.ID)
			}
		}
		if p.Line <= 1 {
			t.Errorf("%s: line %d not found", p.ID, p.Line)
		}
	}
	if dev == 0 || dev == len(ps) {
		t.Errorf("%d development points of %d: want some of each role", dev, len(ps))
	}
	for _, id := range []string{"korthikanti-22b-full", "korthikanti-22b-seqsel", "korthikanti-175b-full", "korthikanti-175b-seqsel",
		"korthikanti-530b-full", "korthikanti-530b-seqsel", "korthikanti-1t-full", "korthikanti-1t-seqsel"} {
		value(t, byID(t, ps, id), "step_time_s", KindMeasured)
	}
	if n := len(withPrefix(ps, "narayanan-")) - len(withPrefix(ps, "narayanan-zero3-")) - len(withPrefix(ps, "narayanan-ptd-")); n != 10 {
		t.Errorf("%d Narayanan Table 1 rows, want 10", n)
	}
}

// table1 returns Narayanan et al.'s Table 1 rows: those with an aggregate.
func table1(t *testing.T, ps []Point) []*Point {
	var rows []*Point
	for _, p := range withPrefix(ps, "narayanan-") {
		if _, ok := p.Get("aggregate_pflops", KindMeasured); ok {
			rows = append(rows, p)
		}
	}
	if len(rows) != 10 {
		t.Fatalf("%d Table 1 rows, want 10", len(rows))
	}
	return rows
}

// TestNarayananAggregate: aggregate petaFLOP/s = teraFLOP/s per GPU x GPUs
// / 1000. The per-GPU figure is printed rounded to an integer, so the
// product may be off by up to 0.5 x GPUs / 1000, plus 0.05 for the
// aggregate's own rounding. Example, the 1T row: 163 x 3072 / 1000 = 500.7
// against 502.0 published, inside 1.54 + 0.05.
func TestNarayananAggregate(t *testing.T) {
	for _, p := range table1(t, load(t)) {
		x := value(t, p, "tflops_per_gpu", KindMeasured)
		agg := value(t, p, "aggregate_pflops", KindMeasured)
		n := float64(p.Layout.GPUs)
		want := x * n / 1000
		if tol := 0.5*n/1000 + 0.05; math.Abs(agg-want) > tol {
			t.Errorf("%s: aggregate %.1f PFLOP/s, tflops x GPUs = %.2f (tolerance %.2f)", p.ID, agg, want, tol)
		}
	}
}

// TestNarayananPercentOfPeak: percentage = teraFLOP/s / 312 x 100, within
// the two roundings (0.5 point, and 0.5 TFLOP/s = 0.16 point). Example:
// 142 / 312 = 45.5% printed as 46%.
func TestNarayananPercentOfPeak(t *testing.T) {
	for _, p := range table1(t, load(t)) {
		x := value(t, p, "tflops_per_gpu", KindMeasured)
		pct := value(t, p, "percent_of_peak", KindMeasured)
		if got, tol := x/a100PeakTFLOPs*100, 0.5+0.5/a100PeakTFLOPs*100; math.Abs(got-pct) > tol {
			t.Errorf("%s: %v TFLOP/s is %.2f%% of 312, published %v%%", p.ID, x, got, pct)
		}
	}
}

// TestNarayananImpliedIterationTime: Eq. 3's FLOPs divided by the achieved
// FLOP/s of all GPUs gives the iteration time the table implies. It must be
// positive and agree with the time implied by the percentage of the 312
// TFLOP/s peak, within the roundings of both printed figures.
//
// By hand for the 1T row: B s l h^2 = 3072 x 2048 x 128 x 25600^2
// = 5.2777e17; x 96 = 5.0666e19; x (1 + 2048/153600 + 51200/52428800)
// = x 1.014310 gives F = 5.1391e19 FLOPs; / (163e12 x 3072) = 102.6 s.
func TestNarayananImpliedIterationTime(t *testing.T) {
	for _, p := range table1(t, load(t)) {
		x := value(t, p, "tflops_per_gpu", KindMeasured)
		pct := value(t, p, "percent_of_peak", KindMeasured)
		n := float64(p.Layout.GPUs)
		f := NarayananFLOPs(p.Model, p.Layout.GlobalBatch)
		fromTFLOPs := f / (x * 1e12 * n)
		fromPercent := f / (pct / 100 * a100PeakTFLOPs * 1e12 * n)
		if !(fromTFLOPs > 0) || math.IsInf(fromTFLOPs, 0) {
			t.Fatalf("%s: implied iteration time %v", p.ID, fromTFLOPs)
		}
		if rel, tol := math.Abs(fromTFLOPs/fromPercent-1), 0.5/x+0.5/pct; rel > tol {
			t.Errorf("%s: %.2f s from TFLOP/s, %.2f s from %% of peak: %.2f%% apart (tolerance %.2f%%)",
				p.ID, fromTFLOPs, fromPercent, rel*100, tol*100)
		}
		if p.ID == "narayanan-1008p0b" && math.Abs(fromTFLOPs-102.6) > 0.1 {
			t.Errorf("1T row: implied iteration %.2f s, hand calculation 102.6 s", fromTFLOPs)
		}
	}
}

// TestNarayananParameterCount: each row's published parameter count is
// Narayanan et al. Eq. 2, P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h)),
// printed to 0.1 billion. By hand for 1.7B: 12 x 24 x 2304^2 = 1.5288e9;
// x (1 + 13/27648 + 53248/663552) = x 1.08072 gives 1.652e9.
func TestNarayananParameterCount(t *testing.T) {
	ps := load(t)
	for _, p := range withPrefix(ps, "narayanan-") {
		m := p.Model
		l, h, V, s := float64(m.Layers), float64(m.Hidden), float64(m.Vocab), float64(m.Seq)
		got := 12 * l * h * h * (1 + 13/(12*h) + (V+s)/(12*l*h)) / 1e9
		if math.Abs(got-m.ParamsBillion) > 0.05+1e-9 {
			t.Errorf("%s: Eq. 2 gives %.3f billion, published %v", p.ID, got, m.ParamsBillion)
		}
	}
}

// TestNarayananTable2TrainingDays: Table 2's training time for 300B tokens
// is 300e9/(B s) iterations of Eq. 3's FLOPs at the row's teraFLOP/s: days
// = 300e9 x F/(B s) / (X n) / 86400. Both X and the days are printed
// rounded, hence the tolerance. This also checks that the merged cells of
// Table 2 were aligned right. By hand, 174.6B on 384 GPUs with ZeRO-3:
// F/(B s) = 96 x 96 x 12288^2 x 1.030490 = 1.43399e12 FLOPs per token;
// x 300e9 / (144e12 x 384) = 7.780e6 s = 90.0 days (published 90).
func TestNarayananTable2TrainingDays(t *testing.T) {
	ps := load(t)
	rows := append(withPrefix(ps, "narayanan-zero3-"), withPrefix(ps, "narayanan-ptd-")...)
	if len(rows) != 12 {
		t.Fatalf("%d Table 2 rows, want 12", len(rows))
	}
	for _, p := range rows {
		x := value(t, p, "tflops_per_gpu", KindMeasured)
		days := value(t, p, "training_days_300b_tokens", KindDerived)
		perToken := NarayananFLOPs(p.Model, p.Layout.GlobalBatch) / float64(p.Layout.GlobalBatch*p.Model.Seq)
		got := 300e9 * perToken / (x * 1e12 * float64(p.Layout.GPUs)) / 86400
		if tol := got*0.5/x + 0.5; math.Abs(got-days) > tol {
			t.Errorf("%s: %.2f days from %v TFLOP/s, published %v (tolerance %.2f)", p.ID, got, x, days, tol)
		}
	}
}

// korthikantiModelFLOPs is Korthikanti et al. Appendix A, Eq. 7: model
// FLOPs per iteration 72 B L s h^2 (1 + s/(6h) + v/(12 h L)); hardware
// FLOPs with selective recomputation (Eq. 8) have s/(3h) in place of
// s/(6h). The appendix calls B the microbatch size, but the published MFU
// follows only with B the global batch (one iteration).
func korthikantiFLOPs(m Model, batch int, hardware bool) float64 {
	B, L, s, h, v := float64(batch), float64(m.Layers), float64(m.Seq), float64(m.Hidden), float64(m.Vocab)
	attn := s / (6 * h)
	if hardware {
		attn = s / (3 * h)
	}
	return 72 * B * L * s * h * h * (1 + attn + v/(12*h*L))
}

// TestKorthikantiUtilization: Table 5's MFU and HFU follow from Eq. 7 and
// Eq. 8, the published iteration time, the GPU count and 312 TFLOP/s,
// within the roundings of the time (0.005 s) and of the percentage. By
// hand for 22B: 72 x 4 x 48 x 2048 x 6144^2 = 1.06872e15; x (1 + 2048/36864
// + 51200/3538944) = x 1.070024 gives 1.14356e15 FLOPs; / (1.10 s x 8 x
// 312e12) = 41.65% against 41.5% published (1.104 s, which prints as 1.10,
// gives 41.5%). The 530B run on 2240 GPUs (Section 6.3) is included.
func TestKorthikantiUtilization(t *testing.T) {
	ps := load(t)
	checked := 0
	for _, p := range withPrefix(ps, "korthikanti-") {
		if _, ok := p.Get("mfu_percent", KindMeasured); !ok {
			continue
		}
		tm := value(t, p, "step_time_s", KindMeasured)
		peak := float64(p.Layout.GPUs) * a100PeakTFLOPs * 1e12
		for _, c := range []struct {
			name     string
			hardware bool
			quantity string
		}{{"MFU", false, "mfu_percent"}, {"HFU", true, "hfu_percent"}} {
			pub, ok := p.Get(c.quantity, KindMeasured)
			if !ok {
				continue
			}
			got := korthikantiFLOPs(p.Model, p.Layout.GlobalBatch, c.hardware) / (tm * peak) * 100
			if tol := got*0.005/tm + 0.05; math.Abs(got-pub.Value) > tol {
				t.Errorf("%s: %s %.2f%% from Eq. 7/8 and %v s, published %v%% (tolerance %.2f)", p.ID, c.name, got, tm, pub.Value, tol)
			}
			checked++
		}
	}
	if checked != 9 {
		t.Errorf("checked %d utilizations, want 9 (4 MFU + 4 HFU of Table 5, MFU of the 2240-GPU run)", checked)
	}
}

// TestKorthikantiThroughputIncrease: Table 5's throughput increase is
// full-recompute time / present-work time - 1. By hand: 1.42/1.10 = 1.291,
// 29.1% against 29.0% (times rounded to 0.01 s).
func TestKorthikantiThroughputIncrease(t *testing.T) {
	ps := load(t)
	for _, size := range []string{"22b", "175b", "530b", "1t"} {
		full := value(t, byID(t, ps, "korthikanti-"+size+"-full"), "step_time_s", KindMeasured)
		p := byID(t, ps, "korthikanti-"+size+"-seqsel")
		sel := value(t, p, "step_time_s", KindMeasured)
		inc := value(t, p, "throughput_increase_percent", KindMeasured)
		got := (full/sel - 1) * 100
		if tol := 100*(full/sel)*(0.005/full+0.005/sel) + 0.05; math.Abs(got-inc) > tol {
			t.Errorf("%s: %v/%v gives %.2f%%, published %v%%", size, full, sel, got, inc)
		}
	}
}

// TestKorthikantiLayerTimes: in Table 4 the combined time is forward plus
// backward (7.7 + 11.9 = 19.6 ms), each printed to 0.1 ms.
func TestKorthikantiLayerTimes(t *testing.T) {
	rows := 0
	for _, p := range withPrefix(load(t), "korthikanti-22b-") {
		f, ok := p.Get("layer_forward_ms", KindMeasured)
		if !ok {
			continue
		}
		rows++
		b := value(t, p, "layer_backward_ms", KindMeasured)
		c := value(t, p, "layer_combined_ms", KindMeasured)
		if math.Abs(f.Value+b-c) > 0.1+1e-9 {
			t.Errorf("%s: %v + %v != %v ms", p.ID, f.Value, b, c)
		}
	}
	if rows != 5 {
		t.Errorf("%d Table 4 rows, want 5", rows)
	}
}

// TestCalculonDeltas: Calculon's Table 2 prints delta = 100 (1 - predicted
// / measured) from unrounded predictions; the rounded ones agree within
// 0.005 s. Section 2.5: "For these 8 runs on Selene, Calculon's prediction
// averages 3.65% error, and the maximum error is 8.87%."
// By hand: (1.72 + 0.56 + 1.72 + 4.60 + 3.33 + 0.81 + 8.87 + 7.62) / 8 = 3.654.
func TestCalculonDeltas(t *testing.T) {
	sum, maxAbs, n := 0.0, 0.0, 0
	for _, p := range withPrefix(load(t), "korthikanti-") {
		pred, ok := p.Get("step_time_s", KindPrediction)
		if !ok {
			continue
		}
		if pred.By != "calculon" || pred.DeltaPercent == nil {
			t.Fatalf("%s: prediction by %q, delta %v", p.ID, pred.By, pred.DeltaPercent)
		}
		meas := value(t, p, "step_time_s", KindMeasured)
		got := 100 * (1 - pred.Value/meas)
		if tol := 100*0.005/meas + 0.005; math.Abs(got-*pred.DeltaPercent) > tol {
			t.Errorf("%s: 1 - %v/%v = %.2f%%, published %v%%", p.ID, pred.Value, meas, got, *pred.DeltaPercent)
		}
		d := math.Abs(*pred.DeltaPercent)
		sum += d
		maxAbs = max(maxAbs, d)
		n++
	}
	if n != 8 {
		t.Fatalf("%d Calculon predictions, want 8", n)
	}
	if mean := sum / float64(n); math.Abs(mean-3.65) > 0.005 {
		t.Errorf("mean |delta| %.4f%%, the paper says 3.65%%", mean)
	}
	if maxAbs != 8.87 {
		t.Errorf("max |delta| %v%%, the paper says 8.87%%", maxAbs)
	}
}

// TestMemoryFiguresAreKorthikantiFormulas shows that the memory values
// Calculon's validation attributes to Korthikanti et al. Figure 1 are
// Korthikanti's formulas, exactly: activations per GPU on the first
// pipeline stage are Eq. 2 (no recomputation, tensor parallel only) or
// Eq. 6 (sequence parallel + selective) over all L layers, times the
// interleaving factor 1 + (p-1)/(p m) of Section 4.2.3; model state is 18
// bytes per parameter of the transformer layers, 12 L h^2 / (t p).
//
// By hand for 22B (s 2048, b 4, h 6144, a 64, t 8, L 48): sbh = 50,331,648;
// Eq. 2 factor 10 + 24/8 + 5 x 64 x 2048 / (6144 x 8) = 26.333; x 48 layers
// = 63,619,203,072 bytes = 59.25 GiB. Eq. 6: 34 x sbh x 48 / 8 =
// 10,267,656,192 bytes = 9.5625 GiB. Model state: 12 x 48 x 6144^2 / 8 =
// 2,717,908,992 parameters x 18 bytes = 45.5625 GiB.
func TestMemoryFiguresAreKorthikantiFormulas(t *testing.T) {
	checked := 0
	for _, p := range withPrefix(load(t), "korthikanti-") {
		act, ok := p.Get("activation_gib", KindAnalytical)
		if !ok {
			continue
		}
		m, l := p.Model, p.Layout
		s, b, h, a, tp := float64(m.Seq), float64(l.MicroBatch), float64(m.Hidden), float64(m.Heads), float64(l.TP)
		L, pp := float64(m.Layers), float64(l.PP)
		sbh := s * b * h
		var perLayer float64
		switch {
		case l.Recompute == "none" && !l.SequenceParallel:
			perLayer = sbh * (10 + 24/tp + 5*a*s/(h*tp)) // Eq. 2
		case l.Recompute == "selective" && l.SequenceParallel:
			perLayer = 34 * sbh / tp // Eq. 6 per layer
		default:
			t.Fatalf("%s: no formula for recompute %q, sequence parallel %v", p.ID, l.Recompute, l.SequenceParallel)
		}
		interleave := 1.0
		if v := float64(p.Chunks()); v > 1 {
			interleave = 1 + (pp-1)/(pp*v)
		}
		if got := perLayer * L * interleave / gib; math.Abs(got-act.Value) > 1e-9 {
			t.Errorf("%s: formula gives %.10f GiB of activations, file has %v", p.ID, got, act.Value)
		}
		state := value(t, p, "model_state_gib", KindAnalytical)
		if got := 18 * 12 * L * h * h / (tp * pp) / gib; math.Abs(got-state) > 1e-9 {
			t.Errorf("%s: 18 B x 12Lh^2/(tp) gives %.10f GiB, file has %v", p.ID, got, state)
		}
		checked++
	}
	if checked != 8 {
		t.Errorf("checked %d memory points, want 8 (none and seqsel of 4 models)", checked)
	}
}

// TestChosenLayouts: the development rows of Narayanan et al.'s Table 1
// predict with the authors' own script values (run_table_1.sh): 7.5B
// with microbatches of 16 (512 / (32 x 16) = 1 per replica), 145.6B with
// microbatches of 2 (2304 / (24 x 2) = 48 per pipeline, a multiple of 8)
// and 2 chunks (80 layers / (8 stages x 5 layers per virtual stage)); the
// published layout keeps them unpublished.
func TestChosenLayouts(t *testing.T) {
	ps := load(t)
	for _, c := range []struct {
		id       string
		micro    int
		schedule string
	}{{"narayanan-7p5b", 16, "1f1b"}, {"narayanan-145p6b", 2, "interleaved:2"}} {
		p := byID(t, ps, c.id)
		l := p.Resolved()
		if l.MicroBatch != c.micro || l.Schedule != c.schedule || p.Layout.MicroBatch != 0 {
			t.Errorf("%s: resolved %+v, published micro_batch %d", c.id, l, p.Layout.MicroBatch)
		}
	}
	// The script's data parallelism: PyTorch DDP up to 18B, Megatron-LM's
	// local DDP from 39B on; every row in fp16 (CONFIG.sh).
	for id, ddp := range map[string]string{"narayanan-1p7b": "torch", "narayanan-7p5b": "torch", "narayanan-18p4b": "torch",
		"narayanan-39p1b": "local", "narayanan-145p6b": "local", "narayanan-1008p0b": "local"} {
		p := byID(t, ps, id)
		if p.Chosen == nil || p.Chosen.DDP != ddp || p.Chosen.Precision != "fp16" {
			t.Errorf("%s: chosen %+v, want ddp %s in fp16", id, p.Chosen, ddp)
		}
	}
}

// TestParseRejects: bad files fail with "NAME:LINE: ..." naming the point
// and the problem, wrapping ErrInvalid.
func TestParseRejects(t *testing.T) {
	good := func() string {
		return `{"version": 1, "about": "x",
 "sources": {"s": {"citation": "c", "url": "u", "read": "r"}},
 "points": [
  {"id": "p1", "role": "development",
   "model": {"name": "m", "params_billion": 0, "layers": 4, "hidden": 64, "heads": 4, "ffn": 256, "vocab": 100, "seq": 16},
   "hardware": "a100-80gb",
   "layout": {"gpus": 8, "tp": 2, "pp": 2, "dp": 2, "global_batch": 8, "micro_batch": 1, "schedule": "interleaved:2", "recompute": "full", "sequence_parallel": false, "zero_stage": 0},
   "measurements": [{"quantity": "step_time_s", "value": 1.5, "unit": "s", "kind": "measured", "as_published": "1.5 s", "conversion": "none", "source": {"ref": "s", "location": "T1", "quote": "q"}}],
   "note": "n"}]}`
	}
	if _, err := Parse("ok.json", []byte(good())); err != nil {
		t.Fatalf("good file rejected: %v", err)
	}
	for _, c := range []struct{ name, from, to, want string }{
		{"product", `"dp": 2,`, `"dp": 3,`, `bad.json:4: invalid validation point: point "p1": tp*pp*dp = 2*2*3 = 12, want gpus = 8`},
		{"unit", `"unit": "s"`, `"unit": "ms"`, `unit "ms", want "s"`},
		{"batch", `"global_batch": 8,`, `"global_batch": 7,`, `global_batch 7 not divisible by dp*micro_batch = 2`},
		{"interleave", `"interleaved:2"`, `"interleaved:4"`, `layers 4 not divisible by pp*chunks = 8`},
		{"unpublished", `"micro_batch": 1,`, `"micro_batch": 0,`, `micro_batch = 0, want > 0 (or list it as unpublished)`},
		{"role", `"development"`, `"training"`, `role "training"`},
		{"ref", `"ref": "s"`, `"ref": "nope"`, `source ref "nope" not in sources`},
		{"negative", `"value": 1.5`, `"value": -1`, `value -1, want > 0`},
		{"unknown field", `"zero_stage": 0}`, `"zero_stage": 0, "zero": 1}`, `bad.json:1: invalid validation point: json: unknown field "zero"`},
		{"syntax", `"a100-80gb",`, `"a100-80gb",,`, `bad.json:6: invalid validation point: invalid character`},
		{"truncated", `"note": "n"}]}`, `"note": "n"}]`, `bad.json:9: invalid validation point: unexpected EOF`},
		{"chosen ddp", `"hardware"`, `"chosen": {"ddp": "local", "rule": "r", "source": {"ref": "s", "location": "l", "quote": "DDP=torch"}}, "hardware"`, `chosen: ddp "local" is not in the source's quote`},
		{"chosen precision", `"hardware"`, `"chosen": {"precision": "fp16", "rule": "r", "source": {"ref": "s", "location": "l", "quote": "q"}}, "hardware"`, `chosen: precision "fp16" needs a precision_source quoting --fp16`},
		{"chosen published", `"hardware"`, `"chosen": {"micro_batch": 2, "rule": "r", "source": {"ref": "s", "location": "l", "quote": "q"}}, "hardware"`, `chosen: micro_batch is published`},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := strings.Replace(good(), c.from, c.to, 1)
			if bad == good() {
				t.Fatalf("replacement %q not found", c.from)
			}
			_, err := Parse("bad.json", []byte(bad))
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid: %v", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
		})
	}
}
