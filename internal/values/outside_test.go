package values

import (
	"errors"
	"testing"
)

// TestHoldOutsideCountsAgainstTheLimit: tensors an engine holds
// undefined count against MaxTensors. With MaxTensors-2 held, two new
// tensors fit and a third is refused with the limit's error; giving one
// back lets the third in; Reset forgets the count.
func TestHoldOutsideCountsAgainstTheLimit(t *testing.T) {
	r := NewRegistry()
	r.HoldOutside(MaxTensors - 2)
	for id := int64(1); id <= 2; id++ {
		if _, _, err := r.Ensure(id, id, 4, "float32", []int64{1}, false); err != nil {
			t.Fatalf("tensor %d: %v", id, err)
		}
	}
	if _, _, err := r.Ensure(3, 3, 4, "float32", []int64{1}, false); !errors.Is(err, ErrLimit) {
		t.Fatalf("tensor 3 with %d held and 2 defined: %v, want the limit's error", MaxTensors-2, err)
	}
	r.HoldOutside(-1)
	if _, _, err := r.Ensure(3, 3, 4, "float32", []int64{1}, false); err != nil {
		t.Fatalf("tensor 3 after one was given back: %v", err)
	}
	r.Reset()
	if r.Outside() != 0 {
		t.Fatalf("after Reset %d are held, want 0", r.Outside())
	}
}
