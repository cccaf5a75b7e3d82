package binform

import (
	"slices"
	"testing"

	"github.com/fastsim/fastsim/internal/values"
)

// TestSliceTableShared: a slice read from the table shares the table's
// arrays, and nothing a caller does with a decoded slice changes what
// later records read. Property: every record decodes to the slices the
// encoder was given, though the caller appends to the decoded slices,
// copies other slices into their storage (as history's copySlices does,
// append(s.Sizes[:0], ...)) and decodes into the same values again.
func TestSliceTableShared(t *testing.T) {
	a := values.Slice{Offset: 3, Sizes: []int64{2, 4}, Strides: []int64{8, 1}}
	b := values.Slice{Offset: 0, Sizes: []int64{5}, Strides: []int64{2}}
	c := values.Slice{Offset: 1, Sizes: []int64{1, 1, 2}, Strides: []int64{4, 2, 1}}
	records := [][]values.Slice{{a, b}, {a}, {b, a}, {c, a}, {a, c, b}, {a, b}}
	e := NewEncoder()
	d := NewDecoder(values.NewRegistry())
	got := make([]values.Slice, 3)
	for r, want := range records {
		e.Buf = e.Buf[:0]
		for i := range want {
			e.Slice(&want[i])
		}
		d.Begin(e.Buf)
		for i := range want {
			d.Slice(&got[i])
		}
		if err := d.End(); err != nil {
			t.Fatalf("record %d: %v", r, err)
		}
		for i := range want {
			if !got[i].Equal(&want[i]) {
				t.Fatalf("record %d, slice %d: %+v, want %+v", r, i, got[i], want[i])
			}
			// What a caller may do with a record's slice between records.
			got[i].Sizes = append(got[i].Sizes, 99)
			got[i].Strides = append(got[i].Strides, 99)
			got[i].Sizes = append(got[i].Sizes[:0], 7)
			got[i].Strides = append(got[i].Strides[:0], 7)
		}
	}
	// Read from the table, the slices share its arrays: the decoder
	// writes nothing into the caller's storage.
	e.Buf = e.Buf[:0]
	e.Slice(&a)
	var x, y values.Slice
	d.Begin(e.Buf)
	d.Slice(&x)
	d.Begin(e.Buf)
	d.Slice(&y)
	if !x.Equal(&a) || &x.Sizes[0] != &y.Sizes[0] || &x.Strides[0] != &y.Strides[0] {
		t.Errorf("two reads of a table slice: %+v at %p, %+v at %p; want a's values in one array", x, x.Sizes, y, y.Sizes)
	}
	if cap(x.Sizes) != len(x.Sizes) || cap(x.Strides) != len(x.Strides) {
		t.Errorf("a table slice has spare capacity (sizes %d of %d, strides %d of %d): an append would write into the table",
			len(x.Sizes), cap(x.Sizes), len(x.Strides), cap(x.Strides))
	}
	if !slices.Equal(a.Sizes, []int64{2, 4}) {
		t.Errorf("the encoder's slice changed: %v", a.Sizes)
	}
}
