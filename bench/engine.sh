#!/usr/bin/env bash
# Engine speed against the reference simulator, outside CI. Two histories,
# made by fastsim synth:
#   (a) a world-64 random history of about 2.7k commands (2,701 records;
#       the report counts 3,071 commands, those inside command groups
#       included), replayed ungrouped;
#   (b) a world-1,024 random history of about 8k commands (8,011 records;
#       9,107 commands) that all address the whole mesh (--whole-mesh),
#       replayed grouped (--group-workers).
# Each is replayed with --report-only, 5 times, by fastsim built from BEFORE
# (a commit; default b226dc5, the engine with Go maps on its per-command
# path) and from the work tree, in the JSON-lines form (.hist, as the
# reference reads) and the binary form (.fhist). The figure is the median
# CPU time (user + system) of the whole process, from getrusage; the ratio
# is the reference's time on the same kind of history over it (the least
# of the runs is given too: on a shared machine it is the steadiest). The Go
# benchmarks BenchmarkEngine* (bench/engine_test.go) give the same replays'
# CPU time inside one process, without the process start. Two floors show
# how much of a process's time is not the replay's: AFTER's replay of a
# history with a header and no command (world 1,024, grouped: the process
# start, package init, flags and report), and a Go program that only
# prints a line (what any Go process costs on this machine).
#
# The reference figures are measurements cited here, not re-run (the
# reference does not run on this machine): 63.3 s of CPU for (a) ungrouped;
# 2.17 s for its grouped mode at world 1,024 and 2k commands, which scales
# to about 8.7 s for the 8k commands of (b).
#
#   bench/engine.sh                 prints the table and replaces the "Engine
#                                   speed" section of bench/RESULTS.md between
#                                   its markers (bench/section.sh); its dated
#                                   ### subsections, after them, stay
#   BEFORE=<commit> bench/engine.sh compares with another commit
# Needs python3 (for getrusage) and git.
set -euo pipefail
cd "$(dirname "$0")/.."
before=${BEFORE:-b226dc5}
runs=${RUNS:-5}
work=$(mktemp -d)
trap 'git worktree remove --force "$work/before-src" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
go build -o "$work/after" ./cmd/fastsim
git worktree add --detach "$work/before-src" "$before" >/dev/null 2>&1
(cd "$work/before-src" && go build -o "$work/before" ./cmd/fastsim)

"$work/after" synth --random 1 --world 64 --commands 1800 "$work/w64.hist"
"$work/after" synth --random 1 --world 1024 --whole-mesh --commands 5500 "$work/w1024.hist"
# Each build reads the binary form it writes (the form has a version).
for h in w64 w1024; do
	"$work/after" convert "$work/$h.hist" "$work/$h.fhist"
	"$work/before" convert "$work/$h.hist" "$work/$h.before.fhist"
	cp "$work/$h.hist" "$work/$h.before.hist"
done

# cpu N FLAGS FILE: runs BEFORE's replay of FILE's before-form (the same
# history, written by BEFORE: FILE with ".before" before its extension)
# and AFTER's of FILE, N times each, taking turns (so that the load of a
# shared machine falls on both alike), and prints the median and least
# CPU seconds of each: before-median before-min after-median after-min.
cpu() {
	python3 - "$1" "$work/before" "$work/after" "${@:2}" <<'PY'
import os, resource, statistics, subprocess, sys
n, before, after, args = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
root, ext = os.path.splitext(args[-1])
files = {before: root + ".before" + ext, after: args[-1]}
ts = {before: [], after: []}
for _ in range(n):
    for b in (before, after):
        a = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([b, "replay", "--report-only"] + [x for x in args[:-1] if x] + [files[b]], check=True, stdout=subprocess.DEVNULL)
        e = resource.getrusage(resource.RUSAGE_CHILDREN)
        ts[b].append(e.ru_utime - a.ru_utime + e.ru_stime - a.ru_stime)
print(" ".join("%.4f %.4f" % (statistics.median(ts[b]), min(ts[b])) for b in (before, after)))
PY
}
# floor N CMD...: the median and least CPU seconds of N runs of CMD.
floor() {
	python3 - "$@" <<'PY'
import resource, statistics, subprocess, sys
n, cmd = int(sys.argv[1]), sys.argv[2:]
ts = []
for _ in range(n):
    a = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    e = resource.getrusage(resource.RUSAGE_CHILDREN)
    ts.append(e.ru_utime - a.ru_utime + e.ru_stime - a.ru_stime)
print("%.4f %.4f" % (statistics.median(ts), min(ts)))
PY
}
commands() { "$work/after" replay --report-only "$@" | sed -n 's/^commands replayed *\([0-9]*\) on .*/\1/p'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.0f", a/b}'; }

load=$(cut -d' ' -f1-3 /proc/loadavg)
rows=()
for spec in "w64|ungrouped|63.3|" "w1024|grouped|8.7|--group-workers"; do
	IFS='|' read -r h mode ref flag <<<"$spec"
	for form in hist fhist; do
		f=$work/$h.$form
		n=$(commands $flag "$f")
		read -r b bmin a amin <<<"$(cpu "$runs" "$flag" "$f")"
		rows+=("| $h random$([ "$h" = w1024 ] && echo ', whole mesh') | $form | $mode | $n | $b ($bmin) | $a ($amin) | $(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.2f", b/a}') | $ref | $(ratio "$ref" "$b")x | $(ratio "$ref" "$a")x ($(ratio "$ref" "$amin")x) |")
	done
done
echo '{"fastsim":"history","version":1,"world_size":1024}' >"$work/empty.hist"
mkdir "$work/hello"
printf 'package main\n\nimport "os"\n\nfunc main() { os.Stdout.WriteString("hello\\n") }\n' >"$work/hello/main.go"
printf 'module hello\n\ngo 1.26\n' >"$work/hello/go.mod"
(cd "$work/hello" && go build -o "$work/hello-go" .)
read -r empty emptymin <<<"$(floor $((runs * 4)) "$work/after" replay --report-only --group-workers "$work/empty.hist")"
read -r hello hellomin <<<"$(floor $((runs * 4)) "$work/hello-go")"
bench=$(go test -run '^$' -bench 'Engine' -benchtime 20x ./bench | awk '/^BenchmarkEngine/ {for (i = 1; i <= NF; i++) if ($(i+1) == "cpu-ns/op") printf "- `%s`: %.1f ms of CPU a run in one process\n", $1, $i / 1e6}')

section=$(
	echo "## Engine speed"
	echo
	echo "Measured by \`bench/engine.sh\` on $(date -u +%Y-%m-%d): $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(go version | cut -d' ' -f3)."
	echo "Histories: \`fastsim synth --random 1 --world 64 --commands 1800\` (ungrouped) and \`fastsim synth --random 1 --world 1024 --whole-mesh --commands 5500\` (grouped), each also converted to the binary form; replays with \`fastsim replay --report-only\`. CPU seconds (user + system) of the whole process, median of $runs runs (least in brackets), before and after taking turns; before: built from $before, after: this tree. Load average when the runs began: $load (the machine is shared; CPU time grows with its load)."
	echo "Reference: the reference simulator's CPU time on the same kind of history, cited (not re-run here: it does not run on this machine): 63.3 s ungrouped at world 64 and 2.7k commands; grouped, 2.17 s at world 1,024 and 2k commands, scaled to 8k commands: 8.7 s."
	echo
	echo "| history | form | mode | commands | before s | after s | before / after (medians) | reference s | reference / before | reference / after |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
	echo
	echo "Floors (median of $((runs * 4)) runs, least in brackets): after's replay of a history with a header and no command (world 1,024, \`--report-only --group-workers\`: process start, package init, flags, report): $empty s ($emptymin); a Go program that only prints a line: $hello s ($hellomin)."
	echo
	echo "In one process (\`go test -run '^\$' -bench Engine -benchtime 20x ./bench\`, after; no process start, same histories made in memory; DecodeOnly: decoding alone, so a replay less its DecodeOnly is the engine's share):"
	echo
	echo "$bench"
)
echo "$section"
out=bench/RESULTS.md
# Only the generated part, between its markers, is replaced: the dated
# subsections after it and every other section are kept byte for byte.
echo "$section" | bench/section.sh "$out" engine-speed
echo "wrote the engine-speed section of $out"
