// Package memlimit keeps a run within a memory budget: it reads how much
// memory the machine (or the cgroup the process runs in) grants, sets Go's
// soft memory limit, and watches the memory the Go runtime holds, so that a
// run that outgrows its budget ends cleanly, with a message, before the
// operating system kills it or the runtime dies with "out of memory".
package memlimit

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrLimit is the sentinel of every error that reports the memory budget
// exceeded.
var ErrLimit = errors.New("memory limit")

// DefaultShare is the part of the machine's memory a run takes by default:
// the rest is left to the operating system, other processes and the
// runtime's own slack above the heap (Go's GC guide, "Memory limit",
// https://go.dev/doc/gc-guide#Memory_limit, advises headroom of 5-10% for
// the runtime alone; the machine is shared, so a quarter stays free).
const DefaultShare = 0.75

// Machine returns the memory granted to the process: the smaller of the
// physical memory (the kernel's total RAM, as /proc/meminfo's MemTotal
// gives it) and the cgroup v2 limit (/sys/fs/cgroup/memory.max), in bytes,
// or 0 when neither can be read. They are read once per process (the
// replay's help text and its limit both ask).
func Machine() int64 { return machine() }

var machine = sync.OnceValue(readMachine)

func readMachine() int64 {
	total := physical()
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && v > 0 && (total == 0 || v < total) {
			total = v
		}
	}
	return total
}

// Default is DefaultShare of Machine, or 0 (no limit) when it is unknown.
func Default() int64 { return int64(float64(Machine()) * DefaultShare) }

// Parse reads a size: a number of bytes with an optional unit (K, M, G, T,
// as powers of 1024, with or without "iB"/"B"); "0" or "off" means no limit.
// A size is a whole number of bytes from 1 to 2^63-1 (the largest int64,
// which Go's soft limit takes as no limit at all): a fraction of a byte is
// rounded down, and a size that rounds down to none is refused rather than
// read as "off".
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "off" {
		return 0, nil
	}
	mult := int64(1)
	upper := strings.ToUpper(t)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TIB", 1 << 40}, {"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10}, {"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(upper, u.suffix) {
			mult, t = u.mult, strings.TrimSpace(t[:len(t)-len(u.suffix)])
			break
		}
	}
	tooLarge := fmt.Errorf("%q is over the largest size, 2^63-1 bytes (8 EiB)", s)
	// A whole number is read exactly: a float64 cannot hold every int64
	// (2^63-1 rounds up to 2^63).
	if i, err := strconv.ParseInt(t, 10, 64); err == nil && i >= 0 {
		if i > math.MaxInt64/mult {
			return 0, tooLarge
		}
		return i * mult, nil
	} else if errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(t, "-") {
		return 0, tooLarge
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || n < 0 || math.IsNaN(n) {
		return 0, fmt.Errorf("%q is not a size (want bytes with an optional unit: 512M, 8G, 1.5T; 0 or off for none)", s)
	}
	if n*float64(mult) >= math.MaxInt64 { // 2^63: past the largest int64
		return 0, tooLarge
	}
	b := int64(n * float64(mult))
	mantissa, _, _ := strings.Cut(strings.ToLower(t), "e")
	if b == 0 && (n > 0 || strings.ContainsAny(mantissa, "123456789")) { // 1e-400 underflows to 0
		return 0, fmt.Errorf("%q is less than one byte (0 or off for no limit)", s)
	}
	return b, nil
}

// Format writes a size for messages: in bytes below 1 KiB, else in KiB,
// MiB or GiB (one decimal), the largest unit it reaches.
func Format(b int64) string {
	switch {
	case b == 1:
		return "1 byte"
	case b < 1<<10:
		return strconv.FormatInt(b, 10) + " bytes"
	case b < 1<<20:
		return strconv.FormatFloat(float64(b)/(1<<10), 'f', 1, 64) + " KiB"
	case b < 1<<30:
		return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatFloat(float64(b)/(1<<30), 'f', 1, 64) + " GiB"
}

// Watcher polls the memory the Go runtime has mapped and not returned to
// the operating system, and raises a flag once it passes the limit. It
// polls from a timer's callback, not from a goroutine of its own waiting on
// a ticker: a replay shorter than one period starts nothing for it (no
// goroutine, so no thread woken to run one).
type Watcher struct {
	limit   int64
	over    atomic.Bool
	peak    atomic.Int64
	samples []metrics.Sample

	mu      sync.Mutex // orders Stop against a poll rearming the timer
	timer   *time.Timer
	stopped bool
}

// pollEvery is how often a Watcher reads the runtime's memory: often enough
// that at the allocation rates of a replay (hundreds of MB/s) the overshoot
// past the limit is tens of MB, which DefaultShare leaves room for.
const pollEvery = 20 * time.Millisecond

// Watch sets Go's soft memory limit to limit bytes (so the collector works
// harder before the heap grows past it) and starts a Watcher; limit <= 0
// watches nothing. Stop it when the run ends.
func Watch(limit int64) *Watcher {
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	return Poll(limit)
}

// Poll starts a Watcher of limit bytes without setting Go's soft memory
// limit, which is the whole process's: for a program that embeds a run
// and keeps its own garbage collector settings. limit <= 0 watches
// nothing. Stop it when the run ends.
func Poll(limit int64) *Watcher {
	w := &Watcher{limit: limit}
	if limit <= 0 {
		return w
	}
	w.samples = []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	w.mu.Lock()
	w.timer = time.AfterFunc(pollEvery, w.poll)
	w.mu.Unlock()
	return w
}

// poll reads the runtime's memory once and rearms the timer, until the
// limit is passed or the Watcher is stopped. Polls never overlap: the next
// is armed at the end of this one.
func (w *Watcher) poll() {
	metrics.Read(w.samples)
	used := int64(w.samples[0].Value.Uint64() - w.samples[1].Value.Uint64())
	if used > w.peak.Load() {
		w.peak.Store(used)
	}
	if used > w.limit {
		w.over.Store(true)
		return
	}
	w.mu.Lock()
	if !w.stopped {
		w.timer.Reset(pollEvery)
	}
	w.mu.Unlock()
}

// Over reports whether the memory in use has passed the limit (never, for
// a nil Watcher). It is an atomic load, cheap enough to ask once per
// record.
func (w *Watcher) Over() bool { return w != nil && w.over.Load() }

// Limit is the watched limit in bytes (0: none, also for a nil Watcher).
func (w *Watcher) Limit() int64 {
	if w == nil {
		return 0
	}
	return w.limit
}

// Stop ends the watching (the soft limit stays).
func (w *Watcher) Stop() {
	if w == nil || w.limit <= 0 {
		return
	}
	w.mu.Lock()
	w.stopped = true
	w.timer.Stop()
	w.mu.Unlock()
}
