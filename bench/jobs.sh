#!/usr/bin/env bash
# Two cores against one, outside CI: the grouped replay of the
# world-65,536 training history of 10M commands (bench/histories.sh), in
# both forms, with --jobs 1 and --jobs 2, taking turns so that the load of
# a shared machine falls on both alike. Wall seconds, medians of RUNS
# (default 3); the ratio is --jobs 1 over --jobs 2 (above 1: two cores
# help). Beside each figure, the CPU the rest of the machine used while
# those runs went on (/proc/stat's busy time less the replay's own, in
# cores, median): on a shared 2-core machine a --jobs 2 replay can gain
# only while that is near 0.
#
#   bench/jobs.sh                    the 10M history (kept in WORK)
#   SIZE=1M bench/jobs.sh            the 1M one
#   WORK=/big/dir bench/jobs.sh      where histories and the build go
#                                    (default /tmp/fastsim-decode, shared
#                                    with bench/decode.sh)
# Needs the zstd command and /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${WORK:-/tmp/fastsim-decode}
size=${SIZE:-10M}
runs=${RUNS:-3}
mkdir -p "$work"
now=$work/fastsim-now
go build -o "$now" ./cmd/fastsim
. bench/histories.sh
sized_history "$size"

# busy: the machine's busy clock ticks so far (user, nice, system, irq,
# softirq of every CPU).
busy() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
hz=$(getconf CLK_TCK)

# wall FILE JOBS: one grouped replay's wall and CPU seconds, and the cores
# the rest of the machine kept busy meanwhile.
wall() {
	local b0 b1
	b0=$(busy)
	/usr/bin/time -f "%e %U %S" -o "$work/time" "$now" replay --report-only --group-workers --jobs "$2" "$1" >/dev/null
	b1=$(busy)
	read -r e u s <"$work/time"
	awk -v e="$e" -v u="$u" -v s="$s" -v t=$((b1 - b0)) -v hz="$hz" \
		'BEGIN{o = t / hz - u - s; if (o < 0) o = 0; printf "%s %.2f %.2f\n", e, u + s, o / (e > 0 ? e : 1)}'
}
median() { printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/(b>0?b:1e-9)}'; }

echo "Grouped replay of $name, --jobs 1 against --jobs 2: wall seconds (CPU seconds), medians of $runs; load average $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "| form | --jobs 1 | --jobs 2 | jobs 1 / jobs 2 (wall) | others' cores, jobs 1 / jobs 2 |"
echo "|---|---|---|---|---|"
for f in "$work/$name.hist.zst" "$work/$name.fhist.zst"; do
	w1=() c1=() o1=() w2=() c2=() o2=()
	for _ in $(seq "$runs"); do
		read -r w c o < <(wall "$f" 1); w1+=("$w"); c1+=("$c"); o1+=("$o")
		read -r w c o < <(wall "$f" 2); w2+=("$w"); c2+=("$c"); o2+=("$o")
	done
	a=$(median "${w1[@]}") b=$(median "${w2[@]}")
	echo "| ${f##*/} | $a ($(median "${c1[@]}")) | $b ($(median "${c2[@]}")) | $(ratio "$a" "$b")x | $(median "${o1[@]}") / $(median "${o2[@]}") |"
done
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
