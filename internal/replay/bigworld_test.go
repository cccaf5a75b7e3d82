package replay

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/golden"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/synth"
)

// bigOutcome is everything a replay reports that grouping must not change:
// the final and per-step reports, every rank's memory peak (under the
// device it is reported as), or the error.
type bigOutcome struct {
	final sched.Report
	steps []sched.Report
	peaks []int64 // by rank
	err   string
}

// bigReplayOutcome replays hist through the engine and collects its bigOutcome.
func bigReplayOutcome(t *testing.T, hist []byte, grouped bool) bigOutcome {
	t.Helper()
	r, err := history.NewReader(bytes.NewReader(hist), "big.hist")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	world := r.Header().WorldSize
	sim, err := New(r.Header(), "big.hist", Options{Grouped: grouped})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	var o bigOutcome
	if err := sim.Run(r); err != nil {
		o.err = err.Error()
		return o
	}
	o.steps = sim.Result().Steps
	o.final = sim.Report()
	eng := sim.Engine()
	byDevice := map[int64]int64{}
	eng.DevicePeaks(func(low, _, peak int64) { byDevice[low] = peak })
	o.peaks = make([]int64, world)
	for x := range o.peaks {
		o.peaks[x] = byDevice[eng.DeviceOf(int64(x))]
	}
	return o
}

func compareBigOutcomes(t *testing.T, u, g bigOutcome) {
	t.Helper()
	if u.err != g.err {
		t.Fatalf("errors differ:\n  ungrouped: %s\n  grouped:   %s", u.err, g.err)
	}
	if u.final != g.final {
		t.Fatalf("reports differ: ungrouped %+v, grouped %+v", u.final, g.final)
	}
	if fmt.Sprint(u.steps) != fmt.Sprint(g.steps) {
		t.Fatalf("steps differ:\n  ungrouped %v\n  grouped   %v", u.steps, g.steps)
	}
	for x := range u.peaks {
		if u.peaks[x] != g.peaks[x] {
			t.Fatalf("rank %d: peak %d bytes ungrouped, %d grouped", x, u.peaks[x], g.peaks[x])
		}
	}
}

// TestGroupedEqualsUngroupedBigWorlds replays random valid histories in
// worlds past 65,536 ranks, powers of two and not, whose rank sets gather
// at the edges of the bitmaps' 65,536-rank containers (runs ending on,
// before and after an edge, single ranks there, strided sets and 2-d blocks
// across one, sends between halves and across edges), grouped and
// ungrouped, and compares the reports, every step and every rank's peak.
// Few commands keep the ungrouped side affordable.
func TestGroupedEqualsUngroupedBigWorlds(t *testing.T) {
	cases := []struct {
		world    int
		seed     uint64
		commands int
	}{
		{1<<16 + 1, 1, 40},
		{1 << 17, 2, 40},
		{3 << 16, 3, 40},
		{200_003, 4, 40},
	}
	if testing.Short() {
		cases = cases[:1]
		cases[0].commands = 15
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("world%d/seed%d", c.world, c.seed), func(t *testing.T) {
			var hist bytes.Buffer
			if err := synth.Random(&hist, c.seed, c.world, c.commands); err != nil {
				t.Fatal(err)
			}
			u := bigReplayOutcome(t, hist.Bytes(), false)
			g := bigReplayOutcome(t, hist.Bytes(), true)
			if u.err != "" {
				t.Fatalf("a valid history fails: %s", u.err)
			}
			compareBigOutcomes(t, u, g)
		})
	}
}

// TestGroupedTraceEqualsUngroupedBigWorld compares whole traces, device by
// device, at a world just past one container edge.
func TestGroupedTraceEqualsUngroupedBigWorld(t *testing.T) {
	if testing.Short() {
		t.Skip("traces of 65,537 devices")
	}
	var hist bytes.Buffer
	if err := synth.Random(&hist, 11, 1<<16+1, 15); err != nil {
		t.Fatal(err)
	}
	_, un, _ := replayBytes(t, hist.Bytes(), Options{})
	_, gn, _ := replayBytes(t, hist.Bytes(), Options{Grouped: true})
	if diffs := golden.Compare(un, gn); len(diffs) > 0 {
		t.Fatalf("grouped trace differs from ungrouped:\n  %s", strings.Join(diffs, "\n  "))
	}
	if len(un.Devices) != 1<<16+1 {
		t.Fatalf("%d devices in the trace, want every rank", len(un.Devices))
	}
}

// TestBigWorldErrorsAgree: histories that fail at ranks past an edge fail
// grouped exactly as ungrouped, on the same line with the same message.
func TestBigWorldErrorsAgree(t *testing.T) {
	const world = 1 << 17
	head := fmt.Sprintf(`{"fastsim":"history","version":1,"world_size":%d,"gpus_per_host":8}
{"ts":1,"ranks":[{"offset":0,"sizes":[%d],"strides":[1]}],"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}
{"ts":2,"ranks":[{"offset":65536,"sizes":[65536],"strides":[1]}],"msg":{"type":"CallFunction","function":"torch.ops.aten.randn.default","args":[],"kwargs":{},"result":[{"tensor":1,"storage":1,"nbytes":1048576,"dtype":"float32","shape":[262144],"device":"cuda"}],"mutates":[],"stream":{"ref":1}}}
`, world, world)
	use := func(slice string) string {
		return `{"ts":3,"ranks":[` + slice + `],"msg":{"type":"CallFunction","function":"torch.ops.aten.relu.default","args":[{"tensor":1}],"kwargs":{},"result":[{"tensor":2,"storage":2,"nbytes":4,"dtype":"float32","shape":[1],"device":"cuda"}],"mutates":[],"stream":{"ref":1}}}` + "\n"
	}
	send := func(from, to string) string {
		return `{"ts":3,"ranks":[` + from + `,` + to + `],"msg":{"type":"SendTensor","result":{"tensor":3,"storage":3,"nbytes":4,"dtype":"float32","shape":[1],"device":"cuda"},"tensor":{"tensor":1},"from_ranks":` + from + `,"to_ranks":` + to + `,"from_stream":{"ref":1},"to_stream":{"ref":1}}}` + "\n"
	}
	for name, c := range map[string]struct{ tail, want string }{
		"use below the edge":     {use(`{"offset":65530,"sizes":[10],"strides":[1]}`), "big.hist:4: command 3 (CallFunction torch.ops.aten.relu.default): tensor not available: input tensor 1 is neither on stream \"main\" of worker 65530 nor a CPU tensor there"},
		"reversed, below edge":   {use(`{"offset":65539,"sizes":[10],"strides":[-1]}`), "worker 65530 "},
		"strided, past the edge": {use(`{"offset":65535,"sizes":[2,3],"strides":[3,1]}`), "worker 65535 "},
		"send from the lower":    {send(`{"offset":65537,"sizes":[4],"strides":[-1]}`, `{"offset":131068,"sizes":[4],"strides":[1]}`), "worker 65534 "},
		"stride 0 from":          {send(`{"offset":65536,"sizes":[2],"strides":[0]}`, `{"offset":70000,"sizes":[2],"strides":[1]}`), `big.hist:4: field "msg": SendTensor: field "from_ranks": bad slice: names rank 65536 more than once (a send pairs distinct ranks)`},
		"stride 0 to":            {send(`{"offset":70000,"sizes":[2],"strides":[1]}`, `{"offset":65536,"sizes":[2],"strides":[0]}`), `"to_ranks": bad slice: names rank 65536 more than once`},
	} {
		t.Run(name, func(t *testing.T) {
			hist := []byte(head + c.tail)
			u := bigReplayOutcome(t, hist, false)
			g := bigReplayOutcome(t, hist, true)
			if !strings.Contains(u.err, c.want) {
				t.Fatalf("ungrouped: %q, want %q", u.err, c.want)
			}
			compareBigOutcomes(t, u, g)
		})
	}
}
