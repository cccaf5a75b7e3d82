package golden

import (
	"fmt"
	"math"
	"sort"
	"strconv"
)

// Tolerances of Compare.
const (
	// relTolerance is the largest relative difference between equal values.
	relTolerance = 1e-6
	// absTolerance is the largest absolute difference between equal values,
	// so that values near zero compare equal. It is far below 1e-9 because
	// exec_time_s is in seconds, where 1e-9 is a whole nanosecond.
	absTolerance = 1e-12
	// maxDiffs is how many differences Compare lists before summarising.
	maxDiffs = 20
)

// Compare lists the differences between want and got, at most about twenty
// of them, each like
//
//	devices["2"].streams["main"][3]: want [RecvTensor 0 111], got [RecvTensor 0 112]
//
// It returns nothing when they match: the same devices and stream names,
// every list with the same items in the same order, and every number equal
// to a relative 1e-6 after rounding times to 3 decimals and megabytes to 6.
func Compare(want, got *Normal) []string {
	d := &differ{}
	d.number("exec_time_s", want.ExecTimeS, got.ExecTimeS)
	d.number("peak_memory_mb", roundMB(want.PeakMemoryMB), roundMB(got.PeakMemoryMB))
	d.pairs("steps", want.Steps, got.Steps, nil, roundMB)
	if want.TraceMode != got.TraceMode {
		d.addf("trace_mode: want %q, got %q", want.TraceMode, got.TraceMode)
	}
	d.events("controller", want.Controller, got.Controller)
	for _, rank := range unionKeys(want.Devices, got.Devices) {
		path := "devices[" + strconv.Quote(rank) + "]"
		wd, wok := want.Devices[rank]
		gd, gok := got.Devices[rank]
		switch {
		case !gok:
			d.addf("%s: missing", path)
		case !wok:
			d.addf("%s: unexpected device", path)
		default:
			d.device(path, wd, gd)
		}
	}
	return d.result()
}

// differ collects differences.
type differ struct {
	diffs []string
	more  int // differences beyond maxDiffs
}

func (d *differ) addf(format string, args ...any) {
	if len(d.diffs) >= maxDiffs {
		d.more++
		return
	}
	d.diffs = append(d.diffs, fmt.Sprintf(format, args...))
}

func (d *differ) result() []string {
	if d.more > 0 {
		d.diffs = append(d.diffs, fmt.Sprintf("... and %d more differences", d.more))
	}
	return d.diffs
}

func (d *differ) number(path string, want, got float64) {
	if !near(want, got) {
		d.addf("%s: want %s, got %s", path, formatFloat(want), formatFloat(got))
	}
}

func (d *differ) device(path string, want, got *Device) {
	for _, name := range unionKeys(want.Streams, got.Streams) {
		spath := path + ".streams[" + strconv.Quote(name) + "]"
		wevs, wok := want.Streams[name]
		gevs, gok := got.Streams[name]
		switch {
		case !gok:
			d.addf("%s: missing stream", spath)
		case !wok:
			d.addf("%s: unexpected stream", spath)
		default:
			d.events(spath, wevs, gevs)
		}
	}
	d.pairs(path+".memory", want.Memory, got.Memory, roundTime, roundMB)
}

func (d *differ) events(path string, want, got []Event) {
	if len(want) != len(got) {
		d.addf("%s: want %d events, got %d", path, len(want), len(got))
	}
	for i := 0; i < max(len(want), len(got)); i++ {
		switch {
		case i >= len(got):
			d.addf("%s[%d]: want %v, got nothing", path, i, want[i])
		case i >= len(want):
			d.addf("%s[%d]: want nothing, got %v", path, i, got[i])
		default:
			w, g := want[i], got[i]
			if w.Name != g.Name || !near(roundTime(w.Ts), roundTime(g.Ts)) || !near(roundTime(w.End), roundTime(g.End)) {
				d.addf("%s[%d]: want %v, got %v", path, i, w, g)
			}
		}
	}
}

// pairs compares lists of number pairs, rounding the first and second
// numbers with round0 and round1 when they are not nil.
func (d *differ) pairs(path string, want, got [][2]float64, round0, round1 func(float64) float64) {
	if len(want) != len(got) {
		d.addf("%s: want %d items, got %d", path, len(want), len(got))
	}
	for i := 0; i < max(len(want), len(got)); i++ {
		switch {
		case i >= len(got):
			d.addf("%s[%d]: want %s, got nothing", path, i, formatPair(want[i]))
		case i >= len(want):
			d.addf("%s[%d]: want nothing, got %s", path, i, formatPair(got[i]))
		default:
			w, g := want[i], got[i]
			if round0 != nil {
				w[0], g[0] = round0(w[0]), round0(g[0])
			}
			if round1 != nil {
				w[1], g[1] = round1(w[1]), round1(g[1])
			}
			if !near(w[0], g[0]) || !near(w[1], g[1]) {
				d.addf("%s[%d]: want %s, got %s", path, i, formatPair(want[i]), formatPair(got[i]))
			}
		}
	}
}

// near reports whether a and b agree to a relative relTolerance, or an
// absolute absTolerance near zero.
func near(a, b float64) bool {
	if a == b {
		return true
	}
	diff := math.Abs(a - b)
	return diff <= absTolerance || diff <= relTolerance*math.Max(math.Abs(a), math.Abs(b))
}

// unionKeys returns the keys of a and b, ranks in numeric order (shorter
// decimal strings first).
func unionKeys[V any](a, b map[string]V) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if len(keys[i]) != len(keys[j]) {
			return len(keys[i]) < len(keys[j])
		}
		return keys[i] < keys[j]
	})
	return keys
}

func formatFloat(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func formatPair(p [2]float64) string {
	return "[" + formatFloat(p[0]) + " " + formatFloat(p[1]) + "]"
}
