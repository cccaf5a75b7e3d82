package values

import (
	"slices"
	"testing"
)

func TestForgetReusesRows(t *testing.T) {
	r := NewRegistry()
	a, _ := r.Define(10, 10, 40, "float32", []int64{2, 5}, false)
	b, _ := r.Define(1<<40, 7, 8, "bfloat16", []int64{4}, false) // a sparse id: kept in the map
	r.Forget(a.Idx)
	r.Forget(b.Idx)
	r.Forget(b.Idx) // twice is harmless
	if _, ok := r.Lookup(10); ok {
		t.Fatal("tensor 10 still known after Forget")
	}
	if _, ok := r.Lookup(1 << 40); ok {
		t.Fatal("tensor 2^40 still known after Forget")
	}
	// New tensors take the forgotten rows: the registry does not grow.
	c, _ := r.Define(11, 11, 12, "float32", []int64{3}, true)
	d, _ := r.Define(12, 3, 16, "float32", []int64{1, 2, 3}, false)
	if r.Len() != 2 || !(c.Idx == b.Idx || c.Idx == a.Idx) || !(d.Idx == b.Idx || d.Idx == a.Idx) {
		t.Fatalf("rows %d and %d of %d: want the two forgotten ones", c.Idx, d.Idx, r.Len())
	}
	// Each keeps its own fields, shapes included, whatever room the old
	// row had for its shape.
	for _, want := range []Tensor{c, d} {
		got, ok := r.Lookup(want.ID)
		if !ok || got.Storage != want.Storage || got.NBytes != want.NBytes || got.CPU != want.CPU || !slices.Equal(got.Shape, want.Shape) {
			t.Fatalf("tensor %d: %+v, want %+v", want.ID, got, want)
		}
	}
	if got, _ := r.Lookup(12); !slices.Equal(got.Shape, []int64{1, 2, 3}) {
		t.Fatalf("shape %v", got.Shape)
	}
	if got, _ := r.Lookup(11); !slices.Equal(got.Shape, []int64{3}) {
		t.Fatalf("shape %v", got.Shape)
	}
}
