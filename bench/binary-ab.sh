#!/usr/bin/env bash
# The binary decoder before and after a change, outside CI: CPU seconds
# (user + system, from /usr/bin/time) of this tree's build against the
# build of commit BEFORE, on the same files (the 10M world-65,536 history
# of bench/binary.sh: JSON lines .hist.zst, the binary form .fhist.zst and
# .fhist; a before build that does not read them, of another version of
# the binary form, reads its own conversion of the same JSON lines). For
# each form, --decode-only and a grouped replay (--report-only
# --group-workers); the builds and forms take
# turns, RUNS rounds (default 3), and it prints the medians and the ratios
# before / after and JSON / binary of each build: of the medians, and the
# median of each round's own ratio.
#
#   BEFORE=84021b8 bench/binary-ab.sh     needs the commit in this repository
#   WORK=/big/dir SIZE=1M ...             as bench/binary.sh (the histories
#                                         are made by it if missing)
#   MODES=decode ...                      decode-only alone (default
#                                         "decode grouped")
# Needs git, the zstd command and /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${WORK:-/tmp/fastsim-decode}
size=${SIZE:-10M}
runs=${RUNS:-3}
modes=${MODES:-decode grouped}
before_commit=${BEFORE:?BEFORE: the commit to compare with}
mkdir -p "$work"

before=$work/fastsim-ab-before-$before_commit
if [ ! -x "$before" ]; then
	rm -rf "$work/ab-before-src"
	mkdir -p "$work/ab-before-src"
	git archive "$before_commit" | tar -x -C "$work/ab-before-src"
	(cd "$work/ab-before-src" && go build -o "$before" ./cmd/fastsim)
fi
now=$work/fastsim-ab-now
go build -o "$now" ./cmd/fastsim

. bench/histories.sh
sized_history "$size"
[ -f "$work/$name.fhist" ] || zstd -q -d -f "$work/$name.fhist.zst" -o "$work/$name.fhist"
# Each build reads the binary form it writes: the files of WORK when the
# before build reads them, else its own conversion of the same JSON lines
# (a change of the binary form's version), kept in WORK/before-BEFORE.
bdir=$work
if ! "$before" replay --decode-only "$work/$name.fhist" >/dev/null 2>&1; then
	bdir=$work/before-$before_commit
	mkdir -p "$bdir"
	if [ ! -f "$bdir/$name.fhist" ] || ! "$before" replay --decode-only "$bdir/$name.fhist" >/dev/null 2>&1; then
		"$before" convert --quiet "$work/$name.hist.zst" "$bdir/$name.fhist.zst"
		zstd -q -d -f "$bdir/$name.fhist.zst" -o "$bdir/$name.fhist"
	fi
	echo "the before build reads its own binary form, in $bdir" >&2
fi

# cpu BIN FILE ARGS...: one run's CPU seconds.
cpu() {
	/usr/bin/time -f "%U %S" -o "$work/time" "$1" replay "${@:3}" "$2" >/dev/null
	awk '{printf "%.2f", $1 + $2}' "$work/time"
}
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/(b>0?b:1e-9)}'; }

forms=(hist.zst fhist.zst fhist)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A v
for mode in $modes; do
	args=(--decode-only)
	[ "$mode" = grouped ] && args=(--report-only --group-workers)
	for _ in $(seq "$runs"); do
		for form in "${forms[@]}"; do
			for build in before now; do
				bin=$before dir=$bdir
				[ "$build" = now ] && bin=$now dir=$work
				[ "$form" = hist.zst ] && dir=$work
				v[$mode.$form.$build]="${v[$mode.$form.$build]:-} $(cpu "$bin" "$dir/$name.$form" "${args[@]}")"
			done
		done
	done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

echo "History $name; before = $before_commit, after = this tree; CPU seconds (user + system), medians of $runs rounds (builds and forms taking turns); load average $load0 before, $load1 after."
echo
# paired MODE FORM_A BUILD_A FORM_B BUILD_B: the median over the rounds of
# A / B, each round's two runs taken a few seconds apart, so that a load
# that changes during the run moves both alike (the medians of the columns
# come from different rounds).
paired() {
	local -a a b r=()
	read -ra a <<<"${v[$1.$2.$3]}"
	read -ra b <<<"${v[$1.$4.$5]}"
	for i in "${!a[@]}"; do r+=("$(ratio "${a[$i]}" "${b[$i]}")"); done
	median "${r[@]}"
}
echo "| $name | before | after | before / after | before / after, median of the rounds' |"
echo "|---|---|---|---|---|"
declare -A m
for mode in $modes; do
	for form in "${forms[@]}"; do
		# shellcheck disable=SC2086
		b=$(median ${v[$mode.$form.before]})
		# shellcheck disable=SC2086
		a=$(median ${v[$mode.$form.now]})
		m[$mode.$form.before]=$b m[$mode.$form.now]=$a
		echo "| $mode, .$form | $b | $a | $(ratio "$b" "$a")x | $(paired "$mode" "$form" before "$form" now)x |"
	done
done
for mode in $modes; do
	for build in before now; do
		j=${m[$mode.hist.zst.$build]}
		echo "| $mode, JSON / binary, $build | | | .fhist.zst $(ratio "$j" "${m[$mode.fhist.zst.$build]}")x, .fhist $(ratio "$j" "${m[$mode.fhist.$build]}")x | .fhist.zst $(paired "$mode" hist.zst "$build" fhist.zst "$build")x, .fhist $(paired "$mode" hist.zst "$build" fhist "$build")x |"
	done
done
