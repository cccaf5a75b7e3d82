#!/usr/bin/env bash
# The megatron-1t prediction of the README (512 A100s, tp 8, pp 64,
# global batch BATCH, default 512) by commit BEFORE and by this tree with
# --jobs 2 (the workload written on a goroutine of its own beside the
# replay) and --jobs 1 (inline), taking turns, ROUNDS rounds (default 5).
# Every run prints its wall time, user+system CPU seconds, the load
# average when it ended and how many cores the rest of the machine kept
# busy meanwhile (/proc/stat's busy time less the run's own CPU, as
# bench/jobs.sh counts it: on a shared machine a second core helps only
# while it is otherwise idle). With WAIT=1 each run first waits (up to
# 2 minutes) until the rest of the machine kept under 0.3 cores busy for
# 2 s. Closes with the medians by build, and checks that every build
# printed the same report but for the timing line.
#
# Usage: bench/predict-jobs.sh BEFORE [WORKDIR]   (ROUNDS=5 BATCH=512 WAIT=0)
set -euo pipefail
cd "$(dirname "$0")/.."
before=${1:?usage: bench/predict-jobs.sh BEFORE-COMMIT [WORKDIR]}
work=${2:-$(mktemp -d)}
rounds=${ROUNDS:-5}
batch=${BATCH:-512}
. bench/builds.sh
build_before_after "$before" "$work"
. bench/quiet.sh
run() { # NAME BINARY [FLAGS...]
	local name=$1 bin=$2
	shift 2
	if [ "${WAIT:-0}" = 1 ]; then quiet 6 60; fi
	local b0 b1
	b0=$(busy)
	/usr/bin/time -f "%e %U %S" -o "$work/$name.time" "$bin" predict --model megatron-1t --hardware a100-80gb \
		--world 512 --tp 8 --pp 64 --global-batch "$batch" "$@" >"$work/$name.out"
	b1=$(busy)
	read -r e u s <"$work/$name.time"
	local cpu other
	cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
	other=$(awk -v e="$e" -v c="$cpu" -v t=$((b1 - b0)) -v hz="$hz" 'BEGIN{o = t / hz - c; if (o < 0) o = 0; printf "%.2f", o / (e > 0 ? e : 1)}')
	echo "$e" >>"$work/$name.wall"
	echo "$cpu" >>"$work/$name.cpu"
	echo "$name: $e s wall, $cpu s CPU (user $u, sys $s), load $(cut -d' ' -f1 /proc/loadavg), rest of the machine $other cores"
	grep -v '^simulated' "$work/$name.out" >"$work/$name.report"
}
rm -f "$work"/*.wall "$work"/*.cpu
for _ in $(seq "$rounds"); do
	run before "$work/before"
	run jobs2 "$work/after" --jobs 2
	run jobs1 "$work/after" --jobs 1
done
median() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for name in before jobs2 jobs1; do
	echo "$name: median wall $(median "$work/$name.wall") s, CPU $(median "$work/$name.cpu") s"
done
cmp "$work/before.report" "$work/jobs2.report" && cmp "$work/before.report" "$work/jobs1.report" && echo "batch $batch: same report"
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
