#!/usr/bin/env bash
# CPU time of a prediction and a layout search, before and after a change
# (outside CI: minutes). "Before" is commit BEFORE built from git archive,
# "after" this tree. Prints user CPU seconds (the machine is shared: wall
# time follows its load) and checks that both give the same report and
# the same search table, byte for byte but for the search's own timing.
#
#   1. megatron-1t on 512 A100s (tp 8, pp 64), global batch 64 (1.82 M
#      commands), RUNS times each, before and after taking turns;
#   2. the same with global batch 512 (14.6 M commands), once each
#      (skipped with BIG=0);
#   3. fastsim search --model gpt3-175b --hardware a100-80gb
#      --controller none --world 1024 --global-batch 1536, once each
#      (skipped with SEARCH=0).
#
# Usage: bench/layers.sh BEFORE [WORKDIR]   (RUNS=3 BIG=1 SEARCH=1)
set -euo pipefail
cd "$(dirname "$0")/.."
before=${1:?usage: bench/layers.sh BEFORE-COMMIT [WORKDIR]}
work=${2:-$(mktemp -d)}
runs=${RUNS:-3}
. bench/builds.sh
build_before_after "$before" "$work"

predict() { # NAME BATCH
	/usr/bin/time -f "%U" -o "$work/$1.time" "$work/$1" predict --model megatron-1t --hardware a100-80gb \
		--world 512 --tp 8 --pp 64 --global-batch "$2" >"$work/$1.$2.out"
	echo "$1 batch $2: $(cat "$work/$1.time") s user"
	grep -v '^simulated' "$work/$1.$2.out" >"$work/$1.$2.report"
}
for _ in $(seq "$runs"); do
	predict before 64
	predict after 64
done
cmp "$work/before.64.report" "$work/after.64.report" && echo "batch 64: same report"
if [ "${BIG:-1}" != 0 ]; then
	predict before 512
	predict after 512
	cmp "$work/before.512.report" "$work/after.512.report" && echo "batch 512: same report"
fi
if [ "${SEARCH:-1}" != 0 ]; then
	for b in before after; do
		/usr/bin/time -f "%U" -o "$work/$b.time" "$work/$b" search --model gpt3-175b --hardware a100-80gb \
			--controller none --world 1024 --global-batch 1536 >"$work/$b.search" 2>/dev/null
		echo "$b search: $(cat "$work/$b.time") s user"
		# The first line ends with the search's own wall time.
		sed '1s/, in [0-9.]* s (bounds [0-9.]* s)$//' "$work/$b.search" >"$work/$b.table"
	done
	cmp "$work/before.table" "$work/after.table" && echo "search: same table"
fi
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
