package replay

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/fastsim/fastsim/internal/memlimit"
	"github.com/fastsim/fastsim/internal/synth"
)

// TestLimitAdvice: a LimitError's own text names no flag (a program
// embedding the replay has none); Advise names the ones given, and
// suggests grouping only to a replay that did not group.
func TestLimitAdvice(t *testing.T) {
	for _, grouped := range []bool{false, true} {
		le := &LimitError{File: "h.hist", Line: 7, Msg: "the replay's memory passed its budget of 1.0 GiB", Grouped: grouped}
		if !errors.Is(le, memlimit.ErrLimit) || !strings.HasPrefix(le.Error(), "h.hist:7: memory limit: the replay's memory") || strings.Contains(le.Error(), "--") {
			t.Errorf("grouped %v: %q", grouped, le.Error())
		}
		cli := le.Advise("--max-memory", "--group-workers")
		if !strings.Contains(cli, "raise --max-memory") || strings.Contains(cli, "--group-workers") == grouped {
			t.Errorf("grouped %v: %q", grouped, cli)
		}
	}
}

// heldReader serves what is written to its pipe and closes drained when
// it is asked for more after want bytes: a serial replay reads on only
// once it has applied every record before (the reader does not read
// ahead of the engine).
type heldReader struct {
	r       io.Reader
	n, want int
	drained chan struct{}
}

func (h *heldReader) Read(p []byte) (int, error) {
	if h.n == h.want && h.drained != nil {
		close(h.drained)
		h.drained = nil
	}
	n, err := h.r.Read(p)
	h.n += n
	return n, err
}

// usedBytes is the memory a Watcher counts: what the runtime has mapped
// and not released.
func usedBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// TestLimitReturnsPartialResult: a replay whose memory passes its budget
// midway returns, with its *LimitError, the result of the records applied
// until then, marked Partial: its steps are the whole replay's first
// ones, its last line the one before the budget was found passed.
func TestLimitReturnsPartialResult(t *testing.T) {
	var hist bytes.Buffer
	if err := synth.WriteTrain(&hist, synth.Train{PP: 2, DP: 2, TP: 1, Layers: 4, Hidden: 32, Seq: 8, Batch: 4, Micro: 2, Steps: 6}); err != nil {
		t.Fatal(err)
	}
	full, err := Reader(bytes.NewReader(hist.Bytes()), "h.hist", Options{})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(hist.String(), "\n")
	half := len(lines) / 2
	first := strings.Join(lines[:half], "")
	steps := 0
	for _, l := range lines[:half] {
		if strings.Contains(l, `"step"`) {
			steps++
		}
	}
	if steps == 0 || steps >= len(full.Steps) {
		t.Fatalf("%d of %d steps in the first half; the test wants some, not all", steps, len(full.Steps))
	}
	// The budget is passed by an allocation made once the first half is
	// applied, 64 MiB over it, and found passed before the rest is sent.
	// Memory freed earlier is returned first: the allocation must grow
	// what the process holds, not reuse it.
	debug.FreeOSMemory()
	w := memlimit.Poll(usedBytes() + 64<<20)
	defer w.Stop()
	pr, pw := io.Pipe()
	drained := make(chan struct{})
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := Reader(&heldReader{r: pr, want: len(first), drained: drained}, "h.hist", Options{Memory: w})
		pr.CloseWithError(err) // a writer still waiting gives up
		done <- outcome{res, err}
	}()
	if _, err := io.WriteString(pw, first); err != nil {
		t.Fatal(err)
	}
	<-drained
	ballast := make([]byte, 128<<20)
	for i := 0; !w.Over(); i++ {
		if i == 1000 {
			t.Fatal("the budget is not found passed 10 s after the allocation")
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(ballast)
	io.WriteString(pw, strings.Join(lines[half:], ""))
	pw.Close()
	o := <-done
	var le *LimitError
	if !errors.As(o.err, &le) || o.res == nil {
		t.Fatalf("%v, result %v; want a *LimitError and a result", o.err, o.res != nil)
	}
	res := o.res
	if !res.Partial || res.LastLine != int64(half) || le.Line != int64(half+1) {
		t.Errorf("partial %v, last line %d, limit at line %d; want partial, %d, %d", res.Partial, res.LastLine, le.Line, half, half+1)
	}
	if len(res.Steps) != steps {
		t.Fatalf("%d steps; want the first half's %d", len(res.Steps), steps)
	}
	for i, st := range res.Steps {
		if st != full.Steps[i] {
			t.Errorf("step %d: %+v; the whole replay's is %+v", i, st, full.Steps[i])
		}
	}
}
