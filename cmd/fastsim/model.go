package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/fastsim/fastsim/internal/costs"
	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/jsonpos"
	"github.com/fastsim/fastsim/internal/sched"
)

// pricingFlags are the pricing flags replay and search share.
type pricingFlags struct {
	costs      *string
	hardware   *string
	controller *string
}

func registerPricingFlags(fs *flag.FlagSet) pricingFlags {
	return registerPricing(fs, "monarch", "")
}

// registerPricing registers the pricing flags with --controller's default
// ctl and, after its help, more (a sentence on that default).
func registerPricing(fs *flag.FlagSet, ctl, more string) pricingFlags {
	return pricingFlags{
		costs:      fs.String("costs", "", "price commands with the cost model in `FILE` (JSON; see examples/costs.json), or a\nMonarch timing file {timing_key: microseconds} (see fastsim ops), or\n'reference': the reference's fixed runtimes (the default without --hardware)"),
		hardware:   fs.String("hardware", "", "price commands on hardware `NAME|FILE`: a preset ("+strings.Join(hardware.Presets(), ", ")+")\nor a spec file (see 'fastsim hardware'): a roofline per ATen op, collectives from\nthe ranks' placement on hosts. With --costs FILE, the file's entries win"),
		controller: fs.String("controller", ctl, "what the controller's sending costs, `KIND` one of: monarch (tasks start no earlier\nthan their command's ts, as recorded) or none (SPMD: the controller clock stays 0)"+more),
	}
}

// build makes the cost model the flags ask for: nil for the reference's
// fixed runtimes, and an id naming it (for search's shard files).
func (f pricingFlags) build() (m *costs.Model, id string, ctl sched.Controller, err error) {
	ctl, err = sched.ParseController(*f.controller)
	if err != nil {
		return nil, "", 0, fmt.Errorf("--controller: %w", err)
	}
	id = "reference"
	switch *f.costs {
	case "reference":
		if *f.hardware != "" {
			return nil, "", 0, errors.New("--costs reference prices with the fixed runtimes and --hardware with the hardware: pick one")
		}
	case "":
	default:
		data, err := costs.ReadFile(*f.costs)
		if err != nil {
			return nil, "", 0, fmt.Errorf("--costs: %w", err)
		}
		m, err = costs.Parse(data)
		if err != nil {
			return nil, "", 0, fmt.Errorf("--costs: %w", jsonpos.InFile(*f.costs, err))
		}
		sum := sha256.Sum256(data)
		id = "sha256:" + hex.EncodeToString(sum[:])
	}
	if *f.hardware != "" {
		spec, err := hardware.Load(*f.hardware)
		if err != nil {
			return nil, "", 0, fmt.Errorf("--hardware: %w", err)
		}
		if m == nil {
			m = costs.Default()
			id = ""
		}
		if m, err = m.WithHardware(spec); err != nil {
			return nil, "", 0, fmt.Errorf("--hardware: %w", err)
		}
		data, _ := hardware.PresetJSON(*f.hardware)
		if data == nil {
			data, _ = hardware.ReadFile(*f.hardware)
		}
		sum := sha256.Sum256(data)
		id = strings.TrimPrefix(id+"+hardware:sha256:"+hex.EncodeToString(sum[:]), "+")
	}
	if ctl != sched.ControllerMonarch {
		id += "+controller:" + ctl.String()
	}
	return m, id, ctl, nil
}

// printUnknownOps warns of calls the hardware model priced by default.
func printUnknownOps(w io.Writer, m *costs.Model) {
	if m == nil || m.Roofline() == nil {
		return
	}
	n, names := m.Roofline().Unknown()
	if n == 0 {
		return
	}
	const shown = 8
	list := names
	if len(list) > shown {
		list = list[:shown]
	}
	more := ""
	if len(names) > shown {
		more = fmt.Sprintf(" and %d more", len(names)-shown)
	}
	fmt.Fprintf(w, "warning              %d calls to %d ops the hardware model does not know, priced as memory-bound on their tensors: %s%s\n",
		n, len(names), printable(strings.Join(list, ", ")), more)
}

// printHostMismatch warns when the history puts more ranks on a host than
// the hardware's hosts have GPUs: ranks are placed by the history's
// gpus_per_host, so NVLink would span more GPUs than a host has.
func printHostMismatch(w io.Writer, m *costs.Model, historyGPUsPerHost int64) {
	if m == nil || m.Roofline() == nil {
		return
	}
	s := m.Roofline().Spec()
	if historyGPUsPerHost > int64(s.Host.GPUsPerHost) {
		fmt.Fprintf(w, "warning              the history puts %d ranks on a host (gpus_per_host) but %s hosts have %d GPUs: collectives within a host were priced on NVLink across all %d\n",
			historyGPUsPerHost, s.Name, s.Host.GPUsPerHost, historyGPUsPerHost)
	}
}

const hardwareUsage = `Usage: fastsim hardware [NAME|FILE]

Without an argument, lists the built-in hardware presets. With a preset
name or a spec file, prints that spec as JSON (every figure with its
source); a printed preset is a starting point for a spec file of your own.
`

func hardwareCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hardware", flag.ContinueOnError)
	fs.SetOutput(stderr)
	positional, code := parseArgs(fs, stdout, hardwareUsage, args, -1, "")
	if code >= 0 {
		return code
	}
	switch len(positional) {
	case 0:
		for _, name := range hardware.Presets() {
			s, err := hardware.Preset(name)
			if err != nil {
				fmt.Fprintf(stderr, "fastsim hardware: %v\n", err)
				return exitError
			}
			g := s.GPU
			fmt.Fprintf(stdout, "%-10s  bf16 %6g TFLOP/s  HBM %5.1f GB at %.3f TB/s  NVLink %3g GB/s and NIC %4g GB/s per GPU each way\n            %s\n",
				name, g.PeakDenseTFLOPS["bf16"], g.HBMGB, g.HBMTBps, s.Host.NVLinkGBps, s.Network.NICGBpsPerGPU, s.Description)
		}
		return exitOK
	case 1:
		name := positional[0]
		if data, ok := hardware.PresetJSON(name); ok {
			stdout.Write(data)
			return exitOK
		}
		if _, err := hardware.Load(name); err != nil {
			fmt.Fprintf(stderr, "fastsim hardware: %v\n", oneLine(err))
			return exitInput
		}
		data, err := hardware.ReadFile(name)
		if err != nil {
			fmt.Fprintf(stderr, "fastsim hardware: %v\n", err)
			return exitInput
		}
		stdout.Write(data)
		return exitOK
	}
	fmt.Fprintln(stderr, "fastsim hardware: want at most one NAME or FILE")
	return exitInput
}
