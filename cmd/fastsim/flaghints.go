package main

import (
	"flag"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"
)

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
		"tp":          "search tries every tp, pp and dp of --world (--max-tp bounds tp); fastsim predict answers for one layout",
		"pp":          "search tries every tp, pp and dp of --world (--max-tp bounds tp); fastsim predict answers for one layout",
		"dp":          "search tries every tp, pp and dp of --world (--max-tp bounds tp); fastsim predict answers for one layout",
		"micro-batch": "search tries every microbatch size (--max-micro bounds the microbatches)",
		"ffn":         "a GPT of --hidden has an MLP of 4 x hidden; a --model FILE gives its own ffn",
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

// badValue matches the flag package's error for a value its flag cannot
// parse: the value quoted, the flag's name and the parser's word
// ("parse error", "value out of range").
var badValue = regexp.MustCompile(`^invalid (?:boolean )?value ("(?:[^"\\]|\\.)*") for (?:flag )?-([^:\s]+): (.*)$`)

// valueError rewrites the flag package's error for a bad value of a flag
// of fs, which names neither the flag as it is written (--jobs) nor what
// was wanted ("invalid value "x" for flag -jobs: parse error"), as
// `--jobs "x": want an integer`; other errors are returned as they are.
func valueError(fs *flag.FlagSet, err error) string {
	// A flag given last with no value ("flag needs an argument: -tp").
	if name, ok := strings.CutPrefix(err.Error(), "flag needs an argument: -"); ok {
		if f := fs.Lookup(name); f != nil {
			if g, ok := f.Value.(flag.Getter); ok {
				if want := wantOf(g, false); want != "" {
					return fmt.Sprintf("--%s needs a value: want %s", name, want)
				}
			}
			return fmt.Sprintf("--%s needs a value", name)
		}
		return err.Error()
	}
	m := badValue.FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	value, name, why := m[1], m[2], m[3]
	f := fs.Lookup(name)
	if f == nil {
		return err.Error()
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return err.Error()
	}
	want := wantOf(g, why == "value out of range")
	if want == "" {
		return err.Error()
	}
	return fmt.Sprintf("--%s %s: want %s", name, value, want)
}

// wantOf says what a flag of g's type takes ("" for a string or a type of
// its own), and for a value out of range, the range.
func wantOf(g flag.Getter, outOfRange bool) string {
	want := ""
	switch g.Get().(type) {
	case bool:
		want = "true or false"
	case int, int64:
		want = "an integer"
		if outOfRange {
			want = fmt.Sprintf("an integer from %d to %d", math.MinInt64, math.MaxInt64)
			if _, isInt := g.Get().(int); isInt {
				want = fmt.Sprintf("an integer from %d to %d", math.MinInt, math.MaxInt)
			}
		}
	case uint, uint64:
		want = "an integer of 0 or more"
		if outOfRange {
			want = fmt.Sprintf("an integer from 0 to %d", uint64(math.MaxUint64))
			if _, isUint := g.Get().(uint); isUint {
				want = fmt.Sprintf("an integer from 0 to %d", uint64(math.MaxUint))
			}
		}
	case float64:
		want = "a number, such as 80, 0.5 or 1e9"
		if outOfRange {
			want = fmt.Sprintf("a number of magnitude at most %.4g", math.MaxFloat64)
		}
	case time.Duration:
		want = "a duration, such as 300ms, 90s or 1.5h"
	}
	return want
}
