package sched

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// replaySettling replays text without a trace (settled events are
// dropped), settling as the engine does or, with never, only at the end,
// and returns the final report and every step's.
func replaySettling(t *testing.T, text string, controller Controller, never bool) (Report, []Report) {
	t.Helper()
	settleOff = never
	defer func() { settleOff = false }()
	e, err := replayWith(t, Options{Controller: controller}, text)
	if err == nil {
		err = e.Finish()
	}
	if err != nil {
		t.Fatal(err)
	}
	return e.Report(), e.Steps()
}

// randomLateStreams is a valid history of one worker whose streams are
// created along the way, some long after the first settlements: calls
// that make tensors (some on their stream's earlier tensors), deletions,
// steps, and a controller clock that sometimes lags the streams (calls
// run 10,000 ns; commands come 1 to 3,000 ns apart) and sometimes runs
// ahead (jumps of up to 100,000 ns).
func randomLateStreams(seed uint64, commands int) string {
	rng := rand.New(rand.NewPCG(seed, 7))
	var recs []string
	ts, next, streams, step := 0, 1, 0, 0
	live := map[int][]int{} // stream ref -> its live tensor ids
	newStream := func() {
		streams++
		recs = append(recs, on(ts, 0, 1, mkStream(streams, fmt.Sprintf("s%d", streams))))
	}
	newStream()
	for i := 0; i < commands; i++ {
		ts += 1 + rng.IntN(3000)
		if rng.IntN(50) == 0 {
			ts += rng.IntN(100000)
		}
		switch k := rng.IntN(100); {
		case k < 3 && streams < 6:
			newStream()
		case k < 8:
			recs = append(recs, fmt.Sprintf(`{"step":%d}`, step))
			step++
		case k < 30:
			s := 1 + rng.IntN(streams)
			if ids := live[s]; len(ids) > 0 {
				j := rng.IntN(len(ids))
				recs = append(recs, on(ts, 0, 1, fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d]}`, ids[j])))
				live[s] = append(ids[:j], ids[j+1:]...)
			}
		default:
			s := 1 + rng.IntN(streams)
			args := ""
			if ids := live[s]; len(ids) > 0 && rng.IntN(2) == 0 {
				args = fmt.Sprintf(`{"tensor":%d}`, ids[rng.IntN(len(ids))])
			}
			recs = append(recs, on(ts, 0, 1, call("f", s, args, tensor(next, next, 4*(1+rng.IntN(1000))))))
			live[s] = append(live[s], next)
			next++
		}
	}
	recs = append(recs, fmt.Sprintf(`{"step":%d}`, step))
	return h(1, recs...)
}

// TestSettledEqualsUnsettled: settling memory as the replay goes (and
// dropping what is final) gives every step's report and the final one
// exactly as merging everything at the end does, on histories that create
// streams after settlements, under both controllers (with none the clock
// stays 0 and nothing is final; what settles is sent back by a new
// stream).
func TestSettledEqualsUnsettled(t *testing.T) {
	seeds := uint64(20)
	if testing.Short() {
		seeds = 4 // the race detector's run
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		text := randomLateStreams(seed, 6000)
		for _, c := range []Controller{ControllerMonarch, ControllerNone} {
			got, gotSteps := replaySettling(t, text, c, false)
			want, wantSteps := replaySettling(t, text, c, true)
			if got != want || len(gotSteps) != len(wantSteps) {
				t.Fatalf("seed %d, controller %v: settled %+v after %d steps; unsettled %+v after %d", seed, c, got, len(gotSteps), want, len(wantSteps))
			}
			for i := range gotSteps {
				if gotSteps[i] != wantSteps[i] {
					t.Fatalf("seed %d, controller %v, step %d: settled %+v, unsettled %+v", seed, c, i, gotSteps[i], wantSteps[i])
				}
			}
		}
	}
}
