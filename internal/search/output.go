package search

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// Doc is the JSON document of a search or of one shard of it.
type Doc struct {
	Fastsim string `json:"fastsim"` // "search"
	Version int    `json:"version"` // 1
	Space   Space  `json:"space"`
	// Costs identifies the cost model: "reference", or the SHA-256 of the
	// costs file, so shards priced differently do not merge.
	Costs   string   `json:"costs"`
	Shard   Shard    `json:"shard"`   // {0,1} for a whole (or merged) search
	Layouts int      `json:"layouts"` // in the whole enumeration
	Results []Result `json:"results"` // ranked
}

// NewDoc wraps ranked results.
func NewDoc(s Space, costs string, sh Shard, layouts int, rs []Result) *Doc {
	if sh.N == 0 {
		sh = Shard{K: 0, N: 1}
	}
	if rs == nil {
		rs = []Result{}
	}
	return &Doc{Fastsim: "search", Version: 1, Space: s, Costs: costs, Shard: sh, Layouts: layouts, Results: rs}
}

// WriteJSON writes d indented, with a final newline.
func (d *Doc) WriteJSON(w io.Writer) error {
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// ReadDoc reads a document written by WriteJSON; name labels errors.
func ReadDoc(r io.Reader, name string) (*Doc, error) {
	dec := json.NewDecoder(io.LimitReader(r, 1<<30))
	dec.DisallowUnknownFields()
	var d Doc
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrMerge, err)
	}
	if d.Fastsim != "search" || d.Version != 1 {
		return nil, fmt.Errorf("%s: %w: not a fastsim search result (version 1)", name, ErrMerge)
	}
	if err := d.Shard.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrMerge, err)
	}
	if d.Layouts < 0 || d.Layouts > MaxLayouts || len(d.Results) > d.Layouts {
		return nil, fmt.Errorf("%s: %w: %d results of %d layouts (at most %d)", name, ErrMerge, len(d.Results), d.Layouts, MaxLayouts)
	}
	return &d, nil
}

// CSVHeader is the first line of WriteCSV.
const CSVHeader = "pp,dp,tp,micro,step_time_s,peak_memory_mb,fits,tokens_per_s"

// WriteCSV writes one line per result, in rank order, after CSVHeader.
func (d *Doc) WriteCSV(w io.Writer) error {
	var b bytes.Buffer
	b.WriteString(CSVHeader + "\n")
	for _, r := range d.Results {
		fmt.Fprintf(&b, "%d,%d,%d,%d,%s,%s,%t,%s\n", r.PP, r.DP, r.TP, r.Micro,
			ftoa(r.StepTimeS), ftoa(r.PeakMemoryMB), r.Fits, ftoa(r.TokensPerS))
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
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\tpp\tdp\ttp\tmicro\tstep time (ms)\tpeak (MB)\tfits\ttokens/s\t")
	for i, r := range rs {
		fits := "no"
		if r.Fits {
			fits = "yes"
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
	_, err := fmt.Fprintf(w, "%d of %d layouts evaluated, %d fit in %.1f GB%s\n",
		len(d.Results), d.Layouts, fitting, float64(d.Space.MemoryBytes)/1e9, more)
	return err
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
	for _, d := range docs {
		switch {
		case d.Space != first.Space:
			return nil, fmt.Errorf("%w: shard %d/%d searched another space (%+v, not %+v)", ErrMerge, d.Shard.K, d.Shard.N, d.Space, first.Space)
		case d.Costs != first.Costs:
			return nil, fmt.Errorf("%w: shard %d/%d used another cost model (%s, not %s)", ErrMerge, d.Shard.K, d.Shard.N, d.Costs, first.Costs)
		case d.Shard.N != n:
			return nil, fmt.Errorf("%w: shards of %d and of %d parts", ErrMerge, n, d.Shard.N)
		case d.Layouts != first.Layouts:
			return nil, fmt.Errorf("%w: shards count %d and %d layouts", ErrMerge, first.Layouts, d.Layouts)
		case seen[d.Shard.K]:
			return nil, fmt.Errorf("%w: shard %d/%d given twice", ErrMerge, d.Shard.K, n)
		}
		seen[d.Shard.K] = true
		for _, r := range d.Results {
			if r.Index < 0 || r.Index >= d.Layouts || !d.Shard.Has(r.Index) {
				return nil, fmt.Errorf("%w: shard %d/%d holds layout %d, which is not its own", ErrMerge, d.Shard.K, n, r.Index)
			}
			fill(&r, d.Space)
			all = append(all, r)
		}
	}
	for k, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("%w: shard %d/%d is missing", ErrMerge, k, n)
		}
	}
	got := make([]bool, first.Layouts)
	for _, r := range all {
		if got[r.Index] {
			return nil, fmt.Errorf("%w: layout %d appears twice", ErrMerge, r.Index)
		}
		got[r.Index] = true
	}
	if len(all) != first.Layouts {
		return nil, fmt.Errorf("%w: %d of %d layouts present", ErrMerge, len(all), first.Layouts)
	}
	Rank(all)
	return NewDoc(first.Space, first.Costs, Shard{K: 0, N: 1}, first.Layouts, all), nil
}
