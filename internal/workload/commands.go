package workload

import (
	"fmt"
	"math"
)

// commandsPerUnit bounds the commands that advance the controller's clock
// per unit of commandBound. The most the generator writes is about 121
// per layer pass (one microbatch's forward or backward of one layer) with
// ZeRO 3, full recomputation and tensor parallelism (the FeatureLayouts
// job with Zero 3 and RecomputeFull, with its layers doubled: 23,292 more
// commands for 96 more microbatch-layers, forward and backward). A unit
// holds both passes (about 242), so 1,024 leaves a factor of four;
// TestCommandBoundHolds checks it against every FeatureLayouts job. The
// bound is loose on purpose (on most layouts a hundred times the count:
// a collective per group shares one time, and most passes write far
// fewer commands): it only has to keep times from wrapping, so it may
// refuse a job whose --command-ns is absurdly large a little early.
const commandsPerUnit = 1024

// commandBound is an upper bound on the commands of j's history that
// advance the controller's clock (CommandNs each). Per step, the
// generator writes each microbatch's forward and backward of every layer
// (m x layers microbatch-layers over all stages, recomputation included)
// and of each stage's chunk ends (the embedding, the head, a transfer:
// m x 2 x pp x chunks), then each stage's optimizer over its parameter
// groups (at most layers + 3 per stage); once, it writes the streams and
// the parameters (pp stages, layers layers). A collective written once
// per tensor- or data-parallel group shares one time (emitter.reduceEach),
// so the count does not grow with tp or dp. Every term is at most
// (steps+1) x (m+1) x (layers + 2 x pp x chunks + 3 x pp) units. It is a
// float64: the product of the limits passes 2^63.
func (j *Job) commandBound() float64 {
	units := float64(j.Model.Layers) + 2*float64(j.VStages()) + 3*float64(j.PP)
	return commandsPerUnit * float64(j.Steps+1) * float64(j.Micro()+1) * units
}

// checkCommandTimes refuses a job whose last command would be sent past
// the largest time, 2^63 ns: its timestamps would wrap and go backwards.
func (j *Job) checkCommandTimes() error {
	ns := j.CommandNs
	if ns == 0 {
		ns = 20_000 // the default, as emitStats sets it
	}
	if ns < 0 {
		return nil // every command at time 0
	}
	if n := j.commandBound(); n*float64(ns) >= math.MaxInt64 {
		return fmt.Errorf("%w: up to %.3g commands %d ns apart end past the largest time (2^63 ns)", ErrJob, n, ns)
	}
	return nil
}
