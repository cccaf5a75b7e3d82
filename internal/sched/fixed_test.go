package sched

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// xfixed is a random history of about n commands over world ranks cut
// into nb blocks whose streams are all created before its first task, on
// parts of the world as xgenerate makes them later.
func xfixed(seed uint64, world, nb int, n int) string {
	bs := layout(world, nb, seed%2 == 1)
	g := xstart(seed, 11, bs, true)
	g.faults, g.fixed = false, true
	for range 6 {
		g.addStream(len(g.streams) < 5)
	}
	g.run(n)
	return g.render(world, bs)
}

// TestFixedStreamsExact: with the promise that every stream exists before
// the first task (Options.FixedStreams), settled memory events are final
// and let go of even where the controller clock lags (with no controller
// cost it stays 0). Every report, rank by rank, must be what a replay
// that settles nothing says, under both controllers, grouped or not,
// traced or not.
func TestFixedStreamsExact(t *testing.T) {
	seeds := 8
	if testing.Short() {
		seeds = 3
	}
	runs := []xrun{
		{name: "fixed settled", settle: true, batch: true, jobs: 1, fixed: true},
		{name: "fixed settled traced", settle: true, keep: true, batch: true, jobs: 1, fixed: true},
		{name: "fixed grouped settled", grouped: true, settle: true, batch: true, jobs: 2, fixed: true},
		{name: "fixed grouped settled one by one", grouped: true, settle: true, jobs: 1, fixed: true},
	}
	errs := 0
	for seed := range seeds {
		world := []int{4, 6, 8, 12}[seed%4]
		text := xfixed(uint64(seed), world, 2+seed%3, 4500)
		for _, ctrl := range []Controller{ControllerNone, ControllerMonarch} {
			if xagree(t, text, world, Everything, ctrl, runs, fmt.Sprintf("seed %d", seed)) != "" {
				errs++
			}
		}
	}
	if errs > seeds/2 {
		t.Errorf("%d of %d random replays failed: the generator should make valid histories", errs, 2*seeds)
	}
}

// keptEvents is how many memory events text's replay with no controller
// cost holds at its end, with or without the FixedStreams promise.
func keptEvents(t *testing.T, text string, fixed bool) (kept int, rep Report) {
	t.Helper()
	e, err := replayWith(t, Options{Mode: Everything, Controller: ControllerNone, Jobs: 1, FixedStreams: fixed}, text)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	defer e.Close()
	for _, g := range e.gs {
		for s := range g.streams {
			kept += g.streams[s].mem.Len()
		}
	}
	return kept, e.Report()
}

// TestFixedStreamsLetsGo: a long run on two streams that both stay busy,
// with no controller cost, keeps every memory event to its end without
// the promise, and only those of its last settlement's window with it.
func TestFixedStreamsLetsGo(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"fastsim":"history","version":1,"world_size":2}` + "\n")
	all := `[{"offset":0,"sizes":[2],"strides":[1]}]`
	fmt.Fprintf(&b, `{"ts":1,"ranks":%s,"msg":{"type":"CreateStream","result":{"ref":1,"name":"a"},"default":true}}`+"\n", all)
	fmt.Fprintf(&b, `{"ts":2,"ranks":%s,"msg":{"type":"CreateStream","result":{"ref":2,"name":"b"},"default":false}}`+"\n", all)
	const n = 20000
	for i := range n {
		// A tensor made and deleted on each stream in turn: two events
		// a command, 2n in all.
		s, id := 1+i%2, 10+i
		fmt.Fprintf(&b, `{"ts":%d,"ranks":%s,"msg":{"type":"CallFunction","function":"f","args":[],"result":[{"tensor":%d,"storage":%d,"nbytes":64,"dtype":"float32","shape":[16],"device":"cuda"}],"stream":{"ref":%d}}}`+"\n", 3+2*i, all, id, id, s)
		fmt.Fprintf(&b, `{"ts":%d,"ranks":%s,"msg":{"type":"DeleteRefs","refs":[%d]}}`+"\n", 4+2*i, all, id)
	}
	text := b.String()
	without, want := keptEvents(t, text, false)
	with, got := keptEvents(t, text, true)
	if want != got {
		t.Fatalf("report %+v with the promise, %+v without", got, want)
	}
	if without < 2*n {
		t.Fatalf("without the promise %d events kept, want all %d (nothing is final with no controller cost)", without, 2*n)
	}
	if with > 2*settleEvery {
		t.Fatalf("with the promise %d events kept of %d, want at most those since the last settlement (%d)", with, 2*n, 2*settleEvery)
	}
}

// TestFixedStreamsLateStream: under the promise a stream created after
// the first task is refused, whether or not events were let go of yet
// (the promise does not depend on when settlements come), and a stream
// created twice is still named as such.
func TestFixedStreamsLateStream(t *testing.T) {
	all := `[{"offset":0,"sizes":[2],"strides":[1]}]`
	head := `{"fastsim":"history","version":1,"world_size":2}` + "\n" +
		`{"ts":1,"ranks":` + all + `,"msg":{"type":"CreateStream","result":{"ref":1,"name":"a"},"default":true}}` + "\n"
	task := `{"ts":2,"ranks":` + all + `,"msg":{"type":"CallFunction","function":"f","args":[],"result":[{"tensor":5,"storage":5,"nbytes":64,"dtype":"float32","shape":[16],"device":"cuda"}],"stream":{"ref":1}}}` + "\n"
	stream := func(ts int, ref int, name string) string {
		return fmt.Sprintf(`{"ts":%d,"ranks":%s,"msg":{"type":"CreateStream","result":{"ref":%d,"name":%q},"default":false}}`+"\n", ts, all, ref, name)
	}
	for _, c := range []struct {
		what, text string
		want       error // with the promise; none without it but for ErrStreamExists
	}{
		{"streams first", head + stream(2, 2, "b") + task, nil},
		{"a stream after a task, before any settlement", head + task + stream(3, 2, "late"), ErrStreamsFixed},
		{"a stream after a step", head + task + `{"step":0}` + "\n" + stream(3, 2, "late"), ErrStreamsFixed},
		{"a stream created twice", head + task + stream(3, 1, "a"), ErrStreamExists},
	} {
		_, err := replayWith(t, Options{Mode: Everything, Controller: ControllerNone, Jobs: 1}, c.text)
		if c.want == ErrStreamExists {
			if !errors.Is(err, ErrStreamExists) {
				t.Errorf("%s, without the promise: error %v, want ErrStreamExists", c.what, err)
			}
		} else if err != nil {
			t.Errorf("%s, without the promise: %v", c.what, err)
		}
		_, err = replayWith(t, Options{Mode: Everything, Controller: ControllerNone, Jobs: 1, FixedStreams: true}, c.text)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s, with the promise: error %v, want %v", c.what, err, c.want)
		}
	}
	// A random history with a stream made at its end, after settlements.
	text := xfixed(3, 4, 2, 9000)
	i := strings.LastIndex(text, "\n{")
	late := `{"ts":999999999999,"ranks":[{"offset":0,"sizes":[4],"strides":[1]}],"msg":{"type":"CreateStream","result":{"ref":9,"name":"late"},"default":false}}`
	text = text[:i+1] + late + "\n"
	if _, err := replayWith(t, Options{Mode: Everything, Controller: ControllerNone, Jobs: 1}, text); err != nil {
		t.Fatalf("without the promise: %v", err)
	}
	_, err := replayWith(t, Options{Mode: Everything, Controller: ControllerNone, Jobs: 1, FixedStreams: true}, text)
	if !errors.Is(err, ErrStreamsFixed) {
		t.Fatalf("with the promise: error %v, want ErrStreamsFixed", err)
	}
}
