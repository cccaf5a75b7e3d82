package history

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/values"
)

// TestRanksReused checks the reuse of the last record's ranks: repeated
// ranks text decodes to the same slices, and a Reader reset to a smaller
// world checks the same text again (rank 8 is outside a world of 8 ranks:
// offset 8 + 0*1, by hand).
func TestRanksReused(t *testing.T) {
	ranks := `[{"offset":8,"sizes":[2],"strides":[1]}]`
	line := `{"ts":1,"ranks":` + ranks + `,"msg":{"type":"DeleteRefs","refs":[]}}` + "\n"
	big := `{"fastsim":"history","version":1,"world_size":16}` + "\n" + line + line
	small := `{"fastsim":"history","version":1,"world_size":8}` + "\n" + line
	src := strings.NewReader(big)
	r, err := NewReader(src, "big.hist")
	if err != nil {
		t.Fatal(err)
	}
	var rec Record
	for i := 0; i < 2; i++ {
		if err := r.Next(&rec); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if len(rec.Ranks) != 1 || rec.Ranks[0].Offset != 8 || len(rec.Ranks[0].Sizes) != 1 || rec.Ranks[0].Sizes[0] != 2 || rec.Ranks[0].Strides[0] != 1 {
			t.Fatalf("record %d: ranks %+v, want offset 8, sizes [2], strides [1]", i, rec.Ranks)
		}
	}
	if err := r.Next(&rec); err != io.EOF {
		t.Fatalf("after two records: %v, want io.EOF", err)
	}
	if err := r.Reset(strings.NewReader(small), "small.hist"); err != nil {
		t.Fatal(err)
	}
	err = r.Next(&rec)
	if !errors.Is(err, values.ErrSlice) || !strings.Contains(err.Error(), "small.hist:2:") || !strings.Contains(err.Error(), "rank 8 is outside the world of 8 ranks") {
		t.Fatalf("reset to world 8: %v, want small.hist:2: rank 8 is outside the world of 8 ranks", err)
	}
}
