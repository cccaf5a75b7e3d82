package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fastsim/fastsim/internal/replay"
)

// parseStepRange reads --trace-steps: "A:B" (steps A to B), "A" (step A
// alone), "A:" (A to the end) or ":B" (the start to B), steps counted from 0.
func parseStepRange(s string) (*replay.StepRange, error) {
	lo, hi, colon := strings.Cut(s, ":")
	num := func(v string, def int) (int, error) {
		if v == "" && colon {
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a step number (want 0 or more)", v)
		}
		return n, nil
	}
	first, err := num(lo, 0)
	if err != nil {
		return nil, err
	}
	last := first
	if colon {
		if last, err = num(hi, int(^uint(0)>>1)); err != nil {
			return nil, err
		}
	}
	if last < first {
		return nil, fmt.Errorf("%q: the last step comes before the first", s)
	}
	return &replay.StepRange{First: first, Last: last}, nil
}
