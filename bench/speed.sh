#!/usr/bin/env bash
# The replay's own speed, every row of bench/RESULTS.md that has a target,
# in one run (about 30 minutes on 2 cores with the 1M and 10M histories
# kept in WORK, a few more to synthesize them; outside CI). Each script prints its table
# with its ratios, and those that keep a section of bench/RESULTS.md
# rewrite it:
#   bench/engine.sh      ungrouped world 64 and grouped world 1,024 against
#                        the reference's CPU time ("Engine speed")
#   bench/decode.sh      JSON lines per record against b226dc5 ("Decode speed")
#   bench/binary.sh      the binary form against JSON lines, decode-only and
#                        in a grouped replay, 10M commands
#   bench/jobs.sh        --jobs 2 against --jobs 1, grouped, 10M commands
#   bench/search.sh rate search layouts per CPU second against b226dc5
#                        ("Search speed")
# Everything goes to standard output and to $WORK/speed.log.
#
#   bench/speed.sh                 all of them
#   WORK=/big/dir bench/speed.sh   where histories and builds are kept
#                                  (default /tmp/fastsim-decode)
set -euo pipefail
cd "$(dirname "$0")/.."
export WORK=${WORK:-/tmp/fastsim-decode}
mkdir -p "$WORK"
{
	echo "== $(date -u) on $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)"
	for s in engine.sh decode.sh binary.sh jobs.sh "search.sh rate"; do
		echo
		echo "== bench/$s"
		# shellcheck disable=SC2086
		bash bench/$s
	done
} 2>&1 | tee "$WORK/speed.log"
