package bench

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/synth"
)

// The scaling benchmarks replay histories of n and 2n units (streams,
// steps) and are read as ratios: bench/scaling.sh prints time and memory
// of 2n over n, which stay near 2 for work linear in n and near 4 for
// work quadratic in it.

const one = `"ranks":[{"offset":0,"sizes":[],"strides":[]}]`

// manyStreams is a one-rank history of n streams: each is created, runs a
// function that makes a 4-byte tensor, and the tensor is deleted; every
// eighth stream then waits on the previous stream through a borrow, so
// event tasks are woken too.
func manyStreams(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"fastsim":"history","version":1,"world_size":1}` + "\n")
	ts := 0
	rec := func(msg string) {
		ts += 10
		fmt.Fprintf(&b, `{"ts":%d,%s,"msg":%s}`+"\n", ts, one, msg)
	}
	for s := 1; s <= n; s++ {
		rec(fmt.Sprintf(`{"type":"CreateStream","result":{"ref":%d,"name":"s%d"},"default":%v}`, s, s, s == 1))
		rec(fmt.Sprintf(`{"type":"CallFunction","function":"f","args":[],"result":{"tensor":%d,"storage":%d,"nbytes":4,"dtype":"float32","shape":[1],"device":"cuda"},"stream":{"ref":%d}}`, s, s, s))
		if s%8 == 0 {
			bor := n + s
			rec(fmt.Sprintf(`{"type":"BorrowCreate","result":{"tensor":%d,"storage":%d,"nbytes":4,"dtype":"float32","shape":[1],"device":"cuda"},"borrow":%d,"tensor":{"tensor":%d},"from_stream":{"ref":%d},"to_stream":{"ref":%d}}`, bor, s, s, s, s, s-1))
			rec(fmt.Sprintf(`{"type":"BorrowFirstUse","borrow":%d}`, s))
			rec(fmt.Sprintf(`{"type":"BorrowLastUse","borrow":%d}`, s))
			rec(fmt.Sprintf(`{"type":"BorrowDrop","borrow":%d}`, s))
			rec(fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d]}`, bor))
		}
		rec(fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d]}`, s))
	}
	return b.Bytes()
}

// manySteps is a one-rank, one-stream history of n steps, each a function
// making a tensor, its deletion and a step line.
func manySteps(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"fastsim":"history","version":1,"world_size":1}` + "\n")
	fmt.Fprintf(&b, `{"ts":0,%s,"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`+"\n", one)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"ts":%d,%s,"msg":{"type":"CallFunction","function":"f","args":[],"result":{"tensor":%d,"storage":%d,"nbytes":%d,"dtype":"float32","shape":[1],"device":"cuda"},"stream":{"ref":1}}}`+"\n", 20*i, one, i, i, 4*(i%7+1))
		fmt.Fprintf(&b, `{"ts":%d,%s,"msg":{"type":"DeleteRefs","refs":[%d]}}`+"\n", 20*i+10, one, i)
		fmt.Fprintf(&b, `{"step":%d}`+"\n", i-1)
	}
	return b.Bytes()
}

// BenchmarkStreams replays 10,000 and 20,000 streams on one rank.
func BenchmarkStreams(b *testing.B) {
	for _, n := range []int{10000, 20000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			replayBench(b, manyStreams(n), replay.Options{Jobs: 1})
		})
	}
}

// BenchmarkStepsTraced replays 10,000 and 20,000 steps keeping the trace
// (the default of the command line).
func BenchmarkStepsTraced(b *testing.B) {
	for _, n := range []int{10000, 20000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			replayBench(b, manySteps(n), replay.Options{Jobs: 1, TracePath: filepath.Join(b.TempDir(), "t.json")})
		})
	}
}

// BenchmarkTrainStepsTraced replays a small training job (2 pipeline
// stages, 2 layers, 2 microbatches) of 400 and 800 steps keeping the trace.
func BenchmarkTrainStepsTraced(b *testing.B) {
	for _, n := range []int{400, 800} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			c := synth.Train{PP: 2, DP: 1, TP: 1, Layers: 2, Hidden: 256, Seq: 128, Batch: 2, Micro: 2, Steps: n}
			replayBench(b, train(b, c), replay.Options{Jobs: 1, TracePath: filepath.Join(b.TempDir(), "t.json")})
		})
	}
}
