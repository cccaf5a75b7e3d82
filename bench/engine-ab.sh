#!/usr/bin/env bash
# A/B of grouped replays, outside CI: builds fastsim from BEFORE (a commit,
# by git archive, default main) and from the work tree, then for each FILE
# runs `replay --report-only --group-workers FILE` with both builds RUNS
# times (default 15), taking turns, and prints the median and least CPU
# seconds (user + system, getrusage) of each and their ratio, with the load
# average. With CG=1 it first prints each build's instruction count of the
# whole process (valgrind --tool=cachegrind --cache-sim=no, GOGC=off: with
# the collector on, its concurrent work under valgrind makes the counts move
# by tens of per cent between runs), of the replay and of --decode-only
# (the replay less decode-only is the engine's share).
#
#   BEFORE=b3fba95 CG=1 bench/engine-ab.sh w.fhist w200k.fhist
#
# The files must be in a form both builds read. Needs python3 and git
# (and valgrind for CG=1).
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: [BEFORE=commit] [RUNS=n] [CG=1] bench/engine-ab.sh FILE..." >&2; exit 2; }
files=()
for f in "$@"; do files+=("$(realpath "$f")"); done
cd "$(dirname "$0")/.."
before=${BEFORE:-main}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. bench/builds.sh
build_before_after "$before" "$work"
if [ "${CG:-0}" = 1 ]; then
	for f in "${files[@]}"; do
		for b in before after; do
			for mode in --report-only --decode-only; do
				flags=("$mode")
				[ "$mode" = --report-only ] && flags+=(--group-workers)
				n=$(GOGC=off valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$work/$b" replay "${flags[@]}" "$f" 2>&1 >/dev/null | sed -n 's/.*I *refs: *//p')
				echo "$(basename "$f") $b replay ${flags[*]}: $n instructions"
			done
		done
	done
fi
python3 - "${RUNS:-15}" "$work" "${files[@]}" <<'PY'
import os, resource, statistics, subprocess, sys
n, work, files = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
for f in files:
    ts = {"before": [], "after": []}
    load = open("/proc/loadavg").read().split()[0]
    for _ in range(n):
        for b in ("before", "after"):
            a = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([os.path.join(work, b), "replay", "--report-only", "--group-workers", f], check=True, stdout=subprocess.DEVNULL)
            e = resource.getrusage(resource.RUSAGE_CHILDREN)
            ts[b].append(e.ru_utime - a.ru_utime + e.ru_stime - a.ru_stime)
    end = open("/proc/loadavg").read().split()[0]
    mb, ma = statistics.median(ts["before"]), statistics.median(ts["after"])
    print("%s: CPU s before %.4f (%.4f) after %.4f (%.4f), before / after %.2f, %d runs, load %s to %s" % (
        os.path.basename(f), mb, min(ts["before"]), ma, min(ts["after"]), mb / ma, n, load, end))
PY
