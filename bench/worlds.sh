#!/usr/bin/env bash
# fastsim predict of megatron-1.7b at tp 8, pp 1 (one microbatch of one
# sequence per data-parallel replica) on WORLDS GPUs (default 65,536,
# 1,048,576 and 16,777,216, the largest --world takes): every
# tensor-parallel collective is one Reduce per replica, 2,097,152 of them
# at the largest world. Prints each run's wall time, user+system CPU
# seconds and peak RSS. With BEFORE=COMMIT, a build of that commit runs
# each world first (LIMIT, default 20G, caps its memory through ulimit -v
# and TIMEOUT, default 600 s, its time: an older build that outgrows
# either is reported as such), and the two reports must be the same but
# for the timing line.
#
# Usage: bench/worlds.sh [WORKDIR]   (WORLDS="65536 1048576 16777216" BEFORE= LIMIT=20G TIMEOUT=600)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-$(mktemp -d)}
mkdir -p "$work"
worlds=${WORLDS:-65536 1048576 16777216}
before=${BEFORE:-}
limit=${LIMIT:-20G}
if [ -n "$before" ]; then
	. bench/builds.sh
	build_before_after "$before" "$work"
else
	go build -o "$work/after" ./cmd/fastsim
	echo "after: $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with uncommitted changes)')"
fi
kib() { # SIZE (20G, 512M) in KiB
	numfmt --from=iec "$1" | awk '{ printf "%d", $1 / 1024 }'
}
run() { # NAME WORLD
	local name=$1 world=$2 rc=0
	rm -f "$work/$name-$world.report" # a failed run leaves none to compare
	(
		ulimit -v "$(kib "$limit")"
		exec timeout "${TIMEOUT:-600}" /usr/bin/time -f "%e %U %S %M" -o "$work/$name-$world.time" "$work/$name" predict --model megatron-1.7b \
			--hardware a100-80gb --world "$world" --tp 8 --pp 1 --global-batch $((world / 8)) --micro-batch 1 >"$work/$name-$world.out" 2>"$work/$name-$world.err"
	) || rc=$?
	if [ "$rc" = 124 ]; then
		echo "$name, world $world: did not finish in ${TIMEOUT:-600} s"
		return 0
	elif [ "$rc" != 0 ]; then
		# The first line: fastsim's error, or the Go runtime's (out of
		# memory under the cap) before its goroutine dump.
		echo "$name, world $world: exit status $rc: $(head -n 1 "$work/$name-$world.err" | cut -c1-200)"
		return 0
	fi
	read -r e u s m <"$work/$name-$world.time"
	echo "$name, world $world: $e s wall, $(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }') s CPU, peak RSS $((m / 1024)) MiB; $(grep '^simulated' "$work/$name-$world.out")"
	grep -v '^simulated' "$work/$name-$world.out" >"$work/$name-$world.report"
}
for w in $worlds; do
	if [ -n "$before" ]; then
		run before "$w"
	fi
	run after "$w"
	if [ -f "$work/before-$w.report" ]; then
		cmp "$work/before-$w.report" "$work/after-$w.report" && echo "world $w: same report"
	fi
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
