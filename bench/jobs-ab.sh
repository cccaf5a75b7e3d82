#!/usr/bin/env bash
# Builds against each other at --jobs 1 and 2, on a shared machine: the
# grouped replay of FILE by each BUILD:JOBS in turn, ROUNDS rounds; before
# each run it waits (up to 5 minutes) until the rest of the machine has
# kept under 0.15 cores busy for 2 s, and a run during which the rest of
# the machine used more than 0.25 cores (/proc/stat's busy time less the
# run's own CPU, as bench/jobs.sh counts it) is dropped (said on stderr).
# Prints, by BUILD:JOBS, the median wall and CPU seconds (user + system)
# of the runs kept, and every run.
#
#   bench/jobs-ab.sh ROUNDS FILE BUILD:JOBS...
#   e.g. bench/jobs-ab.sh 5 /tmp/w65536-1M.fhist.zst /tmp/before:1 /tmp/after:1 /tmp/before:2 /tmp/after:2
# BUILD is a fastsim binary (go build -o ... ./cmd/fastsim at each commit).
set -euo pipefail
rounds=$1 f=$2
shift 2
. "$(dirname "$0")/quiet.sh"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
declare -A W C
for _ in $(seq "$rounds"); do
	for cfg in "$@"; do
		quiet 3 150
		b0=$(busy)
		/usr/bin/time -f "%e %U %S" -o "$tmp" "${cfg%:*}" replay --report-only --group-workers --jobs "${cfg##*:}" "$f" >/dev/null
		b1=$(busy)
		read -r e u s <"$tmp"
		o=$(awk -v e="$e" -v u="$u" -v s="$s" -v t=$((b1 - b0)) -v hz="$hz" 'BEGIN{o = t / hz - u - s; if (o < 0) o = 0; printf "%.2f", o / (e > 0 ? e : 1)}')
		if awk -v o="$o" 'BEGIN{exit !(o > 0.25)}'; then
			echo "dropped: $cfg $e s (the rest of the machine: $o cores)" >&2
			continue
		fi
		W[$cfg]+="$e " C[$cfg]+="$(awk -v u="$u" -v s="$s" 'BEGIN{print u + s}') "
	done
done
median() { [ $# -eq 0 ] && { echo -; return; }; printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"; }
for cfg in "$@"; do
	# shellcheck disable=SC2086 # the lists are words
	echo "$cfg: wall $(median ${W[$cfg]:-}) s, CPU $(median ${C[$cfg]:-}) s; runs: ${W[$cfg]:-}/ ${C[$cfg]:-}"
done
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
