package history_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/values"
)

// nestedSend is a history whose line 2 holds a SendTensor to rank 5 of a
// 2-rank world, depth command groups deep.
func nestedSend(depth int) string {
	msg := `{"type":"SendTensor","result":{"tensor":8,"storage":8,"nbytes":8,"dtype":"float32","shape":[2],"device":"cuda"},"tensor":{"tensor":3,"storage":3,"nbytes":8,"dtype":"float32","shape":[2],"device":"cuda"},` +
		`"from_ranks":{"offset":0,"sizes":[1],"strides":[1]},"to_ranks":{"offset":5,"sizes":[1],"strides":[1]},"from_stream":{"ref":1},"to_stream":{"ref":1}}`
	for range depth {
		msg = `{"type":"CommandGroup","commands":[` + msg + `]}`
	}
	return `{"fastsim":"history","version":1,"world_size":2}` + "\n" +
		`{"ts":0,"ranks":[{"offset":0,"sizes":[2],"strides":[1]}],"msg":` + msg + "}\n"
}

// TestNestedErrorCapped: a fault 29 command groups deep (about the
// deepest a line's nesting limit allows) is named by the outermost level,
// the 26 levels left out and the 2 innermost, not by a path of 29 levels
// (1.2 kB); up to 6 levels the path is whole, and from 7 on at least 4
// are left out.
func TestNestedErrorCapped(t *testing.T) {
	const level = `CommandGroup: field "commands": item 0: `
	const fault = `SendTensor: field "to_ranks": rank 5 is outside the world of 2 ranks`
	for _, tc := range []struct {
		depth int
		want  string
	}{
		{1, `h:2: field "msg": ` + level + fault},
		{6, `h:2: field "msg": ` + strings.Repeat(level, 6) + fault},
		{7, `h:2: field "msg": ` + level + `… 4 levels … ` + strings.Repeat(level, 2) + fault},
		{29, `h:2: field "msg": ` + level + `… 26 levels … ` + strings.Repeat(level, 2) + fault},
	} {
		r, err := history.NewReader(strings.NewReader(nestedSend(tc.depth)), "h")
		if err != nil {
			t.Fatal(err)
		}
		var rec history.Record
		err = r.Next(&rec)
		r.Close()
		if err == nil || err == io.EOF || !errors.Is(err, values.ErrSlice) {
			t.Errorf("depth %d: %v, want the slice's error", tc.depth, err)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("depth %d:\n got %s\nwant %s", tc.depth, err, tc.want)
		}
	}
}
