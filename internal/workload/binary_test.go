package workload_test

import (
	"bytes"
	"testing"

	"github.com/fastsim/fastsim"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/workload"
)

// TestBinaryEqualsJSON converts each layout's history to the binary form
// and back, and replays all three: the reports agree, and the JSON that
// comes back is the JSON written.
func TestBinaryEqualsJSON(t *testing.T) {
	n := 4
	if testing.Short() {
		n = 1
	}
	for _, j := range layouts()[:n] {
		var js bytes.Buffer
		if err := workload.Write(&js, j); err != nil {
			t.Fatal(err)
		}
		conv := func(src []byte, f history.Form) []byte {
			out, err := history.ConvertBytes(src, "in", f)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		bin := conv(js.Bytes(), history.FormBinary)
		back := conv(bin, history.FormJSON)
		if !bytes.Equal(back, js.Bytes()) {
			t.Errorf("tp=%d pp=%d dp=%d: JSON -> binary -> JSON differs", j.TP, j.PP, j.DP)
		}
		var reps []fastsim.Report
		for _, h := range [][]byte{js.Bytes(), bin} {
			sim, err := fastsim.Replay(bytes.NewReader(h), fastsim.Options{Grouped: true})
			if err != nil {
				t.Fatal(err)
			}
			reps = append(reps, sim.Report())
		}
		if reps[0].ExecNs != reps[1].ExecNs || reps[0].PeakBytes != reps[1].PeakBytes {
			t.Errorf("tp=%d pp=%d dp=%d: JSON %+v, binary %+v", j.TP, j.PP, j.DP, reps[0], reps[1])
		}
	}
}
