//go:build !linux

package memlimit

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
)

// physical is the machine's RAM in bytes from /proc/meminfo's MemTotal,
// 0 where there is none.
func physical() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil && kb > 0 && kb < math.MaxInt64/1024 {
				return kb * 1024
			}
			return 0
		}
	}
	return 0
}
