package monarch

import (
	"errors"
	"fmt"
	"strings"
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

// TestTimingErrorLines: a timing file's wrong value is blamed on its
// key's line, in both forms, and of two wrong values the first in the
// file is the one named. Lines counted by hand in each text.
func TestTimingErrorLines(t *testing.T) {
	for _, c := range []struct {
		text string
		line int
		what string
	}{
		// The key on line 3; the next line is wrong too, named second.
		{"{\n  \"BorrowCreate\": 2,\n  \"SendTensor:(2):float32\": -3,\n  \"Reduce:x\": -4\n}\n", 3,
			`timing file: "SendTensor:(2):float32": -3 microseconds is out of range (0 to 1e14)`},
		// A catalogue: "timing" opens on line 3, its second key on line 5.
		{"{\n  \"command_types\": [],\n  \"timing\": {\n    \"BorrowCreate\": 0.5,\n    \"Reduce:x\": 2e14\n  }\n}\n", 5,
			`timing file: "Reduce:x": 2e+14 microseconds is out of range`},
		{"{\n  \"a\": 1,\n\n  \"b\": \"x\"\n}", 4, `timing file: "b": want a number of microseconds`},
		{"{\n  \"a\": 1,\n  \"a\": 2\n}", 3, `timing file: "a": given twice (first on line 2)`},
		// The borrow waits differ: blamed on the later key, line 4.
		{"{\n  \"BorrowLastUse\": 1,\n  \"x\": 1,\n  \"BorrowCreate\": 2\n}", 4, "timing file: BorrowCreate (2000 ns) and BorrowLastUse (1000 ns) differ"},
		{"{\n  \"command_types\": [],\n  \"timing\": 5\n}", 3, `timing file: "timing": want an object`},
		// Not JSON: where the text goes wrong.
		{"{\n  \"a\": 1,\n  \"b\" 2\n}", 3, "timing file: invalid character"},
	} {
		_, err := ParseTiming([]byte(c.text))
		want := fmt.Sprintf("%d: %s", c.line, c.what)
		if !errors.Is(err, ErrTiming) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: got %v, want it to start with %q", c.text, err, want)
		}
	}
}
