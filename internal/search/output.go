package search

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/fastsim/fastsim/internal/jsonpos"
)

// Doc is the JSON document of a search or of one shard of it.
type Doc struct {
	Fastsim string `json:"fastsim"` // "search"
	Version int    `json:"version"` // 1
	Space   Space  `json:"space"`
	// Costs identifies the cost model: "reference", or the SHA-256 of the
	// costs file, so shards priced differently do not merge.
	Costs string `json:"costs"`
	// CostsFrom names where the cost model came from, as the search was
	// told (the --costs file, the --hardware preset or file), for the
	// report; empty for the reference's. Shards may name one model by
	// different paths: a merge keeps shard 0's.
	CostsFrom string `json:"costs_from,omitempty"`
	Shard     Shard  `json:"shard"`   // {0,1} for a whole (or merged) search
	Layouts   int    `json:"layouts"` // in the whole enumeration
	// With Space.Prune, the shard's layouts fall in three parts, which
	// the JSON counts: PrunedMemory, those whose memory bound exceeds a
	// GPU; PrunedTimeBound, those whose step-time bound exceeds the best
	// step of a layout that fits (no search needs to simulate them, so
	// they are not results); and the Results. The counts do not depend
	// on --jobs, and a merge of shards gives the unsharded search's (the
	// memory counts sum; each shard's step-time bound is against its own
	// best step, so the merge counts against the best of all, as the
	// unsharded search does, and its count is not the shards' sum),
	// unlike how many layouts a run simulated: a run may
	// simulate a layout before it finds the step that rules it out, and
	// which ones depends on the order layouts finish in (Stats).
	PrunedMemory int `json:"pruned_by_memory,omitempty"`
	// PrunedTimeBound is derived (the shard's layouts less PrunedMemory
	// and the results, TimeBoundPruned): WriteJSON writes it and ReadDoc
	// checks it.
	PrunedTimeBound int      `json:"pruned_by_time_bound,omitempty"`
	Results         []Result `json:"results"` // ranked
	// Partial marks the result of a search stopped early (Stats.Stopped):
	// Results are every layout simulated until then, not the shard's
	// result, and ReadDoc refuses it, so no merge takes it for one.
	Partial bool `json:"partial,omitempty"`
}

// ShardLayouts is the number of layouts in d's shard: those whose index
// is K mod N.
func (d *Doc) ShardLayouts() int {
	if d.Shard.N <= 1 {
		return d.Layouts
	}
	if d.Shard.K >= d.Layouts {
		return 0
	}
	return (d.Layouts-d.Shard.K-1)/d.Shard.N + 1
}

// TimeBoundPruned is the number of the shard's layouts whose step-time
// bound exceeds the best step of a layout that fits: with pruning, every
// layout of the shard neither pruned by memory nor a result; 0 without,
// and in a partial result, whose other layouts were not simulated.
func (d *Doc) TimeBoundPruned() int {
	if !d.Space.Prune || d.Partial {
		return 0
	}
	return d.ShardLayouts() - d.PrunedMemory - len(d.Results)
}

// CountsLine is the first line of a search's report, the same for a
// search and for the merge of its shards: the layouts enumerated, how
// many were pruned and why, and how many are results.
func (d *Doc) CountsLine() string {
	of := fmt.Sprintf("%d layouts enumerated", d.Layouts)
	if d.Shard.N > 1 {
		of = fmt.Sprintf("shard %d/%d: %d of %d layouts enumerated", d.Shard.K, d.Shard.N, d.ShardLayouts(), d.Layouts)
	}
	if d.Partial {
		pruned := ""
		if d.Space.Prune {
			pruned = fmt.Sprintf(", %d pruned by memory", d.PrunedMemory)
		}
		return fmt.Sprintf("search: %s%s; PARTIAL: interrupted after %d of the %d layouts were simulated, which the table ranks (the others were not simulated)",
			of, pruned, len(d.Results), d.ShardLayouts())
	}
	if !d.Space.Prune {
		why := "--no-prune"
		if d.Space.toy() {
			why = "the toy workload"
		}
		return fmt.Sprintf("search: %s, none pruned (%s), %d simulated and written", of, why, len(d.Results))
	}
	return fmt.Sprintf("search: %s, %d pruned by memory, %d pruned by the step-time bound (above the best step), %d written (bound at most the best step)",
		of, d.PrunedMemory, d.TimeBoundPruned(), len(d.Results))
}

// full reports whether d's results carry the training dimensions, the
// memory split and the bounds: a transformer's do, whether the space
// searches them or pins them, prunes or not.
func (d *Doc) full() bool {
	return !d.Space.toy()
}

// NewDoc wraps ranked results.
func NewDoc(s Space, costs string, sh Shard, layouts int, rs []Result) *Doc {
	if sh.N == 0 {
		sh = Shard{K: 0, N: 1}
	}
	if rs == nil {
		rs = []Result{}
	}
	return &Doc{Fastsim: "search", Version: 1, Space: s.canonical(), Costs: costs, Shard: sh, Layouts: layouts, Results: rs}
}

// canonical is s with each setting spelled one way: the default gradient
// reduction, "overlap", as empty, so that shards given it either way
// merge.
func (s Space) canonical() Space {
	if s.GradReduce == gradOverlap {
		s.GradReduce = ""
	}
	return s
}

// record is a transformer's Result as WriteJSON writes it: every field,
// always, as the CSV has it (the schedule, recomputation, sequence
// parallelism and ZeRO stage the layout ran with even when the space
// pins them; a bound of 0 when the space does not prune), and an MFU of
// null when the space has no GPU peak to measure it against.
type record struct {
	Index            int      `json:"index"`
	PP               int      `json:"pp"`
	DP               int      `json:"dp"`
	TP               int      `json:"tp"`
	Micro            int      `json:"micro"`
	MicroBatch       int      `json:"micro_batch"`
	Schedule         string   `json:"schedule"`
	Recompute        string   `json:"recompute"`
	SequenceParallel bool     `json:"sequence_parallel"`
	Zero             int      `json:"zero"`
	StepTimeS        float64  `json:"step_time_s"`
	PeakMemoryMB     float64  `json:"peak_memory_mb"`
	Fits             bool     `json:"fits"`
	TokensPerS       float64  `json:"tokens_per_s"`
	StepTimeNs       int64    `json:"step_time_ns"`
	PeakBytes        int64    `json:"peak_memory_bytes"`
	ModelStateBytes  int64    `json:"model_state_bytes"`
	MFU              *float64 `json:"mfu"`
	MemoryBoundBytes int64    `json:"memory_bound_bytes"`
	TimeBoundNs      int64    `json:"time_bound_ns"`
}

// hasMFU reports whether the results' MFU means something: the space
// knows its GPU's peak (search --hardware).
func (d *Doc) hasMFU() bool { return d.Space.PeakTFLOPS > 0 }

// WriteJSON writes d indented, with a final newline. A toy space's
// results are written as they are; a transformer's as records.
func (d *Doc) WriteJSON(w io.Writer) error {
	var v any = d
	if d.Space.Prune && d.full() {
		// Both counts, even when 0: the three parts of the enumeration.
		tb := d.TimeBoundPruned()
		v = struct {
			*Doc
			PrunedMemory    int      `json:"pruned_by_memory"`
			PrunedTimeBound int      `json:"pruned_by_time_bound"`
			Results         []record `json:"results"`
		}{d, d.PrunedMemory, tb, d.records()}
	} else if d.full() {
		// The outer Results field hides the embedded Doc's.
		v = struct {
			*Doc
			Results []record `json:"results"`
		}{d, d.records()}
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// records is a transformer's results as WriteJSON writes them.
func (d *Doc) records() []record {
	rs := make([]record, len(d.Results))
	for i, r := range d.Results {
		j := d.Space.Job(r.Layout)
		rs[i] = record{Index: r.Index, PP: r.PP, DP: r.DP, TP: r.TP, Micro: r.Micro,
			MicroBatch: j.MicroBatch, Schedule: d.Space.scheduleOf(r.Layout), Recompute: d.Space.recomputeOf(r.Layout),
			SequenceParallel: j.SequenceParallel, Zero: j.Zero,
			StepTimeS: r.StepTimeS, PeakMemoryMB: r.PeakMemoryMB, Fits: r.Fits, TokensPerS: r.TokensPerS,
			StepTimeNs: r.StepTimeNs, PeakBytes: r.PeakBytes, ModelStateBytes: r.ModelStateBytes,
			MemoryBoundBytes: r.MemoryBoundBytes, TimeBoundNs: r.TimeBoundNs}
		if d.hasMFU() {
			rs[i].MFU = &d.Results[i].MFU
		}
	}
	return rs
}

// maxDocBytes bounds a document ReadDoc reads: MaxLayouts records of a
// few hundred bytes each.
const maxDocBytes = 1 << 30

// ReadDoc reads a document written by WriteJSON; name labels errors,
// which start "name:LINE: " at the line they are about.
func ReadDoc(r io.Reader, name string) (*Doc, error) {
	// A document is a JSON object that says it is one: what begins
	// otherwise (a binary file or /dev/zero given by mistake), or whose
	// first object is whole in the first bytes and another (a history's
	// header), is refused from those bytes, with the error they give,
	// instead of after reading up to the limit (a gigabyte, some seconds,
	// and the memory for it).
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(64 << 10)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var data []byte
	if t := bytes.TrimLeft(head, " \t\r\n"); len(t) > 0 && t[0] != '{' || searchDoc(head) != nil {
		data = head
	} else if data, err = io.ReadAll(io.LimitReader(br, maxDocBytes+1)); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > maxDocBytes {
		return nil, fmt.Errorf("%s: %w: over %d bytes", name, ErrMerge, maxDocBytes)
	}
	at := func(line int, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %w: %s", name, line, ErrMerge, fmt.Sprintf(format, args...))
	}
	if err := searchDoc(data); err != nil {
		return nil, at(jsonpos.Key(data, "fastsim"), "%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var d Doc
	if err := dec.Decode(&d); err != nil {
		return nil, at(jsonpos.Line(data, err), "%s", jsonpos.Describe(data, err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, at(jsonpos.Trailing(data, dec.InputOffset()), "trailing data after the JSON object")
	}
	if line, msg, dup := jsonpos.Duplicate(data); dup {
		return nil, at(line, "%s", msg)
	}
	if d.Fastsim != "search" || d.Version != 1 {
		return nil, at(jsonpos.Key(data, "fastsim"), "not a fastsim search result (version 1)")
	}
	if d.Partial {
		return nil, at(jsonpos.Key(data, "partial"), "a partial result: the search was interrupted after %d of the shard's %d layouts were simulated; search the shard again", len(d.Results), d.ShardLayouts())
	}
	if err := d.Shard.Check(); err != nil {
		return nil, at(jsonpos.Key(data, "shard"), "%v", err)
	}
	if d.Layouts < 0 || d.Layouts > MaxLayouts || len(d.Results) > d.Layouts {
		return nil, at(jsonpos.Key(data, "layouts"), "%d results of %d layouts (at most %d)", len(d.Results), d.Layouts, MaxLayouts)
	}
	if n := d.ShardLayouts(); d.PrunedMemory < 0 || d.PrunedMemory+len(d.Results) > n || (d.PrunedMemory > 0 && !d.Space.Prune) {
		return nil, at(jsonpos.Key(data, "pruned_by_memory"), "%d layouts pruned by memory and %d results of the shard's %d layouts", d.PrunedMemory, len(d.Results), n)
	}
	// A result's times and sizes come from a replay: none is negative
	// (a merge would rank, and prune by, what no layout can take).
	for i := range d.Results {
		r := &d.Results[i]
		for _, f := range []struct {
			key string
			v   int64
		}{{"step_time_ns", r.StepTimeNs}, {"peak_memory_bytes", r.PeakBytes}, {"model_state_bytes", r.ModelStateBytes}, {"memory_bound_bytes", r.MemoryBoundBytes}, {"time_bound_ns", r.TimeBoundNs}} {
			if f.v < 0 {
				return nil, at(jsonpos.Key(data, "results", strconv.Itoa(i), f.key), "results[%d].%s is %d, want 0 or more", i, f.key, f.v)
			}
		}
		// A replay never beats its layout's lower bounds (a search that
		// saw one would have stopped with an internal error), and a merge
		// prunes by them against the best step: a step under its own
		// bound would prune the layouts that should win.
		if r.StepTimeNs < r.TimeBoundNs {
			return nil, at(jsonpos.Key(data, "results", strconv.Itoa(i), "step_time_ns"), "results[%d].step_time_ns is %d, under its time_bound_ns %d: no search writes that", i, r.StepTimeNs, r.TimeBoundNs)
		}
		if r.PeakBytes < r.MemoryBoundBytes {
			return nil, at(jsonpos.Key(data, "results", strconv.Itoa(i), "peak_memory_bytes"), "results[%d].peak_memory_bytes is %d, under its memory_bound_bytes %d: no search writes that", i, r.PeakBytes, r.MemoryBoundBytes)
		}
	}
	if want := d.TimeBoundPruned(); d.PrunedTimeBound != want {
		// Left out (its value is 0) where it should not be: a search of
		// a fastsim that did not count its pruned layouts wrote it, and
		// what it pruned, by memory or by the bound, is not known.
		var keys map[string]json.RawMessage
		if json.Unmarshal(data, &keys) == nil && keys["pruned_by_time_bound"] == nil {
			return nil, at(1, "%d of the shard's %d layouts are neither results nor counted as pruned (no \"pruned_by_time_bound\"): an older fastsim, which did not count its pruned layouts, wrote it; search the shard again", want, d.ShardLayouts())
		}
		return nil, at(jsonpos.Key(data, "pruned_by_time_bound"), "%d layouts pruned by the step-time bound, but the shard's %d layouts less %d pruned by memory and %d results leave %d",
			d.PrunedTimeBound, d.ShardLayouts(), d.PrunedMemory, len(d.Results), want)
	}
	// The space is checked as a search checks its own before it runs: a
	// merge enumerates it and sizes its layouts' jobs, which an edited
	// space (a model of no heads, say) would make fail anywhere.
	if err := d.Space.Check(); err != nil {
		return nil, at(jsonpos.Key(data, "space"), "the space: %v", err)
	}
	return &d, nil
}

// CSVHeader is the first line of WriteCSV; CSVFullHeader is, when the
// space searches how layouts train or prunes.
const (
	CSVHeader     = "pp,dp,tp,micro,step_time_s,peak_memory_mb,fits,tokens_per_s"
	CSVFullHeader = CSVHeader + ",micro_batch,schedule,recompute,sequence_parallel,zero,mfu,model_state_bytes,peak_memory_bytes,memory_bound_bytes,time_bound_ns"
)

// WriteCSV writes one line per result, in rank order, after CSVHeader
// (or CSVFullHeader).
func (d *Doc) WriteCSV(w io.Writer) error {
	var b bytes.Buffer
	full := d.full()
	if full {
		b.WriteString(CSVFullHeader + "\n")
	} else {
		b.WriteString(CSVHeader + "\n")
	}
	for _, r := range d.Results {
		fmt.Fprintf(&b, "%d,%d,%d,%d,%s,%s,%t,%s", r.PP, r.DP, r.TP, r.Micro,
			ftoa(r.StepTimeS), ftoa(r.PeakMemoryMB), r.Fits, ftoa(r.TokensPerS))
		if full {
			j := d.Space.Job(r.Layout)
			mfu := "" // unknown without the GPU's peak
			if d.hasMFU() {
				mfu = ftoa(r.MFU)
			}
			fmt.Fprintf(&b, ",%d,%s,%s,%t,%d,%s,%d,%d,%d,%d", j.MicroBatch, d.Space.scheduleOf(r.Layout), d.Space.recomputeOf(r.Layout),
				j.SequenceParallel, j.Zero, mfu, r.ModelStateBytes, r.PeakBytes, r.MemoryBoundBytes, r.TimeBoundNs)
		}
		b.WriteByte('\n')
	}
	_, err := w.Write(b.Bytes())
	return err
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// WriteTable writes the top results (top <= 0: all) as an aligned table.
func (d *Doc) WriteTable(w io.Writer, top int) error {
	rs := d.Results
	if top > 0 && top < len(rs) {
		rs = rs[:top]
	}
	full := d.full()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if full {
		fmt.Fprintln(tw, "rank\tpp\tdp\ttp\tmicro\tmb\tschedule\trecompute\tsp\tzero\tstep time (ms)\ttokens/s\tMFU\tstate (GB)\tact (GB)\tpeak (GB)\tfits\t")
	} else {
		fmt.Fprintln(tw, "rank\tpp\tdp\ttp\tmicro\tstep time (ms)\tpeak (MB)\tfits\ttokens/s\t")
	}
	for i, r := range rs {
		fits := "no"
		if r.Fits {
			fits = "yes"
		}
		if full {
			j := d.Space.Job(r.Layout)
			sp := "no"
			if j.SequenceParallel {
				sp = "yes"
			}
			mfu := "–" // unknown without the GPU's peak (search --hardware)
			if d.hasMFU() {
				mfu = fmt.Sprintf("%.1f%%", 100*r.MFU)
			}
			fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%d\t%.3f\t%.0f\t%s\t%.2f\t%.2f\t%.2f\t%s\t\n", i+1, r.PP, r.DP, r.TP, r.Micro,
				j.MicroBatch, d.Space.scheduleOf(r.Layout), d.Space.recomputeOf(r.Layout), sp, j.Zero,
				float64(r.StepTimeNs)/1e6, r.TokensPerS, mfu, float64(r.ModelStateBytes)/1e9,
				float64(r.PeakBytes-r.ModelStateBytes)/1e9, float64(r.PeakBytes)/1e9, fits)
			continue
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%.3f\t%.1f\t%s\t%.0f\t\n", i+1, r.PP, r.DP, r.TP, r.Micro,
			float64(r.StepTimeNs)/1e6, r.PeakMemoryMB, fits, r.TokensPerS)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fitting := 0
	for _, r := range d.Results {
		if r.Fits {
			fitting++
		}
	}
	more := ""
	if len(rs) < len(d.Results) {
		more = fmt.Sprintf("; %d shown", len(rs))
	}
	if d.Space.Prune && !d.Partial {
		_, err := fmt.Fprintf(w, "%d layouts: %d cannot fit by their memory bound; %d with a step-time bound at most the best step simulated, %d fit in %.1f GB%s\n",
			d.Layouts, d.PrunedMemory, len(d.Results), fitting, float64(d.Space.MemoryBytes)/1e9, more)
		return err
	}
	_, err := fmt.Fprintf(w, "%d of %d layouts evaluated, %d fit in %.1f GB%s\n",
		len(d.Results), d.Layouts, fitting, float64(d.Space.MemoryBytes)/1e9, more)
	return err
}

// searchDoc returns an error when data starts with a JSON object whose
// "fastsim" field is not "search" (another of fastsim's documents, such as
// a history or a predict --json) or that has none (a replay's summary):
// said first, that is the answer, where a field the search document does
// not have would be named instead. Anything else is left to ReadDoc's own
// checks.
func searchDoc(data []byte) error {
	var head map[string]json.RawMessage
	if json.NewDecoder(bytes.NewReader(data)).Decode(&head) != nil || head == nil {
		return nil
	}
	// Matched as encoding/json matches a struct field, ignoring case; a
	// key given in two cases is left to the checks after.
	var v json.RawMessage
	n := 0
	for k, kv := range head {
		if strings.EqualFold(k, "fastsim") {
			v, n = kv, n+1
		}
	}
	switch {
	case n == 0:
		return errors.New(`not a fastsim search --json document (it has no "fastsim" field)`)
	case n > 1:
		return nil
	}
	if string(v) == `"search"` {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		b.Reset()
		b.Write(v)
	}
	shown := b.String()
	if len(shown) > 40 {
		shown = shown[:37] + "..."
	}
	return fmt.Errorf(`not a fastsim search --json document (its "fastsim" field is %s)`, shown)
}

// Merge combines the documents of shards 0..N-1 of one search into the
// document of the whole search, ranked as Run ranks. Every shard must be
// present once, with the same space, cost model and N.
func Merge(docs []*Doc) (*Doc, error) {
	if len(docs) == 0 {
		return nil, fmt.Errorf("%w: no shard results", ErrMerge)
	}
	first := docs[0]
	n := first.Shard.N
	seen := make([]bool, n)
	var all []Result
	var from []Shard // by all: the shard that gave the result
	pruned := 0
	costsFrom := ""
	for _, d := range docs {
		switch {
		case d.Space.canonical() != first.Space.canonical():
			return nil, fmt.Errorf("%w: shard %d/%d searched another space (%s)", ErrMerge, d.Shard.K, d.Shard.N, fieldDiff("", reflect.ValueOf(d.Space), reflect.ValueOf(first.Space)))
		case d.Costs != first.Costs:
			return nil, fmt.Errorf("%w: shard %d/%d used another cost model (%s, not %s)", ErrMerge, d.Shard.K, d.Shard.N, d.Costs, first.Costs)
		case d.Shard.N != n:
			return nil, fmt.Errorf("%w: shards of %d and of %d parts", ErrMerge, n, d.Shard.N)
		case d.Layouts != first.Layouts:
			return nil, fmt.Errorf("%w: shards count %d and %d layouts", ErrMerge, first.Layouts, d.Layouts)
		case seen[d.Shard.K]:
			return nil, fmt.Errorf("%w: shard %d/%d given twice", ErrMerge, d.Shard.K, n)
		case d.Partial:
			return nil, fmt.Errorf("%w: shard %d/%d is a partial result (its search was interrupted)", ErrMerge, d.Shard.K, n)
		}
		seen[d.Shard.K] = true
		if d.Shard.K == 0 {
			costsFrom = d.CostsFrom
		}
		pruned += d.PrunedMemory
		for _, r := range d.Results {
			if r.Index < 0 || r.Index >= d.Layouts || !d.Shard.Has(r.Index) {
				return nil, fmt.Errorf("%w: shard %d/%d holds layout %d, which is not its own", ErrMerge, d.Shard.K, n, r.Index)
			}
			fill(&r, d.Space)
			all = append(all, r)
			from = append(from, d.Shard)
		}
	}
	for k, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("%w: shard %d/%d is missing", ErrMerge, k, n)
		}
	}
	// The space's layouts, to check each result's against: a result names
	// its layout by its index and carries it too, and a shard edited or
	// written by another build could disagree with its index.
	layouts, err := Enumerate(first.Space)
	if err != nil {
		return nil, fmt.Errorf("%w: the shards' space: %v", ErrMerge, err)
	}
	if len(layouts) != first.Layouts {
		return nil, fmt.Errorf("%w: the shards count %d layouts, their space has %d", ErrMerge, first.Layouts, len(layouts))
	}
	got := make([]bool, first.Layouts)
	for i, r := range all {
		sh := from[i]
		if got[r.Index] {
			return nil, fmt.Errorf("%w: shard %d/%d: layout %d appears twice", ErrMerge, sh.K, sh.N, r.Index)
		}
		got[r.Index] = true
		if !first.Space.sameLayout(r.Layout, layouts[r.Index]) {
			return nil, fmt.Errorf("%w: shard %d/%d: layout %d is %v, but the space's layout %d is %v", ErrMerge, sh.K, sh.N, r.Index, r.Layout, r.Index, layouts[r.Index])
		}
	}
	if first.Space.Prune {
		// Each shard kept the layouts it could not rule out against its
		// own best; against the best of all, fewer remain.
		all = Settled(all)
	} else if len(all) != first.Layouts {
		return nil, fmt.Errorf("%w: %d of %d layouts present", ErrMerge, len(all), first.Layouts)
	}
	Rank(all)
	out := NewDoc(first.Space, first.Costs, Shard{K: 0, N: 1}, first.Layouts, all)
	out.PrunedMemory = pruned
	out.CostsFrom = costsFrom
	out.PrunedTimeBound = out.TimeBoundPruned()
	return out, nil
}

// fieldDiff names the first field, by its JSON name, in which the structs
// a and b differ, with both values: "space.peak_tflops 0, not 989.4". A
// whole space printed twice hides the one value that differs.
func fieldDiff(prefix string, a, b reflect.Value) string {
	t := a.Type()
	for i := range t.NumField() {
		fa, fb := a.Field(i), b.Field(i)
		if reflect.DeepEqual(fa.Interface(), fb.Interface()) {
			continue
		}
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" {
			name = t.Field(i).Name
		}
		if fa.Kind() == reflect.Struct {
			return fieldDiff(prefix+name+".", fa, fb)
		}
		return fmt.Sprintf("%s%s %v, not %v", prefix, name, fa.Interface(), fb.Interface())
	}
	return "the same fields"
}
