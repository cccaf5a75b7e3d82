package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/jsonpos"
	"github.com/fastsim/fastsim/internal/monarch"
	"github.com/fastsim/fastsim/internal/sched"
)

// pricing is build, plus Monarch timing files: a --costs file in that form
// ({timing_key: microseconds}, or a catalogue written by 'fastsim ops
// --json', told apart by its content) prices each task whose key it holds,
// and the model the other flags ask for (--hardware, else the reference's
// fixed runtimes) the rest. It returns the model to give the engine (nil:
// the fixed runtimes), the fastsim cost model inside it if any (for the
// hardware model's warnings), an id naming the pricing, and the controller.
func (f pricingFlags) pricing() (sched.CostModel, *costs.Model, string, sched.Controller, error) {
	if *f.costs != "" && *f.costs != "reference" {
		data, err := costs.ReadFile(*f.costs)
		if err != nil {
			return nil, nil, "", 0, fmt.Errorf("--costs: %w", err)
		}
		if monarch.IsTiming(data) {
			t, err := monarch.ParseTiming(data)
			if err != nil {
				return nil, nil, "", 0, fmt.Errorf("--costs: %w", jsonpos.InFile(*f.costs, err))
			}
			rest := f
			none := ""
			rest.costs = &none
			cm, id, ctl, err := rest.build()
			if err != nil {
				return nil, nil, "", 0, err
			}
			var base sched.CostModel = sched.DefaultCosts()
			if cm != nil {
				base = cm
			}
			tm, err := monarch.NewModel(t, base)
			if err != nil {
				return nil, nil, "", 0, fmt.Errorf("--costs: %s: %w", *f.costs, err)
			}
			sum := sha256.Sum256(data)
			return tm, cm, "timing:sha256:" + hex.EncodeToString(sum[:]) + "+" + id, ctl, nil
		}
	}
	cm, id, ctl, err := f.build()
	if err != nil || cm == nil {
		return nil, nil, id, ctl, err // a nil interface, not a nil *costs.Model
	}
	return cm, cm, id, ctl, nil
}
