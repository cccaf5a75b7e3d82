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

// TestDeleteRowIsDelete: deleting by row does what deleting by id does,
// the second time of a row (an id named twice) and an unknown row (-1)
// included, with and without DeferFree.
func TestDeleteRowIsDelete(t *testing.T) {
	for _, deferFree := range []bool{false, true} {
		byID, byRow := NewRegistry(), NewRegistry()
		byID.DeferFree(deferFree)
		byRow.DeferFree(deferFree)
		for _, r := range []*Registry{byID, byRow} {
			for id := int64(1); id <= 4; id++ {
				if _, err := r.Define(id, 100+id%2, 8, "float32", []int64{2}, false); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, id := range []int64{2, 4, 2, 9} {
			byID.Delete(id)
			byRow.DeleteRow(byRow.TensorIdx(id))
		}
		for id := int64(1); id <= 9; id++ {
			if a, b := byID.TensorIdx(id), byRow.TensorIdx(id); a != b {
				t.Errorf("defer %v: tensor %d: row %d by id, %d by row", deferFree, id, a, b)
			}
		}
		if a, b := byID.TakeDeleted(), byRow.TakeDeleted(); !slices.Equal(a, b) {
			t.Errorf("defer %v: deleted %v by id, %v by row", deferFree, a, b)
		}
		// The freed rows are reused alike by the next definitions.
		for id := int64(10); id <= 12; id++ {
			a, _ := byID.Define(id, id, 4, "int64", nil, true)
			b, _ := byRow.Define(id, id, 4, "int64", nil, true)
			if a.Idx != b.Idx || a.StorageIdx != b.StorageIdx {
				t.Errorf("defer %v: tensor %d: row %d/%d storage %d/%d", deferFree, id, a.Idx, b.Idx, a.StorageIdx, b.StorageIdx)
			}
		}
	}
}
