package memlimit

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "off": 0, "512": 512, "512M": 512 << 20, "8G": 8 << 30, "8GiB": 8 << 30,
		"1.5G": 3 << 29, "2k": 2048, "1T": 1 << 40, " 3 MB ": 3 << 20,
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1G", "1Q", "1e30G", "NaN"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
}

// A budget below what the runtime already holds raises the flag at the
// first poll; no budget never does.
func TestWatcher(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	w := Watch(1 << 10)
	defer w.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for !w.Over() && time.Now().Before(deadline) {
		time.Sleep(pollEvery)
	}
	if !w.Over() {
		t.Fatal("a 1 KiB budget was never reported exceeded")
	}
	none := Watch(0)
	defer none.Stop()
	time.Sleep(3 * pollEvery)
	if none.Over() {
		t.Fatal("no budget, yet reported exceeded")
	}
	var nilW *Watcher
	if nilW.Over() || nilW.Limit() != 0 {
		t.Fatal("a nil Watcher watches nothing")
	}
}

// TestPhysicalIsMemTotal checks the machine's RAM against what
// /proc/meminfo prints as MemTotal, where there is one: the same kernel
// figure, read two ways.
func TestPhysicalIsMemTotal(t *testing.T) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Skip("no /proc/meminfo")
	}
	var kb int64
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		}
	}
	if got := physical(); got != kb*1024 {
		t.Errorf("physical() = %d bytes, /proc/meminfo MemTotal = %d kB = %d bytes", got, kb, kb*1024)
	}
}

// held keeps TestWatcherKeepsPolling's allocation alive until it is seen.
var held [][]byte

// A budget passed only after many polls is still seen: each poll arms the
// next, so the watcher keeps reading after its first few looks found room.
func TestWatcherKeepsPolling(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	used := int64(s[0].Value.Uint64() - s[1].Value.Uint64())
	w := Watch(used + 64<<20)
	defer w.Stop()
	time.Sleep(10 * pollEvery)
	if w.Over() {
		t.Fatal("over budget before allocating")
	}
	for i := 0; i < 8; i++ {
		b := make([]byte, 16<<20)
		for j := 0; j < len(b); j += 4096 { // touch every page
			b[j] = 1
		}
		held = append(held, b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !w.Over() && time.Now().Before(deadline) {
		time.Sleep(pollEvery)
	}
	over := w.Over()
	held = nil
	if !over {
		t.Fatal("128 MiB allocated past a 64 MiB margin after the first polls was never seen")
	}
}
