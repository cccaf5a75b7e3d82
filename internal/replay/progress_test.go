package replay

import (
	"testing"
	"time"
)

// TestProgressAdaptsToSlowRecords: the clock is read every checkEvery
// records, halved while reads come more than 200 ms apart (records that
// take seconds, on a history that splits the workers apart, still show
// progress each second) and doubled while they come under 50 ms apart
// (fast records do not read the clock each).
func TestProgressAdaptsToSlowRecords(t *testing.T) {
	calls := 0
	s := &Sim{opt: Options{Progress: func(int64) { calls++ }}, checkEvery: 1024}
	// Slow: every check comes 2 s after the last.
	for range 20 {
		past := time.Now().Add(-2 * time.Second)
		s.tick, s.checked = past, past
		for range s.checkEvery {
			s.progress()
		}
	}
	if s.checkEvery != 1 || calls != 20 {
		t.Errorf("slow records: checkEvery %d, %d progress calls; want 1 and 20", s.checkEvery, calls)
	}
	// Fast: checks come at once.
	for range 100 {
		s.progress()
	}
	if s.checkEvery < 64 {
		t.Errorf("fast records: checkEvery %d after 100 records, want it grown", s.checkEvery)
	}
}
