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

// TestDeleteAtEqualsDelete runs the same definitions and deletions on two
// registries, one deleting by id and one by DeleteAt with right and wrong
// rows, and checks that they answer alike after each step.
func TestDeleteAtEqualsDelete(t *testing.T) {
	for _, deferFree := range []bool{false, true} {
		a, b := NewRegistry(), NewRegistry()
		a.DeferFree(deferFree)
		b.DeferFree(deferFree)
		next := int64(1)
		var live []int64
		for step := 0; step < 3000; step++ {
			if step%3 != 2 || len(live) == 0 {
				id := next
				next += 1 + int64(step%5)*1000 // some ids beyond the window
				for _, r := range []*Registry{a, b} {
					if _, err := r.Define(id, id/2, 8, "float32", []int64{2}, false); err != nil {
						t.Fatal(err)
					}
				}
				live = append(live, id)
				continue
			}
			k := (step * 7) % len(live)
			id := live[k]
			live = append(live[:k], live[k+1:]...)
			a.Delete(id)
			idx := b.TensorIdx(id)
			switch step % 4 {
			case 0:
				idx++ // a wrong row: falls back
			case 1:
				idx = -1
			}
			b.DeleteAt(idx, id)
			if deferFree {
				for _, i := range a.TakeDeleted() {
					a.Release(i)
				}
				for _, i := range b.TakeDeleted() {
					b.Release(i)
				}
			}
			if a.Len() != b.Len() || a.Storages() != b.Storages() {
				t.Fatalf("step %d: %d rows and %d storages, DeleteAt %d and %d", step, a.Len(), a.Storages(), b.Len(), b.Storages())
			}
			for _, l := range live {
				if a.TensorIdx(l) != b.TensorIdx(l) || a.StorageIdxOfID(l/2) != b.StorageIdxOfID(l/2) {
					t.Fatalf("step %d: tensor %d at %d, DeleteAt %d", step, l, a.TensorIdx(l), b.TensorIdx(l))
				}
			}
			if b.TensorIdx(id) != -1 {
				t.Fatalf("step %d: tensor %d still known", step, id)
			}
		}
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

// TestIsRowAgreesWithKnown remembers the row every id resolved to when
// defined and asks IsRow about it, and about other rows, through
// definitions, deletions (freed at once, or deferred and released later)
// and rows reused by new ids: IsRow(id, row) must be true exactly when
// Known(id) is row. A check of the id alone passes a deleted row whose
// id is not yet reused (waiting for Release); one of the state alone, a
// row a new id reused.
func TestIsRowAgreesWithKnown(t *testing.T) {
	for _, deferFree := range []bool{false, true} {
		r := NewRegistry()
		r.DeferFree(deferFree)
		rows := map[int64]int32{} // every id ever defined: the row it got
		next := int64(1)
		var live []int64
		for step := 0; step < 1500; step++ {
			switch {
			case step%3 != 2 || len(live) == 0:
				id := next
				next += 1 + int64(step%5)*1000
				idx, err := r.DefineRow(id, id, 8, "float32", []int64{2}, false)
				if err != nil {
					t.Fatal(err)
				}
				rows[id] = idx
				live = append(live, id)
			default:
				k := (step * 7) % len(live)
				r.Delete(live[k])
				live = append(live[:k], live[k+1:]...)
				if deferFree && step%9 == 2 {
					for _, i := range r.TakeDeleted() {
						r.Release(i)
					}
				}
			}
			for id, idx := range rows {
				for _, row := range []int32{idx, idx + 1, -1} {
					if got, want := r.IsRow(id, row), row >= 0 && r.Known(id) == row; got != want {
						t.Fatalf("defer %v, step %d: IsRow(%d, %d) = %v, Known = %d", deferFree, step, id, row, got, r.Known(id))
					}
				}
			}
		}
	}
}
