#!/usr/bin/env bash
# Decode-speed benchmark, outside CI: how fast the JSON-lines and binary
# history forms decode, against the tree as it was at commit b226dc5
# ("before"), on the world-65,536 training histories of bench/scale.sh (pp 8,
# dp 1024, tp 8, 32 layers), 1M and 10M commands.
#
# For each history it measures, medians of 3 runs (wall seconds):
#   - JSON lines (.hist.zst) --decode-only, before and now, run alternately
#     (so both see the same load): the per-record speedup of the JSON
#     decoder;
#   - the binary form (.fhist.zst, written by this tree's convert)
#     --decode-only, against JSON lines now (bench/binary.sh measures the
#     binary form against JSON lines alone, with the decoding inside a
#     grouped replay);
#   - grouped replays (--report-only --group-workers --jobs 1) of both forms;
#   - the binary stream without its zstd frame, --decode-only (framing).
# and prints the ratios. Then it runs the Go benchmark BenchmarkDecodeRecord
# (ns/record and allocations of both forms, from memory), and its JSON part
# for a fixed number of passes in both trees, alternately, in CPU seconds.
#
#   bench/decode.sh               1M and 10M (the 10M history takes minutes
#                                 to synthesize; it is kept in WORK)
#   SIZES=1M bench/decode.sh      the 1M history only
#   RECONVERT=1 bench/decode.sh   rewrite the binary forms kept in WORK
#   WORK=/big/dir bench/decode.sh where histories and builds go
#                                 (default /tmp/fastsim-decode)
# Needs git, the zstd command, /usr/bin/time and the commit b226dc5 in
# this repository.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${WORK:-/tmp/fastsim-decode}
sizes=${SIZES:-1M 10M}
before_commit=${BEFORE:-b226dc5}
mkdir -p "$work"

# Builds: "before" from the commit (exported with git archive, so no
# worktree is created), "now" from this tree.
if [ ! -x "$work/fastsim-before-$before_commit" ]; then
	rm -rf "$work/before-src"
	mkdir -p "$work/before-src"
	git archive "$before_commit" | tar -x -C "$work/before-src"
	(cd "$work/before-src" && go build -o "$work/fastsim-before-$before_commit" ./cmd/fastsim)
fi
before=$work/fastsim-before-$before_commit
now=$work/fastsim-now
go build -o "$now" ./cmd/fastsim

# history NAME COMMANDS: the histories of bench/histories.sh.
. bench/histories.sh

# median3 CMD...: runs CMD three times and prints the median wall seconds
# and the median CPU seconds (user + system), "WALL CPU". On a machine
# shared with other work the CPU time is the steadier of the two.
median3() {
	local w=() c=()
	for _ in 1 2 3; do
		/usr/bin/time -f "%e %U %S" -o "$work/time" "$@" >/dev/null
		read -r e u s <"$work/time"
		w+=("$e")
		c+=("$(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.2f", u+s}')")
	done
	echo "$(printf '%s\n' "${w[@]}" | sort -n | sed -n 2p) $(printf '%s\n' "${c[@]}" | sort -n | sed -n 2p)"
}

# pair3 A -- B: runs the commands A and B alternately, three times each
# (A B A B A B, so that both see the same load), and prints the median wall
# and CPU seconds of each, "WALL_A CPU_A WALL_B CPU_B".
pair3() {
	local a=() b=() wa=() ca=() wb=() cb=()
	while [ "$1" != -- ]; do a+=("$1"); shift; done
	shift
	b=("$@")
	for _ in 1 2 3; do
		read -r w c < <(median1 "${a[@]}")
		wa+=("$w") ca+=("$c")
		read -r w c < <(median1 "${b[@]}")
		wb+=("$w") cb+=("$c")
	done
	med() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
	echo "$(med "${wa[@]}") $(med "${ca[@]}") $(med "${wb[@]}") $(med "${cb[@]}")"
}

# median1 CMD...: one run of CMD, "WALL CPU".
median1() {
	/usr/bin/time -f "%e %U %S" -o "$work/time" "$@" >/dev/null
	read -r e u s <"$work/time"
	echo "$e $(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.2f", u+s}')"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/(b>0?b:1e-9)}'; }

echo "Wall seconds (CPU seconds, user + system, in parentheses), medians of 3; ratios of wall (CPU) times."
echo
echo "| history | JSON decode before | JSON decode now | JSON now/before speedup | binary decode | binary vs JSON decode | JSON grouped replay | binary grouped replay | binary vs JSON replay | binary decode, no zstd (bare stream) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for size in $sizes; do
	sized_history "$size"
	j=$work/$name.hist.zst
	f=$work/$name.fhist.zst
	read -r jbw jbc jnw jnc < <(pair3 "$before" replay --decode-only "$j" -- "$now" replay --decode-only "$j")
	read -r bnw bnc < <(median3 "$now" replay --decode-only "$f")
	read -r jrw jrc < <(median3 "$now" replay --report-only --group-workers --jobs 1 "$j")
	read -r brw brc < <(median3 "$now" replay --report-only --group-workers --jobs 1 "$f")
	# Framing: the same binary stream without zstd (readers accept a bare
	# stream), as a seekable local file would be kept.
	zstd -q -d -f "$f" -o "$work/$name.fhist.bare"
	read -r bxw bxc < <(median3 "$now" replay --decode-only "$work/$name.fhist.bare")
	echo "| $name | $jbw ($jbc) | $jnw ($jnc) | $(ratio "$jbw" "$jnw")x ($(ratio "$jbc" "$jnc")x) | $bnw ($bnc) | $(ratio "$jnw" "$bnw")x ($(ratio "$jnc" "$bnc")x) | $jrw ($jrc) | $brw ($brc) | $(ratio "$jrw" "$brw")x ($(ratio "$jrc" "$brc")x) | $bxw ($bxc) |"
done

# Parsing alone: the 1M history as plain JSON lines (no zstd), before and
# now, so the per-record speedup of the JSON decoder is not diluted by
# decompression.
echo
plain=$work/w65536-1M.hist
[ -f "$plain" ] || zstd -q -d -f "$work/w65536-1M.hist.zst" -o "$plain"
read -r pbw pbc pnw pnc < <(pair3 "$before" replay --decode-only "$plain" -- "$now" replay --decode-only "$plain")
echo "Plain JSON lines (no zstd), w65536-1M, --decode-only: before $pbw s ($pbc s CPU), now $pnw s ($pnc s CPU): $(ratio "$pbw" "$pnw")x wall, $(ratio "$pbc" "$pnc")x CPU."

# From memory, per record: BenchmarkDecodeRecord in both trees (the
# benchmark file is copied into the old one), median of 3 runs.
bench() { # DIR -> median ns/record of the json and binary sub-benchmarks
	(cd "$1" && go test -run '^$' -bench DecodeRecord -benchtime 2s -count 3 ./internal/replay) |
		awk '/ns\/record/ {for (i = 1; i < NF; i++) if ($(i+1) == "ns/record") v[$1] = v[$1] " " $i}
		END {for (k in v) print k, v[k]}' | sort |
		while read -r name a b c; do echo "$name $(printf '%s\n' "$a" "$b" "$c" | sort -n | sed -n 2p)"; done
}
cp internal/replay/decode_bench_test.go "$work/before-src/internal/replay/" 2>/dev/null || {
	mkdir -p "$work/before-src"
	git archive "$before_commit" | tar -x -C "$work/before-src"
	cp internal/replay/decode_bench_test.go "$work/before-src/internal/replay/"
}
echo
echo "Per record, from memory (BenchmarkDecodeRecord, medians of 3, ns/record):"
bench "$work/before-src" | sed 's/^/before /'
bench . | sed 's/^/now    /'

# The same from memory in CPU seconds, which a shared machine disturbs less
# than wall time: each tree's BenchmarkDecodeRecord/json built once and run
# for a fixed 300 passes over the history (about 1.5M records), before and
# now alternately, medians of 3.
(cd "$work/before-src" && go test -c -o "$work/before-replay.test" ./internal/replay)
go test -c -o "$work/now-replay.test" ./internal/replay
read -r _ mbc _ mnc < <(pair3 sh -c "cd '$work/before-src/internal/replay' && '$work/before-replay.test' -test.run '^\$' -test.bench DecodeRecord/json -test.benchtime 300x" -- \
	sh -c "cd internal/replay && '$work/now-replay.test' -test.run '^\$' -test.bench DecodeRecord/json -test.benchtime 300x")
echo
echo "BenchmarkDecodeRecord/json, 300 passes, CPU seconds (medians of 3, alternated): before $mbc s, now $mnc s: $(ratio "$mbc" "$mnc")x."
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
