package golden

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Event is one complete event: its name and its start and end in
// microseconds. In JSON it is the array [name, ts, end].
type Event struct {
	Name    string
	Ts, End float64
}

// UnmarshalJSON reads the array form [name, ts, end].
func (e *Event) UnmarshalJSON(data []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if len(raw) != 3 {
		return fmt.Errorf("%w: event %s: want [name, ts, end]", ErrFormat, data)
	}
	if err := json.Unmarshal(raw[0], &e.Name); err != nil {
		return fmt.Errorf("%w: event %s: %v", ErrFormat, data, err)
	}
	if err := json.Unmarshal(raw[1], &e.Ts); err != nil {
		return fmt.Errorf("%w: event %s: %v", ErrFormat, data, err)
	}
	if err := json.Unmarshal(raw[2], &e.End); err != nil {
		return fmt.Errorf("%w: event %s: %v", ErrFormat, data, err)
	}
	return nil
}

// MarshalJSON writes the array form [name, ts, end].
func (e Event) MarshalJSON() ([]byte, error) {
	return json.Marshal([3]any{e.Name, e.Ts, e.End})
}

// String formats the event as [name ts end].
func (e Event) String() string {
	return "[" + e.Name + " " + formatFloat(e.Ts) + " " + formatFloat(e.End) + "]"
}

// Device is one rank's part of a replay.
type Device struct {
	// Streams maps each stream's name to its events, sorted by (ts, end, name).
	Streams map[string][]Event `json:"streams"`
	// Memory is the allocation series as [ts_us, allocated_mb], in trace order.
	Memory [][2]float64 `json:"memory"`
}

// Normal is the normal form of a replay.
type Normal struct {
	// ExecTimeS is the replay's execution time in seconds.
	ExecTimeS float64 `json:"exec_time_s"`
	// PeakMemoryMB is the highest allocation of any device, in MB.
	PeakMemoryMB float64 `json:"peak_memory_mb"`
	// Steps lists [exec_s, peak_mb] at each step.
	Steps [][2]float64 `json:"steps"`
	// TraceMode is the trace mode of the replay ("everything", "stream_only").
	TraceMode string `json:"trace_mode"`
	// Controller holds the controller's events, sorted by (ts, end, name).
	Controller []Event `json:"controller"`
	// Devices is keyed by rank as a decimal string.
	Devices map[string]*Device `json:"devices"`
}

// LoadExpected reads a NAME.expected.json file. Times are rounded to 3
// decimals and megabytes to 6, as FromTrace does.
func LoadExpected(path string) (*Normal, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("golden: %w", err)
	}
	n, err := parseNormal(data)
	if err != nil {
		return nil, fmt.Errorf("golden: %s: %w", path, err)
	}
	return n, nil
}

func parseNormal(data []byte) (*Normal, error) {
	var n Normal
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&n); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if n.Devices == nil {
		n.Devices = map[string]*Device{}
	}
	for rank, d := range n.Devices {
		if d == nil {
			return nil, fmt.Errorf("%w: device %q is null", ErrFormat, rank)
		}
		if d.Streams == nil {
			d.Streams = map[string][]Event{}
		}
	}
	n.normalize()
	return &n, nil
}

// normalize rounds every number of n to the precision of the normal form and
// sorts its event lists.
func (n *Normal) normalize() {
	n.PeakMemoryMB = roundMB(n.PeakMemoryMB)
	for i := range n.Steps {
		n.Steps[i][1] = roundMB(n.Steps[i][1])
	}
	normalizeEvents(n.Controller)
	for _, d := range n.Devices {
		d.normalize()
	}
}

func (d *Device) normalize() {
	for _, evs := range d.Streams {
		normalizeEvents(evs)
	}
	for i := range d.Memory {
		d.Memory[i][0] = roundTime(d.Memory[i][0])
		d.Memory[i][1] = roundMB(d.Memory[i][1])
	}
}

// normalizeEvents rounds the times of evs and sorts them by (ts, end, name).
func normalizeEvents(evs []Event) {
	for i := range evs {
		evs[i].Ts = roundTime(evs[i].Ts)
		evs[i].End = roundTime(evs[i].End)
	}
	sort.SliceStable(evs, func(i, j int) bool {
		a, b := &evs[i], &evs[j]
		if a.Ts != b.Ts {
			return a.Ts < b.Ts
		}
		if a.End != b.End {
			return a.End < b.End
		}
		return a.Name < b.Name
	})
}

// roundTime rounds microseconds to 3 decimals.
func roundTime(us float64) float64 { return roundTo(us, 1e3) }

// roundMB rounds megabytes to 6 decimals.
func roundMB(mb float64) float64 { return roundTo(mb, 1e6) }

func roundTo(v, scale float64) float64 {
	r := math.Round(v*scale) / scale
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return v // too large to scale: already integral
	}
	return r
}

// Case is one golden case: a history and what the reference reported for
// it.
type Case struct {
	Name string  // NAME of NAME.hist
	Hist string  // path of the history
	Want *Normal // its NAME.expected.json
}

// Cases loads every NAME.hist of dir with its NAME.expected.json.
func Cases(dir string) ([]Case, error) {
	hists, err := filepath.Glob(filepath.Join(dir, "*.hist"))
	if err != nil || len(hists) == 0 {
		return nil, fmt.Errorf("golden: no histories in %s (%v)", dir, err)
	}
	cases := make([]Case, 0, len(hists))
	for _, h := range hists {
		base := strings.TrimSuffix(h, ".hist")
		want, err := LoadExpected(base + ".expected.json")
		if err != nil {
			return nil, err
		}
		cases = append(cases, Case{Name: filepath.Base(base), Hist: h, Want: want})
	}
	return cases, nil
}
