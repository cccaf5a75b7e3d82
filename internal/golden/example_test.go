package golden_test

import (
	"fmt"
	"strings"

	"github.com/fastsim/fastsim/internal/golden"
)

func ExampleFromTrace() {
	const trace = `{"traceEvents":[
{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"Device 0: ranks 0..1 (2 ranks)","ranks":"0-1"}},
{"name":"thread_name","ph":"M","pid":1,"tid":2,"args":{"name":"main"}},
{"name":"aten.mm","cat":"compute","ph":"X","ts":4,"dur":10,"pid":1,"tid":2,"args":{"command":1}},
{"name":"memory","cat":"memory","ph":"C","ts":4,"pid":1,"args":{"allocated":0.04}}
]}`
	_, devices, err := golden.FromTrace(strings.NewReader(trace))
	if err != nil {
		panic(err)
	}
	for _, rank := range []string{"0", "1"} {
		fmt.Println(rank, devices[rank].Streams["main"], devices[rank].Memory)
	}
	// Output:
	// 0 [[aten.mm 4 14]] [[4 0.04]]
	// 1 [[aten.mm 4 14]] [[4 0.04]]
}

func ExampleCompare() {
	want := &golden.Normal{Devices: map[string]*golden.Device{
		"2": {Streams: map[string][]golden.Event{"main": {{Name: "RecvTensor", Ts: 0, End: 111}}}},
	}}
	got := &golden.Normal{Devices: map[string]*golden.Device{
		"2": {Streams: map[string][]golden.Event{"main": {{Name: "RecvTensor", Ts: 0, End: 112}}}},
	}}
	for _, diff := range golden.Compare(want, got) {
		fmt.Println(diff)
	}
	// Output:
	// devices["2"].streams["main"][0]: want [RecvTensor 0 111], got [RecvTensor 0 112]
}
