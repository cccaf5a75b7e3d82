#!/usr/bin/env bash
# Binary form against JSON lines, outside CI: how much less CPU the binary
# history form (.fhist.zst in zstd, .fhist.s2 in S2 framing and .fhist
# uncompressed, written by this tree's convert) takes to decode than JSON
# lines (.hist.zst), on the
# world-65,536 training job of bench/scale.sh (pp 8, dp 1024, tp 8, 32
# layers), 10M commands by default.
#
# One run prints, in CPU seconds (user + system, from /usr/bin/time),
# medians of RUNS runs (default 3) with the forms taking turns so that the
# load of a shared machine falls on both alike:
#   - --decode-only of each form, and the ratio;
#   - a grouped replay (--report-only --group-workers) of each form, and
#     the ratio of the whole processes;
#   - the decoding inside that grouped replay: one more replay of each form
#     with --cpuprofile, and the CPU seconds of its samples in the reader
#     (history.(*Reader).Next) and the zstd decoder's goroutines, and the
#     ratio (what the replay spends decoding, in each form);
# then, from memory in one process, BenchmarkDecodeRecord (ns/record of
# both forms) and the grouped world-1,024 engine benchmarks of
# bench/engine_test.go (decode-only and replay CPU per record, both forms).
#
#   bench/binary.sh                  the 10M history (it takes minutes to
#                                    synthesize; it is kept in WORK)
#   SIZE=1M bench/binary.sh          the 1M history
#   RECONVERT=1 bench/binary.sh      rewrite the binary form kept in WORK
#   WORK=/big/dir bench/binary.sh    where histories and builds go
#                                    (default /tmp/fastsim-decode, shared
#                                    with bench/decode.sh)
#   PARTS=decode bench/binary.sh     the decode-only row alone, with the
#                                    median of each round's own ratios
#                                    (default "decode grouped memory")
# Needs the zstd command, /usr/bin/time and go (go tool pprof).
set -euo pipefail
cd "$(dirname "$0")/.."
work=${WORK:-/tmp/fastsim-decode}
size=${SIZE:-10M}
runs=${RUNS:-3}
parts=${PARTS:-decode grouped memory}
mkdir -p "$work"
now=$work/fastsim-binary
go build -o "$now" ./cmd/fastsim

. bench/histories.sh
sized_history "$size"
j=$work/$name.hist.zst
f=$work/$name.fhist.zst
x=$work/$name.fhist
s=$work/$name.fhist.s2
[ -f "$x" ] || zstd -q -d -f "$f" -o "$x" # the same stream, uncompressed (.fhist)
# ... and in S2 framing, by this tree's convert (rewritten with the rest)
if [ ! -f "$s" ] || [ "$s" -ot "$f" ]; then "$now" convert --quiet "$f" "$s"; fi

# cpu FILE ARGS...: one run's CPU seconds (user + system).
cpu() {
	/usr/bin/time -f "%U %S" -o "$work/time" "$now" replay "${@:2}" "$1" >/dev/null
	awk '{printf "%.2f", $1 + $2}' "$work/time"
}
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/(b>0?b:1e-9)}'; }

# forms ARGS...: RUNS runs of each form with ARGS, taking turns; prints the
# medians of JSON lines, the binary form in zstd, uncompressed and in S2.
# Then the medians of each round's JSON / .fhist.zst, JSON / .fhist and
# JSON / .fhist.s2.
forms() {
	local js=() bs=() xs=() ss=() rb=() rx=() rs=() a b c d
	for _ in $(seq "$runs"); do
		a=$(cpu "$j" "$@") b=$(cpu "$f" "$@") c=$(cpu "$x" "$@") d=$(cpu "$s" "$@")
		js+=("$a") bs+=("$b") xs+=("$c") ss+=("$d")
		rb+=("$(ratio "$a" "$b")") rx+=("$(ratio "$a" "$c")") rs+=("$(ratio "$a" "$d")")
	done
	echo "$(median "${js[@]}") $(median "${bs[@]}") $(median "${xs[@]}") $(median "${ss[@]}") $(median "${rb[@]}") $(median "${rx[@]}") $(median "${rs[@]}")"
}

# decodeShare FILE: CPU seconds a grouped replay of FILE spends decoding,
# from a CPU profile: the samples under history.(*Reader).Next plus those
# of the zstd decoder's goroutines (they decompress ahead of the reader).
decodeShare() {
	local prof=$work/$(basename "$1").prof
	"$now" replay --report-only --group-workers --cpuprofile "$prof" "$1" >/dev/null
	go tool pprof -top -cum -unit=s "$now" "$prof" 2>/dev/null | awk '
		/history\.\(\*Reader\)\.Next$/ {next_s = $4 + 0}
		/zstd\.\(\*Decoder\)\.startStreamDecoder\.func[0-9]+$/ {z += $4 + 0}
		/ of .* total/ {for (i = 1; i <= NF; i++) if ($i == "total") total = $(i-1) + 0}
		END {printf "%.2f %.2f %.2f\n", next_s + z, next_s, total}'
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
read -r jd bd xd sd rbd rxd rsd < <(forms --decode-only)
grouped=0
[[ " $parts " == *" grouped "* ]] && grouped=1
if ((grouped)); then
	read -r jr br xr sr _ _ _ < <(forms --report-only --group-workers)
	read -r jds jnext jtot < <(decodeShare "$j")
	read -r bds bnext btot < <(decodeShare "$f")
	read -r xds xnext xtot < <(decodeShare "$x")
	read -r sds snext stot < <(decodeShare "$s")
fi
load1=$(cut -d' ' -f1-3 /proc/loadavg)
minus() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a-b}'; }

echo "History $name: $(du -kL "$j" | cut -f1) KiB as JSON lines (zstd), binary $(du -kL "$f" | cut -f1) KiB in zstd, $(du -kL "$s" | cut -f1) KiB in S2, $(du -kL "$x" | cut -f1) KiB uncompressed."
echo "CPU seconds (user + system), medians of $runs runs, forms taking turns; load average $load0 before, $load1 after."
echo
echo "| $name | JSON lines (.hist.zst) | binary (.fhist.zst) | binary (.fhist) | binary (.fhist.s2) | JSON / .fhist.zst | JSON / .fhist | JSON / .fhist.s2 |"
echo "|---|---|---|---|---|---|---|---|"
echo "| decode only (process) | $jd | $bd | $xd | $sd | $(ratio "$jd" "$bd")x | $(ratio "$jd" "$xd")x | $(ratio "$jd" "$sd")x |"
echo "| decode only, median of the rounds' own ratios | | | | | ${rbd}x | ${rxd}x | ${rsd}x |"
if ((grouped)); then
	echo "| grouped replay (process) | $jr | $br | $xr | $sr | $(ratio "$jr" "$br")x | $(ratio "$jr" "$xr")x | $(ratio "$jr" "$sr")x |"
	echo "| decoding inside the grouped replay (profile: reader + zstd) | $jds of $jtot | $bds of $btot | $xds of $xtot | $sds of $stot | $(ratio "$jds" "$bds")x | $(ratio "$jds" "$xds")x | $(ratio "$jds" "$sds")x |"
	echo "| the rest of the grouped replay (profile) | $(minus "$jtot" "$jds") | $(minus "$btot" "$bds") | $(minus "$xtot" "$xds") | $(minus "$stot" "$sds") | | | |"
fi
echo

[[ " $parts " == *" memory "* ]] || exit 0
# From memory, one process: ns/record of BenchmarkDecodeRecord, and the
# grouped world-1,024 history of bench/engine.sh (decode only and replay,
# CPU per record).
echo "BenchmarkDecodeRecord (one step of the same job, from memory: JSON lines plain, the binary form in zstd; wall time), ns/record, median of 3:"
go test -run '^$' -bench DecodeRecord -benchtime 2s -count 3 ./internal/replay |
	awk '/ns\/record/ {for (i = 1; i < NF; i++) if ($(i+1) == "ns/record") v[$1] = v[$1] " " $i}
	END {for (k in v) print k, v[k]}' | sort |
	while read -r bname a b c; do echo "  $bname $(median "$a" "$b" "$c")"; done
echo
echo "Grouped world-1,024 random history of bench/engine.sh (synth --random 1 --world 1024 --whole-mesh --commands 5500), in one process (bench/engine_test.go: JSON lines plain, the binary form uncompressed), CPU per run and per command, medians of 3:"
go test -run '^$' -bench 'EngineGroupedW1024' -benchtime 50x -count 3 ./bench |
	awk '/^BenchmarkEngineGroupedW1024/ {
		for (i = 1; i < NF; i++) { if ($(i+1) == "cpu-ns/op") t = $i; if ($(i+1) == "commands") n = $i }
		name = $1; sub(/-[0-9]+$/, "", name); v[name] = v[name] " " t }
	END {for (k in v) print k, n, v[k]}' | sort |
	while read -r bname n a b c; do
		m=$(median "$a" "$b" "$c")
		echo "  $bname: $(awk -v m="$m" 'BEGIN{printf "%.2f", m/1e6}') ms a run, $(awk -v m="$m" -v n="$n" 'BEGIN{printf "%.0f", m/n}') ns per command ($n commands)"
	done
