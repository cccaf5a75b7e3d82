package bench

import (
	"bytes"
	"os"
	"testing"

	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
)

// random105 is the largest golden history (a copy of
// shared/golden/random_105.hist, kept identical by the replay tests).
const random105 = "../testdata/golden/random_105.hist"

func load(b *testing.B, path string) []byte {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkReplayRandom105 replays random_105 from memory, report only:
// decode plus simulation, no trace.
func BenchmarkReplayRandom105(b *testing.B) {
	data := load(b, random105)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	var cmds int64
	for b.Loop() {
		res, err := replay.Reader(bytes.NewReader(data), "random_105.hist", replay.Options{Mode: sched.Everything})
		if err != nil {
			b.Fatal(err)
		}
		cmds = res.Commands
	}
	b.ReportMetric(float64(cmds)*float64(b.N)/b.Elapsed().Seconds(), "commands/s")
}

// BenchmarkReplayRandom105Trace is the same replay writing its trace (plain
// JSON, to a temp dir).
func BenchmarkReplayRandom105Trace(b *testing.B) {
	data := load(b, random105)
	out := b.TempDir() + "/trace.json"
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := replay.Reader(bytes.NewReader(data), "random_105.hist", replay.Options{Mode: sched.Everything, TracePath: out}); err != nil {
			b.Fatal(err)
		}
	}
}
