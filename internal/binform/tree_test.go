package binform

import (
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/values"
)

// TestTemplateCheck: a template passes exactly when the text it stands for
// would be read by a JSON-lines reader with a tensor object at each NUL
// byte and none elsewhere.
func TestTemplateCheck(t *testing.T) {
	forged := `{"tensor":2305843009213693952,"storage":0,"nbytes":0,"dtype":"x","shape":[],"device":"cuda","x":` // sentinel base A, 1<<61
	cases := []struct {
		tmpl string
		n    int
		ok   bool
	}{
		{"[\x00]", 1, true},
		{"[\x00,{\"a\":[\x00,1]},\"s\"]", 2, true},
		{"{\"args\":\x00}", 1, true},
		{"[\x00]", 2, false},                   // fewer places than tensors
		{"[\x00,{\"tensor\":5}]", 1, false},    // a tensor object of its own
		{"{\"tensor\":\x00}", 1, false},        // a place inside a tensor object
		{"[\"\x00\"]", 1, false},               // a place inside a string
		{"[\x00", 1, false},                    // not JSON
		{"[\x00,{\"a\":1,\"a\":2}]", 1, false}, // a repeated key
		{"[" + forged + "\x00}]", 1, false},    // a forged leaf holding the place
		{"[\x00 , \x00 ]", 2, true},            // spaces outside tensor objects
	}
	var c templateChecker
	for _, tc := range cases {
		err := c.check([]byte(tc.tmpl), tc.n)
		if (err == nil) != tc.ok {
			t.Errorf("check(%q, %d) = %v, want ok %v", strings.ReplaceAll(tc.tmpl, "\x00", "<NUL>"), tc.n, err, tc.ok)
		}
	}
}

// TestTemplateOf: a tree whose tensor objects are written as a JSON-lines
// writer writes them becomes a template (with each leaf's form); one
// written otherwise does not, and is sent as its text.
func TestTemplateOf(t *testing.T) {
	a := values.Tensor{ID: 7, Storage: 3, NBytes: 16, Dtype: "float32", Shape: []int64{2, 2}}
	b := values.Tensor{ID: 9, Storage: 9, NBytes: 4, Dtype: "int64", Shape: []int64{}, CPU: true}
	full := `{"tensor":7,"storage":3,"nbytes":16,"dtype":"float32","shape":[2,2],"device":"cuda"}`
	cases := []struct {
		raw   string
		tmpl  string
		forms string
	}{
		{`[` + full + `,{"tensor":9}]`, "[\x00,\x00]", "\x01\x00"},
		{`{"x":[1,{"y":{"tensor":9}}],"z":` + full + `}`, "{\"x\":[1,{\"y\":\x00}],\"z\":\x00}", "\x00\x01"},
		{`[{"tensor": 7},{"tensor":9}]`, "", ""},                                                     // a space
		{`[{"tensor":7,"device":"cuda:0"},{"tensor":9}]`, "", ""},                                    // another device
		{`[{"tensor":9,"storage":9,"nbytes":4,"dtype":"int64","shape":[],"device":"cuda"}]`, "", ""}, // disagrees (cpu)
	}
	e := NewEncoder()
	for _, tc := range cases {
		leaves := []values.Tensor{a, b}
		if strings.HasPrefix(tc.raw, `{"x"`) {
			leaves = []values.Tensor{b, a}
		}
		if strings.Count(tc.raw, `"tensor"`) == 1 {
			leaves = []values.Tensor{b}
		}
		tr := values.Tree{Raw: []byte(tc.raw), Leaves: leaves}
		ok := e.template(&tr, tr.Raw)
		if ok != (tc.tmpl != "") {
			t.Errorf("%s: template %v, want %v", tc.raw, ok, tc.tmpl != "")
			continue
		}
		if ok && (string(e.tmpl) != tc.tmpl || string(e.forms) != tc.forms) {
			t.Errorf("%s: template %q forms %v, want %q %v", tc.raw, e.tmpl, e.forms, tc.tmpl, []byte(tc.forms))
		}
	}
}
