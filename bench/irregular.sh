#!/usr/bin/env bash
# Irregular rank sets: what grouping gains on a history whose commands cut
# the world into groups of a few ranks. For each world 2^B and group size
# 2^G it writes a history of a stream and, for k = G to B-1, a command on
# the ranks whose bit k is set (each cuts every group in two: 2^(B-G)
# groups of 2^G ranks at the end), then replays it grouped and ungrouped,
# RUNS times each, taking turns, and reports the medians of CPU seconds
# (user + system, /usr/bin/time) and of peak RSS. Prints the table, and
# with BIG=1 (every row the README and replay.GroupsGainLittle cite)
# writes it as the section "irregular" of bench/RESULTS.md
# (bench/section.sh); without, the section is left as it is.
#
#   bench/irregular.sh              worlds 2^16 (groups of 1) and 2^18
#                                   (groups of 4), 3 runs each (about 2 min)
#   BIG=1 bench/irregular.sh        also 2^20 in groups of 4 (262,144 groups;
#                                   the ungrouped replay holds about 10 GB)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
runs=${RUNS:-3}
bin=$work/fastsim
commit=$(git rev-parse --short HEAD)
[ -z "$(git status --porcelain -- cmd internal gen)" ] || commit="$commit with uncommitted changes"
go build -o "$bin" ./cmd/fastsim
load0=$(cut -d' ' -f1-3 /proc/loadavg)

# history B G: writes $work/bB-gG.hist.
history() {
	local b=$1 g=$2 world=$((1 << $1)) k t=1
	{
		echo "{\"fastsim\":\"history\",\"version\":1,\"world_size\":$world}"
		echo "{\"ts\":0,\"ranks\":[{\"offset\":0,\"sizes\":[$world],\"strides\":[1]}],\"msg\":{\"type\":\"CreateStream\",\"result\":{\"ref\":1,\"name\":\"main\"},\"default\":true}}"
		for ((k = g; k < b; k++)); do
			echo "{\"ts\":$t,\"ranks\":[{\"offset\":$((1 << k)),\"sizes\":[$((world >> (k + 1))),$((1 << k))],\"strides\":[$((1 << (k + 1))),1]}],\"msg\":{\"type\":\"CallFunction\",\"function\":\"f\",\"args\":[],\"kwargs\":{},\"result\":[{\"tensor\":$t,\"storage\":$t,\"nbytes\":$((4 * t)),\"dtype\":\"float32\",\"shape\":[$t],\"device\":\"cuda\"}],\"mutates\":[],\"stream\":{\"ref\":1}}}"
			t=$((t + 1))
		done
	} >"$work/b$b-g$g.hist"
}

# median of the numbers on standard input.
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

cases=("16 0" "18 2")
[ "${BIG:-0}" = 1 ] && cases+=("20 2")
rows=()
for c in "${cases[@]}"; do
	read -r b g <<<"$c"
	history "$b" "$g"
	: >"$work/grouped.cpu" && : >"$work/ungrouped.cpu" && : >"$work/grouped.rss" && : >"$work/ungrouped.rss"
	for ((i = 0; i < runs; i++)); do
		for mode in grouped ungrouped; do
			flags=(--report-only --quiet)
			[ "$mode" = grouped ] && flags+=(--group-workers)
			/usr/bin/time -f "%U %S %M" -o "$work/time" "$bin" replay "${flags[@]}" "$work/b$b-g$g.hist"
			read -r u s m <"$work/time"
			echo "$u + $s" | bc >>"$work/$mode.cpu"
			echo "$m" >>"$work/$mode.rss"
		done
	done
	gc=$(median <"$work/grouped.cpu") uc=$(median <"$work/ungrouped.cpu")
	gm=$(median <"$work/grouped.rss") um=$(median <"$work/ungrouped.rss")
	rows+=("| 2^$b | $((1 << (b - g))) of $((1 << g)) | $gc | $uc | $(awk -v g="$gc" -v u="$uc" 'BEGIN {printf "%.2f", g / u}') | $((gm / 1024)) | $((um / 1024)) |")
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
{
	echo "## Irregular rank sets (BIG=${BIG:-0} RUNS=$runs bench/irregular.sh, $(date -u +%Y-%m-%d))"
	echo
	echo "A history whose commands address the ranks with one bit of their number"
	echo "set cuts the world into groups of a few ranks; \`fastsim replay"
	echo "--group-workers\` notes it from 65,536 groups of 16 ranks or fewer on average"
	echo "(\`replay.GroupsGainLittle\`). Medians of $runs runs each, grouped and ungrouped taking"
	echo "turns, \`--report-only --quiet\`, commit $commit, $(nproc) cores, load average"
	echo "$load0 at the start and $load1 at the end (other work shared the cores:"
	echo "CPU seconds, not wall time, are compared)."
	echo
	echo "| world | groups of ranks | grouped CPU s | ungrouped CPU s | grouped / ungrouped | grouped RSS MiB | ungrouped RSS MiB |"
	echo "|---|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} >"$work/section.md"
cat "$work/section.md"
if [ "${BIG:-0}" = 1 ]; then
	bash bench/section.sh bench/RESULTS.md irregular <"$work/section.md"
	echo "bench/RESULTS.md: section irregular written"
else
	echo "bench/RESULTS.md left as it is: its section has the 2^20 row, which BIG=1 measures"
fi
