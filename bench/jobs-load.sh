#!/usr/bin/env bash
# --jobs 1 against --jobs 2 by the load of the rest of the machine, outside
# CI. On a shared machine a whole run's wall time mixes quiet and busy
# stretches; this samples each grouped replay of the world-65,536 training
# history (bench/histories.sh) every half second: how far it has read the
# file, the CPU it used, and the CPU the rest of the machine used
# (/proc/stat's busy time less the replay's own). It prints, by how many
# cores the rest kept busy, the mean rate (MB of the compressed file a
# second) and the replay's cores, for each size and --jobs, so that the two
# are compared at the same background load.
#
#   bench/jobs-load.sh                 both forms, 10M and 1M, REPS=2
#   FORMS=hist REPS=3 bench/jobs-load.sh
#   WORK=/big/dir bench/jobs-load.sh   where histories and the build go
#                                      (default /tmp/fastsim-decode)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${WORK:-/tmp/fastsim-decode}
reps=${REPS:-2}
forms=${FORMS:-hist fhist}
mkdir -p "$work"
now=$work/fastsim-now
go build -o "$now" ./cmd/fastsim
. bench/histories.sh
history w65536-1M 1000000
history w65536-10M 10000000
hz=$(getconf CLK_TCK)

# sample FILE JOBS: one replay; a line every half second: time, file
# offset, the replay's CPU ticks, the machine's busy ticks.
sample() {
	"$now" replay --report-only --group-workers --jobs "$2" "$1" >/dev/null &
	local pid=$! fd=""
	while [ -z "$fd" ] && kill -0 "$pid" 2>/dev/null; do
		fd=$(find "/proc/$pid/fd" -lname "$1" -printf '%f\n' 2>/dev/null | head -1)
		[ -n "$fd" ] || sleep 0.02
	done
	while kill -0 "$pid" 2>/dev/null; do
		local pos cpu
		pos=$(awk '/^pos:/{print $2}' "/proc/$pid/fdinfo/$fd" 2>/dev/null) || true
		cpu=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null) || true
		[ -n "$pos" ] && [ -n "$cpu" ] && echo "$(date +%s.%N) $pos $cpu $(awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat)"
		sleep 0.5
	done
	wait "$pid"
}

# rates LABEL: per interval of sample's lines: LABEL, MB/s, the replay's
# cores, the other cores.
rates() {
	awk -v l="$1" -v hz="$hz" 'NR > 1 { dt = $1 - t; c = ($3 - c0) / hz / dt
		printf "%s %.3f %.3f %.3f\n", l, ($2 - p) / dt / 1e6, c, ($4 - b) / hz / dt - c }
		{ t = $1; p = $2; c0 = $3; b = $4 }'
}

samples=$work/jobs-load.samples
: >"$samples"
echo "Load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)."
for _ in $(seq "$reps"); do
	for f in $forms; do
		for size in 10M 1M; do
			for j in 1 2; do
				sample "$work/w65536-$size.$f.zst" "$j" | rates "$f $size $j" >>"$samples"
			done
		done
	done
done
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "| form | size | rest of the machine, cores | --jobs | half-seconds | MB/s | the replay's cores |"
echo "|---|---|---|---|---|---|---|"
awk '{ o = $6; b = o < 0.25 ? "under 0.25" : o < 0.75 ? "0.25 to 0.75" : o < 1.25 ? "0.75 to 1.25" : "1.25 or more"
	k = $1 " | " $2 " | " b " | " $3; n[k]++; r[k] += $4; c[k] += $5 }
	END { for (k in n) printf "| %s | %d | %.2f | %.2f |\n", k, n[k], r[k] / n[k], c[k] / n[k] }' "$samples" | sort
