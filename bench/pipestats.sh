#!/usr/bin/env bash
# What the two sides of a pipelined replay (--jobs 2) do while they wait
# for each other: the grouped replay of the world-65,536 training history
# (bench/histories.sh; SIZE=1M by default, or 10M), both forms, RUNS times
# each (default 3). The counting is not part of the replay:
# bench/pipestats.patch adds it to a copy of commit REV (default HEAD)
# built in WORK/pipestats, behind the environment variable PROBE. For each
# run it prints the wall and CPU seconds (user + system), the cores the
# rest of the machine kept busy meanwhile (as bench/jobs.sh counts them),
# and from the probe: how many times each side parked, how long it waited
# in all, and how many times it found itself on another CPU than at its
# previous batch (getcpu(2)), out of how many batches.
#
#   bench/pipestats.sh [REV]
#   WORK=/big/dir SIZE=10M RUNS=5 bench/pipestats.sh
# Needs the zstd command and /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:-HEAD}
work=${WORK:-/tmp/fastsim-decode}
size=${SIZE:-1M}
runs=${RUNS:-3}
mkdir -p "$work"
now=$work/fastsim-now
go build -o "$now" ./cmd/fastsim
. bench/histories.sh
sized_history "$size"

src=$work/pipestats/src
rm -rf "$src"
mkdir -p "$src"
git archive "$rev" | tar -x -C "$src"
(cd "$src" && patch -s -p1 <"$OLDPWD/bench/pipestats.patch" && go build -o "$work/pipestats/probe" ./cmd/fastsim)

busy() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
hz=$(getconf CLK_TCK)
echo "Pipelined grouped replays of $name ($(git rev-parse --short "$rev") with bench/pipestats.patch); load average $(cut -d' ' -f1-3 /proc/loadavg)."
for f in "$work/$name.hist.zst" "$work/$name.fhist.zst"; do
	for _ in $(seq "$runs"); do
		b0=$(busy)
		PROBE=1 /usr/bin/time -f "%e %U %S" -o "$work/pipestats/time" "$work/pipestats/probe" \
			replay --report-only --group-workers --jobs 2 "$f" 2>"$work/pipestats/probe.out" >/dev/null
		b1=$(busy)
		read -r e u s <"$work/pipestats/time"
		awk -v f="${f##*/}" -v e="$e" -v u="$u" -v s="$s" -v t=$((b1 - b0)) -v hz="$hz" -v p="$(cat "$work/pipestats/probe.out")" \
			'BEGIN{o = t / hz - u - s; if (o < 0) o = 0; printf "%s: %s s wall, %.2f s CPU, others %.2f cores; %s\n", f, e, u + s, o / (e > 0 ? e : 1), p}'
	done
done
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
