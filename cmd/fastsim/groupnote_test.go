package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManyGroupsNote: a world of 2^16 ranks whose 16 commands each
// address the ranks with one bit of their number set ends in 65,536
// groups of one rank, reached at the last of them, line 18 (after the
// header and the stream): a grouped replay prints one note saying so on
// stderr (internal/replay's TestManyGroupsNote checks that the report is
// the same without it); --quiet leaves it out.
func TestManyGroupsNote(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 65,536 groups (a few seconds)")
	}
	const bits, world = 16, 1 << 16
	var b strings.Builder
	fmt.Fprintf(&b, `{"fastsim":"history","version":1,"world_size":%d}`+"\n", world)
	fmt.Fprintf(&b, `{"ts":0,"ranks":[{"offset":0,"sizes":[%d],"strides":[1]}],"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`+"\n", world)
	for k := range bits {
		fmt.Fprintf(&b, `{"ts":%d,"ranks":[{"offset":%d,"sizes":[%d,%d],"strides":[%d,1]}],"msg":{"type":"CallFunction","function":"f","args":[],"kwargs":{},"result":[{"tensor":%d,"storage":%d,"nbytes":%d,"dtype":"float32","shape":[%d],"device":"cuda"}],"mutates":[],"stream":{"ref":1}}}`+"\n",
			k+1, 1<<k, world>>(k+1), 1<<k, 1<<(k+1), k+1, k+1, 4*(k+1), k+1)
	}
	path := filepath.Join(t.TempDir(), "bits.hist")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, grouped, stderr := runCLI("replay", "--report-only", "--group-workers", path)
	want := "fastsim replay: note: by line 18 the commands' rank sets have cut the 65536 workers into 65536 groups (1.0 ranks a group on average): --group-workers gains little for this history, whose replay time and memory grow with its groups\n"
	if code != exitOK || stderr != want {
		t.Fatalf("grouped: exit %d, stderr %q, want %q", code, stderr, want)
	}
	if !strings.Contains(grouped, "commands replayed    17 on 65536 workers (65536 simulated groups)") {
		t.Errorf("grouped report %q", grouped)
	}
	if code, stdout, stderr := runCLI("replay", "--report-only", "--group-workers", "--quiet", path); code != exitOK || stdout != "" || stderr != "" {
		t.Errorf("--quiet: exit %d, %q %q; want nothing", code, stdout, stderr)
	}
}
