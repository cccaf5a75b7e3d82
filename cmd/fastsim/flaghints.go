package main

import "strings"

// mechanismHint is search's answer to a mechanism flag of predict and synth.
const mechanismHint = "search trains every layout with none of the mechanism flags, as PyTorch would (fastsim predict takes them, for one layout)"

// flagHints says, per command, what to give instead of a flag it does not
// define but a sibling command does: a user who learnt synth's --dp, or
// predict's --tp, is told where that choice lives here.
var flagHints = map[string]map[string]string{
	"predict": {
		"dp":            "predict takes --world; dp is --world / (--tp x --pp)",
		"steps":         "predict replays two steps and reports the second's time",
		"gpus-per-host": "the GPUs of a host come from --hardware (host.gpus_per_host in a spec FILE)",
		"costs":         "predict prices on --hardware; fastsim replay --costs FILE replays a history written by fastsim synth",
		"controller":    "predict runs with no controller cost, as an SPMD job",
		"batch":         "predict's global batch is --global-batch",
		"micro":         "predict's microbatch size is --micro-batch; microbatches = global batch / (micro-batch x dp)",
		"max-tp":        "predict answers for one layout (--tp, --pp); fastsim search ranks them",
	},
	"search": {
		"tp":                     "search tries every tp, pp and dp of --world (--max-tp bounds tp); fastsim predict answers for one layout",
		"pp":                     "search tries every tp, pp and dp of --world (--max-tp bounds tp); fastsim predict answers for one layout",
		"dp":                     "search tries every tp, pp and dp of --world (--max-tp bounds tp); fastsim predict answers for one layout",
		"micro-batch":            "search tries every microbatch size (--max-micro bounds the microbatches)",
		"ffn":                    "a GPT of --hidden has an MLP of 4 x hidden; a --model FILE gives its own ffn",
		"grad-reduce":            mechanismHint,
		"half-grad-reduce":       mechanismHint,
		"fuse-grad-accumulation": mechanismHint,
		"blocking-p2p":           mechanismHint,
		"fp32-cross-entropy":     mechanismHint,
		"apex-layer-norm":        mechanismHint,
		"fp16-grads":             mechanismHint,
		"no-scatter-gather":      mechanismHint,
	},
}

// flagHint returns what to say after the flag package's error err for the
// command cmd: "" or ": " and a hint.
func flagHint(cmd string, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return ""
	}
	if h := flagHints[cmd][strings.TrimPrefix(name, "-")]; h != "" {
		return ": " + h
	}
	return ""
}
