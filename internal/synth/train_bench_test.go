package synth

import (
	"testing"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/values"
)

// countSink takes records and only counts them.
type countSink struct{ n int64 }

func (c *countSink) Write(*history.Record, *values.Registry) error { c.n++; return nil }

// BenchmarkEmitTrain is the toy synthesis alone, as the layout search
// runs it for one layout at world 1,024 (pp 4, dp 16, tp 16, 16 layers,
// 4 microbatches, 2 steps), its records sent to a sink that counts them:
// what the search spends besides the replay.
func BenchmarkEmitTrain(b *testing.B) {
	b.ReportAllocs()
	c := Train{PP: 4, DP: 16, TP: 16, Layers: 16, Hidden: 1024, Seq: 2048, Batch: 64, Micro: 4, Steps: 2}
	var sink countSink
	for b.Loop() {
		if err := EmitTrain(&sink, c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(sink.n), "ns/record")
}
