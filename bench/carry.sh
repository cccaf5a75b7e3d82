#!/usr/bin/env bash
# The megatron-1t prediction of the README (512 A100s, tp 8, pp 64) at
# global batch 512 and 64, before and after a change (outside CI:
# minutes). "Before" is commit BEFORE built from git archive, "after"
# this tree. ROUNDS rounds, each running before and after in turn on
# batch 512 then on batch 64 (BATCHES); every run prints its wall time,
# user+system CPU seconds, its peak RSS and the load average when it
# ended (the machine is shared: wall time follows its load), and the
# medians close. Checks that both print the same report, line for line,
# but for the line with the timing.
#
# Usage: bench/carry.sh BEFORE [WORKDIR]   (ROUNDS=3, BATCHES="512 64")
set -euo pipefail
cd "$(dirname "$0")/.."
before=${1:?usage: bench/carry.sh BEFORE-COMMIT [WORKDIR]}
work=${2:-$(mktemp -d)}
rounds=${ROUNDS:-3}
batches=${BATCHES:-512 64}
. bench/builds.sh
build_before_after "$before" "$work"

predict() { # NAME BATCH
	/usr/bin/time -f "%e %U %S %M" -o "$work/$1.time" "$work/$1" predict --model megatron-1t --hardware a100-80gb \
		--world 512 --tp 8 --pp 64 --global-batch "$2" >"$work/$1.$2.out"
	read -r e u s kb <"$work/$1.time"
	cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
	echo "$cpu" >>"$work/$1.$2.cpu"
	echo "$e" >>"$work/$1.$2.wall"
	echo "$1 batch $2: $e s wall, $cpu s CPU (user $u, sys $s), peak RSS $((kb / 1024)) MiB, load $(cut -d' ' -f1 /proc/loadavg)"
	grep -v '^simulated' "$work/$1.$2.out" >"$work/$1.$2.report"
}
rm -f "$work"/*.cpu "$work"/*.wall
median() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for _ in $(seq "$rounds"); do
	for b in $batches; do
		predict before "$b"
		predict after "$b"
	done
done
for b in $batches; do
	cmp "$work/before.$b.report" "$work/after.$b.report" && echo "batch $b: same report"
	mb=$(median "$work/before.$b.cpu")
	ma=$(median "$work/after.$b.cpu")
	echo "batch $b: median CPU before $mb s, after $ma s, before/after $(awk -v a="$mb" -v b="$ma" 'BEGIN { printf "%.2f", a / b }')x"
	mb=$(median "$work/before.$b.wall")
	ma=$(median "$work/after.$b.wall")
	echo "batch $b: median wall before $mb s, after $ma s, before/after $(awk -v a="$mb" -v b="$ma" 'BEGIN { printf "%.2f", a / b }')x"
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
