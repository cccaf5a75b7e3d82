package replay

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/synth"
)

// TestDecodeOnlyReleasesBorrows: decoding alone holds no more borrow
// indexes than the history has borrows alive at once (created and not yet
// dropped), counted here from the JSON text, where without the releases
// it would hold one for every borrow the history made. Both forms.
func TestDecodeOnlyReleasesBorrows(t *testing.T) {
	var js bytes.Buffer
	c := synth.Train{PP: 2, DP: 2, TP: 2, Layers: 4, Hidden: 32, Seq: 8, Batch: 8, Micro: 4, Steps: 3}
	if err := synth.WriteTrain(&js, c); err != nil {
		t.Fatal(err)
	}
	// Borrows alive at once, from the text: +1 a BorrowCreate, -1 a
	// BorrowDrop, in the order of the lines (the toy job sends no
	// CommandGroup).
	kinds := regexp.MustCompile(`"type":"Borrow(Create|Drop)"`).FindAllSubmatch(js.Bytes(), -1)
	alive, most, made := 0, 0, 0
	for _, k := range kinds {
		if string(k[1]) == "Create" {
			alive++
			made++
		} else {
			alive--
		}
		most = max(most, alive)
	}
	if made < 4*most {
		t.Fatalf("%d borrows made, at most %d alive at once: want a history whose borrows come and go", made, most)
	}
	for _, f := range []history.Form{history.FormJSON, history.FormBinary} {
		data := js.Bytes()
		var err error
		if f != history.FormJSON {
			if data, err = history.ConvertBytes(data, "in", f); err != nil {
				t.Fatal(err)
			}
		}
		r, err := history.NewReader(bytes.NewReader(data), "in")
		if err != nil {
			t.Fatal(err)
		}
		n, _, err := decodeAll(r, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Registry().Borrows(); got > most {
			t.Errorf("form %v: %d records decoded, %d borrow indexes held, want at most %d (of %d borrows made)", f, n, got, most, made)
		}
		t.Logf("form %v: %d records, %d borrow indexes (%d made, %d alive at most)", f, n, r.Registry().Borrows(), made, most)
	}
}
