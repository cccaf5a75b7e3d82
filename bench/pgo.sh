#!/usr/bin/env bash
# Writes cmd/fastsim/default.pgo, the CPU profile `go build` uses for
# profile-guided optimization of the fastsim binary (Go's -pgo=auto: a
# default.pgo in the main package's directory; https://go.dev/doc/pgo).
# Outside CI. The profile is of the replay's own benchmarks, built without
# PGO so that the profile does not describe its own effect:
#   bench: BenchmarkEngine* (random histories: world 64 ungrouped, world
#     1,024 whole mesh grouped, both forms, and decoding alone),
#     BenchmarkReplayRandom105 and its traced twin (a golden history, trace
#     written), BenchmarkTrainStepsTraced (synthetic training steps);
#   internal/search: BenchmarkSearchWorld1024 (the layout search, whose
#     replays are of generated transformer workloads);
#   fastsim predict of the 1T-parameter model on 512 GPUs (t8 p64, batch
#     512; the single prediction the README times), twice;
# merged into one profile (go tool pprof -proto). PGO changes what the
# compiler inlines and how it lays code out, never what the code computes:
# bench/RESULTS.md ("Profile-guided optimization") compares the outputs of
# builds with and without it, and their instruction counts.
#
#   bench/pgo.sh                  rewrites cmd/fastsim/default.pgo
#   BENCHTIME=1s bench/pgo.sh     shorter (default 2s a benchmark)
set -euo pipefail
cd "$(dirname "$0")/.."
bt=${BENCHTIME:-2s}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go test -pgo=off -run '^$' -bench '^Benchmark(Engine|ReplayRandom105|TrainStepsTraced)' -benchtime "$bt" -cpuprofile "$work/bench.prof" -o "$work/bench.test" ./bench
go test -pgo=off -run '^$' -bench '^BenchmarkSearchWorld1024$' -benchtime "$bt" -cpuprofile "$work/search.prof" -o "$work/search.test" ./internal/search
go build -pgo=off -o "$work/fastsim" ./cmd/fastsim
for i in 1 2; do
  "$work/fastsim" predict --model megatron-1t --hardware a100-80gb --world 512 --tp 8 --pp 64 --global-batch 512 --quiet --cpuprofile "$work/predict$i.prof" >/dev/null
done
go tool pprof -proto "$work/bench.prof" "$work/search.prof" "$work/predict1.prof" "$work/predict2.prof" >"$work/default.pgo"
mv "$work/default.pgo" cmd/fastsim/default.pgo
echo "wrote cmd/fastsim/default.pgo ($(wc -c <cmd/fastsim/default.pgo) bytes)"
