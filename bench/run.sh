#!/usr/bin/env bash
# Runs fastsim's Go benchmarks (outside CI: they take a while) and prints
# ns/op, allocs/op and commands/s. Usage: bench/run.sh [-count N]
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench . -benchmem "${@:--count=1}" ./bench ./internal/history ./internal/trace ./internal/groups ./internal/costs
