#!/usr/bin/env bash
# Runs the scaling benchmarks (bench/scaling_test.go: n and 2n streams,
# steps with a trace kept, training steps with a trace kept) and prints,
# for each, the ratio of 2n over n in time and in memory allocated. Linear
# work gives about 2, quadratic about 4. Usage: bench/scaling.sh [-count N]
set -euo pipefail
cd "$(dirname "$0")/.."
# The benchmark lines go to stderr through cat, which writes to the
# descriptor the script was given: tee /dev/stderr would open the file
# behind it again, truncating a log that stdout and stderr share.
go test -run '^$' -bench 'Streams|StepsTraced|TrainStepsTraced' -benchmem "${@:--count=3}" ./bench |
  awk '{ print | "cat >&2" }
    /^Benchmark/ {
      split($1, p, "/"); name = p[1]; sub(/-[0-9]+$/, "", p[2]); size = p[2]
      ns[name, size] += $3; mem[name, size] += $(NF-3); n[name, size]++
      if (!(name in seen)) { seen[name] = 1; order[++k] = name }
      if (!((name, size) in first)) { first[name, size] = 1; sizes[name] = sizes[name] " " size }
    }
    END {
      close("cat >&2")
      for (i = 1; i <= k; i++) {
        name = order[i]; split(substr(sizes[name], 2), s, " ")
        a = s[1]; b = s[2]
        printf "%-28s %s -> %s: time x%.2f, memory x%.2f\n", name, a, b,
          (ns[name, b] / n[name, b]) / (ns[name, a] / n[name, a]),
          (mem[name, b] / n[name, b]) / (mem[name, a] / n[name, a])
      }
    }'
