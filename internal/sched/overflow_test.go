package sched

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/history"
)

// A task queued behind another ends past the int64 maximum although its
// own record's ts leaves room: 9223372036854760807 + 10000 for the first
// (ends 9223372036854770807), then the second starts there and needs 10000
// more, 2807 past 9223372036854775807. Only the sum in the schedule
// overflows, and it is an error rather than a wrapped time.
func TestTimeOverflowInSchedule(t *testing.T) {
	// Stream-only starts both at 0: no overflow there, by the semantics.
	for _, mode := range []Mode{Everything} {
		_, err := replayText(t, mode, h(1,
			`{"ts":0,"ranks":[{"offset":0,"sizes":[1],"strides":[1]}],"msg":`+mkStream(1, "main")+`}`,
			`{"ts":9223372036854760807,"ranks":[{"offset":0,"sizes":[1],"strides":[1]}],"msg":`+call("f", 1, "", tensor(1, 1, 4))+`}`,
			`{"ts":9223372036854760807,"ranks":[{"offset":0,"sizes":[1],"strides":[1]}],"msg":`+call("g", 1, "", tensor(2, 2, 4))+`}`,
		))
		if !errors.Is(err, ErrOverflow) || !strings.Contains(err.Error(), `task "g" (line 4) on stream "main" starting at 9223372036854770807 ns ends 10000 ns later`) {
			t.Fatalf("%v: got %v, want an overflow of task g", mode, err)
		}
	}
}

// Storages of 2^62 and 2^62 bytes on one stream: the stream's usage would
// be 2^63, one more than the int64 maximum.
func TestMemoryOverflowOnOneStream(t *testing.T) {
	_, err := replayText(t, Everything, h(1,
		on(0, 0, 1, mkStream(1, "main")),
		on(10, 0, 1, call("f", 1, "", `{"tensor":1,"storage":1,"nbytes":4611686018427387904,"dtype":"uint8","shape":[1],"device":"cuda"}`)),
		on(20, 0, 1, call("g", 1, "", `{"tensor":2,"storage":2,"nbytes":4611686018427387904,"dtype":"uint8","shape":[1],"device":"cuda"}`)),
	))
	if !errors.Is(err, ErrOverflow) {
		t.Fatalf("got %v, want an overflow", err)
	}
}

// Storages of 2^62 bytes allocated and released one after the other, many
// times over: the sum of every allocation overflows, but the memory alive
// at once never passes 2^62, so the history is valid and peaks at 2^62.
func TestMemoryNoOverflowWhenReleased(t *testing.T) {
	recs := []string{on(0, 0, 1, mkStream(1, "main"))}
	for i := 1; i <= 6; i++ {
		recs = append(recs,
			on(100*i, 0, 1, call("f", 1, "", strings.Replace(tensor(i, i, 4), `"nbytes":4`, `"nbytes":4611686018427387904`, 1))),
			on(100*i+50, 0, 1, fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d]}`, i)),
		)
	}
	e, err := replayText(t, Everything, h(1, recs...))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Report().PeakBytes; got != 4611686018427387904 {
		t.Fatalf("peak %d, want 2^62 = 4611686018427387904", got)
	}
}

// Options.Interrupt is asked between the sub-commands of a CommandGroup:
// a stop request ends even one huge record early, with ErrStopped.
func TestInterruptInsideCommandGroup(t *testing.T) {
	subs := strings.TrimSuffix(strings.Repeat(`{"type":"DeleteRefs","refs":[1]},`, 1000), ",")
	text := h(1, on(0, 0, 1, `{"type":"CommandGroup","commands":[`+subs+`]}`))
	r, err := history.NewReader(strings.NewReader(text), "g.hist")
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	e, err := New(Options{WorldSize: 1, Interrupt: func() bool { asked++; return asked > 10 }})
	if err != nil {
		t.Fatal(err)
	}
	var rec history.Record
	if err := r.Next(&rec); err != nil {
		t.Fatal(err)
	}
	err = e.Command(rec.Line, rec.Ts, rec.Ranks, &rec.Msg, r.Registry())
	// The group itself is command 1; 10 sub-commands ran before the stop.
	if !errors.Is(err, ErrStopped) || e.Commands() != 11 {
		t.Fatalf("error %v after %d commands, want ErrStopped after 11", err, e.Commands())
	}
}

// allocBytes is kept by subtraction as events settle; it must equal a
// recount of the unsettled allocations after every settlement. Here a
// second stream stays idle at 0 ns, so nothing on it settles while the
// main stream allocates and frees; settling after every command, with
// events kept and not, checks the subtraction at each step, and sizes of
// 2^61 bytes take the sum through saturation (4 of them pass the int64
// maximum) and back to an exact recount once they settle.
func TestAllocBoundEqualsRecount(t *testing.T) {
	for _, keep := range []bool{false, true} {
		recs := []string{on(0, 0, 1, mkStream(1, "main")), on(0, 0, 1, mkStream(2, "idle"))}
		for i := 1; i <= 40; i++ {
			nbytes := 1000 * i
			if i%10 < 5 {
				nbytes = 1 << 61
			}
			recs = append(recs, on(100*i, 0, 1, call("f", 1, "", strings.Replace(tensor(i, i, 4), `"nbytes":4`, fmt.Sprintf(`"nbytes":%d`, nbytes), 1))))
			if i%3 != 0 {
				recs = append(recs, on(100*i+50, 0, 1, fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d]}`, i)))
			}
			if i%7 == 0 {
				recs = append(recs, on(100*i+60, 0, 1, call("g", 2, "", tensor(1000+i, 1000+i, 8))))
			}
		}
		r, err := history.NewReader(strings.NewReader(h(1, recs...)), "test.hist")
		if err != nil {
			t.Fatal(err)
		}
		e, err := New(Options{WorldSize: 1, Mode: Everything, KeepEvents: keep})
		if err != nil {
			t.Fatal(err)
		}
		var rec history.Record
		for n := 0; ; n++ {
			if err := r.Next(&rec); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			err := e.Command(rec.Line, rec.Ts, rec.Ranks, &rec.Msg, r.Registry())
			if errors.Is(err, ErrOverflow) {
				// Four live storages of 2^61 bytes pass the maximum; the
				// history is cut there and checked up to it.
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			e.settle()
			for _, g := range e.gs {
				var want int64
				for s := range g.streams {
					for _, ev := range g.streams[s].mem.appendTo(nil, g.streams[s].base) {
						if ev.delta > 0 {
							want = satAdd(want, ev.delta)
						}
					}
				}
				if g.allocBytes != want {
					t.Fatalf("keep %v, after command %d: allocBytes %d, recount %d", keep, n, g.allocBytes, want)
				}
			}
		}
	}
}
