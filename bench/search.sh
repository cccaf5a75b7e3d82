#!/bin/bash
# The layout search over the real space (README: "Searching parallel
# layouts"): how long the bounds take, and a pruned search against an
# unpruned one over the same space (their best layouts must agree).
#
#   bench/search.sh          bounds of GPT-3 175B on 1,024 GPUs; the pruned
#                            and unpruned search of a small GPT on 16 GPUs;
#                            then the search speed, as "rate" below
#   FULL=1 bench/search.sh   also the whole GPT-3 175B search on 1,024
#                            A100-80GB (batch 1,536): hours on 2 cores, each
#                            layout a replay of about a million commands
#   bench/search.sh rate     only the search speed (layouts per CPU second)
#                            against BEFORE (a commit; default b226dc5, where
#                            the toy's layouts went to the engine as JSON
#                            text), and replace the "Search speed" section
#                            of bench/RESULTS.md between its markers (its
#                            dated ### sections stay); RUNS=N runs of each
#                            (default 5)
#
# The rate: one search, `search --workload toy --world 1024 --layers 16
# --batch 32 --jobs 1` (105 layouts of a 16-layer toy on 1,024 GPUs, each 2
# steps, replayed grouped with the reference's fixed runtimes), run by
# fastsim built from BEFORE and from the work tree, taking turns. CPU
# seconds (user + system, getrusage) of the whole process, median of RUNS;
# layouts per CPU second = layouts / median. Both must rank the same
# layouts with the same figures (their --csv outputs are compared), and
# the work tree's search split into 3 shards and merged must give the
# unsharded CSV byte for byte. A --cpuprofile of a larger search of the
# same kind says where the work tree's CPU goes. Needs python3
# (getrusage), git and go tool pprof.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'git worktree remove --force "$bin/before-src" >/dev/null 2>&1 || true; rm -rf "$bin"' EXIT
go build -o "$bin/fastsim" ./cmd/fastsim
fs="$bin/fastsim"

# rate: the search speed section (see above).
rate() {
	local before=${BEFORE:-b226dc5} runs=${RUNS:-5}
	git worktree add --detach "$bin/before-src" "$before" >/dev/null 2>&1
	(cd "$bin/before-src" && go build -o "$bin/before" ./cmd/fastsim)
	local args=(search --workload toy --world 1024 --layers 16 --batch 32 --jobs 1)
	"$bin/before" "${args[@]}" --quiet --csv "$bin/before.csv"
	"$fs" "${args[@]}" --quiet --csv "$bin/after.csv"
	if ! cmp -s "$bin/before.csv" "$bin/after.csv"; then
		echo "FAIL: the search ranks layouts differently from $before's" >&2
		diff "$bin/before.csv" "$bin/after.csv" | head >&2
		exit 1
	fi
	for k in 0 1 2; do "$fs" "${args[@]}" --quiet --shard "$k/3" --json "$bin/shard$k.json"; done
	"$fs" search merge --quiet --csv "$bin/merged.csv" "$bin"/shard{2,0,1}.json
	if ! cmp -s "$bin/after.csv" "$bin/merged.csv"; then
		echo "FAIL: 3 shards merged differ from the unsharded search" >&2
		exit 1
	fi
	local layouts=$(($(wc -l <"$bin/after.csv") - 1)) b bmin a amin
	local load=$(cut -d' ' -f1-3 /proc/loadavg)
	# Medians and least CPU seconds: before-median before-min after-median after-min.
	read -r b bmin a amin <<<"$(python3 - "$runs" "$bin/before" "$fs" "${args[@]}" <<'PY'
import resource, statistics, subprocess, sys
n, before, after, args = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
ts = {before: [], after: []}
for _ in range(n):
    for b in (before, after):
        a = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([b] + args + ["--quiet"], check=True, stdout=subprocess.DEVNULL)
        e = resource.getrusage(resource.RUSAGE_CHILDREN)
        ts[b].append(e.ru_utime - a.ru_utime + e.ru_stime - a.ru_stime)
print(" ".join("%.3f %.3f" % (statistics.median(ts[b]), min(ts[b])) for b in (before, after)))
PY
)"
	local loadEnd=$(cut -d' ' -f1-3 /proc/loadavg)
	# Where the work tree's CPU goes: one profile of a larger search of the
	# same kind (32 layers, batch 64), shares of the samples under the
	# engine, the registry's indexing of each record, the synthesis itself
	# (EmitTrain less what it sends) and the garbage collector.
	"$fs" search --workload toy --world 1024 --layers 32 --batch 64 --jobs 1 --quiet --cpuprofile "$bin/cpu.prof"
	local shares
	shares=$(go tool pprof -top -cum -nodecount 100000 "$fs" "$bin/cpu.prof" 2>/dev/null | awk '
		/Total samples/ { for (i = 1; i <= NF; i++) if ($i == "=") total = secs($(i+1)) }
		function secs(v) { if (v ~ /ms$/) { sub(/ms$/, "", v); return v / 1000 } sub(/s$/, "", v); return v }
		# A function the compiler inlined (the profile-guided build inlines
		# more) is listed with "(inline)" or "(partial-inline)" after its name.
		$NF ~ /^\((partial-)?inline\)$/ { NF-- }
		$NF ~ /sched\.\(\*Engine\)\.Command$/ { eng = secs($4) }
		$NF ~ /replay\.\(\*Sim\)\.indexTyped$/ { idx = secs($4) }
		$NF ~ /synth\.EmitTrain$/ { emit = secs($4) }
		$NF ~ /synth\.\(\*out\)\.send$/ { send = secs($4) }
		$NF ~ /runtime\.gcBgMarkWorker$/ { gc = secs($4) }
		END { printf "engine %.0f%%, indexing records in the registry %.0f%%, synthesis %.0f%%, garbage collection %.0f%%", 100*eng/total, 100*idx/total, 100*(emit-send)/total, 100*gc/total }')
	echo "where the CPU goes (after): $shares"
	local rb ra ratio
	rb=$(awk -v n="$layouts" -v s="$b" 'BEGIN{printf "%.1f", n/s}')
	ra=$(awk -v n="$layouts" -v s="$a" 'BEGIN{printf "%.1f", n/s}')
	ratio=$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.2f", b/a}')
	echo "== search speed at world 1,024: fastsim ${args[*]}"
	echo "layouts: $layouts; load average $load at the start, $loadEnd at the end"
	echo "before ($before): $b s CPU (least $bmin), $rb layouts/s"
	echo "after (this tree): $a s CPU (least $amin), $ra layouts/s"
	echo "ratio: ${ratio}x"
	local section
	section=$(
		echo "## Search speed (bench/search.sh rate)"
		echo
		echo "Measured by \`bench/search.sh rate\` on $(date -u +%Y-%m-%d) at commit $(git rev-parse --short HEAD): $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(go version | cut -d' ' -f3)."
		echo "One search: \`fastsim ${args[*]}\`, $layouts layouts of the toy workload (16 layers, hidden 1,024, seq 2,048, batch 32, 2 steps each) at world 1,024, replayed grouped with the reference's fixed runtimes, one layout at a time. CPU seconds (user + system) of the whole process, median of $runs runs (least in brackets), before and after taking turns; before: built from $before (each layout written as JSON text and parsed back), after: this tree (typed records from synthesis to the engine). Both rank the same layouts with the same figures (their CSV outputs are identical), and 3 shards merged give the unsharded CSV byte for byte. Load average: $load when the runs began, $loadEnd when they ended (the machine is shared with other builds; CPU time grows with its load)."
		echo
		echo "| search | layouts | before CPU s | after CPU s | before layouts per CPU s | after layouts per CPU s | after / before |"
		echo "|---|---|---|---|---|---|---|"
		echo "| toy, world 1,024, 16 layers, batch 32 | $layouts | $b ($bmin) | $a ($amin) | $rb | $ra | ${ratio}x |"
		echo
		echo "Where the CPU goes after (\`--cpuprofile\` of the same search with 32 layers and batch 64, shares of the samples): $shares."
	)
	# Between its markers only (bench/section.sh): the dated ### sections
	# after the end marker stay.
	echo "$section" | bench/section.sh bench/RESULTS.md search-speed
}

if [ "${1:-}" = rate ]; then
	rate
	exit 0
fi

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

rate
