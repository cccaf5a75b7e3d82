package memlimit

import (
	"math"
	"syscall"
)

// physical is the machine's RAM in bytes, 0 if unknown: sysinfo(2)'s
// totalram, the value /proc/meminfo prints as MemTotal (both are the
// kernel's totalram_pages), in one system call rather than the 50 us it
// takes the kernel to render /proc/meminfo's sixty lines.
func physical() int64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil || si.Unit == 0 {
		return 0
	}
	ram, unit := uint64(si.Totalram), uint64(si.Unit)
	if ram == 0 || ram > math.MaxInt64/unit {
		return 0
	}
	return int64(ram * unit)
}
