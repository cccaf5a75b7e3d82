package predict

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/validation"
	"github.com/fastsim/fastsim/internal/workload"
)

var updateTable = flag.Bool("update-table", false, "rewrite the predictions table in bench/VALIDATION.md")

// TestModelFLOPsIsNarayanan: for GPT shapes the count is Narayanan et
// al.'s 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)) (SC'21, §5.1), checked on
// their Table 1 models, and by hand on a small one.
func TestModelFLOPsIsNarayanan(t *testing.T) {
	for _, c := range []struct{ layers, hidden, heads, batch int }{
		{24, 2304, 24, 512},     // 1.7B
		{32, 4096, 32, 512},     // 7.5B
		{80, 12288, 96, 2304},   // 145.6B
		{128, 25600, 160, 3072}, // 1T
	} {
		j := workload.Job{Model: workload.Model{Layers: c.layers, Hidden: c.hidden, Heads: c.heads, Vocab: 51200, Seq: 2048},
			GlobalBatch: c.batch}
		B, s, l, h, V := float64(c.batch), 2048.0, float64(c.layers), float64(c.hidden), 51200.0
		want := 72 * B * s * l * h * h * (1 + s/(6*h) + V/(12*l*h))
		if got := ModelFLOPs(j); math.Abs(got-want) > 1e-9*want {
			t.Errorf("%+v: %g FLOPs, Narayanan's formula gives %g", c, got, want)
		}
	}
	// By hand: 2 layers, h 4, s 8, V 16, batch 1. A layer's forward per
	// token: 2·(4·12 + 4·4 + 4·16 + 16·4) = 384 for the GEMMs, plus
	// 4·s·h = 128 for attention: 512. Two layers and the logits
	// (2·4·16 = 128): 1,152 per token, x3 for the backward, x8 tokens:
	// 27,648.
	j := workload.Job{Model: workload.Model{Layers: 2, Hidden: 4, Heads: 1, Vocab: 16, Seq: 8}, GlobalBatch: 1}
	if got := ModelFLOPs(j); got != 27648 {
		t.Errorf("small model: %g FLOPs, want 27,648", got)
	}
}

// TestPredictSmall predicts a small GPT on one A100 and checks the figures
// against each other: tokens/s from the step time, TFLOP/s and MFU from
// the model FLOPs, memory split into a positive model state and
// activations, and the model state close to 18 bytes a parameter.
func TestPredictSmall(t *testing.T) {
	spec, err := hardware.Load("a100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	m := workload.Model{Name: "small", Layers: 4, Hidden: 1024, Heads: 16, Vocab: 51200, Seq: 1024, Bias: true, Tied: true, Dtype: "bfloat16"}
	j := workload.Job{Model: m, TP: 1, PP: 1, DP: 1, GlobalBatch: 8, MicroBatch: 2, Schedule: workload.OneFOneB}
	r, err := Run(context.Background(), j, spec)
	if err != nil {
		t.Fatal(err)
	}
	if r.StepTimeS <= 0 || math.Abs(r.TokensPerS-8*1024/r.StepTimeS) > 1e-6*r.TokensPerS {
		t.Fatalf("step %g s, %g tokens/s", r.StepTimeS, r.TokensPerS)
	}
	if math.Abs(r.TFLOPsPerGPU-ModelFLOPs(j)/r.StepTimeS/1e12) > 1e-9 || math.Abs(r.MFU-r.TFLOPsPerGPU/312) > 1e-12 {
		t.Fatalf("%g TFLOP/s, MFU %g", r.TFLOPsPerGPU, r.MFU)
	}
	if r.MFU <= 0 || r.MFU >= 1 {
		t.Fatalf("MFU %g outside (0, 1)", r.MFU)
	}
	params := float64(m.Params(1))
	if st := r.ModelStateGiB * GiB / params; st < 17 || st > 19.5 {
		t.Fatalf("model state %.2f bytes a parameter, want about 18 (bf16 weight, fp32 grad, master, two moments)", st)
	}
	if r.ActivationGiB <= 0 || !r.Fits || r.PeakDevice != 0 {
		t.Fatalf("%+v", r)
	}
}

// guard bounds the error of a prediction for the validation suite: not
// the accuracy targets (bench/VALIDATION.md reports those against the
// errors measured), but a tripwire that fails when a change moves a
// prediction far from what was published.
var guard = map[string]float64{"step_time_s": 15, "mfu_percent": 20, "model_state_gib": 5, "activation_gib": 15}

// TestValidationDevelopmentPoints predicts every development point of the
// validation set (the 175B ones only without -short: about 20 s each),
// logs each published value beside its prediction, and checks each error
// against guard.
func TestValidationDevelopmentPoints(t *testing.T) {
	pts, err := validation.Load()
	if err != nil {
		t.Fatal(err)
	}
	var all []Compared
	var rows []string
	for i := range pts {
		p := &pts[i]
		if p.Role != validation.RoleDevelopment {
			continue
		}
		if testing.Short() && p.Layout.GPUs > 8 {
			continue
		}
		r, cs, err := Validate(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) == 0 {
			continue
		}
		for _, c := range cs {
			t.Logf("%-24s %-16s %-10s published %10.4f predicted %10.4f error %+6.1f%%", c.Point, c.Quantity, c.Kind, c.Published, c.Predicted, c.ErrorPct)
			if math.Abs(c.ErrorPct) > guard[c.Quantity] {
				t.Errorf("%s %s: predicted %.4f, published %.4f: %+.1f%% is past the %.0f%% guard", c.Point, c.Quantity, c.Predicted, c.Published, c.ErrorPct, guard[c.Quantity])
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %.4g | %.4g | %+.1f%% |", c.Point, c.Quantity, c.Kind, c.Published, c.Predicted, c.ErrorPct))
		}
		all = append(all, cs...)
		_ = r
	}
	if *updateTable {
		writeTable(t, all, rows)
	}
}

// writeTable replaces the predictions section of bench/VALIDATION.md.
func writeTable(t *testing.T, all []Compared, rows []string) {
	const path = "../../bench/VALIDATION.md"
	const begin, end = "<!-- predictions: begin -->", "<!-- predictions: end -->"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, k := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || k < i {
		t.Fatalf("%s has no %s ... %s section", path, begin, end)
	}
	var b strings.Builder
	b.WriteString(begin + "\n\n")
	b.WriteString("Measured by `go test -run TestValidationDevelopmentPoints -v ./internal/predict -args -update-table` (fastsim predict on each development point: grouped replay on the a100-80gb hardware model, no controller cost).\n\n")
	b.WriteString("| point | quantity | published as | published | fastsim | error |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	b.WriteString("\n")
	for _, q := range Quantities {
		if mae, n := MeanAbsErrorPct(all, q); n > 0 {
			fmt.Fprintf(&b, "- %s: mean absolute error %.1f%% over %d values\n", q, mae, n)
		}
	}
	b.WriteString("\n" + end)
	doc = doc[:i] + b.String() + doc[k+len(end):]
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}
