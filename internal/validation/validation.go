// Package validation holds the published training measurements that
// fastsim's transformer model is checked against, and loads them.
//
// The points live in points.json, embedded in the binary. They come from
// three papers, each read in full (see the "sources" block of the file and
// bench/VALIDATION.md):
//
//   - Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
//     Transformer Models" (arXiv:2205.05198): the 22B, 175B, 530B and 1T
//     configurations of its Table 3, their end-to-end iteration times with
//     full recomputation and with sequence parallelism plus selective
//     recomputation (Table 5), the 22B per-layer times (Table 4), and the
//     530B run with 8-way data parallelism (Section 6.3).
//   - Narayanan et al., SC'21, "Efficient Large-Scale Language Model
//     Training on GPU Clusters Using Megatron-LM" (arXiv:2104.04473): every
//     row of Table 1 (teraFLOP/s per GPU, percentage of peak, aggregate
//     petaFLOP/s) and of Table 2 (PTD-P against ZeRO-3).
//   - Isaev et al., SC'23, "Calculon": the predictions its Table 2 makes
//     for the Korthikanti runs, and, from its repository, the memory
//     figures its validation compares against.
//
// Every measurement keeps the value as published, its unit, the table and
// row it comes from and a quotation. A measurement's Kind says whether it
// was measured on hardware, derived by the paper from a measurement, computed
// from a formula (analytical), or predicted by another tool. A point's Role
// says whether fastsim may be developed against it or must only be scored
// on it (held out).
//
// Layout fields that a paper does not publish are zero (or empty) and named
// in the point's Unpublished list; nothing is filled in by guess.
package validation

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

//go:embed points.json
var pointsJSON []byte

// FileName is the name errors give the embedded data file.
const FileName = "points.json"

// ErrInvalid is wrapped by every error about the content of a points file.
var ErrInvalid = errors.New("invalid validation point")

// Roles of a point.
const (
	// RoleDevelopment marks points the simulator may be tuned and debugged
	// against.
	RoleDevelopment = "development"
	// RoleHeldOut marks points used only to score the simulator, never to
	// choose its mechanisms or constants.
	RoleHeldOut = "held-out"
)

// Kinds of a measurement.
const (
	// KindMeasured is a value measured on hardware and published.
	KindMeasured = "measured"
	// KindDerived is a value the paper computed from its own measurement
	// (for example a training-time estimate from measured throughput).
	KindDerived = "derived"
	// KindAnalytical is a value computed from a formula, not measured.
	KindAnalytical = "analytical"
	// KindPrediction is another tool's published prediction; By names it.
	KindPrediction = "prediction"
)

// Quantities a measurement may hold, each with the only unit it may carry.
var quantityUnits = map[string]string{
	"step_time_s":                 "s",       // one training iteration (global batch)
	"tflops_per_gpu":              "TFLOP/s", // achieved, per GPU, 1e12 FLOP/s
	"percent_of_peak":             "%",       // of 312 TFLOP/s (A100 16-bit)
	"aggregate_pflops":            "PFLOP/s", // achieved over all GPUs, 1e15 FLOP/s
	"mfu_percent":                 "%",       // model FLOPs utilization
	"hfu_percent":                 "%",       // hardware FLOPs utilization
	"throughput_increase_percent": "%",       // over full recomputation
	"activation_gib":              "GiB",     // per GPU, first pipeline stage, 2^30 bytes
	"model_state_gib":             "GiB",     // parameters + gradients + optimizer per GPU, 2^30 bytes
	"layer_forward_ms":            "ms",      // one transformer layer
	"layer_backward_ms":           "ms",
	"layer_combined_ms":           "ms",
	"training_days_300b_tokens":   "days",
}

// Layout fields a point may list as unpublished.
var unpublishable = []string{"tp", "pp", "micro_batch", "schedule", "interleave_chunks", "recompute"}

// Hardware names a point may use.
var hardwareNames = []string{"a100-80gb", "h100-80gb"}

// Set is the whole content of a points file.
type Set struct {
	// Version is the file format's version, 1.
	Version int `json:"version"`
	// About says in one sentence what the file is.
	About string `json:"about"`
	// Sources maps a reference key to the work it names.
	Sources map[string]Source `json:"sources"`
	// Points are the published configurations with their measurements.
	Points []Point `json:"points"`
}

// Source is a published work.
type Source struct {
	// Citation is the full reference: authors, title, venue, identifier.
	Citation string `json:"citation"`
	// URL is where the work is published.
	URL string `json:"url"`
	// Read says which copy was read and what of it could be read.
	Read string `json:"read"`
}

// Point is one published training configuration and what was published
// about it.
type Point struct {
	// ID is unique in the file, e.g. "korthikanti-22b-full".
	ID string `json:"id"`
	// Role is RoleDevelopment or RoleHeldOut.
	Role string `json:"role"`
	// Model is the transformer's shape.
	Model Model `json:"model"`
	// Hardware names the GPU preset, e.g. "a100-80gb".
	Hardware string `json:"hardware"`
	// Layout is the parallel layout and training options.
	Layout Layout `json:"layout"`
	// Unpublished names layout fields the source does not give; they are
	// zero or empty in Layout.
	Unpublished []string `json:"unpublished,omitempty"`
	// Chosen fills unpublished layout fields for a prediction by a stated
	// rule with its own source; Layout keeps them zero, as published.
	Chosen *Chosen `json:"chosen,omitempty"`
	// Measurements are the published values.
	Measurements []Measurement `json:"measurements"`
	// Note says what the run was and what is uncertain about it.
	Note string `json:"note"`
	// Line is the line of the point's "id" in the file (set by Parse).
	Line int `json:"-"`
}

// Chosen is how a prediction fills a point's unpublished layout fields:
// only fields listed in Unpublished, each by Rule from Source (for
// example the run scripts the authors published), never fitted to the
// point's measurements.
type Chosen struct {
	// MicroBatch is the microbatch size in sequences (0: not chosen).
	MicroBatch int `json:"micro_batch,omitempty"`
	// Schedule is "1f1b" or "interleaved:V" ("" : not chosen).
	Schedule string `json:"schedule,omitempty"`
	// DDP is the run's data-parallel implementation as its script names
	// it: "torch" (PyTorch DDP) or "local" (Megatron-LM's own); "" when
	// not chosen. No paper states it and it is not a layout field, so it
	// needs no Unpublished entry; Source's quote must name it
	// ("DDP=local").
	DDP string `json:"ddp,omitempty"`
	// Precision is the run's mixed precision, "fp16" or "bf16", as
	// PrecisionSource (another file of the same scripts) gives it; ""
	// when not chosen.
	Precision       string     `json:"precision,omitempty"`
	PrecisionSource *SourceRef `json:"precision_source,omitempty"`
	// Rule says why these values.
	Rule string `json:"rule"`
	// Source is where the values are written.
	Source SourceRef `json:"source"`
}

// NarayananFLOPs is Narayanan et al.'s Eq. 3 (SC'21, Section 5.1 and
// Appendix): the FLOPs of one iteration with full recomputation,
// 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)), by which Table 1 and Table 2
// count their teraFLOP/s.
func NarayananFLOPs(m Model, batch int) float64 {
	B, s, l, h, V := float64(batch), float64(m.Seq), float64(m.Layers), float64(m.Hidden), float64(m.Vocab)
	return 96 * B * s * l * h * h * (1 + s/(6*h) + V/(16*l*h))
}

// Model is a GPT-style transformer's shape.
type Model struct {
	// Name is the paper's name for the model ("22B", "175B (GPT-3)").
	Name string `json:"name"`
	// ParamsBillion is the parameter count the paper publishes, in
	// billions; 0 when the paper gives only the name.
	ParamsBillion float64 `json:"params_billion"`
	// Layers, Hidden, Heads, FFN (MLP inner size), Vocab and Seq
	// (sequence length) are the usual sizes.
	Layers int `json:"layers"`
	Hidden int `json:"hidden"`
	Heads  int `json:"heads"`
	FFN    int `json:"ffn"`
	Vocab  int `json:"vocab"`
	Seq    int `json:"seq"`
}

// Layout is how a run was split over GPUs and which memory-saving options
// it used.
type Layout struct {
	// GPUs is the number of GPUs; TP, PP and DP the tensor-, pipeline- and
	// data-parallel sizes, TP*PP*DP == GPUs.
	GPUs int `json:"gpus"`
	TP   int `json:"tp"`
	PP   int `json:"pp"`
	DP   int `json:"dp"`
	// ModelParallel is TP*PP when only the product is published.
	ModelParallel int `json:"model_parallel,omitempty"`
	// GlobalBatch and MicroBatch are in sequences.
	GlobalBatch int `json:"global_batch"`
	MicroBatch  int `json:"micro_batch"`
	// Schedule is "1f1b", "interleaved:V" (V model chunks per GPU), or
	// "interleaved" when V is unpublished.
	Schedule string `json:"schedule"`
	// Recompute is "none", "selective" or "full".
	Recompute string `json:"recompute"`
	// SequenceParallel is Korthikanti et al.'s sequence parallelism.
	SequenceParallel bool `json:"sequence_parallel"`
	// ZeroStage is the ZeRO stage (0 for none).
	ZeroStage int `json:"zero_stage"`
}

// Measurement is one published value.
type Measurement struct {
	// Quantity is what is measured, e.g. "step_time_s".
	Quantity string `json:"quantity"`
	// Value is the number as published, in Unit.
	Value float64 `json:"value"`
	// Unit is the quantity's unit ("s", "TFLOP/s", "GiB", ...).
	Unit string `json:"unit"`
	// Kind is KindMeasured, KindDerived, KindAnalytical or KindPrediction.
	Kind string `json:"kind"`
	// By names the tool of a prediction ("calculon").
	By string `json:"by,omitempty"`
	// DeltaPercent is the error the source publishes for a prediction,
	// 100*(1 - predicted/measured).
	DeltaPercent *float64 `json:"delta_percent,omitempty"`
	// AsPublished is the value as the source prints it, with its unit.
	AsPublished string `json:"as_published"`
	// Conversion says how AsPublished became Value.
	Conversion string `json:"conversion"`
	// Source is where the value sits.
	Source SourceRef `json:"source"`
}

// SourceRef places a value in a source.
type SourceRef struct {
	// Ref is a key of Set.Sources.
	Ref string `json:"ref"`
	// Location is the table or figure, row and column, or section.
	Location string `json:"location"`
	// Quote is the text the value sits in.
	Quote string `json:"quote"`
}

// Load returns the embedded points, checked.
func Load() ([]Point, error) {
	s, err := Parse(FileName, pointsJSON)
	if err != nil {
		return nil, err
	}
	return s.Points, nil
}

// LoadSet returns the embedded file, sources included, checked.
func LoadSet() (Set, error) { return Parse(FileName, pointsJSON) }

// Parse decodes and checks a points file. Errors read
// "NAME:LINE: point ID: what is wrong" and wrap ErrInvalid.
func Parse(name string, data []byte) (Set, error) {
	var s Set
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		line := 1
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			line = lineAt(data, se.Offset)
		case errors.As(err, &te):
			line = lineAt(data, te.Offset)
		case errors.Is(err, io.ErrUnexpectedEOF):
			line = lineAt(data, int64(len(data)))
		}
		return Set{}, fmt.Errorf("%s:%d: %w: %v", name, line, ErrInvalid, err)
	}
	if s.Version != 1 {
		return Set{}, fmt.Errorf("%s:1: %w: version %d, want 1", name, ErrInvalid, s.Version)
	}
	if len(s.Points) == 0 {
		return Set{}, fmt.Errorf("%s:1: %w: no points", name, ErrInvalid)
	}
	seen := make(map[string]bool, len(s.Points))
	for i := range s.Points {
		p := &s.Points[i]
		p.Line = idLine(data, p.ID)
		if seen[p.ID] {
			return Set{}, fmt.Errorf("%s:%d: %w: point %q appears twice", name, p.Line, ErrInvalid, p.ID)
		}
		seen[p.ID] = true
		if err := p.check(s.Sources); err != nil {
			return Set{}, fmt.Errorf("%s:%d: %w: point %q: %v", name, p.Line, ErrInvalid, p.ID, err)
		}
	}
	return s, nil
}

// lineAt is the 1-based line of byte offset off in data.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return 1 + bytes.Count(data[:off], []byte{'\n'})
}

// idLine finds the line of a point's "id" member; ids are unique, so the
// first match is the point's (1 when it cannot be found).
func idLine(data []byte, id string) int {
	key, _ := json.Marshal(id)
	for _, pat := range [][]byte{
		append([]byte(`"id": `), key...),
		append([]byte(`"id":`), key...),
	} {
		if i := bytes.Index(data, pat); i >= 0 {
			return lineAt(data, int64(i))
		}
	}
	return 1
}

func (p *Point) unpublished(field string) bool { return slices.Contains(p.Unpublished, field) }

// check validates one point: names and units, positive sizes, and the
// layout's arithmetic.
func (p *Point) check(sources map[string]Source) error {
	if p.ID == "" {
		return errors.New("empty id")
	}
	if p.Role != RoleDevelopment && p.Role != RoleHeldOut {
		return fmt.Errorf("role %q, want %q or %q", p.Role, RoleDevelopment, RoleHeldOut)
	}
	if !slices.Contains(hardwareNames, p.Hardware) {
		return fmt.Errorf("hardware %q, want one of %s", p.Hardware, strings.Join(hardwareNames, ", "))
	}
	if strings.TrimSpace(p.Note) == "" {
		return errors.New("empty note")
	}
	for _, f := range p.Unpublished {
		if !slices.Contains(unpublishable, f) {
			return fmt.Errorf("unpublished field %q is not one of %s", f, strings.Join(unpublishable, ", "))
		}
	}
	if err := p.Model.check(); err != nil {
		return err
	}
	if err := p.checkLayout(); err != nil {
		return err
	}
	if err := p.checkChosen(sources); err != nil {
		return err
	}
	if len(p.Measurements) == 0 {
		return errors.New("no measurements")
	}
	for i, m := range p.Measurements {
		if err := m.check(sources); err != nil {
			return fmt.Errorf("measurement %d (%s): %v", i, m.Quantity, err)
		}
	}
	return nil
}

func (m *Model) check() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"layers", m.Layers}, {"hidden", m.Hidden}, {"heads", m.Heads}, {"ffn", m.FFN}, {"vocab", m.Vocab}, {"seq", m.Seq}} {
		if f.v <= 0 {
			return fmt.Errorf("model %s = %d, want > 0", f.name, f.v)
		}
	}
	if m.Name == "" {
		return errors.New("model has no name")
	}
	if m.Hidden%m.Heads != 0 {
		return fmt.Errorf("model hidden %d not divisible by heads %d", m.Hidden, m.Heads)
	}
	if m.ParamsBillion < 0 {
		return fmt.Errorf("model params_billion %v < 0", m.ParamsBillion)
	}
	return nil
}

// checkLayout verifies the layout's sizes: each known one positive, and
// tp*pp*dp == gpus (or model_parallel*dp == gpus when the split is
// unpublished), the batch divisible by dp*micro, heads by tp, layers by pp
// (and by pp*V for an interleaved schedule, whose microbatch count must
// also be a multiple of pp: Narayanan et al. Section 2.2.2).
func (p *Point) checkLayout() error {
	l, m := &p.Layout, &p.Model
	if l.GPUs <= 0 || l.DP <= 0 || l.GlobalBatch <= 0 {
		return fmt.Errorf("layout gpus %d, dp %d, global_batch %d: want all > 0", l.GPUs, l.DP, l.GlobalBatch)
	}
	if err := knownOrZero(p, "tp", l.TP); err != nil {
		return err
	}
	if err := knownOrZero(p, "pp", l.PP); err != nil {
		return err
	}
	if err := knownOrZero(p, "micro_batch", l.MicroBatch); err != nil {
		return err
	}
	if l.ZeroStage < 0 || l.ZeroStage > 3 {
		return fmt.Errorf("zero_stage %d, want 0..3", l.ZeroStage)
	}
	splitKnown := l.TP > 0 && l.PP > 0
	switch {
	case splitKnown:
		if l.TP*l.PP*l.DP != l.GPUs {
			return fmt.Errorf("tp*pp*dp = %d*%d*%d = %d, want gpus = %d", l.TP, l.PP, l.DP, l.TP*l.PP*l.DP, l.GPUs)
		}
		if l.ModelParallel != 0 && l.ModelParallel != l.TP*l.PP {
			return fmt.Errorf("model_parallel %d != tp*pp = %d", l.ModelParallel, l.TP*l.PP)
		}
		if m.Heads%l.TP != 0 {
			return fmt.Errorf("heads %d not divisible by tp %d", m.Heads, l.TP)
		}
		if m.Layers%l.PP != 0 {
			return fmt.Errorf("layers %d not divisible by pp %d", m.Layers, l.PP)
		}
	case l.ModelParallel > 0:
		if l.ModelParallel*l.DP != l.GPUs {
			return fmt.Errorf("model_parallel*dp = %d*%d = %d, want gpus = %d", l.ModelParallel, l.DP, l.ModelParallel*l.DP, l.GPUs)
		}
	default:
		return errors.New("tp or pp unpublished and no model_parallel given")
	}
	perReplica := l.DP
	if l.MicroBatch > 0 {
		perReplica *= l.MicroBatch
	}
	if l.GlobalBatch%perReplica != 0 {
		return fmt.Errorf("global_batch %d not divisible by dp*micro_batch = %d", l.GlobalBatch, perReplica)
	}
	switch l.Recompute {
	case "none", "selective", "full":
		if p.unpublished("recompute") {
			return fmt.Errorf("recompute %q is listed as unpublished", l.Recompute)
		}
	case "":
		if !p.unpublished("recompute") {
			return errors.New("recompute empty but not listed as unpublished")
		}
	default:
		return fmt.Errorf("recompute %q, want none, selective or full", l.Recompute)
	}
	v, err := p.chunks()
	if err != nil {
		return err
	}
	if v > 1 && splitKnown {
		if m.Layers%(l.PP*v) != 0 {
			return fmt.Errorf("interleaved: layers %d not divisible by pp*chunks = %d", m.Layers, l.PP*v)
		}
		if l.MicroBatch > 0 {
			if mb := l.GlobalBatch / (l.DP * l.MicroBatch); mb%l.PP != 0 {
				return fmt.Errorf("interleaved: %d microbatches per pipeline, not a multiple of pp %d", mb, l.PP)
			}
		}
	}
	return nil
}

// checkChosen verifies that a point's chosen values fill only unpublished
// fields, have a rule and a source, and make a valid layout.
func (p *Point) checkChosen(sources map[string]Source) error {
	c := p.Chosen
	if c == nil {
		return nil
	}
	if strings.TrimSpace(c.Rule) == "" {
		return errors.New("chosen: empty rule")
	}
	if _, ok := sources[c.Source.Ref]; !ok {
		return fmt.Errorf("chosen: source ref %q is not in sources", c.Source.Ref)
	}
	if c.Source.Location == "" || c.Source.Quote == "" {
		return errors.New("chosen: source needs a location and a quote")
	}
	if c.MicroBatch == 0 && c.Schedule == "" && c.DDP == "" && c.Precision == "" {
		return errors.New("chosen: no value")
	}
	switch c.DDP {
	case "", "torch", "local":
	default:
		return fmt.Errorf("chosen: ddp %q, want torch or local", c.DDP)
	}
	if c.DDP != "" && !strings.Contains(c.Source.Quote, "DDP="+c.DDP) {
		return fmt.Errorf("chosen: ddp %q is not in the source's quote", c.DDP)
	}
	switch c.Precision {
	case "":
	case "fp16", "bf16":
		ps := c.PrecisionSource
		if ps == nil || ps.Location == "" || !strings.Contains(ps.Quote, "--"+c.Precision) {
			return fmt.Errorf("chosen: precision %q needs a precision_source quoting --%s", c.Precision, c.Precision)
		}
		if _, ok := sources[ps.Ref]; !ok {
			return fmt.Errorf("chosen: precision_source ref %q is not in sources", ps.Ref)
		}
	default:
		return fmt.Errorf("chosen: precision %q, want fp16 or bf16", c.Precision)
	}
	if c.MicroBatch != 0 && !p.unpublished("micro_batch") {
		return errors.New("chosen: micro_batch is published")
	}
	if c.Schedule != "" && !p.unpublished("schedule") && !p.unpublished("interleave_chunks") {
		return errors.New("chosen: the schedule is published")
	}
	q := *p
	q.Chosen, q.Unpublished = nil, nil
	q.Layout = p.Resolved()
	for _, f := range p.Unpublished {
		filled := (f == "micro_batch" && c.MicroBatch != 0) ||
			((f == "schedule" || f == "interleave_chunks") && c.Schedule != "")
		if !filled {
			q.Unpublished = append(q.Unpublished, f)
		}
	}
	if err := q.checkLayout(); err != nil {
		return fmt.Errorf("chosen: %v", err)
	}
	return nil
}

// Resolved is the point's layout with its chosen values filled in.
func (p *Point) Resolved() Layout {
	l := p.Layout
	if c := p.Chosen; c != nil {
		if c.MicroBatch != 0 {
			l.MicroBatch = c.MicroBatch
		}
		if c.Schedule != "" {
			l.Schedule = c.Schedule
		}
	}
	return l
}

// knownOrZero checks a size that may be unpublished: positive when known,
// zero exactly when listed as unpublished.
func knownOrZero(p *Point, field string, v int) error {
	if p.unpublished(field) {
		if v != 0 {
			return fmt.Errorf("%s = %d but listed as unpublished (want 0)", field, v)
		}
		return nil
	}
	if v <= 0 {
		return fmt.Errorf("%s = %d, want > 0 (or list it as unpublished)", field, v)
	}
	return nil
}

// chunks parses the schedule: 1 for "1f1b", V for "interleaved:V", 0 when
// the schedule or its chunk count is unpublished.
func (p *Point) chunks() (int, error) {
	s := p.Layout.Schedule
	switch {
	case s == "1f1b":
		return 1, nil
	case s == "":
		if !p.unpublished("schedule") {
			return 0, errors.New("schedule empty but not listed as unpublished")
		}
		return 0, nil
	case s == "interleaved":
		if !p.unpublished("interleave_chunks") {
			return 0, errors.New(`schedule "interleaved" without a chunk count, and interleave_chunks not listed as unpublished`)
		}
		return 0, nil
	case strings.HasPrefix(s, "interleaved:"):
		v, err := strconv.Atoi(strings.TrimPrefix(s, "interleaved:"))
		if err != nil || v < 2 {
			return 0, fmt.Errorf("schedule %q: want interleaved:V with V >= 2", s)
		}
		return v, nil
	}
	return 0, fmt.Errorf("schedule %q, want 1f1b, interleaved:V or interleaved", s)
}

// Chunks is the number of model chunks per GPU: 1 for the 1F1B schedule,
// V for "interleaved:V", 0 when unpublished.
func (p *Point) Chunks() int {
	v, _ := p.chunks()
	return v
}

func (m *Measurement) check(sources map[string]Source) error {
	unit, ok := quantityUnits[m.Quantity]
	if !ok {
		return fmt.Errorf("unknown quantity %q", m.Quantity)
	}
	if m.Unit != unit {
		return fmt.Errorf("unit %q, want %q", m.Unit, unit)
	}
	if !(m.Value > 0) {
		return fmt.Errorf("value %v, want > 0", m.Value)
	}
	switch m.Kind {
	case KindMeasured, KindDerived, KindAnalytical:
		if m.By != "" || m.DeltaPercent != nil {
			return fmt.Errorf("kind %q takes no by or delta_percent", m.Kind)
		}
	case KindPrediction:
		if m.By == "" {
			return errors.New("prediction without by")
		}
	default:
		return fmt.Errorf("kind %q, want measured, derived, analytical or prediction", m.Kind)
	}
	if m.AsPublished == "" || m.Conversion == "" {
		return errors.New("as_published and conversion must be given")
	}
	if _, ok := sources[m.Source.Ref]; !ok {
		return fmt.Errorf("source ref %q not in sources", m.Source.Ref)
	}
	if m.Source.Location == "" || m.Source.Quote == "" {
		return errors.New("source location and quote must be given")
	}
	return nil
}

// Get returns the point's first measurement of a quantity and kind.
func (p *Point) Get(quantity, kind string) (Measurement, bool) {
	for _, m := range p.Measurements {
		if m.Quantity == quantity && m.Kind == kind {
			return m, true
		}
	}
	return Measurement{}, false
}
