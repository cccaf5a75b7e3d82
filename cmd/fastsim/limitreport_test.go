package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fastsim/fastsim/internal/synth"
)

// usedBytes is the memory --max-memory counts: what the runtime has
// mapped and not released.
func usedBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// TestMaxMemoryPartialReport: a replay that outgrows --max-memory midway
// ends with exit status 3 and its one error line, after the report of
// what it replayed, marked PARTIAL, as an interrupted replay does; the
// --summary-json is written and says "partial": true, and the trace only
// with --partial-trace. The history comes through a named pipe: half of
// it, then an allocation of 128 MiB, 64 MiB past the budget, then the
// rest.
func TestMaxMemoryPartialReport(t *testing.T) {
	var hist bytes.Buffer
	if err := synth.WriteTrain(&hist, synth.Train{PP: 2, DP: 2, TP: 1, Layers: 4, Hidden: 32, Seq: 8, Batch: 4, Micro: 2, Steps: 6}); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(hist.String(), "\n")
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev) // --max-memory sets this process's soft limit
	for _, partialTrace := range []bool{false, true} {
		dir := t.TempDir()
		fifo := filepath.Join(dir, "in.hist")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skip("no named pipes here:", err)
		}
		summary, tr := filepath.Join(dir, "s.json"), filepath.Join(dir, "t.json")
		debug.FreeOSMemory() // the allocation must grow what the process holds
		args := []string{"replay", "--max-memory", strconv.FormatInt(usedBytes()+64<<20, 10), "--summary-json", summary, "--trace", tr}
		if partialTrace {
			args = append(args, "--partial-trace")
		}
		type outcome struct {
			code           int
			stdout, stderr string
		}
		done := make(chan outcome, 1)
		go func() {
			code, stdout, stderr := runCLI(append(args, fifo)...)
			done <- outcome{code, stdout, stderr}
		}()
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		w.WriteString(strings.Join(lines[:len(lines)/2], ""))
		time.Sleep(300 * time.Millisecond) // the replay applies the first half
		ballast := make([]byte, 128<<20)
		time.Sleep(300 * time.Millisecond) // the budget is found passed (polled every 20 ms)
		runtime.KeepAlive(ballast)
		w.WriteString(strings.Join(lines[len(lines)/2:], ""))
		w.Close()
		var o outcome
		select {
		case o = <-done:
		case <-time.After(60 * time.Second):
			t.Fatal("the replay has not ended 60 s after its input")
		}
		if o.code != exitLimit || strings.Count(o.stderr, "\n") != 1 || !strings.HasPrefix(o.stderr, fifo+":") || !strings.Contains(o.stderr, "memory limit: the replay's memory passed its budget") {
			t.Fatalf("exit %d, stderr %q; want %d and one line on the budget", o.code, o.stderr, exitLimit)
		}
		if !strings.HasPrefix(o.stdout, "PARTIAL: the replay outgrew --max-memory after line ") || !strings.Contains(o.stdout, "\nsimulated time ") {
			t.Errorf("stdout %q; want the partial report", o.stdout)
		}
		data, err := os.ReadFile(summary)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Commands int64 `json:"commands"`
			Partial  bool  `json:"partial"`
		}
		if err := json.Unmarshal(data, &s); err != nil || !s.Partial || s.Commands == 0 {
			t.Errorf("summary %s (%v); want partial, with the commands replayed", data, err)
		}
		if _, err := os.Stat(tr); (err == nil) != partialTrace {
			t.Errorf("--partial-trace %v: the trace was written: %v", partialTrace, err == nil)
		}
		if partialTrace != strings.Contains(o.stdout, "\ntrace ") {
			t.Errorf("--partial-trace %v: report %q", partialTrace, o.stdout)
		}
	}
}
