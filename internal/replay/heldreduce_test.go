package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/sched"
)

// meshHistory writes a random history of the kind a training program
// sends: stages of ranks, functions on a stage, and collectives over one
// dimension of a stage's mesh written as one Reduce per peer set, all at
// one time with one message (as a tensor- or data-parallel all-reduce is
// sent). Some runs are made so that applying them together would not be
// exact: a peer set left out, peer sets in an order whose first misses a
// group's lowest rank, a run broken by another time, peer sets that
// overlap, peer sets placed differently on the hosts, peer sets spanning
// two stages, and a run whose input is missing on part of the ranks.
func meshHistory(seed uint64, world, perHost, commands int) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"fastsim":"history","version":1,"world_size":%d,"gpus_per_host":%d}`+"\n", world, perHost)
	ts := int64(1000)
	rec := func(ranks, msg string) {
		fmt.Fprintf(&b, `{"ts":%d,"ranks":[%s],"msg":%s}`+"\n", ts, ranks, msg)
	}
	slice := func(off int, dims ...[2]int) string {
		var sz, st []string
		for _, d := range dims {
			sz = append(sz, fmt.Sprint(d[0]))
			st = append(st, fmt.Sprint(d[1]))
		}
		return fmt.Sprintf(`{"offset":%d,"sizes":[%s],"strides":[%s]}`, off, strings.Join(sz, ","), strings.Join(st, ","))
	}
	all := slice(0, [2]int{world, 1})
	rec(all, fmt.Sprintf(`{"type":"CreateDeviceMesh","names":["dp","tp"],"ranks":%s}`, all))
	ts += 1000
	rec(all, `{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}`)
	ts += 1000
	rec(all, `{"type":"CreateStream","result":{"ref":2,"name":"comm"},"default":false}`)
	// One history in four has runs that fail.
	faulty := rng.IntN(4) == 0
	// Stages: 1, 2 or 4 equal blocks of ranks.
	nst := []int{1, 2, 4}[rng.IntN(3)]
	for world%nst != 0 {
		nst /= 2
	}
	per := world / nst
	next := 1
	cur := make([]int, nst) // each stage's newest tensor (0: none)
	var old [][2]int        // (stage, tensor) not deleted yet
	tensor := func(id, n int) string {
		return fmt.Sprintf(`{"tensor":%d,"storage":%d,"nbytes":%d,"dtype":"float32","shape":[%d],"device":"cuda"}`, id, id, 4*n, n)
	}
	call := func(st int) {
		id := next
		next++
		args := "[]"
		if cur[st] != 0 {
			args = fmt.Sprintf(`[{"tensor":%d}]`, cur[st])
		}
		ts += 1000
		rec(slice(st*per, [2]int{per, 1}), fmt.Sprintf(`{"type":"CallFunction","ident":%d,"function":"torch.ops.aten.mm.default","args":%s,"kwargs":{},"result":[%s],"mutates":[],"stream":{"ref":1}}`,
			id, args, tensor(id, 256*(1+rng.IntN(64)))))
		cur[st] = id
		old = append(old, [2]int{st, id})
	}
	for st := range cur {
		call(st)
	}
	for c := 0; c < commands; c++ {
		switch k := rng.IntN(10); {
		case k < 4:
			call(rng.IntN(nst))
		case k < 5 && len(old) > 2:
			i := rng.IntN(len(old) - 1)
			st, id := old[i][0], old[i][1]
			if id == cur[st] {
				continue
			}
			old = append(old[:i], old[i+1:]...)
			ts += 1000
			rec(slice(st*per, [2]int{per, 1}), fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d]}`, id))
		case k < 6 && nst > 1:
			// A send of a stage's tensor to the next stage, rank by rank.
			st := rng.IntN(nst - 1)
			id := next
			next++
			ts += 1000
			rec(slice(st*per, [2]int{per, 1}), fmt.Sprintf(`{"type":"SendTensor","result":%s,"from_ranks":%s,"to_ranks":%s,"tensor":{"tensor":%d},"factory":{},"from_stream":{"ref":1},"to_stream":{"ref":1}}`,
				tensor(id, 512), slice(st*per, [2]int{per, 1}), slice((st+1)*per, [2]int{per, 1}), cur[st]))
			cur[st+1] = id
			old = append(old, [2]int{st + 1, id})
		default:
			// A collective over one dimension of a stage, or over pairs of
			// ranks of two stages (as a tied embedding's gradients are).
			st := rng.IntN(nst)
			g := []int{1, 2, 4, 8}[rng.IntN(4)]
			for per%g != 0 {
				g /= 2
			}
			local := cur[st]
			var sets []string
			switch {
			case nst > 1 && st < nst-1 && rng.IntN(5) == 0:
				// Both stages make the tensor, under one id.
				local = next
				next++
				ts += 1000
				rec(slice(st*per, [2]int{per, 1})+","+slice((nst-1)*per, [2]int{per, 1}),
					fmt.Sprintf(`{"type":"CallFunction","ident":%d,"function":"torch.ops.aten.ones.default","args":[],"kwargs":{},"result":[%s],"mutates":[],"stream":{"ref":1}}`, local, tensor(local, 1024)))
				for r := 0; r < per; r++ {
					sets = append(sets, slice(st*per+r, [2]int{2, (nst - 1 - st) * per}))
				}
			case rng.IntN(2) == 0: // contiguous peer sets (tensor-parallel)
				for i := 0; i < per/g; i++ {
					sets = append(sets, slice(st*per+i*g, [2]int{g, 1}))
				}
			default: // strided peer sets (data-parallel)
				for i := 0; i < per/g; i++ {
					sets = append(sets, slice(st*per+i, [2]int{g, per / g}))
				}
			}
			keep := true // every rank of the stage gets the result
			variant := rng.IntN(30)
			if !faulty && variant >= 6 {
				variant = 9
			}
			switch variant {
			case 0, 1, 2:
				if len(sets) > 1 {
					sets = sets[:len(sets)-1] // one left out
					keep = false
				}
			case 6:
				sets = append(sets, sets[0]) // overlapping
			case 7:
				local = next + 100000 // made nowhere
				ts += 1000
				rec(slice(0, [2]int{1, 1}), fmt.Sprintf(`{"type":"CallFunction","ident":0,"function":"torch.ops.aten.ones.default","args":[],"kwargs":{},"result":[%s],"mutates":[],"stream":{"ref":2}}`, tensor(local, 16)))
			case 8:
				if st > 0 { // a peer set on stage 0, which lacks the tensor
					sets = append(sets, slice(0, [2]int{g, 1}))
				}
			}
			if rng.IntN(5) == 0 {
				rng.Shuffle(len(sets), func(i, j int) { sets[i], sets[j] = sets[j], sets[i] })
			}
			id := next
			next++
			size := 1024 * (1 + rng.IntN(2048))
			ts += 1000
			breakAt := -1
			if rng.IntN(8) == 0 {
				breakAt = rng.IntN(len(sets))
			}
			for i, s := range sets {
				if i == breakAt {
					ts += 1000
				}
				rec(s, fmt.Sprintf(`{"type":"Reduce","result":%s,"local_tensor":{"tensor":%d},"stream":{"ref":1},"dims":["tp"],"reduction":"sum","scatter":false,"inplace":false,"out":null}`,
					tensor(id, size), local))
			}
			if keep {
				cur[st] = id
				old = append(old, [2]int{st, id})
			}
		}
	}
	return b.Bytes()
}

// meshOutcome is what a replay found: its reports and every rank's peak and
// final memory, or its error.
func meshOutcome(hist []byte, grouped bool, hw *hardware.Spec) (string, *Result) {
	var peaks strings.Builder
	opt := Options{Grouped: grouped, Hardware: hw, Inspect: func(e *sched.Engine, res *Result) error {
		for r := int64(0); r < res.Header.WorldSize; r++ {
			p, f := e.DeviceBytes(r)
			fmt.Fprintf(&peaks, " %d:%d/%d", r, p, f)
		}
		return nil
	}}
	res, err := Reader(bytes.NewReader(hist), "mesh.hist", opt)
	if err != nil {
		return "error: " + err.Error(), nil
	}
	return fmt.Sprintf("%+v %v%s", res.Final, res.Steps, peaks.String()), res
}

// TestHeldReducesAsOneByOne: a grouped replay, which applies runs of
// Reduces together where that is exact, finds what an ungrouped one finds,
// which applies every command alone: reports, every rank's memory, and
// errors word for word.
func TestHeldReducesAsOneByOne(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 15
	}
	// Priced by the hardware model, a collective's runtime depends on how
	// its ranks sit on the hosts, so peer sets of one run can differ.
	a100, err := hardware.Preset("a100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	errs, n := 0, 0
	for seed := 0; seed < seeds; seed++ {
		for _, w := range [][2]int{{8, 8}, {16, 4}, {16, 16}, {32, 8}, {24, 4}, {24, 8}, {64, 8}} {
			hist := meshHistory(uint64(seed), w[0], w[1], 80)
			hw := a100
			if seed%2 == 0 {
				hw = nil
			}
			n++
			u, _ := meshOutcome(hist, false, hw)
			g, _ := meshOutcome(hist, true, hw)
			if u != g {
				t.Fatalf("seed %d world %d: grouped differs from ungrouped:\nungrouped %s\ngrouped   %s\n%s", seed, w[0], u, g, hist)
			}
			if strings.HasPrefix(u, "error") {
				errs++
			}
		}
	}
	// The generator must reach both outcomes.
	if errs == 0 || errs > n/2 {
		t.Fatalf("%d of %d histories failed: the generator must reach both outcomes, mostly success", errs, n)
	}
}

// TestHeldReducesKeepStagesWhole: two stages of 8 ranks, each an
// all-reduce over its two tensor-parallel peer sets of 4 ranks and then
// over its four data-parallel pairs, sent as one Reduce per peer set. A
// grouped replay keeps each stage one group, and the step ends when the
// hand count says: on stage 0, a function (10 µs) and two collectives
// (100 µs each) after the first command at 4 µs; stage 1 the same, its
// commands sent 1 µs later each (see the times below).
func TestHeldReducesKeepStagesWhole(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"fastsim":"history","version":1,"world_size":16,"gpus_per_host":8}` + "\n")
	line := func(ts int64, ranks, msg string) {
		fmt.Fprintf(&b, `{"ts":%d,"ranks":[%s],"msg":%s}`+"\n", ts, ranks, msg)
	}
	all := `{"offset":0,"sizes":[16],"strides":[1]}`
	line(1000, all, `{"type":"CreateDeviceMesh","names":["pp","dp","tp"],"ranks":`+all+`}`)
	line(2000, all, `{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}`)
	ts := int64(3000)
	for st := 0; st < 2; st++ {
		ts += 1000
		stage := fmt.Sprintf(`{"offset":%d,"sizes":[2,4],"strides":[4,1]}`, 8*st)
		line(ts, stage, fmt.Sprintf(`{"type":"CallFunction","ident":1,"function":"torch.ops.aten.mm.default","args":[],"kwargs":{},"result":[{"tensor":%d,"storage":%d,"nbytes":4096,"dtype":"float32","shape":[1024],"device":"cuda"}],"mutates":[],"stream":{"ref":1}}`, 10+st, 10+st))
		ts += 1000
		for tp := 0; tp < 2; tp++ {
			line(ts, fmt.Sprintf(`{"offset":%d,"sizes":[4],"strides":[1]}`, 8*st+4*tp),
				fmt.Sprintf(`{"type":"Reduce","result":{"tensor":%d,"storage":%d,"nbytes":4096,"dtype":"float32","shape":[1024],"device":"cuda"},"local_tensor":{"tensor":%d},"stream":{"ref":1},"dims":["tp"],"reduction":"sum","scatter":false,"inplace":false,"out":null}`, 20+st, 20+st, 10+st))
		}
		ts += 1000
		for dp := 0; dp < 4; dp++ {
			line(ts, fmt.Sprintf(`{"offset":%d,"sizes":[2],"strides":[4]}`, 8*st+dp),
				fmt.Sprintf(`{"type":"Reduce","result":{"tensor":%d,"storage":%d,"nbytes":4096,"dtype":"float32","shape":[1024],"device":"cuda"},"local_tensor":{"tensor":%d},"stream":{"ref":1},"dims":["dp"],"reduction":"sum","scatter":false,"inplace":false,"out":null}`, 30+st, 30+st, 20+st))
		}
	}
	hist := b.Bytes()
	u, _ := meshOutcome(hist, false, nil)
	g, res := meshOutcome(hist, true, nil)
	if u != g {
		t.Fatalf("grouped differs from ungrouped:\nungrouped %s\ngrouped   %s", u, g)
	}
	if res.Groups != 2 {
		t.Errorf("%d groups, want 2 (one per stage)", res.Groups)
	}
	// Stage 1's function is sent at 7 µs (stage 0's at 4 µs): it ends at
	// 17 µs, its all-reduces at 117 µs and 217 µs. Default runtimes:
	// CallFunction 10 µs, Reduce 100 µs.
	if got, want := res.Final.ExecNs, int64(217_000); got != want {
		t.Errorf("exec time %d ns, want %d", got, want)
	}
	// Traced, the runs are held too: the same stages, the same results,
	// and each group's span of a run names the run's first command
	// (commands counted from the header: the mesh is 1, the stream 2,
	// stage 0's function 3, its runs 4-5 and 6-9; stage 1's 10, 11-12
	// and 13-16).
	path := filepath.Join(t.TempDir(), "mesh.trace.json")
	var peaks strings.Builder
	tres, err := Reader(bytes.NewReader(hist), "mesh.hist", Options{Grouped: true, TracePath: path, Inspect: func(e *sched.Engine, res *Result) error {
		for r := int64(0); r < res.Header.WorldSize; r++ {
			p, f := e.DeviceBytes(r)
			fmt.Fprintf(&peaks, " %d:%d/%d", r, p, f)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%+v %v%s", tres.Final, tres.Steps, peaks.String()); got != g {
		t.Errorf("traced grouped differs:\ntraced %s\nuntraced %s", got, g)
	}
	if tres.Groups != 2 {
		t.Errorf("traced: %d groups, want 2", tres.Groups)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []struct {
			Ph   string         `json:"ph"`
			Pid  int64          `json:"pid"`
			Name string         `json:"name"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &tr); err != nil {
		t.Fatal(err)
	}
	firsts := map[float64]bool{4: true, 6: true, 11: true, 13: true}
	runs := 0
	for _, ev := range tr.TraceEvents {
		if ev.Ph != "X" || ev.Pid == 1 || !strings.Contains(strings.ToLower(ev.Name), "reduce") {
			continue
		}
		runs++
		if c, _ := ev.Args["command"].(float64); !firsts[c] {
			t.Errorf("a device's span %q names command %v, want the first of its run (4, 6, 11 or 13)", ev.Name, ev.Args["command"])
		}
	}
	if runs != 4 {
		t.Errorf("%d device spans of collectives, want 4 (two runs on each stage's group)", runs)
	}
}

// TestHeldReducesPastRoaringEdge: a world of 65,544 ranks (8,193 groups of
// 8, across the bitmaps' 65,536-rank container edge), a function on every
// rank, then a tensor-parallel all-reduce sent as 8,193 Reduces of 8
// contiguous ranks and a data-parallel one as 8 Reduces of 8,193 ranks
// 8 apart. A grouped replay keeps one group and agrees with the ungrouped
// one on every rank. By hand, default runtimes: the function, sent at
// 3 µs, ends at 13 µs; the all-reduces (100 µs each) at 113 µs and
// 213 µs. Each rank holds three 4,096-byte tensors at the end.
func TestHeldReducesPastRoaringEdge(t *testing.T) {
	if testing.Short() {
		t.Skip("an ungrouped world of 65,544 ranks")
	}
	const world, tp = 65544, 8
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"fastsim":"history","version":1,"world_size":%d,"gpus_per_host":8}`+"\n", world)
	all := fmt.Sprintf(`{"offset":0,"sizes":[%d],"strides":[1]}`, world)
	tensor := func(id int) string {
		return fmt.Sprintf(`{"tensor":%d,"storage":%d,"nbytes":4096,"dtype":"float32","shape":[1024],"device":"cuda"}`, id, id)
	}
	reduce := func(ts int64, ranks string, result, local int) {
		fmt.Fprintf(&b, `{"ts":%d,"ranks":[%s],"msg":{"type":"Reduce","result":%s,"local_tensor":{"tensor":%d},"stream":{"ref":1},"dims":["tp"],"reduction":"sum","scatter":false,"inplace":false,"out":null}}`+"\n", ts, ranks, tensor(result), local)
	}
	fmt.Fprintf(&b, `{"ts":1000,"ranks":[%s],"msg":{"type":"CreateDeviceMesh","names":["dp","tp"],"ranks":%s}}`+"\n", all, all)
	fmt.Fprintf(&b, `{"ts":2000,"ranks":[%s],"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`+"\n", all)
	fmt.Fprintf(&b, `{"ts":3000,"ranks":[%s],"msg":{"type":"CallFunction","ident":1,"function":"torch.ops.aten.ones.default","args":[],"kwargs":{},"result":[%s],"mutates":[],"stream":{"ref":1}}}`+"\n", all, tensor(1))
	for g := 0; g < world/tp; g++ {
		reduce(4000, fmt.Sprintf(`{"offset":%d,"sizes":[%d],"strides":[1]}`, g*tp, tp), 2, 1)
	}
	for k := 0; k < tp; k++ {
		reduce(5000, fmt.Sprintf(`{"offset":%d,"sizes":[%d],"strides":[%d]}`, k, world/tp, tp), 3, 2)
	}
	hist := b.Bytes()
	g := bigReplayOutcome(t, hist, true)
	compareBigOutcomes(t, bigReplayOutcome(t, hist, false), g)
	if g.err != "" {
		t.Fatal(g.err)
	}
	if g.final.ExecNs != 213_000 {
		t.Errorf("exec time %d ns, want 213000", g.final.ExecNs)
	}
	for x, p := range g.peaks {
		if p != 3*4096 {
			t.Fatalf("rank %d: peak %d bytes, want %d", x, p, 3*4096)
		}
	}
	sim, err := New(history.Header{WorldSize: world, GPUsPerHost: 8}, "big.hist", Options{Grouped: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	r, err := history.NewReader(bytes.NewReader(hist), "big.hist")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := sim.Run(r); err != nil {
		t.Fatal(err)
	}
	if n := sim.Result().Groups; n != 1 {
		t.Errorf("%d groups, want 1", n)
	}
}
