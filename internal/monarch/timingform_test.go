package monarch

import (
	"strings"
	"testing"
)

// TestTimingAlone: a {"timing": {...}} document, a catalogue's timing
// without its command_types, is a timing file, as the README says the
// form is detected by its content (it went to the cost-model reader,
// which refused "unknown field timing"); beside a key of a cost model it
// is not.
func TestTimingAlone(t *testing.T) {
	doc := []byte(`{"timing": {"BorrowCreate": 0.5, "SendTensor:(2):float32": 3}}`)
	if !IsTiming(doc) {
		t.Fatalf("%s: not a timing file", doc)
	}
	tm, err := ParseTiming(doc)
	if err != nil {
		t.Fatal(err)
	}
	// 0.5 us = 500 ns; 3 us = 3,000 ns.
	if tm["BorrowCreate"] != 500 || tm["SendTensor:(2):float32"] != 3000 || len(tm) != 2 {
		t.Errorf("parsed %v", tm)
	}
	// Beside other keys but command_types, a "timing" object is a cost
	// model's or a mistake, not this form.
	if other := `{"timing": {"a": 1}, "fixed": {"reduce_ns": 5}}`; IsTiming([]byte(other)) {
		t.Errorf("%s: a timing file", other)
	}
	// A catalogue is a timing file whatever its "timing" holds, so that
	// ParseTiming says what is wrong with it.
	cat := []byte("{\"command_types\": [],\n \"timing\": 5}")
	if !IsTiming(cat) {
		t.Errorf("%s: not a timing file", cat)
	}
	if _, err := ParseTiming(cat); err == nil || !strings.HasPrefix(err.Error(), "2: timing file: \"timing\": want an object") {
		t.Errorf("%s: %v, want line 2's \"timing\" named", cat, err)
	}
	// ParseTiming itself refuses a key beside a "timing" object (read as
	// {key: microseconds}, the object is not a number), and null.
	for _, c := range []struct {
		doc, want string
		timing    bool // IsTiming takes it for one, so the CLI reads it so
	}{
		{"{\"timing\": {\"a\": 1},\n \"b\": 2}", "1: timing file: \"timing\": want a number", false},
		{"{\"a\": 1,\n \"b\": null}", "2: timing file: \"b\": want a number", true},
	} {
		if IsTiming([]byte(c.doc)) != c.timing {
			t.Errorf("%q: IsTiming %v, want %v", c.doc, !c.timing, c.timing)
		}
		if _, err := ParseTiming([]byte(c.doc)); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.doc, err, c.want)
		}
	}
}
