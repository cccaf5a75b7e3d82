package costs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/values"
)

// Expected values are worked out by hand; the comments show the arithmetic.
// With the default comm model 1 GB/s = 1 byte/ns, so intra-host moves
// 150 bytes/ns, inter-host 25 bytes/ns.

func mustParse(t *testing.T, s string) *Model {
	t.Helper()
	m, err := Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse(%s): %v", s, err)
	}
	return m
}

func tensorOf(id int64, dtype string, shape ...int64) values.Tensor {
	return values.Tensor{ID: id, Dtype: dtype, Shape: shape, NBytes: 7} // nbytes deliberately unrelated
}

func TestEmptyConfigIsReference(t *testing.T) {
	m := mustParse(t, `{}`)
	if got, want := m.Fixed(), sched.DefaultCosts(); got != want {
		t.Fatalf("Fixed() = %+v, want %+v", got, want)
	}
	ref := sched.DefaultCosts()
	big := gen.Reduce{LocalTensor: tensorOf(1, "float32", 1<<20), Result: tensorOf(2, "float32", 1<<20)}
	send := gen.SendTensor{Tensor: tensorOf(3, "float32", 1<<20)}
	call := gen.CallFunction{Args: values.Tree{Leaves: []values.Tensor{tensorOf(4, "float32", 8, 8)}}}
	for _, c := range []sched.Comm{{Ranks: 2}, {Ranks: 64, SameHost: true}, {Ranks: 2, Local: true}} {
		if got, want := m.ReduceRuntimeNs(&big, c), ref.ReduceRuntimeNs(&big, c); got != want {
			t.Errorf("Reduce %+v: %d, want %d", c, got, want)
		}
		if got, want := m.SendRuntimeNs(&send, c), ref.SendRuntimeNs(&send, c); got != want {
			t.Errorf("Send %+v: %d, want %d", c, got, want)
		}
	}
	if got, want := m.CallRuntimeNs(&call, "aten.mm"), ref.CallRuntimeNs(&call, "aten.mm"); got != want {
		t.Errorf("Call: %d, want %d", got, want)
	}
	if got, want := m.WaitRuntimeNs(), ref.WaitRuntimeNs(); got != want {
		t.Errorf("Wait: %d, want %d", got, want)
	}
}

func TestFixedOverrides(t *testing.T) {
	m := mustParse(t, `{"fixed":{"call_function_ns":1,"reduce_ns":2,"send_local_ns":3,"send_remote_ns":4,"event_wait_ns":5,"kernel_launch_ns":6}}`)
	want := sched.Costs{CallFunctionNs: 1, ReduceNs: 2, SendLocalNs: 3, SendRemoteNs: 4, EventWaitNs: 5, KernelLaunchNs: 6}
	if got := m.Fixed(); got != want {
		t.Fatalf("Fixed() = %+v, want %+v", got, want)
	}
	var r gen.Reduce
	var s gen.SendTensor
	var c gen.CallFunction
	if got := m.ReduceRuntimeNs(&r, sched.Comm{Ranks: 8}); got != 2 {
		t.Errorf("reduce %d, want 2", got)
	}
	if got := m.SendRuntimeNs(&s, sched.Comm{Ranks: 2, Local: true}); got != 3 {
		t.Errorf("local send %d, want 3", got)
	}
	if got := m.SendRuntimeNs(&s, sched.Comm{Ranks: 2}); got != 4 {
		t.Errorf("remote send %d, want 4", got)
	}
	if got := m.CallRuntimeNs(&c, "aten.mm"); got != 1 {
		t.Errorf("call %d, want 1", got)
	}
	if got := m.WaitRuntimeNs(); got != 5 {
		t.Errorf("wait %d, want 5", got)
	}
	// A partial override keeps the rest of the reference's values.
	m = mustParse(t, `{"fixed":{"reduce_ns":7}}`)
	want = sched.DefaultCosts()
	want.ReduceNs = 7
	if got := m.Fixed(); got != want {
		t.Fatalf("partial: %+v, want %+v", got, want)
	}
}

func TestAppendKey(t *testing.T) {
	a := tensorOf(1, "bfloat16", 4096, 4096)
	b := tensorOf(2, "bfloat16", 4096, 1024)
	f := tensorOf(3, "float32", 16)
	s := tensorOf(4, "float32") // 0-d
	cases := []struct {
		leaves []values.Tensor
		key    string
		dtype  string // the part after the second colon
	}{
		{nil, "aten.mm", ""},
		{[]values.Tensor{a, b}, "aten.mm:(4096x4096)x(4096x1024):bfloat16", "bfloat16"},
		// a repeated input counts once, in first-occurrence order
		{[]values.Tensor{b, a, b}, "aten.mm:(4096x1024)x(4096x4096):bfloat16", "bfloat16"},
		{[]values.Tensor{a, f}, "aten.mm:(4096x4096)x(16):bfloat16xfloat32", "bfloat16xfloat32"},
		{[]values.Tensor{s}, "aten.mm:():float32", "float32"},
	}
	for _, c := range cases {
		key, at := AppendKey(nil, "aten.mm", c.leaves)
		if string(key) != c.key {
			t.Errorf("key %q, want %q", key, c.key)
		}
		if c.dtype == "" && at != 0 || c.dtype != "" && string(key[at:]) != c.dtype {
			t.Errorf("%q: dtype at %d", key, at)
		}
	}
}

func TestRuntimeTableFallback(t *testing.T) {
	m := mustParse(t, `{"fixed":{"call_function_ns":11},"runtimes_ns":{
		"aten.mm": 100,
		"aten.mm:(2x3)x(3x4)": 200,
		"aten.mm:(2x3)x(3x4):bfloat16": 300,
		"aten.gelu:(8):float32": 400
	}}`)
	call := func(ts ...values.Tensor) *gen.CallFunction {
		return &gen.CallFunction{Args: values.Tree{Leaves: ts}}
	}
	x16, w16 := tensorOf(1, "bfloat16", 2, 3), tensorOf(2, "bfloat16", 3, 4)
	x32, w32 := tensorOf(1, "float32", 2, 3), tensorOf(2, "float32", 3, 4)
	cases := []struct {
		name string
		c    *gen.CallFunction
		want int64
	}{
		{"aten.mm", call(x16, w16), 300},                        // exact key
		{"aten.mm", call(x32, w32), 200},                        // shapes match, dtype does not
		{"aten.mm", call(x16, tensorOf(2, "bfloat16", 3)), 100}, // other shapes: the name
		{"aten.mm", call(), 100},                                // no inputs: the name
		{"aten.gelu", call(tensorOf(5, "float32", 8)), 400},     // refined only
		{"aten.gelu", call(tensorOf(5, "float32", 9)), 11},      // no name entry: fixed
		{"aten.add", call(x16), 11},                             // unknown: fixed
	}
	for i, c := range cases {
		if got := m.CallRuntimeNs(c.c, c.name); got != c.want {
			t.Errorf("case %d %s: %d, want %d", i, c.name, got, c.want)
		}
	}
}

func TestCollectiveOf(t *testing.T) {
	cases := []struct {
		reduction string
		scatter   bool
		want      Collective
	}{
		{"stack", false, AllGather},
		{"stack", true, AllToAll},
		{"sum", true, ReduceScatter},
		{"sum", false, AllReduce},
		{"avg", false, AllReduce},
	}
	for _, c := range cases {
		if got := CollectiveOf(&gen.Reduce{Reduction: c.reduction, Scatter: c.scatter}); got != c.want {
			t.Errorf("%s scatter=%v: %v, want %v", c.reduction, c.scatter, got, c.want)
		}
	}
}

func TestCollectiveNs(t *testing.T) {
	m := mustParse(t, `{"comm":{}}`) // defaults: 150 GB/s 5 µs intra, 25 GB/s 10 µs inter, a2a x1.5
	cases := []struct {
		c        Collective
		bytes, n int64
		same     bool
		want     int64
	}{
		// 100e6 B * 2*(4-1)/4 = 150e6 B moved; / 150 B/ns = 1,000,000; + 5,000
		{AllReduce, 100_000_000, 4, true, 1_005_000},
		// 100e6 * 3/4 = 75e6; / 25 = 3,000,000; + 10,000
		{ReduceScatter, 100_000_000, 4, false, 3_010_000},
		// 96e6 * 7/8 = 84e6; / 150 = 560,000; + 5,000
		{AllGather, 96_000_000, 8, true, 565_000},
		// 100e6 * 1/2 * 1.5 = 75e6; / 25 = 3,000,000; + 10,000
		{AllToAll, 100_000_000, 2, false, 3_010_000},
		// 50e6 * 1 / 25 = 2,000,000; + 10,000
		{PointToPoint, 50_000_000, 2, false, 2_010_000},
		// one rank moves nothing: latency only
		{AllReduce, 100_000_000, 1, true, 5_000},
		// 1 B / 150 B/ns rounds up to 1 ns; + 5,000
		{PointToPoint, 1, 2, true, 5_001},
	}
	for _, c := range cases {
		if got := m.CollectiveNs(c.c, c.bytes, c.n, c.same); got != c.want {
			t.Errorf("%v %d B over %d ranks (same host %v): %d ns, want %d", c.c, c.bytes, c.n, c.same, got, c.want)
		}
	}
	// Custom parameters: 100 GB/s, 1 µs intra; 10 GB/s, 20 µs inter; a2a x2.
	m = mustParse(t, `{"comm":{"intra_host_gbps":100,"intra_host_latency_ns":1000,"inter_host_gbps":10,"inter_host_latency_ns":20000,"all_to_all_contention":2}}`)
	// 1e6 * 2*(2-1)/2 = 1e6; / 100 = 10,000; + 1,000
	if got := m.CollectiveNs(AllReduce, 1_000_000, 2, true); got != 11_000 {
		t.Errorf("custom all-reduce: %d, want 11000", got)
	}
	// 1e6 * 3/4 * 2 = 1.5e6; / 10 = 150,000; + 20,000
	if got := m.CollectiveNs(AllToAll, 1_000_000, 4, false); got != 170_000 {
		t.Errorf("custom all-to-all: %d, want 170000", got)
	}
}

func TestReduceAndSendThroughModel(t *testing.T) {
	m := mustParse(t, `{"comm":{}}`)
	// An all-gather: local shard 1000x500 bf16 = 1e6 B, result 4000x500 bf16
	// = 4e6 B; the buffer is the larger, 4e6. 4e6 * 3/4 = 3e6; / 150 =
	// 20,000; + 5,000.
	ag := gen.Reduce{Reduction: "stack", LocalTensor: tensorOf(1, "bfloat16", 1000, 500), Result: tensorOf(2, "bfloat16", 4000, 500)}
	if got := m.ReduceRuntimeNs(&ag, sched.Comm{Ranks: 4, SameHost: true}); got != 25_000 {
		t.Errorf("all-gather: %d, want 25000", got)
	}
	// A reduce-scatter (sum, scatter) the other way round: the input 4e6 B
	// is the buffer; across hosts 3e6 / 25 = 120,000; + 10,000.
	rs := gen.Reduce{Reduction: "sum", Scatter: true, LocalTensor: tensorOf(1, "bfloat16", 4000, 500), Result: tensorOf(2, "bfloat16", 1000, 500)}
	if got := m.ReduceRuntimeNs(&rs, sched.Comm{Ranks: 4}); got != 130_000 {
		t.Errorf("reduce-scatter: %d, want 130000", got)
	}
	// A tensor without a shape falls back to nbytes: 2,500,000 B
	// point-to-point across hosts: / 25 = 100,000; + 10,000.
	send := gen.SendTensor{Tensor: values.Tensor{NBytes: 2_500_000, Dtype: "bfloat16"}}
	if got := m.SendRuntimeNs(&send, sched.Comm{Ranks: 2}); got != 110_000 {
		t.Errorf("send: %d, want 110000", got)
	}
	// A local copy keeps the fixed runtime.
	if got := m.SendRuntimeNs(&send, sched.Comm{Ranks: 2, Local: true}); got != 1_000 {
		t.Errorf("local send: %d, want 1000", got)
	}
}

func TestTensorBytes(t *testing.T) {
	cases := []struct {
		t    values.Tensor
		want int64
	}{
		{values.Tensor{Dtype: "float32", Shape: []int64{3, 5}, NBytes: 999}, 60},        // 3*5*4
		{values.Tensor{Dtype: "torch.bfloat16", Shape: []int64{10}, NBytes: 999}, 20},   // 10*2
		{values.Tensor{Dtype: "int64", Shape: []int64{2, 0, 4}, NBytes: 999}, 0},        // empty
		{values.Tensor{Dtype: "mystery", Shape: []int64{10}, NBytes: 999}, 999},         // unknown dtype
		{values.Tensor{Dtype: "float32", NBytes: 999}, 999},                             // no shape
		{values.Tensor{Dtype: "uint8", Shape: []int64{1 << 40, 1 << 40}, NBytes: 5}, 5}, // overflow
	}
	for i, c := range cases {
		if got := TensorBytes(&c.t); got != c.want {
			t.Errorf("case %d: %d, want %d", i, got, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, s := range []string{
		`{"fixd":{}}`,
		`{"fixed":{"reduce_ns":-1}}`,
		`{"runtimes_ns":{"":5}}`,
		`{"runtimes_ns":{"a:b:c:d":5}}`,
		`{"runtimes_ns":{"aten.mm":-5}}`,
		`{"comm":{"intra_host_gbps":-1}}`,
		`{"comm":{"intra_host_gbps":1e-300}}`,
		`{"comm":{"inter_host_gbps":2e9}}`,
		`{"comm":{"all_to_all_contention":0.5}}`,
		`{} {}`,
		`[`,
	} {
		if _, err := Parse([]byte(s)); !errors.Is(err, ErrConfig) {
			t.Errorf("Parse(%s) = %v, want ErrConfig", s, err)
		}
	}
}

// TestLoadErrorLines: an error in a costs file's JSON names the file and
// the line it is on.
func TestLoadErrorLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "costs.json")
	for _, c := range []struct {
		text string
		line int
	}{
		{"{\n  \"fixed\": {\n    \"reduce_ns\": \"x\"\n  }\n}\n", 3}, // a string for a number
		{"{\n  \"fixed\": {},\n  \"fixd\": {}\n}\n", 3},              // an unknown key
		{"{\n  \"fixed\": {}\n}\n{}\n", 4},                           // a second object
		{"{\n  \"fixed\": {}\n  \"comm\": {}\n}\n", 3},               // a missing comma
		// Runtimes and latencies past 10^14 ns, decoded well but out of
		// range, on the line of their key. 2^60 ns was accepted, and
		// eight such commands on one stream overflowed its int64 clock.
		{"{\n  \"fixed\": {\n    \"call_function_ns\": 10,\n    \"reduce_ns\": 1152921504606846976\n  }\n}\n", 4},
		{"{\n  \"fixed\": {\"reduce_ns\": 100000000000001}\n}\n", 2},
		{"{\n  \"runtimes_ns\": {\n    \"aten.mm\": 5,\n    \"aten.add:(2x2)\": 100000000000001\n  }\n}\n", 4},
		{"{\n  \"runtimes_ns\": {\"aten.mm\": -1}\n}\n", 2},
		// Two bad keys: the first in key order is named, every time
		// ("aten.add" before "aten.mm"), whatever the map's order; and
		// "MM", a key of its own, is not taken for "mm".
		{"{\n  \"runtimes_ns\": {\n    \"aten.mm\": -1,\n    \"aten.add\": -2\n  }\n}\n", 4},
		{"{\n  \"runtimes_ns\": {\n    \"mm\": -1,\n    \"MM\": 5\n  }\n}\n", 3},
		{"{\n  \"fixed\": {},\n  \"comm\": {\n    \"intra_host_gbps\": 100,\n    \"inter_host_latency_ns\": 1152921504606846976\n  }\n}\n", 5},
	} {
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if want := fmt.Sprintf("%s:%d: bad costs file: ", path, c.line); !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: got %v, want it to start with %q", c.text, err, want)
		}
	}
}

func TestExampleFile(t *testing.T) {
	m, err := Load("../../examples/costs.json")
	if err != nil {
		t.Fatal(err)
	}
	if !m.hasComm || m.Fixed().CallFunctionNs != 20000 {
		t.Errorf("examples/costs.json: %+v", m)
	}
}

// TestLoadTooLarge: a file past the size limit is refused naming the
// limit, not a size it does not have (it is read only up to the limit).
func TestLoadTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(path, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 2*MaxConfigBytes); err != nil { // sparse: "{" and zero bytes
		t.Fatal(err)
	}
	_, err := Load(path)
	want := fmt.Sprintf("%s: bad costs file: more than %d bytes, the most a costs file may hold", path, MaxConfigBytes)
	if !errors.Is(err, ErrConfig) || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}
