// Package htmlout writes a replay as one self-contained HTML page: the
// summary, the per-step table, memory over time for the device that peaks
// and a few others, per-stream busy time, the most expensive operations
// and the command mix. A replay in which no device ever holds memory has
// no peak device: the page then leaves the memory plot out and says so in
// one line, and likewise the busy time and operations when no stream ran a
// task, rather than draw empty plots for a device that does not exist.
// Plots are drawn as SVG (svg.go) and embedded in the page, so it needs
// nothing from the network to be viewed: no scripts, no style sheets, no
// fonts or images from elsewhere.
package htmlout

import (
	"cmp"
	"fmt"
	"html"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
)

// Limits on what the page shows, so its size does not grow with the
// history: plotted points per memory line, other devices plotted beside the
// peak one, operations and steps listed.
const (
	maxPoints     = 2000
	otherDevices  = 3
	topOperations = 15
	maxSteps      = 200
)

// Input is what the page is made of.
type Input struct {
	Title string // the history's name
	Costs string // which cost model priced it
	Res   *replay.Result
	Eng   *sched.Engine // with its events kept
}

type step struct {
	Index                 int
	Seconds, EndS, PeakMB float64
	Ns, EndNs             int64 // what the table prints (sched.SecondsText)
}

type operation struct {
	Name          string
	Tasks         int64
	TotalS, MeanS float64
	totalNs       int64   // the exact sum while it fits
	over          float64 // the sum in seconds once it did not
}

type kind struct {
	Name  string
	Count int64
}

type page struct {
	Title, Costs      string
	ExecS, PeakMB     float64
	ExecNs            int64
	PeakDevice        int64
	Commands, World   int64
	Partial           bool  // the replay stopped before the end of its history
	LastLine          int64 // the last line it replayed, when Partial
	Groups            int
	Warnings          int64
	FirstWarning      string
	Steps             []step
	StepsCut          int
	MemoryDevices     []int64 // empty: no device held memory (PeakDevice is -1)
	Memory, Busy, Ops svgText
	Mix               svgText
	Operations        []operation
	BusyDevice        int64 // -1: no stream ran a task
	Kinds             []kind
}

// Write writes the page to w.
func Write(w io.Writer, in Input) error {
	res, eng := in.Res, in.Eng
	pg := page{
		Title: in.Title, Costs: in.Costs,
		ExecS: res.Final.ExecSeconds(), ExecNs: res.Final.ExecNs, PeakMB: res.Final.PeakMB(), PeakDevice: res.Final.PeakDevice,
		Commands: res.Commands, World: res.Header.WorldSize, Groups: res.Groups,
		Partial: res.Partial, LastLine: res.LastLine,
		Warnings: res.Warnings, FirstWarning: res.FirstWarning,
	}
	prev, prevNs := 0.0, int64(0)
	for i, st := range res.Steps {
		if i == maxSteps {
			pg.StepsCut = len(res.Steps) - maxSteps
			break
		}
		pg.Steps = append(pg.Steps, step{i, st.ExecSeconds() - prev, st.ExecSeconds(), st.PeakMB(), st.ExecNs - prevNs, st.ExecNs})
		prev, prevNs = st.ExecSeconds(), st.ExecNs
	}

	devices := eng.Devices()
	var err error
	pg.BusyDevice = busyDevice(eng, devices, res.Final.PeakDevice)
	if peak := res.Final.PeakDevice; peak >= 0 {
		pg.MemoryDevices = memoryDevices(eng, devices, peak)
		if pg.Memory, err = memoryPlot(eng, pg.MemoryDevices); err != nil {
			return err
		}
	}
	if pg.BusyDevice >= 0 {
		if pg.Busy, err = busyPlot(eng, pg.BusyDevice); err != nil {
			return err
		}
		pg.Operations = operations(eng, devices)
		if pg.Ops, err = opsPlot(pg.Operations); err != nil {
			return err
		}
	}
	for k := gen.MsgKind(1); k <= gen.MsgUnknown; k++ {
		if n := res.Kinds[k]; n > 0 {
			pg.Kinds = append(pg.Kinds, kind{k.String(), n})
		}
	}
	slices.SortStableFunc(pg.Kinds, func(a, b kind) int { return cmp.Compare(b.Count, a.Count) })
	if pg.Mix, err = mixPlot(pg.Kinds); err != nil {
		return err
	}
	return writePage(w, &pg)
}

// busyDevice is the device whose streams' busy time the page shows: the
// peak device, or with no peak (no device held memory) the lowest rank
// whose streams ran a task, or -1 when none did (an empty history, or one
// whose commands run no task).
func busyDevice(eng *sched.Engine, devices []int64, peak int64) int64 {
	if peak >= 0 {
		return peak
	}
	for _, d := range devices {
		ran := false
		eng.DeviceEvents(d, func(int, string, string, int64, int64) { ran = true })
		if ran {
			return d
		}
	}
	return -1
}

// memoryDevices is the peak device, then the others with the highest peaks.
func memoryDevices(eng *sched.Engine, devices []int64, peak int64) []int64 {
	type dp struct{ rank, bytes int64 }
	var others []dp
	for _, d := range devices {
		b, err := eng.DevicePeak(d)
		if err != nil {
			continue
		}
		// Grouped, a device stands for its group's ranks, which all
		// peak alike: the choice is among ranks, as ungrouped, so that
		// grouping changes no device shown. The lowest few of a group
		// are all that can be chosen.
		for _, r := range eng.DeviceLowestRanks(d, otherDevices+1) {
			if r != peak {
				others = append(others, dp{r, b})
			}
		}
	}
	slices.SortFunc(others, func(a, b dp) int {
		if c := cmp.Compare(b.bytes, a.bytes); c != 0 {
			return c
		}
		return cmp.Compare(a.rank, b.rank)
	})
	out := []int64{peak}
	for i := 0; i < len(others) && i < otherDevices; i++ {
		out = append(out, others[i].rank)
	}
	return out
}

// memoryPlot draws each device's running memory as a step line. A device
// with more events than maxPoints is drawn by its highest value in each of
// maxPoints time intervals, so peaks stay visible.
func memoryPlot(eng *sched.Engine, devices []int64) (svgText, error) {
	var ss []series
	for i, d := range devices {
		pts := []point{{X: 0, Y: 0}}
		err := eng.DeviceMemory(d, func(_ int, _ string, ns, _, running int64) {
			pts = append(pts, point{X: float64(ns) / 1e6, Y: float64(running) / 1e6})
		})
		if err != nil {
			return "", err
		}
		label := fmt.Sprintf("device %d", d)
		if i == 0 {
			label += " (peak)"
		}
		ss = append(ss, series{label, envelope(pts, maxPoints)})
	}
	return stepPlot("Memory over time", "simulated time (ms)", "allocated (MB)", ss, 9, 4), nil
}

// envelope reduces pts (in time order) to at most n points: the highest
// value in each of n equal time intervals, at the interval's first point.
func envelope(pts []point, n int) []point {
	if len(pts) <= n {
		return pts
	}
	lo, hi := pts[0].X, pts[len(pts)-1].X
	width := (hi - lo) / float64(n)
	if width <= 0 {
		return pts[:n]
	}
	out := make([]point, 0, n+1)
	for _, pt := range pts {
		b := int((pt.X - lo) / width)
		if len(out) > 0 && int((out[len(out)-1].X-lo)/width) == b {
			out[len(out)-1].Y = max(out[len(out)-1].Y, pt.Y)
			continue
		}
		out = append(out, pt)
	}
	return out
}

// busyPlot draws how long each stream of the device was busy.
func busyPlot(eng *sched.Engine, rank int64) (svgText, error) {
	var names []string
	var busy []float64
	err := eng.DeviceEvents(rank, func(stream int, streamName, _ string, startNs, endNs int64) {
		for len(names) <= stream {
			names = append(names, "")
			busy = append(busy, 0)
		}
		names[stream] = streamName
		busy[stream] += float64(endNs-startNs) / 1e6
	})
	if err != nil {
		return "", err
	}
	return barPlot(fmt.Sprintf("Busy time per stream, device %d", rank), "busy (ms)", names, busy, 6, 3), nil
}

// operations sums every stream event by name over all devices, rank by
// rank (a group's events count once for each of its ranks), and keeps the
// most expensive.
func operations(eng *sched.Engine, devices []int64) []operation {
	total := map[string]*operation{}
	for _, d := range devices {
		ranks := eng.DeviceRanks(d)
		eng.DeviceEvents(d, func(_ int, _ string, name string, startNs, endNs int64) {
			o := total[name]
			if o == nil {
				o = &operation{Name: name}
				total[name] = o
			}
			o.Tasks += ranks
			// Whole nanoseconds, summed exactly, so that a grouped and an
			// ungrouped replay (one addition of n ranks' time against n
			// additions) give the same total; in float seconds they
			// differed in the last bits, and with them the chart's axis.
			if hi, lo := bits.Mul64(uint64(endNs-startNs), uint64(ranks)); o.over == 0 && hi == 0 && lo <= math.MaxInt64 && int64(lo) <= math.MaxInt64-o.totalNs {
				o.totalNs += int64(lo)
			} else {
				if o.over == 0 {
					o.over = float64(o.totalNs) / 1e9
				}
				o.over += float64(endNs-startNs) / 1e9 * float64(ranks)
			}
		})
	}
	out := make([]operation, 0, len(total))
	for _, o := range total {
		o.TotalS = float64(o.totalNs) / 1e9
		if o.over != 0 {
			o.TotalS = o.over
		}
		o.MeanS = o.TotalS / float64(o.Tasks)
		out = append(out, *o)
	}
	slices.SortFunc(out, func(a, b operation) int {
		if c := cmp.Compare(b.TotalS, a.TotalS); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	if len(out) > topOperations {
		out = out[:topOperations]
	}
	return out
}

func opsPlot(ops []operation) (svgText, error) {
	const title, xName = "Most expensive operations (all devices)", "total (s)"
	if len(ops) == 0 {
		return hbarPlot(title, xName, nil, nil, 1, 3.5), nil
	}
	var v []float64
	var names []string
	for i, o := range ops {
		if i == 10 {
			break
		}
		v = append(v, o.TotalS)
		names = append(names, o.Name)
	}
	return hbarPlot(title, xName, names, v, 1, 1+0.28*float64(len(v))), nil
}

func mixPlot(kinds []kind) (svgText, error) {
	const title, xName = "Command mix (records by type)", "records"
	if len(kinds) == 0 {
		return hbarPlot(title, xName, nil, nil, 2, 3), nil
	}
	var v []float64
	var names []string
	for _, k := range kinds {
		v = append(v, float64(k.Count))
		names = append(names, k.Name)
	}
	return hbarPlot(title, xName, names, v, 2, 1+0.28*float64(len(v))), nil
}

// writePage writes the page. It is written directly rather than through
// html/template, whose package (with text/template, regexp and net/url
// behind it) would initialize in every run of the program; every text that
// comes from the history (its name, operation and warning texts) goes
// through html.EscapeString, as the template escaped it.
func writePage(w io.Writer, pg *page) error {
	var b strings.Builder
	esc := html.EscapeString
	f6 := func(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	b.WriteString(pageHead)
	b.WriteString("<title>fastsim: " + esc(pg.Title) + "</title>\n")
	b.WriteString(pageStyle)
	b.WriteString("<h1>fastsim replay of " + esc(pg.Title) + "</h1>\n")
	if pg.Partial {
		// As the report's PARTIAL line and the summary's "partial": true
		// say: what follows is not the whole history's.
		at := "after the header, before any command"
		if pg.LastLine > 0 {
			at = "after line " + i64(pg.LastLine)
		}
		b.WriteString(`<p class="note"><strong>PARTIAL:</strong> the replay stopped early (interrupted, or by --max-memory) ` + at + "; this page covers the commands replayed until then.</p>\n")
	}
	b.WriteString("<h2>Summary</h2>\n<table>\n")
	b.WriteString(`<tr><th class="name">simulated time</th><td>` + sched.SecondsText(pg.ExecNs) + " s</td></tr>\n")
	if pg.PeakDevice >= 0 {
		b.WriteString(`<tr><th class="name">peak memory</th><td>` + f6(pg.PeakMB) + " MB on device " + i64(pg.PeakDevice) + "</td></tr>\n")
	} else {
		b.WriteString(`<tr><th class="name">peak memory</th><td>` + f6(pg.PeakMB) + " MB (no device held memory)</td></tr>\n")
	}
	b.WriteString(`<tr><th class="name">commands replayed</th><td>` + i64(pg.Commands) + "</td></tr>\n")
	b.WriteString(`<tr><th class="name">workers</th><td>` + i64(pg.World) + " (" + strconv.Itoa(pg.Groups) + " simulated)</td></tr>\n")
	b.WriteString(`<tr><th class="name">cost model</th><td>` + esc(pg.Costs) + "</td></tr>\n")
	if pg.Warnings != 0 {
		b.WriteString(`<tr><th class="name">warnings</th><td>` + i64(pg.Warnings) + " (first: " + esc(pg.FirstWarning) + ")</td></tr>")
	}
	b.WriteString("\n</table>\n<h2>Steps</h2>\n")
	if len(pg.Steps) > 0 {
		b.WriteString("<table>\n<tr><th>step</th><th>time (s)</th><th>ends at (s)</th><th>peak so far (MB)</th></tr>\n")
		for _, st := range pg.Steps {
			b.WriteString("<tr><td>" + strconv.Itoa(st.Index) + "</td><td>" + sched.SecondsText(st.Ns) + "</td><td>" + sched.SecondsText(st.EndNs) + "</td><td>" + f6(st.PeakMB) + "</td></tr>\n")
		}
		b.WriteString("</table>\n")
		if pg.StepsCut != 0 {
			b.WriteString(`<p class="note">... and ` + strconv.Itoa(pg.StepsCut) + " more steps (--summary-json lists them all).</p>")
		}
		b.WriteString("\n")
	} else {
		b.WriteString(`<p class="note">The history has no step marks.</p>`)
	}
	if len(pg.MemoryDevices) > 0 {
		b.WriteString("\n<h2>Memory over time</h2>\n<div class=\"plot\">" + string(pg.Memory) + "</div>\n<p class=\"note\">Devices ")
		for i, d := range pg.MemoryDevices {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(i64(d))
		}
		b.WriteString(": the peak device (the lowest rank that reaches the peak), then those with the highest peaks.</p>\n")
	} else {
		b.WriteString("\n<p class=\"note\">No memory plot: no device held memory at any time of this replay (no command allocated any), so there is no peak device to show.</p>\n")
	}
	if pg.BusyDevice >= 0 {
		b.WriteString("<h2>Busy time per stream</h2>\n<div class=\"plot\">" + string(pg.Busy) + "</div>\n")
		b.WriteString("<h2>Most expensive operations</h2>\n<div class=\"plot\">" + string(pg.Ops) + "</div>\n")
		b.WriteString("<table>\n<tr><th class=\"name\">operation</th><th>tasks</th><th>total (s)</th><th>mean (s)</th></tr>\n")
		for _, o := range pg.Operations {
			b.WriteString(`<tr><td class="name">` + esc(o.Name) + "</td><td>" + i64(o.Tasks) + "</td><td>" + f6(o.TotalS) + "</td><td>" + strconv.FormatFloat(o.MeanS, 'f', 9, 64) + "</td></tr>\n")
		}
		b.WriteString("</table>\n<p class=\"note\">Totals are over every device, rank by rank.</p>\n")
	} else {
		b.WriteString("<p class=\"note\">No busy time or operations: no stream ran a task in this replay.</p>\n")
	}
	b.WriteString("<h2>Command mix</h2>\n<div class=\"plot\">" + string(pg.Mix) + "</div>\n")
	b.WriteString("<table>\n<tr><th class=\"name\">message</th><th>records</th></tr>\n")
	for _, k := range pg.Kinds {
		b.WriteString(`<tr><td class="name">` + esc(k.Name) + "</td><td>" + i64(k.Count) + "</td></tr>\n")
	}
	b.WriteString("</table>\n<p class=\"note\">Written by fastsim; simulated times, not measurements.</p>\n</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

const pageHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
`

const pageStyle = `<style>
body { font-family: sans-serif; margin: 2em; max-width: 70em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th { background: #f2f2f2; }
td.name, th.name { text-align: left; font-family: monospace; }
.plot { margin-left: 8em; }
.plot svg { overflow: visible; }
.plot svg text { font-family: sans-serif; }
.note { color: #666; font-size: 90%; }
</style>
</head>
<body>
`
