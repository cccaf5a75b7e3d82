#!/usr/bin/env bash
# Scale benchmarks, outside CI: synthesizes pipeline-shaped training
# histories (fastsim synth) at world sizes 8 to 1,048,576 and up to 10
# million commands, in both forms (JSON lines .hist.zst and binary
# .fhist.zst), and measures for each: replay wall time, commands/s, groups,
# peak RSS (/usr/bin/time -v) and the decode-only time of the same file
# (decompress and parse, no simulation), with the ratio replay / decode-only.
# Ungrouped runs also report worker-tasks/s. Then checks every grouped
# headline exactly against ungrouped replays (world 2^20 and the rest).
# Writes its two sections of bench/RESULTS.md, "scale-table" and
# "scale-checks", between their marker lines (bench/section.sh), and leaves
# every other byte of the file as it was.
#
#   bench/scale.sh            the table and the exact checks (about 15
#                             minutes for the table on 2 cores, plus the checks)
#   PARTS=table bench/scale.sh   the table only (rewrites only its section)
#   PARTS=checks bench/scale.sh  the exact checks only (only their section)
#   QUICK=1 bench/scale.sh    a smoke run with 20x fewer commands, written to
#                             a copy of bench/RESULTS.md in $WORK
#   WORK=/big/dir bench/scale.sh   where the histories go (several GB; kept
#                             between runs: delete them after changing synth)
# Needs the zstd command (Debian: apt-get install zstd) and /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
bin=$work/fastsim
go build -o "$bin" ./cmd/fastsim
div=1
[ "${QUICK:-0}" = 1 ] && div=20
parts=${PARTS:-table checks}
case " $parts " in *" table "* | *" checks "*) ;; *) echo "PARTS: want table, checks or both, not \"$parts\"" >&2; exit 2 ;; esac
has() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }
out=bench/RESULTS.md
if [ "${QUICK:-0}" = 1 ]; then
	cp bench/RESULTS.md "$work/RESULTS.md"
	out=$work/RESULTS.md
fi
machine="$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(free -g | awk '/Mem:/ {print $2}') GiB, $(go version | cut -d' ' -f3), Linux $(uname -r)"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git status --porcelain -- cmd internal gen 2>/dev/null)" ] || commit="$commit with uncommitted changes"

# history NAME PP DP TP LAYERS COMMANDS: writes $work/NAME.hist.zst and
# $work/NAME.fhist.zst with about COMMANDS commands.
history() {
	local name=$1 pp=$2 dp=$3 tp=$4 layers=$5 cmds=$6
	local args=(--pp "$pp" --dp "$dp" --tp "$tp" --layers "$layers" --micro 4 --batch $((dp * 4)) --hidden 4096 --seq 2048)
	if [ ! -f "$work/$name.hist.zst" ]; then
		local per
		per=$("$bin" synth "${args[@]}" --steps 1 - | wc -l)
		local steps=$(((cmds / div + per - 1) / per))
		"$bin" synth "${args[@]}" --steps "$steps" - | zstd -q -f -T2 -o "$work/$name.hist.zst"
	fi
	[ -f "$work/$name.fhist.zst" ] || "$bin" convert "$work/$name.hist.zst" "$work/$name.fhist.zst"
}

# measure FILE [replay flags]: prints "wall rss_kb" of a replay and keeps its
# stdout in $work/last.out.
measure() {
	local file=$1
	shift
	/usr/bin/time -v -o "$work/time" "$bin" replay --report-only "$@" "$file" >"$work/last.out"
	local wall rss
	wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$work/time")
	rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time")
	echo "$wall $rss"
}

field() { sed -n "s/.*$1.*/&/p" "$work/last.out"; }

rows=()
declare -A val # NAME/FORM/GROUPED/{wall,dwall,rss}
row() { # NAME FORM GROUPED
	local name=$1 form=$2 grouped=$3
	local file=$work/$name.$form
	local flags=(--jobs 1)
	[ "$grouped" = yes ] && flags+=(--group-workers)
	read -r wall rss < <(measure "$file" "${flags[@]}")
	local cmds groups wtasks
	cmds=$(sed -n 's/^commands replayed *\([0-9]*\) on .*/\1/p' "$work/last.out")
	groups=$(sed -n 's/.*(\([0-9]*\) simulated groups\{0,1\}).*/\1/p' "$work/last.out")
	wtasks=$(sed -n 's/.*commands\/s, \([0-9]*\) worker-tasks\/s.*/\1/p' "$work/last.out")
	read -r dwall _ < <(measure "$file" --decode-only)
	local rate ratio
	rate=$(awk -v c="$cmds" -v w="$wall" 'BEGIN{printf "%.0f", c/(w>0?w:1e-9)}')
	ratio=$(awk -v a="$wall" -v b="$dwall" 'BEGIN{printf "%.2f", a/(b>0?b:1e-9)}')
	[ "$grouped" = yes ] && wtasks="-"
	local line="| $name | $form | $grouped | $cmds | $groups | $wall | $rate | $((rss / 1024)) | $dwall | $ratio | $wtasks |"
	echo "$line"
	rows+=("$line")
	val[$name/$form/$grouped/wall]=$wall
	val[$name/$form/$grouped/dwall]=$dwall
	val[$name/$form/$grouped/rss]=$rss
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/(b>0?b:1e-9)}'; }

history w1048576 8 16384 8 32 1000000
if has table; then
	history w8 2 2 2 8 1000000
	history w64 4 4 4 8 1000000
	history w1024 8 16 8 16 1000000
	history w65536-1M 8 1024 8 32 1000000
	history w65536-10M 8 1024 8 32 10000000

	for form in hist.zst fhist.zst; do
		row w8 $form no
		row w8 $form yes
		row w64 $form no
		row w64 $form yes
		row w1024 $form no
		row w1024 $form yes
		row w65536-1M $form yes
		row w65536-10M $form yes
		row w1048576 $form yes
	done
	{
		echo "# Scale benchmarks"
		echo
		echo "Measured by \`bench/scale.sh\` on $(date -u +%Y-%m-%d) at $commit: $machine."
		echo "Histories: \`fastsim synth\` training jobs (pp 8 stages unless the world is smaller; hidden 4096, seq 2048, 4 microbatches), every command addressing one pipeline stage; replays with \`--report-only --jobs 1\`, decode-only with \`--decode-only\`. Wall times in seconds, RSS in MiB."
		echo
		echo "| history | form | grouped | commands | groups | replay s | commands/s | peak RSS MiB | decode-only s | replay / decode | worker-tasks/s |"
		echo "|---|---|---|---|---|---|---|---|---|---|---|"
		printf '%s\n' "${rows[@]}"
		echo
		echo "## Targets, from the rows above"
		echo
		echo "- Grouped replay of the 10M-command 8-stage history at world 65,536, binary form, over its decode-only time: $(ratio "${val[w65536-10M/fhist.zst/yes/wall]}" "${val[w65536-10M/fhist.zst/yes/dwall]}")x (target: at most 3x)."
		echo "- Decode-only time of the JSON-lines form over the binary form, same 10M-command history: $(ratio "${val[w65536-10M/hist.zst/yes/dwall]}" "${val[w65536-10M/fhist.zst/yes/dwall]}")x (target: at least 5x)."
		echo "- Peak RSS of the grouped replay, 10M over 1M commands: $(ratio "${val[w65536-10M/hist.zst/yes/rss]}" "${val[w65536-1M/hist.zst/yes/rss]}")x in JSON lines, $(ratio "${val[w65536-10M/fhist.zst/yes/rss]}" "${val[w65536-1M/fhist.zst/yes/rss]}")x in the binary form (target: within 1.2x)."
	} | bench/section.sh "$out" scale-table
	echo "wrote the scale-table section of $out"
fi
has checks || exit 0

# Exact checks: no headline number stands on an unchecked grouped run.
# 1. Random histories at world 2^20 (rank sets gathered at the 65,536-rank
#    container edges, see synth.BigWorld), replayed grouped and ungrouped:
#    the summaries and the peak device must be identical.
# 2. Replica invariance: the grouped world-1,048,576 training job (8 stages,
#    16,384 replicas, tp 8) must report exactly the step times of the same
#    job with one replica (world 64) replayed ungrouped, since data-parallel
#    replicas receive the same commands at the same times (memory differs:
#    weight shards shrink with more replicas).
# 3. The million-rank job itself, shortened to 8 layers and one step,
#    replayed grouped and ungrouped: summaries and peak device identical.
checks=()
summary() { # FILE FLAGS... -> the summary without world_size, and the peak line
	"$bin" replay --report-only --summary-json "$work/sum.json" "$@" >"$work/last.out"
	sed 's/"world_size":[0-9]*,//' "$work/sum.json"
	grep '^peak memory' "$work/last.out" || true
}
check_row() { # NAME WORLD COMMANDS GROUPED_S UNGROUPED_S EQUAL
	local line="| $1 | $2 | $3 | $4 | $5 | $6 |"
	echo "$line"
	checks+=("$line")
	[ "$6" = yes ] || { echo "exact check $1 failed: grouped differs" >&2; failed=1; }
}
failed=0
for seed in 1 2 3; do
	f=$work/random-$seed.hist
	"$bin" synth --random $seed --world 1048576 --commands $((60 / div + 10)) "$f"
	t0=$(date +%s.%N); g=$(summary "$f" --group-workers); t1=$(date +%s.%N)
	u=$(summary "$f"); t2=$(date +%s.%N)
	cmds=$(sed -n 's/^commands replayed *\([0-9]*\) on .*/\1/p' "$work/last.out")
	eq=no; [ "$g" = "$u" ] && eq=yes
	check_row "random seed $seed, grouped vs ungrouped" 1048576 "$cmds" "$(ratio "$(awk -v a=$t0 -v b=$t1 'BEGIN{print b-a}')" 1)" "$(ratio "$(awk -v a=$t1 -v b=$t2 'BEGIN{print b-a}')" 1)" $eq
done
steptimes() { grep -o '"exec_time_s":[^,]*\|\[[0-9.e+-]*,' "$work/sum.json" | tr -d '\n'; }
history w64-one-replica 8 1 8 32 1000000
t0=$(date +%s.%N); summary "$work/w1048576.fhist.zst" --group-workers >/dev/null; g=$(steptimes); t1=$(date +%s.%N)
cmds=$(sed -n 's/^commands replayed *\([0-9]*\) on .*/\1/p' "$work/last.out")
summary "$work/w64-one-replica.fhist.zst" >/dev/null; u=$(steptimes); t2=$(date +%s.%N)
eq=no; [ "$g" = "$u" ] && eq=yes
check_row "w1048576 grouped vs one replica (world 64) ungrouped: every step time" 1048576 "$cmds" "$(ratio "$(awk -v a=$t0 -v b=$t1 'BEGIN{print b-a}')" 1)" "$(ratio "$(awk -v a=$t1 -v b=$t2 'BEGIN{print b-a}')" 1)" $eq
# The same job, 8 layers and one step, whole: memory shards by replica, so
# the peaks are checked against an ungrouped replay of the million ranks.
history w1048576-1step 8 16384 8 8 $div
t0=$(date +%s.%N); g=$(summary "$work/w1048576-1step.fhist.zst" --group-workers); t1=$(date +%s.%N)
u=$(summary "$work/w1048576-1step.fhist.zst"); t2=$(date +%s.%N)
cmds=$(sed -n 's/^commands replayed *\([0-9]*\) on .*/\1/p' "$work/last.out")
eq=no; [ "$g" = "$u" ] && eq=yes
check_row "w1048576, 8 layers, 1 step: grouped vs ungrouped" 1048576 "$cmds" "$(ratio "$(awk -v a=$t0 -v b=$t1 'BEGIN{print b-a}')" 1)" "$(ratio "$(awk -v a=$t1 -v b=$t2 'BEGIN{print b-a}')" 1)" $eq

{
	echo "## Exact checks of the grouped runs"
	echo
	echo "Measured by \`bench/scale.sh\` on $(date -u +%Y-%m-%d) at $commit: $machine; load average $(cut -d' ' -f1-3 /proc/loadavg) when written. Command: \`PARTS=\"$parts\" bench/scale.sh\`$([ "$div" = 1 ] || echo " with QUICK=1"). Times are wall seconds of one run each, on a machine shared with other work."
	echo
	echo "Every grouped headline above is checked: random histories at world 2^20 whose rank sets gather at the 65,536-rank container edges, replayed both ways (summaries and peak device identical); the million-rank training job against one replica of it replayed ungrouped (every step time identical); and that job shortened to 8 layers and one step, replayed both ways at 2^20 ranks (summaries and peak device identical)."
	echo
	echo "| check | world | commands | grouped s | ungrouped s | identical |"
	echo "|---|---|---|---|---|---|"
	printf '%s\n' "${checks[@]}"
} | bench/section.sh "$out" scale-checks
echo "wrote the scale-checks section of $out"
[ "$failed" = 0 ] || { echo "an exact check failed (see the table)" >&2; exit 1; }
