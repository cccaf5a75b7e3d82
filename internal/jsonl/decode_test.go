package jsonl

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/values"
)

func decodeLine(t *testing.T, reg *values.Registry, line string) (values.Tree, error) {
	t.Helper()
	var s Scanner
	if err := s.Reset([]byte(line)); err != nil {
		t.Fatal(err)
	}
	var tr values.Tree
	err := DecodeTree(&s, reg, &tr)
	return tr, err
}

func TestTreeAndRegistry(t *testing.T) {
	reg := values.NewRegistry()
	tr, err := decodeLine(t, reg, ` [{"x":{"dtype":"f","tensor":5,"shape":[2,3],"nbytes":24,"storage":5,"device":"cuda"}}, 1, {"tensor":6,"storage":5,"nbytes":0,"dtype":"","shape":[],"device":"cpu","extra":{"tensor":9}}, {"tensor":5}] `)
	if err != nil {
		t.Fatal(err)
	}
	if string(tr.Raw) != `[{"x":{"dtype":"f","tensor":5,"shape":[2,3],"nbytes":24,"storage":5,"device":"cuda"}}, 1, {"tensor":6,"storage":5,"nbytes":0,"dtype":"","shape":[],"device":"cpu","extra":{"tensor":9}}, {"tensor":5}]` {
		t.Errorf("raw %q", tr.Raw)
	}
	want := []values.Tensor{
		{ID: 5, Idx: 0, Storage: 5, NBytes: 24, Dtype: "f", Shape: []int64{2, 3}},
		{ID: 6, Idx: 1, Storage: 5, Shape: []int64{}, CPU: true},
		{ID: 5, Idx: 0, Storage: 5, NBytes: 24, Dtype: "f", Shape: []int64{2, 3}},
	}
	if fmt.Sprint(tr.Leaves) != fmt.Sprint(want) {
		t.Errorf("leaves\n %+v\nwant\n %+v", tr.Leaves, want)
	}
	if reg.Len() != 2 {
		t.Errorf("registry holds %d tensors, want 2 (a tensor's own fields are not walked)", reg.Len())
	}
	for _, c := range []struct{ line, want string }{
		{`{"tensor":5,"shape":[3,2]}`, "tensor 5: shape is [3,2] here but [2,3]"},
		{`{"tensor":5,"storage":6}`, "tensor 5: storage is 6 here but 5"},
		{`{"tensor":6,"device":"cuda"}`, `tensor 6: device is "cuda" here but "cpu"`},
		{`{"tensor":5,"dtype":"g"}`, `tensor 5: dtype is "g" here but "f"`},
	} {
		_, err := decodeLine(t, reg, c.line)
		if !errors.Is(err, values.ErrConflict) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.line, err, c.want)
		}
	}
	if _, err := decodeLine(t, reg, `{"tensor":5,"dtype":"f","shape":[2,3],"nbytes":24,"storage":5,"device":"cuda"}`); err != nil {
		t.Errorf("agreeing mention: %v", err)
	}
	if _, err := decodeLine(t, reg, `{"tensor":"5"}`); err == nil || err.Error() != `field "tensor": want an integer, got a string` {
		t.Errorf("bad id: %v", err)
	}
}

func TestDecodeTensorNoAlloc(t *testing.T) {
	reg := values.NewRegistry()
	line := []byte(`[{"tensor":1,"storage":1,"nbytes":8,"dtype":"float32","shape":[2],"device":"cuda"},{"tensor":1}]`)
	var s Scanner
	var tr values.Tree
	s.Reset(line)
	if err := DecodeTree(&s, reg, &tr); err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(100, func() {
		s.Reset(line)
		if err := DecodeTree(&s, reg, &tr); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("DecodeTree allocates %v times per run", n)
	}
}

func ExampleDecodeTree() {
	var s Scanner
	reg := values.NewRegistry()
	s.Reset([]byte(`{"args":[{"tensor":7,"storage":7,"nbytes":400,"dtype":"float32","shape":[10,10],"device":"cuda"}, 2.5]}`))
	_ = s.BeginObject()
	_, _, _ = s.NextKey()
	var tr values.Tree
	if err := DecodeTree(&s, reg, &tr); err != nil {
		fmt.Println(err)
	}
	t := tr.Leaves[0]
	fmt.Println(t.ID, t.Idx, t.Storage, t.NBytes, t.Dtype, t.Shape, string(tr.Raw))
	// Output: 7 0 7 400 float32 [10 10] [{"tensor":7,"storage":7,"nbytes":400,"dtype":"float32","shape":[10,10],"device":"cuda"}, 2.5]
}
