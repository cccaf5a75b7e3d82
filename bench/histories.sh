# Sourced by the bench scripts: the world-65,536 training histories of
# bench/scale.sh (pp 8, dp 1024, tp 8, 32 layers, 4 microbatches), kept in
# $work between runs.
#
# history NAME COMMANDS: $work/NAME.hist.zst with at least COMMANDS
# commands (whole steps), synthesized by $now, and its binary form
# $work/NAME.fhist.zst written by $now's convert (rewritten when RECONVERT=1
# or when $now refuses it: a binary form of another version).
history() {
	local name=$1 cmds=$2
	local args=(--pp 8 --dp 1024 --tp 8 --layers 32 --micro 4 --batch 4096 --hidden 4096 --seq 2048)
	if [ ! -f "$work/$name.hist.zst" ]; then
		local per steps
		per=$("$now" synth "${args[@]}" --steps 1 - | wc -l)
		steps=$(((cmds + per - 1) / per))
		"$now" synth "${args[@]}" --steps "$steps" - | zstd -q -f -T2 -o "$work/$name.hist.zst.tmp"
		mv "$work/$name.hist.zst.tmp" "$work/$name.hist.zst"
	fi
	if [ ! -f "$work/$name.fhist.zst" ] || [ "${RECONVERT:-0}" = 1 ] ||
		! "$now" replay --decode-only "$work/$name.fhist.zst" >/dev/null 2>&1; then
		"$now" convert --quiet "$work/$name.hist.zst" "$work/$name.fhist.zst"
		rm -f "$work/$name.fhist"
	fi
}

# sized_history SIZE: the history of SIZE commands (1M or 10M) by
# `history`, its name left in $name.
sized_history() {
	local cmds
	case $1 in
	1M) cmds=1000000 ;;
	10M) cmds=10000000 ;;
	*) echo "size: want 1M or 10M, got $1" >&2; exit 2 ;;
	esac
	name=w65536-$1
	history "$name" "$cmds"
}
