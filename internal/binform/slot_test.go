package binform

import (
	"slices"
	"testing"

	"github.com/fastsim/fastsim/internal/values"
)

// TestSlotReuseRenders: a tensor's fields are kept by slot; a tree's text
// is rendered from its template and leaves when asked for; when a deletion
// frees the slot and a new tensor takes it, trees that
// mention the new tensor read back exactly as written (its id and storage,
// not the old one's), in both leaf forms. Property: encoder then decoder
// gives back the tree texts and the registry's tensors.
func TestSlotReuseRenders(t *testing.T) {
	const tail7 = `,"nbytes":16,"dtype":"float32","shape":[2,2],"device":"cuda"}`
	const tail9 = `,"nbytes":8,"dtype":"int64","shape":[1],"device":"cpu"}`
	a := values.Tensor{ID: 7, Storage: 7, NBytes: 16, Dtype: "float32", Shape: []int64{2, 2}}
	b := values.Tensor{ID: 123456, Storage: 99, NBytes: 8, Dtype: "int64", Shape: []int64{1}, CPU: true}
	records := []struct {
		def   values.Tensor
		trees []string // each mentions def once or twice
	}{
		{a, []string{`[{"tensor":7,"storage":7` + tail7 + `]`, `{"x":{"tensor":7},"y":[{"tensor":7}]}`}},
		{b, []string{`[{"tensor":123456}]`, `[{"tensor":123456,"storage":99` + tail9 + `,{"tensor":123456}]`}},
	}
	e := NewEncoder()
	reg := values.NewRegistry()
	d := NewDecoder(reg)
	var shape []int64
	var back values.Tree
	for r, rc := range records {
		e.Buf = e.Buf[:0]
		def := rc.def
		e.Define(&def)
		for _, text := range rc.trees {
			tr := values.Tree{Raw: []byte(text)}
			for range countTensors(text) {
				tr.Leaves = append(tr.Leaves, def)
			}
			e.Tree(&tr)
		}
		d.Begin(e.Buf)
		shape = d.Define(shape)
		for i, text := range rc.trees {
			d.Tree(&back)
			if d.Err() != nil {
				t.Fatalf("record %d, tree %d: %v", r, i, d.Err())
			}
			if got := back.Text(); string(got) != text {
				t.Errorf("record %d, tree %d: %s, want %s", r, i, got, text)
			}
			for _, l := range back.Leaves {
				if l.ID != def.ID || l.Storage != def.Storage || l.NBytes != def.NBytes || l.CPU != def.CPU || !slices.Equal(l.Shape, def.Shape) {
					t.Errorf("record %d, tree %d: leaf %+v, want %+v", r, i, l, def)
				}
			}
		}
		if err := d.End(); err != nil {
			t.Fatal(err)
		}
		// The record deletes its tensor: slot 0 is free for the next.
		e.Deleted(def.ID)
		row := reg.TensorIdx(def.ID)
		d.Deleted(row)
		reg.DeleteRow(row)
		if reg.TensorIdx(def.ID) != -1 {
			t.Fatalf("record %d: tensor %d still known after DeleteRow", r, def.ID)
		}
	}
}

// countTensors counts the tensor objects of a tree's text.
func countTensors(text string) int {
	n := 0
	for i := 0; i+9 <= len(text); i++ {
		if text[i:i+9] == `"tensor":` {
			n++
		}
	}
	return n
}
