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
// object whose values are all numbers (import_timing's format), or a
// "timing" object of that form, alone or in a command catalogue
// (export_command_types with timing, as 'fastsim ops --json' writes it). A fastsim cost model has object values ("fixed", "comm", ...), so
// the two never look alike.
func IsTiming(data []byte) bool {
	var doc map[string]json.RawMessage
	if json.Unmarshal(data, &doc) != nil || len(doc) == 0 {
		return false
	}
	if raw, ok := doc["timing"]; ok && isObject(raw) {
		// A catalogue's timing, with or without its command_types.
		for k := range doc {
			if k != "timing" && k != "command_types" {
				return false
			}
		}
		return true
	}
	if _, ok := doc["command_types"]; ok {
		return false
	}
	for _, v := range doc {
		v = bytes.TrimSpace(v)
		if len(v) == 0 || !(v[0] == '-' || v[0] >= '0' && v[0] <= '9') {
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
// "command_types". Microseconds may have a
// fraction; they are rounded to whole nanoseconds.
func ParseTiming(data []byte) (Timing, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTiming, err)
	}
	if raw, ok := doc["timing"]; ok && isObject(raw) {
		doc = nil
		if err := json.Unmarshal(raw, &doc); err != nil {
			return nil, fmt.Errorf("%w: \"timing\": %v", ErrTiming, err)
		}
	}
	t := Timing{}
	for k, raw := range doc {
		var us float64
		if err := json.Unmarshal(raw, &us); err != nil {
			return nil, fmt.Errorf("%w: %q: want a number of microseconds", ErrTiming, k)
		}
		if us < 0 || us > maxMicros || math.IsNaN(us) {
			return nil, fmt.Errorf("%w: %q: %v microseconds is out of range (0 to 1e14)", ErrTiming, k, us)
		}
		t[k] = int64(math.Round(us * 1000))
	}
	return t, nil
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
