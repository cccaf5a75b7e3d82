package monarch

import (
	"errors"
	"testing"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/values"
)

func tensor(id int64, dtype string, shape ...int64) values.Tensor {
	return values.Tensor{ID: id, Dtype: dtype, Shape: shape}
}

// TestKeys checks the key formats against the examples in the docstring of
// IRGraph.export_command_types (monarch/simulator/ir.py).
func TestKeys(t *testing.T) {
	mm := &gen.CallFunction{Function: "torch.ops.aten.mm.default"}
	mm.Args.Leaves = []values.Tensor{tensor(1, "float32", 3, 4), tensor(2, "float32", 4, 5), tensor(1, "float32", 3, 4)}
	if got := string(AppendCallKey(nil, mm, CleanName(mm.Function))); got != "CallFunction:aten.mm:(3x4)x(4x5):float32" {
		t.Errorf("call: %s", got)
	}
	ones := &gen.CallFunction{Function: "torch.ops.aten.ones.default"}
	ones.Result.Leaves = []values.Tensor{tensor(3, "bfloat16", 8)}
	if got := string(AppendCallKey(nil, ones, "aten.ones")); got != "CallFunction:aten.ones:(8):bfloat16" {
		t.Errorf("call without inputs: %s", got)
	}
	none := &gen.CallFunction{Function: "f"}
	if got := string(AppendCallKey(nil, none, "f")); got != "CallFunction:f:unknown" {
		t.Errorf("call without tensors: %s", got)
	}
	rs := &gen.Reduce{Reduction: "sum", LocalTensor: tensor(4, "float32", 1024, 1024)}
	if got := string(AppendReduceKey(nil, rs, 8)); got != "Reduce:reduce_scatter:(1024x1024):float32:8" {
		t.Errorf("reduce: %s", got)
	}
	st := &gen.SendTensor{Tensor: tensor(5, "float32", 512, 512)}
	if got := string(AppendSendKey(nil, st)); got != "SendTensor:(512x512):float32" {
		t.Errorf("send: %s", got)
	}
	scalar := &gen.SendTensor{Tensor: tensor(6, "int64")}
	if got := string(AppendSendKey(nil, scalar)); got != "SendTensor:():int64" {
		t.Errorf("0-dim send: %s", got)
	}
}

func TestCleanName(t *testing.T) {
	for in, want := range map[string]string{
		"torch.ops.aten.mm.default":  "aten.mm",
		"torch.ops.aten.add_.Tensor": "aten.add_.Tensor",
		"my.kernel.default":          "my.kernel",
		"torch.ops.c10d.foo":         "torch.ops.c10d.foo",
	} {
		if got := CleanName(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

func TestTimingForms(t *testing.T) {
	for _, tc := range []struct {
		doc    string
		timing bool
	}{
		{`{"CallFunction:aten.mm:(3x4)x(4x3):float32": 1500, "BorrowCreate": 10}`, true},
		{`{"command_types": [], "timing": {"BorrowCreate": 0.5}}`, true},
		{`{"command_types": []}`, false},
		{`{"fixed": {"CallFunction": 5}}`, false},
		{`{}`, false},
		{`[1]`, false},
	} {
		if got := IsTiming([]byte(tc.doc)); got != tc.timing {
			t.Errorf("%s: IsTiming %v", tc.doc, got)
		}
	}
	tm, err := ParseTiming([]byte(`{"command_types": [], "timing": {"BorrowCreate": 0.5, "SendTensor:(2):float32": 3}}`))
	if err != nil {
		t.Fatal(err)
	}
	// 0.5 us = 500 ns; 3 us = 3,000 ns.
	if tm["BorrowCreate"] != 500 || tm["SendTensor:(2):float32"] != 3000 || len(tm) != 2 {
		t.Errorf("parsed %v", tm)
	}
	for _, bad := range []string{`{"a": -1}`, `{"a": "x"}`, `{"a": 1e300}`, `nope`} {
		if _, err := ParseTiming([]byte(bad)); !errors.Is(err, ErrTiming) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestModel prices from the file and falls back to the reference's fixed
// runtimes for the rest, noting what it missed.
func TestModel(t *testing.T) {
	m, err := NewModel(Timing{"SendTensor:(2):float32": 3000, "BorrowCreate": 700}, sched.DefaultCosts())
	if err != nil {
		t.Fatal(err)
	}
	st := &gen.SendTensor{Tensor: tensor(1, "float32", 2)}
	if got := m.SendRuntimeNs(st, sched.Comm{}); got != 3000 {
		t.Errorf("send: %d", got)
	}
	other := &gen.SendTensor{Tensor: tensor(2, "float32", 3)}
	if got := m.SendRuntimeNs(other, sched.Comm{Local: true}); got != 1000 {
		t.Errorf("missing key: %d ns, want the fixed local send's 1,000", got)
	}
	if got := m.WaitRuntimeNs(); got != 700 {
		t.Errorf("wait: %d", got)
	}
	if got := m.Missed(); len(got) != 1 || got[0] != "SendTensor:(3):float32" {
		t.Errorf("missed %v", got)
	}
	if _, err := NewModel(Timing{"BorrowCreate": 1, "BorrowLastUse": 2}, sched.DefaultCosts()); !errors.Is(err, ErrTiming) {
		t.Errorf("disagreeing borrow waits: %v", err)
	}
}

func TestRankCounter(t *testing.T) {
	var rc RankCounter
	ss := []values.Slice{{Offset: 0, Sizes: []int64{4}, Strides: []int64{1}}, {Offset: 2, Sizes: []int64{4}, Strides: []int64{1}}}
	// 0..3 and 2..5: six distinct ranks; asked twice, the second from the cache.
	for range 2 {
		if got := rc.Count(ss); got != 6 {
			t.Errorf("count %d, want 6", got)
		}
	}
}
