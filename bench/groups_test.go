package bench

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/synth"
)

// pipeline65536 is a training history on a world of 65,536 ranks in 8
// pipeline stages (dp 1024, tp 8): every command addresses a whole stage.
var pipeline65536 = synth.Train{PP: 8, DP: 1024, TP: 8, Layers: 32, Hidden: 4096, Seq: 2048, Batch: 8192, Micro: 4, Steps: 20}

func train(b *testing.B, c synth.Train) []byte {
	b.Helper()
	var buf bytes.Buffer
	if err := synth.WriteTrain(&buf, c); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

func replayBench(b *testing.B, hist []byte, opt replay.Options) {
	b.ReportAllocs()
	b.SetBytes(int64(len(hist)))
	var cmds int64
	groups := 0
	for b.Loop() {
		res, err := replay.Reader(bytes.NewReader(hist), "bench.hist", opt)
		if err != nil {
			b.Fatal(err)
		}
		cmds, groups = res.Commands, res.Groups
	}
	b.ReportMetric(float64(cmds)*float64(b.N)/b.Elapsed().Seconds(), "commands/s")
	b.ReportMetric(float64(groups), "groups")
}

// BenchmarkGroupedWorld65536 replays the 8-stage pipeline at world 65,536
// grouped, report only (decode included).
func BenchmarkGroupedWorld65536(b *testing.B) {
	replayBench(b, train(b, pipeline65536), replay.Options{Grouped: true, Jobs: 1})
}

// BenchmarkJobs replays a random history of 64 ranks (every rank its own
// group by the end; commands address random strided slices) grouped, with
// 1 and 2 goroutines per round. Compare the two ns/op for the speedup.
func BenchmarkJobs(b *testing.B) {
	var buf bytes.Buffer
	if err := synth.Random(&buf, 42, 64, 20000); err != nil {
		b.Fatal(err)
	}
	for _, jobs := range []int{1, 2} {
		b.Run(fmt.Sprintf("jobs%d", jobs), func(b *testing.B) {
			replayBench(b, buf.Bytes(), replay.Options{Grouped: true, Jobs: jobs})
		})
	}
}

// wide writes a history whose ranks all differ (each got a command of its
// own first), followed by n commands sent to every rank: each command
// touches every group, the case the parallel schedule is for.
func wide(world, n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"fastsim":"history","version":1,"world_size":%d}`+"\n", world)
	all := fmt.Sprintf(`{"offset":0,"sizes":[%d],"strides":[1]}`, world)
	ts := 0
	rec := func(ranks, msg string) {
		ts += 20_000
		fmt.Fprintf(&b, `{"ts":%d,"ranks":[%s],"msg":%s}`+"\n", ts, ranks, msg)
	}
	rec(all, `{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}`)
	rec(all, `{"type":"CreateStream","result":{"ref":2,"name":"comm"},"default":false}`)
	id := 1
	call := func(in int, out int, stream int) string {
		args := ""
		if in > 0 {
			args = fmt.Sprintf(`{"tensor":%d}`, in)
		}
		return fmt.Sprintf(`{"type":"CallFunction","function":"torch.ops.aten.mm.default","args":[%s],"result":[{"tensor":%d,"storage":%d,"nbytes":4096,"dtype":"bfloat16","shape":[2048],"device":"cuda"}],"stream":{"ref":%d}}`, args, out, out, stream)
	}
	for r := 0; r < world; r++ {
		rec(fmt.Sprintf(`{"offset":%d,"sizes":[1],"strides":[1]}`, r), call(0, id, 1))
		id++
	}
	prev := 0
	for i := 0; i < n; i++ {
		switch {
		case i%8 == 7 && prev > 0:
			rec(all, fmt.Sprintf(`{"type":"Reduce","result":{"tensor":%d,"storage":%d,"nbytes":4096,"dtype":"bfloat16","shape":[2048],"device":"cuda"},"local_tensor":{"tensor":%d},"stream":{"ref":1},"reduction":"sum","scatter":false}`, id, id, prev))
		default:
			rec(all, call(prev, id, 1))
		}
		if prev > 0 {
			rec(all, fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d]}`, prev))
		}
		prev = id
		id++
		if i%100 == 99 {
			fmt.Fprintf(&b, `{"step":%d}`+"\n", i/100)
		}
	}
	return b.Bytes()
}

// BenchmarkJobsWide replays a history of 256 groups whose commands all go
// to every rank, grouped, with 1 and 2 goroutines. Compare the two ns/op
// for the speedup of --jobs 2.
func BenchmarkJobsWide(b *testing.B) {
	hist := wide(256, 4000)
	for _, jobs := range []int{1, 2} {
		b.Run(fmt.Sprintf("jobs%d", jobs), func(b *testing.B) {
			replayBench(b, hist, replay.Options{Grouped: true, Jobs: jobs})
		})
	}
}
