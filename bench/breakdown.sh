#!/usr/bin/env bash
# Where one rank's training step goes, by class of kernel: the history of
# one data-parallel replica of a Narayanan et al. (SC'21) Table 1 row as
# the validation predicts it (full recomputation, fp32 loss, 16-bit
# gradients as the fp16 param.grad of 2021 (--fp16-grads), Megatron-LM's
# 2021 layer norm), priced by `fastsim ops
# --hardware a100-80gb` and summed per rank (bench/VALIDATION.md, "The
# Narayanan Table 1 gap"). The sums leave out the set-up (the fp32 state's
# zeros) and the data-parallel all-reduce, which PyTorch DDP overlaps with
# the backward; they add up each kernel's own time, so they are not a
# timeline: the replayed step of the same history is printed after them.
# With BEFORE=1 the layer norms are ATen's (the history before
# --apex-layer-norm); with FP32GRADS=1 the gradients accumulate into a
# zeroed fp32 buffer (the history before --fp16-grads). PyTorch DDP's
# bucket copies run only with data parallelism: they are summed apart,
# from a history of two replicas (dp 2), and not counted in the total.
#
# Usage: bench/breakdown.sh [ROW]    ROW: 1.7b, 3.6b, 7.5b (default), 18b
set -euo pipefail
cd "$(dirname "$0")/.."
row=${1:-7.5b}
case "$row" in
1.7b) tp=1 gb=16 mb=16 ;;
3.6b) tp=2 gb=16 mb=16 ;;
7.5b) tp=4 gb=16 mb=16 ;;
18b) tp=8 gb=32 mb=8 ;;
*)
	echo "bench/breakdown.sh: row $row: want 1.7b, 3.6b, 7.5b or 18b" >&2
	exit 2
	;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/fastsim" ./cmd/fastsim

# classes FILE: the per-rank sums of FILE's `fastsim ops --top 0` listing.
classes() {
	"$work/fastsim" ops --hardware a100-80gb --top 0 "$1" | awk -v ranks="$tp" '
	NR > 1 && $1 ~ /^[0-9]+$/ {
		k = $4; ms = $3 / ranks / 1000
		if (k ~ /aten\.zeros:/ && k ~ /float32$/) next # set-up of the fp32 state
		c = "elementwise and norms on b*s*h"
		if (k ~ /aten\.mm(\.out)?:/) c = "GEMMs (mm)"
		else if (k ~ /aten\.bmm:/) c = "attention bmm"
		else if (k ~ /^Reduce|^SendTensor|^Borrow/) c = "collectives and transfers"
		else if (k ~ /x2048x2048\)/) c = "elementwise on b*a*s^2/t"
		else if (k ~ /fused_adam|_foreach_|aten\._to_copy:\([0-9]+\):bfloat16$/) c = "optimizer"
		else if (k ~ /nll_loss|log_softmax|amax|logsumexp|gather|embedding|ones_like|int64|x51200\)|x25600\)|x12800\)|x6400\)/) c = "loss and embedding"
		sum[c] += ms; total += ms
	}
	END {
		for (c in sum) printf "%-32s %10.1f ms\n", c, sum[c]
		printf "%-32s %10.1f ms\n", "total", total
	}' | sort
}

# ddp FILE: the per-rank sum of PyTorch DDP's bucket copies (one
# dimension: a group's flat gradient) in FILE, a history of dp 2.
ddp() {
	"$work/fastsim" ops --hardware a100-80gb --top 0 "$1" | awk -v ranks="$((2 * tp))" '
	NR > 1 && $1 ~ /^[0-9]+$/ && $4 ~ /aten\.(mul\.out|copy_):\([0-9]+\)(x\([0-9]+\))?:/ { sum += $3 / ranks / 1000 }
	END { printf "%-32s %10.1f ms\n", "DDP bucket copies (dp > 1)", sum }'
}

synth() { # OUT [FLAGS...]
	out=$1
	shift
	"$work/fastsim" synth --model "megatron-$row" --tp "$tp" --pp 1 --dp 1 --global-batch "$gb" --micro-batch "$mb" \
		--recompute full --fp32-cross-entropy --half-grad-reduce --steps 1 --command-ns -1 "$@" "$out" >/dev/null
}
flags=()
if [ "${BEFORE:-0}" != 1 ]; then
	flags+=(--apex-layer-norm)
fi
if [ "${FP32GRADS:-0}" != 1 ]; then
	flags+=(--fp16-grads)
fi
synth "$work/row.hist" ${flags[@]+"${flags[@]}"}
echo "megatron-$row, tp $tp, microbatch $mb, $((gb / mb)) microbatch(es) a step, one rank (load $(cut -d' ' -f1-3 /proc/loadavg))"
classes "$work/row.hist"
if [ "${FP32GRADS:-0}" != 1 ]; then
	synth "$work/dp2.hist" ${flags[@]+"${flags[@]}"} --dp 2 --global-batch $((2 * gb))
	ddp "$work/dp2.hist"
fi
"$work/fastsim" replay --hardware a100-80gb --controller none --report-only --summary-json "$work/row.json" "$work/row.hist" >/dev/null
step=$(grep -o '"exec_time_s": *[0-9.e+-]*' "$work/row.json" | sed 's/.*: *//')
awk -v a="$step" 'BEGIN { printf "replayed (the set-up included): %.1f ms\n", a * 1000 }'
