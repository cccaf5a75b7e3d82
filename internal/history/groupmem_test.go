package history

import (
	"runtime"
	"strings"
	"testing"
)

// A CommandGroup of 100,000 {"type":"Exit"} (16 bytes each) decodes in
// memory proportional to its line: sub-commands are stored by kind, an
// accepted one in a few bytes, not in a whole Msg (about 1.7 KB, which
// made such a line cost over 300 times its size). What stays alive after
// decoding is bounded by 4 times the line: the lists take 9 bytes per
// sub-command (kind, index, extras index), at most twice that with their
// doubling growth, and the read buffer holding the line itself at most 2x.
// Everything allocated on the way, garbage included, stays under 16x.
func TestCommandGroupMemory(t *testing.T) {
	const n = 100000
	line := `{"ts":0,"ranks":[],"msg":{"type":"CommandGroup","commands":[` + strings.TrimSuffix(strings.Repeat(`{"type":"Exit"},`, n), ",") + `]}}`
	src := []byte(hdr + line + "\n")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	recs, err := readAll(t, src, "g.hist")
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Msg.CommandGroup.Commands.Len() != n {
		t.Fatalf("%d records", len(recs))
	}
	total := after.TotalAlloc - before.TotalAlloc
	runtime.GC()
	runtime.ReadMemStats(&after)
	live := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	runtime.KeepAlive(recs)
	t.Logf("a %d-byte line: %d bytes allocated (%.1fx), %d alive (%.1fx)", len(line), total, float64(total)/float64(len(line)), live, float64(live)/float64(len(line)))
	if live > int64(4*len(line)) || total > uint64(16*len(line)) {
		t.Fatalf("decoding a %d-byte CommandGroup kept %d bytes and allocated %d, more than 4x and 16x the line", len(line), live, total)
	}
}
