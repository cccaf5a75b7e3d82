package binform

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/fastsim/fastsim/internal/values"
)

// TestDefineTexts: definitions whose text joins the blob table, does not
// (sent once, "1, len, text"), and refers to the table, each give their
// tensor the fields of their own text, and a text read outside the table
// does not overwrite the shapes kept for the table.
func TestDefineTexts(t *testing.T) {
	a := `,"nbytes":16,"dtype":"float32","shape":[2,2],"device":"cuda"}`
	b := `,"nbytes":4,"dtype":"int64","shape":[7,9],"device":"cpu"}`
	var prev int64 // the id of the previous definition, which an id is written from
	def := func(buf []byte, id int64, ref byte, text string) []byte {
		buf = binary.AppendVarint(buf, id-prev)
		prev = id
		buf = binary.AppendVarint(buf, 0) // storage = id
		buf = append(buf, ref)
		if ref < 2 {
			buf = binary.AppendUvarint(buf, uint64(len(text)))
			buf = append(buf, text...)
		}
		return buf
	}
	var body []byte
	body = def(body, 1, 0, a)  // joins the table as blob 0
	body = def(body, 2, 1, b)  // not in the table
	body = def(body, 3, 2, "") // blob 0 again
	reg := values.NewRegistry()
	d := NewDecoder(reg)
	d.Begin(body)
	var shape []int64
	for range 3 {
		shape = d.Define(shape)
	}
	if err := d.End(); err != nil {
		t.Fatal(err)
	}
	want := map[int64]values.Tensor{
		1: {NBytes: 16, Dtype: "float32", Shape: []int64{2, 2}},
		2: {NBytes: 4, Dtype: "int64", Shape: []int64{7, 9}, CPU: true},
		3: {NBytes: 16, Dtype: "float32", Shape: []int64{2, 2}},
	}
	for id, w := range want {
		got, ok := reg.Lookup(id)
		if !ok || got.Storage != id || got.NBytes != w.NBytes || got.Dtype != w.Dtype || !slices.Equal(got.Shape, w.Shape) || got.CPU != w.CPU {
			t.Errorf("tensor %d: %+v (known %v), want %+v", id, got, ok, w)
		}
	}
	// Each tensor renders its own definition's text after "storage" (a
	// tree's text is rendered from its leaves).
	for id, text := range map[int64]string{1: a, 2: b, 3: a} {
		got, _ := reg.Lookup(id)
		if tail := values.AppendTensorTail(nil, &got); string(tail) != text {
			t.Errorf("tensor %d: text %s, want %s", id, tail, text)
		}
	}
}
