package monarch

import "testing"

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
	for _, other := range []string{`{"timing": {"a": 1}, "fixed": {"reduce_ns": 5}}`, `{"command_types": [], "timing": 5}`} {
		if IsTiming([]byte(other)) {
			t.Errorf("%s: a timing file", other)
		}
	}
}
