#!/usr/bin/env bash
# Long fuzzing runs, outside CI: every fuzz target in turn, one at a time
# (-parallel 1: the machine is shared), for FUZZTIME each (default 3m),
# seeded with the committed small corpora plus the golden histories
# (FASTSIM_FUZZ_LARGE_SEEDS). -fuzzminimizetime bounds the minimization of
# an interesting input, which on a large seed would otherwise eat the run.
# Prints each target's execution count. Usage: FUZZTIME=10m bench/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export FASTSIM_FUZZ_LARGE_SEEDS=1
fuzztime=${FUZZTIME:-3m}
run() {
  local target=$1 pkg=$2 log
  log=$(mktemp)
  go test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" -fuzzminimizetime 10s -parallel 1 "$pkg" 2>&1 | tee "$log" | tail -3
  echo "$target: $(grep -o 'execs: [0-9]*' "$log" | tail -1)"
  rm -f "$log"
}
run FuzzReader ./internal/history
run FuzzBinary ./internal/history
run FuzzScanner ./internal/jsonl
run FuzzSlice ./internal/values
run FuzzReplay ./internal/replay
run FuzzDifferential ./internal/replay
run FuzzReplayBigWorld ./internal/replay
