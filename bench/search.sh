#!/bin/bash
# The layout search over the real space (README: "Searching parallel
# layouts"): how long the bounds take, and a pruned search against an
# unpruned one over the same space (their best layouts must agree).
#
#   bench/search.sh          bounds of GPT-3 175B on 1,024 GPUs; the pruned
#                            and unpruned search of a small GPT on 16 GPUs
#   FULL=1 bench/search.sh   also the whole GPT-3 175B search on 1,024
#                            A100-80GB (batch 1,536): hours on 2 cores, each
#                            layout a replay of about a million commands
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/fastsim" ./cmd/fastsim
fs="$bin/fastsim"

echo "== bounds of every GPT-3 175B layout on 1,024 A100-80GB, batch 1,536"
go test -run '^$' -bench BoundsGPT3 -benchtime 1x ./internal/search | grep Benchmark

small=(search --layers 8 --hidden 1024 --seq 1024 --heads 16 --hardware a100-80gb --controller none
	--world 16 --global-batch 32 --top 5)
echo "== pruned search: GPT of 8 layers, hidden 1,024, 16 heads, seq 1,024 on 16 A100-80GB, batch 32"
time "$fs" "${small[@]}" --csv "$bin/pruned.csv"
echo "== the same space unpruned"
time "$fs" "${small[@]}" --no-prune --csv "$bin/unpruned.csv"
# The best layout of each (rank 1): mesh, microbatches, step, memory, how it
# trains, MFU and model state must be the same.
a=$(sed -n 2p "$bin/pruned.csv" | cut -d, -f1-15)
b=$(sed -n 2p "$bin/unpruned.csv" | cut -d, -f1-15)
echo "best pruned:   $a"
echo "best unpruned: $b"
if [ "$a" != "$b" ]; then
	echo "FAIL: the pruned search's best layout differs from the unpruned one's" >&2
	exit 1
fi

if [ "${FULL:-0}" = 1 ]; then
	echo "== GPT-3 175B on 1,024 A100-80GB, batch 1,536, the whole space, pruned"
	time "$fs" search --model gpt3-175b --hardware a100-80gb --controller none \
		--world 1024 --global-batch 1536 --top 10
fi
