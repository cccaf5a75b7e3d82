package bench

import (
	"bytes"
	"syscall"
	"testing"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/synth"
)

// The two engine-speed histories of bench/engine.sh, made in memory: a
// world-64 random history of about 2.7k commands (replayed ungrouped) and a
// world-1,024 random history of about 8k commands that all address the
// whole mesh (replayed grouped). The command counts are those the
// reference's timings were taken at (bench/RESULTS.md, "Engine speed").
func engineHistory(b *testing.B, mesh bool) []byte {
	b.Helper()
	var buf bytes.Buffer
	var err error
	if mesh {
		err = synth.RandomMesh(&buf, 1, 1024, 5500)
	} else {
		err = synth.Random(&buf, 1, 64, 1800)
	}
	if err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// binaryForm converts a JSON-lines history to the binary form,
// uncompressed (.fhist) as the JSON-lines text it is compared with is.
func binaryForm(b *testing.B, data []byte) []byte {
	b.Helper()
	out, err := history.ConvertBytes(data, "engine.hist", history.FormBinaryBare)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// cpuNs is the CPU time (user and system) the process has used.
func cpuNs() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func benchEngine(b *testing.B, mesh, grouped, binary bool) {
	data := engineHistory(b, mesh)
	if binary {
		data = binaryForm(b, data)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	var cmds int64
	cpu0 := cpuNs()
	for b.Loop() {
		res, err := replay.Reader(bytes.NewReader(data), "engine.hist", replay.Options{Mode: sched.Everything, Grouped: grouped})
		if err != nil {
			b.Fatal(err)
		}
		cmds = res.Commands
	}
	b.ReportMetric(float64(cpuNs()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(cmds), "commands")
}

// benchDecode decodes the same history without simulating it: a replay's
// CPU time less this one's is the engine's.
func benchDecode(b *testing.B, mesh, binary bool) {
	data := engineHistory(b, mesh)
	if binary {
		data = binaryForm(b, data)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	cpu0 := cpuNs()
	for b.Loop() {
		if _, _, err := replay.DecodeOnlyReader(bytes.NewReader(data), "engine.hist"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuNs()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkEngineUngroupedW64DecodeOnly decodes the world-64 history only.
func BenchmarkEngineUngroupedW64DecodeOnly(b *testing.B) { benchDecode(b, false, false) }

// BenchmarkEngineGroupedW1024DecodeOnly decodes the world-1,024 history
// only.
func BenchmarkEngineGroupedW1024DecodeOnly(b *testing.B) { benchDecode(b, true, false) }

// BenchmarkEngineGroupedW1024BinaryDecodeOnly decodes its binary form only.
func BenchmarkEngineGroupedW1024BinaryDecodeOnly(b *testing.B) { benchDecode(b, true, true) }

// BenchmarkEngineUngroupedW64 replays the world-64 random history
// ungrouped, report only (decode plus simulation, no trace).
func BenchmarkEngineUngroupedW64(b *testing.B) { benchEngine(b, false, false, false) }

// BenchmarkEngineUngroupedW64Binary is the same history in the binary form.
func BenchmarkEngineUngroupedW64Binary(b *testing.B) { benchEngine(b, false, false, true) }

// BenchmarkEngineGroupedW1024 replays the world-1,024 whole-mesh random
// history grouped, report only.
func BenchmarkEngineGroupedW1024(b *testing.B) { benchEngine(b, true, true, false) }

// BenchmarkEngineGroupedW1024Binary is the same history in the binary form.
func BenchmarkEngineGroupedW1024Binary(b *testing.B) { benchEngine(b, true, true, true) }
