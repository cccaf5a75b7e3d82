#!/usr/bin/env bash
# Transformer workloads at scale, outside CI: synthesizes megatron-1t on
# 3,072 GPUs (tp 8, pp 64, dp 6, Narayanan et al. SC'21 Table 1's layout)
# with 64 microbatches per pipeline, one step, and replays it grouped,
# with --stage-collectives (one group per stage) and, for comparison,
# megatron-145b on 1,536 GPUs with the exact per-group collectives (every
# rank its own group). Prints commands, groups and wall times.
# Usage: bench/transformer.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-$(mktemp -d)}
bin="$work/fastsim"
go build -o "$bin" ./cmd/fastsim
run() {
	local name=$1; shift
	/usr/bin/time -f "$name synth: %e s, %M KiB" "$bin" synth "$@" --steps 1 "$work/$name.hist"
	/usr/bin/time -f "$name replay: %e s, %M KiB" "$bin" replay --group-workers --report-only "$work/$name.hist"
	rm -f "$work/$name.hist"
}
run megatron-1t --model megatron-1t --tp 8 --pp 64 --dp 6 --global-batch 384 --stage-collectives
run megatron-145b --model megatron-145b --tp 8 --pp 8 --dp 24 --global-batch 192
