package history

import (
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestCutLastLine: a JSON line that does not parse and ends the input with
// no newline after it, as the last line of a copy cut short does, is named
// as such, plain or in a whole zstd frame; the same line with its newline,
// or followed by another line, is not. The header is line 1, the step
// line 2, the cut command line 3.
func TestCutLastLine(t *testing.T) {
	const head = `{"fastsim":"history","version":1,"world_size":2}` + "\n" + `{"step":0}` + "\n"
	const cut = `{"ts":1,"ranks":[{"offset":0,"sizes":[2`
	const msg = `h:3: field "ranks": slice 0: field "sizes": invalid JSON: unterminated list at the end of the line`
	const hint = " (the history ends inside this line, with no newline after it: a copy cut short?)"
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	for _, c := range []struct {
		name, src, want string
	}{
		{"cut", head + cut, msg + hint},
		{"with its newline", head + cut + "\n", msg},
		{"followed by a line", head + cut + "\n" + `{"step":1}`, msg},
		{"header cut", `{"fastsim":"history","version":1`, `h:1: bad header: invalid JSON: unterminated object at the end of the line` + hint},
	} {
		for form, src := range map[string][]byte{"plain": []byte(c.src), "zstd": enc.EncodeAll([]byte(c.src), nil)} {
			_, err := readAll(t, src, "h")
			if err == nil || err.Error() != c.want {
				t.Errorf("%s, %s: %v, want %q", c.name, form, err, c.want)
			}
		}
	}
	// A last line without its newline that parses is a record like any.
	if recs, err := readAll(t, []byte(head+`{"step":1}`), "h"); err != nil || len(recs) != 2 {
		t.Errorf("whole last line without newline: %d records, %v", len(recs), err)
	}
}
