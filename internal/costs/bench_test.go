package costs

import (
	"testing"

	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/values"
)

// BenchmarkRooflineCall prices a linear on an H100, as the engine does once
// per CallFunction command.
func BenchmarkRooflineCall(b *testing.B) {
	s, err := hardware.Preset("h100-sxm")
	if err != nil {
		b.Fatal(err)
	}
	r := NewRoofline(s)
	c := call([]values.Tensor{tn("bfloat16", 8, 2048, 4096), tn("bfloat16", 4096, 4096), tn("bfloat16", 4096)}, "", tn("bfloat16", 8, 2048, 4096))
	b.ReportAllocs()
	for b.Loop() {
		r.CallNs(c, "aten.linear")
	}
}

// BenchmarkHardwareCollective prices an all-reduce over 64 ranks on 8
// hosts.
func BenchmarkHardwareCollective(b *testing.B) {
	s, err := hardware.Preset("h100-sxm")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		HardwareCollectiveNs(s, AllReduce, 1<<28, Placement{64, 8, 8})
	}
}
