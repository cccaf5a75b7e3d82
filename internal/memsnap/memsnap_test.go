package memsnap

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
)

// TestStats replays, on one rank, two functions that each create a storage
// (1,000 and 500 bytes) and then deletes the first. By docs/SEMANTICS.md the
// first runs [2,000, 12,000] and allocates at 2,000; the second starts at
// 12,000 and allocates then; the delete at ts 30,000 releases 1,000 bytes at
// 30,000. So: 2 allocations, 1 release, peak 1,500 bytes, 500 alive at the
// end, all on CUDA device 0 of a one-GPU host.
func TestStats(t *testing.T) {
	r := `"ranks":[{"offset":0,"sizes":[1],"strides":[1]}]`
	hist := strings.Join([]string{
		`{"fastsim":"history","version":1,"world_size":1}`,
		`{"ts":1000,` + r + `,"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`,
		`{"ts":2000,` + r + `,"msg":{"type":"CallFunction","function":"a","args":[],"result":[{"tensor":1,"storage":1,"nbytes":1000,"dtype":"u8","shape":[1000],"device":"cuda"}],"stream":{"ref":1}}}`,
		`{"ts":3000,` + r + `,"msg":{"type":"CallFunction","function":"b","args":[],"result":[{"tensor":2,"storage":2,"nbytes":500,"dtype":"u8","shape":[500],"device":"cuda"}],"stream":{"ref":1}}}`,
		`{"ts":30000,` + r + `,"msg":{"type":"DeleteRefs","refs":[1]}}`,
	}, "\n") + "\n"
	var buf bytes.Buffer
	var st Stats
	_, err := replay.Reader(strings.NewReader(hist), "h", replay.Options{
		KeepTrace: true,
		Inspect: func(eng *sched.Engine, res *replay.Result) error {
			var err error
			st, err = Write(&buf, eng, 0, res.Header.GPUsPerHost)
			return err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{Device: 0, Allocs: 2, Frees: 1, LiveBytes: 500, PeakBytes: 1500, StreamNames: []string{"main"}}
	if st.Device != want.Device || st.Allocs != want.Allocs || st.Frees != want.Frees || st.LiveBytes != want.LiveBytes || st.PeakBytes != want.PeakBytes || len(st.StreamNames) != 1 || st.StreamNames[0] != "main" {
		t.Errorf("stats %+v, want %+v", st, want)
	}
	// A pickle: protocol 2, ends with STOP.
	if b := buf.Bytes(); len(b) < 3 || b[0] != 0x80 || b[1] != 2 || b[len(b)-1] != '.' {
		t.Errorf("not a protocol 2 pickle: % x ...", b[:min(8, len(b))])
	}
}
