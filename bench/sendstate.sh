#!/usr/bin/env bash
# The state of the streams at each pipeline transfer of the megatron-1t
# prediction of the README (512 A100s, tp 8, pp 64), at global batch 64
# and 512: how often the streams a stage's send and receive involve stand
# at offsets from one another already seen on the same pair of stages,
# which is what applying those command sequences as recorded units would
# need (bench/RESULTS.md, "Pipeline transfers as units: the state they
# start from"). The counting is not part of the engine: bench/sendstate.patch
# adds it to a copy of commit REV (default HEAD) built in WORKDIR, behind
# the environment variable PROBE; the counts go to stderr.
#
# Usage: bench/sendstate.sh [REV [WORKDIR]]
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:-HEAD}
work=${2:-$(mktemp -d)}
mkdir -p "$work/src"
git archive "$rev" | tar -x -C "$work/src"
(cd "$work/src" && patch -s -p1 <"$OLDPWD/bench/sendstate.patch" && go build -o "$work/probe" ./cmd/fastsim)
for b in 64 512; do
	echo "global batch $b ($(git rev-parse --short "$rev")):"
	PROBE=1 "$work/probe" predict --model megatron-1t --hardware a100-80gb \
		--world 512 --tp 8 --pp 64 --global-batch "$b" 2>&1 >/dev/null | sed 's/^/  /'
done
