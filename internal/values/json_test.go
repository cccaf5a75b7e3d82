package values

import "testing"

// TestTreeText: a tree held as a template renders the text a JSON-lines
// writer writes, each NUL replaced by its leaf's object in its form; a tree
// with text returns it as it is; a tree not given has none. The expected
// texts are written out by hand from the template and the leaves.
func TestTreeText(t *testing.T) {
	a := Tensor{ID: 7, Storage: 3, NBytes: 16, Dtype: "float32", Shape: []int64{2, 2}}
	b := Tensor{ID: -12, Storage: -12, NBytes: 0, Dtype: "q\"\n", Shape: nil, CPU: true}
	tmpl := Tree{Tmpl: []byte("[\x00,{\"x\":\x00},3]"), Leaves: []Tensor{a, b}, Forms: []byte{LeafFull, LeafShort}}
	want := `[{"tensor":7,"storage":3,"nbytes":16,"dtype":"float32","shape":[2,2],"device":"cuda"},{"x":{"tensor":-12}},3]`
	if got := string(tmpl.Text()); got != want {
		t.Errorf("template: %s, want %s", got, want)
	}
	tmpl.Forms = []byte{LeafShort, LeafFull}
	want = `[{"tensor":7},{"x":{"tensor":-12,"storage":-12,"nbytes":0,"dtype":"q\"\n","shape":[],"device":"cpu"}},3]`
	if got := string(tmpl.AppendText([]byte("> "))); got != "> "+want {
		t.Errorf("template, other forms: %s, want > %s", got, want)
	}
	if !tmpl.Given() {
		t.Error("a template tree is not given")
	}
	raw := Tree{Raw: []byte(`{"k": [1, 2]}`)}
	if got := string(raw.Text()); got != `{"k": [1, 2]}` || !raw.Given() {
		t.Errorf("raw: %s (given %v)", got, raw.Given())
	}
	var none Tree
	if none.Given() || none.Text() != nil {
		t.Errorf("empty tree: given %v, text %q", none.Given(), none.Text())
	}
	tmpl.Reset()
	if tmpl.Given() || len(tmpl.Forms) != 0 {
		t.Errorf("reset tree: given %v, forms %v", tmpl.Given(), tmpl.Forms)
	}
}
