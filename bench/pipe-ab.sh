#!/usr/bin/env bash
# A/B of replays that read standard input from a pipe, outside CI: builds
# fastsim from BEFORE (a commit, default 774fee0, whose replay reads a pipe
# directly) and from the work tree (which reads a pipe on a goroutine of its
# own, so that Ctrl-C ends a replay waiting for input), writes a toy
# training history of about 835k commands (183 MB of JSON lines), then runs
# `cat FILE | fastsim replay --report-only --group-workers [--jobs J] -` with
# both builds RUNS times (default 7) for J = 1 and 2, taking turns, and
# prints the median and least CPU seconds (user + system, wait4) of fastsim
# alone (not cat) and their ratio, with the load average at start and end.
#
#   bench/pipe-ab.sh
#   BEFORE=main RUNS=11 bench/pipe-ab.sh
#
# Needs python3 and git.
set -euo pipefail
cd "$(dirname "$0")/.."
before=${BEFORE:-774fee0}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. bench/builds.sh
build_before_after "$before" "$work"
"$work/after" synth --pp 4 --dp 64 --tp 8 --layers 32 --batch 1024 --micro 8 --steps 100 "$work/big.hist"
python3 - "${RUNS:-7}" "$work" <<'PY'
import os, statistics, subprocess, sys
n, work = int(sys.argv[1]), sys.argv[2]
hist = os.path.join(work, "big.hist")
for jobs in ("1", "2"):
    ts = {"before": [], "after": []}
    load = open("/proc/loadavg").read().split()[0]
    for _ in range(n):
        for b in ("before", "after"):
            cat = subprocess.Popen(["cat", hist], stdout=subprocess.PIPE)
            p = subprocess.Popen([os.path.join(work, b), "replay", "--report-only", "--group-workers", "--jobs", jobs, "-"],
                                 stdin=cat.stdout, stdout=subprocess.DEVNULL)
            cat.stdout.close()
            _, status, ru = os.wait4(p.pid, 0)
            cat.wait()
            if status != 0:
                sys.exit("%s replay failed: status %d" % (b, status))
            ts[b].append(ru.ru_utime + ru.ru_stime)
    end = open("/proc/loadavg").read().split()[0]
    mb, ma = statistics.median(ts["before"]), statistics.median(ts["after"])
    print("--jobs %s, from a pipe: CPU s before %.3f (%.3f) after %.3f (%.3f), before / after %.3f, %d runs, load %s to %s" % (
        jobs, mb, min(ts["before"]), ma, min(ts["after"]), mb / ma, n, load, end))
PY
