package monarch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/jsonpos"
	"github.com/fastsim/fastsim/internal/sched"
)

// ErrTiming is wrapped by every error about a timing file.
var ErrTiming = errors.New("timing file")

// Timing maps timing keys to durations in nanoseconds.
type Timing map[string]int64

// maxMicros bounds a duration so its nanoseconds fit in an int64 with room
// to add many of them (about 2.9 years).
const maxMicros = 1e14

// IsTiming reports whether data looks like a Monarch timing file: a JSON
// object whose values are all numbers (import_timing's format), a command
// catalogue carrying a "timing" object (export_command_types with timing,
// as 'fastsim ops --json' writes it, whatever else it carries), or a
// "timing" object alone. A fastsim cost model has object values ("fixed",
// "comm", ...), so the two never look alike.
func IsTiming(data []byte) bool {
	var doc map[string]json.RawMessage
	if json.Unmarshal(data, &doc) != nil || len(doc) == 0 {
		return false
	}
	raw, timing := doc["timing"]
	if _, ok := doc["command_types"]; ok {
		return timing
	}
	if timing && len(doc) == 1 && isObject(raw) {
		return true
	}
	for _, v := range doc {
		v = bytes.TrimSpace(v)
		// null is no cost model's value either: ParseTiming refuses it
		// at its own line.
		if len(v) == 0 || !(v[0] == '-' || v[0] >= '0' && v[0] <= '9' || bytes.Equal(v, []byte("null"))) {
			return false
		}
	}
	return true
}

// isObject reports whether raw, a JSON value, is an object.
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// ParseTiming reads a timing file: {timing_key: microseconds}, or a
// "timing" object of that form, alone or beside a catalogue's
// "command_types". Microseconds may have a fraction; they are rounded to
// whole nanoseconds. Every error is a *jsonpos.Error naming its line:
// where the JSON text is wrong, or the key of a value out of range, given
// twice, or not a number.
func ParseTiming(data []byte) (Timing, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, &jsonpos.Error{Line: jsonpos.Line(data, err), Err: fmt.Errorf("%w: %s", ErrTiming, jsonpos.Describe(data, err))}
	}
	// A catalogue's "timing" (with command_types), which must be an
	// object, or a "timing" object alone; anything else is read as
	// {timing_key: microseconds}, where an object value is refused.
	raw, timing := doc["timing"]
	_, cat := doc["command_types"]
	timing = timing && (cat || len(doc) == 1 && isObject(raw))
	// The entries are read in the file's order, each key's offset at
	// hand, so an error names the key's line and the first of several
	// wrong values is the one named.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.Token() // the object's '{': the text is an object, Unmarshal found
	if timing {
		for dec.More() {
			if k, err := dec.Token(); err != nil || k == "timing" {
				break
			}
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				break
			}
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return nil, &jsonpos.Error{Line: lineOf(data, dec.InputOffset()), Err: fmt.Errorf("%w: \"timing\": want an object of microseconds by timing key", ErrTiming)}
		}
	}
	t := Timing{}
	line := map[string]int{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, &jsonpos.Error{Line: lineOf(data, dec.InputOffset()), Err: fmt.Errorf("%w: %v", ErrTiming, err)}
		}
		k, _ := tok.(string)
		at := lineOf(data, dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, &jsonpos.Error{Line: at, Err: fmt.Errorf("%w: %v", ErrTiming, err)}
		}
		fail := func(format string, a ...any) error {
			return &jsonpos.Error{Line: at, Err: fmt.Errorf("%w: %q: "+format, append([]any{ErrTiming, k}, a...)...)}
		}
		if first, dup := line[k]; dup {
			return nil, fail("given twice (first on line %d)", first)
		}
		line[k] = at
		var us float64
		// null decodes to 0 without an error: it is not a number either.
		if err := json.Unmarshal(raw, &us); err != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return nil, fail("want a number of microseconds")
		}
		if us < 0 || us > maxMicros || math.IsNaN(us) {
			return nil, fail("%v microseconds is out of range (0 to 1e14)", us)
		}
		t[k] = int64(math.Round(us * 1000))
	}
	// NewModel's check, here where the later of the two keys has a line.
	if _, err := NewModel(t, nil); err != nil {
		return nil, &jsonpos.Error{Line: max(line["BorrowCreate"], line["BorrowLastUse"]), Err: err}
	}
	return t, nil
}

// lineOf is the line of data holding the byte before offset (the last
// byte of a token the decoder has read).
func lineOf(data []byte, offset int64) int {
	offset = min(max(offset-1, 0), int64(len(data)))
	return 1 + bytes.Count(data[:offset], []byte("\n"))
}

// Model prices tasks from a timing file, and the keys it lacks with a base
// model. Borrow waits are one task kind in fastsim (docs/SEMANTICS.md), so
// the file's BorrowCreate and BorrowLastUse, if given, must agree.
type Model struct {
	t    Timing
	base sched.CostModel
	wait int64 // -1: the base model's

	mu     sync.Mutex
	missed map[string]bool
}

// NewModel prices with t, falling back to base.
func NewModel(t Timing, base sched.CostModel) (*Model, error) {
	m := &Model{t: t, base: base, wait: -1}
	c, okc := t["BorrowCreate"]
	l, okl := t["BorrowLastUse"]
	switch {
	case okc && okl && c != l:
		return nil, fmt.Errorf("%w: BorrowCreate (%d ns) and BorrowLastUse (%d ns) differ, but fastsim prices every borrow wait alike", ErrTiming, c, l)
	case okc:
		m.wait = c
	case okl:
		m.wait = l
	}
	return m, nil
}

func (m *Model) lookup(key []byte) (int64, bool) {
	if v, ok := m.t[string(key)]; ok {
		return v, true
	}
	m.mu.Lock()
	if m.missed == nil {
		m.missed = map[string]bool{}
	}
	m.missed[string(key)] = true
	m.mu.Unlock()
	return 0, false
}

// CallRuntimeNs implements sched.CostModel.
func (m *Model) CallRuntimeNs(c *gen.CallFunction, name string) int64 {
	var arr [256]byte
	if v, ok := m.lookup(AppendCallKey(arr[:0], c, name)); ok {
		return v
	}
	return m.base.CallRuntimeNs(c, name)
}

// ReduceRuntimeNs implements sched.CostModel.
func (m *Model) ReduceRuntimeNs(r *gen.Reduce, c sched.Comm) int64 {
	var arr [256]byte
	if v, ok := m.lookup(AppendReduceKey(arr[:0], r, c.Ranks)); ok {
		return v
	}
	return m.base.ReduceRuntimeNs(r, c)
}

// SendRuntimeNs implements sched.CostModel.
func (m *Model) SendRuntimeNs(s *gen.SendTensor, c sched.Comm) int64 {
	var arr [256]byte
	if v, ok := m.lookup(AppendSendKey(arr[:0], s)); ok {
		return v
	}
	return m.base.SendRuntimeNs(s, c)
}

// WaitRuntimeNs implements sched.CostModel.
func (m *Model) WaitRuntimeNs() int64 {
	if m.wait >= 0 {
		return m.wait
	}
	return m.base.WaitRuntimeNs()
}

// Missed lists, sorted, the keys the replay asked for that the file lacks.
func (m *Model) Missed() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.missed))
	for k := range m.missed {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
