package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"text/tabwriter"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/monarch"
	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
)

const opsUsage = `Usage: fastsim ops [flags] HISTORY

Lists the kinds of command HISTORY runs, keyed the way Monarch's simulator
keys its timing data (python/monarch/simulator/ir.py):

  CallFunction:{func}:{input_shapes}:{dtype}       CallFunction:aten.mm:(3x4)x(4x5):float32
  Reduce:{type}:{tensor_shape}:{dtype}:{devices}   Reduce:reduce_scatter:(1024x1024):float32:8
  SendTensor:{tensor_shape}:{dtype}                SendTensor:(512x512):float32
  BorrowCreate, BorrowFirstUse, BorrowLastUse, BorrowDrop

with how many tasks of each kind the workers run (rank by rank) and the
time the cost model (--costs) predicts for one, in microseconds. --json
writes Monarch's catalogue {"command_types": [...]} plus "timing":
{timing_key: microseconds}; edit the times (or fill them from a profiler)
and pass the file back with --costs to replay with them. With --json - the
catalogue goes to standard output and the table to standard error.

Flags:
`

func opsCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ops", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonPath := fs.String("json", "", "write the catalogue as JSON to `PATH` (Monarch's command_types, and a timing map)")
	top := fs.Int("top", 30, "show the `K` kinds with the most predicted time in the table (0: all)")
	grouped := fs.Bool("group-workers", false, "simulate identical ranks once (same results; for very large worlds)")
	mf := registerPricingFlags(fs)
	quiet := fs.Bool("quiet", false, "print no table and no progress line (errors still go to stderr)")
	positional, code := parseArgs(fs, stdout, opsUsage, args, 1, "exactly one HISTORY file")
	if code >= 0 {
		return code
	}
	if *top < 0 {
		fmt.Fprintf(stderr, "fastsim ops: --top %d: want 0 (every kind) or more\n", *top)
		return exitInput
	}
	if !checkDests("fastsim ops", stderr, []string{positional[0], *mf.costs, *mf.hardware}, dest{"--json", *jsonPath}) {
		return exitInput
	}
	stdout = reportTo(stdout, stderr, dest{"--json", *jsonPath})
	model, _, _, ctl, err := mf.pricing()
	if err != nil {
		fmt.Fprintf(stderr, "fastsim ops: %v\n", oneLine(err))
		return exitInput
	}
	if model == nil {
		model = sched.DefaultCosts()
	}
	progress := progressTo(stderr, *quiet)
	cat, err := catalogue(positional[0], model, ctl, *grouped, progress)
	if progress != nil {
		fmt.Fprint(progress, clearLine)
	}
	if err != nil {
		fmt.Fprintln(stderr, oneLine(err))
		var he *history.Error
		if errors.As(err, &he) || errors.Is(err, os.ErrNotExist) {
			return exitInput
		}
		return exitError
	}
	if *jsonPath != "" {
		err := writeAtomic(*jsonPath, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(cat)
		})
		if err != nil {
			fmt.Fprintf(stderr, "fastsim ops: --json: %v\n", err)
			return exitError
		}
	}
	if !*quiet {
		printCatalogue(stdout, cat, *top)
	}
	return exitOK
}

// catalogue replays the history at path ("-": standard input), recording
// each command kind as the replay reaches it; with progress, a progress
// line is drawn on stderr as replay draws it.
func catalogue(path string, model sched.CostModel, ctl sched.Controller, grouped bool, progress io.Writer) (*monarch.Catalogue, error) {
	b := monarch.NewBuilder(model)
	var rc monarch.RankCounter
	opt := replay.Options{Model: b.Model(), Grouped: grouped, Controller: ctl,
		EachCommand: func(rec *history.Record) { b.Record(&rec.Msg, rc.Count(rec.Ranks)) }}
	if _, err := replayInput(path, opt, progress); err != nil {
		return nil, err
	}
	return b.Catalogue(), nil
}

// printCatalogue prints the kinds with the most predicted time first.
func printCatalogue(w io.Writer, cat *monarch.Catalogue, top int) {
	rows := append([]monarch.CommandType(nil), cat.CommandTypes...)
	sort.SliceStable(rows, func(i, j int) bool {
		return float64(rows[i].Count)*rows[i].PredictedUs > float64(rows[j].Count)*rows[j].PredictedUs
	})
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tasks\tus each\tus total\t  timing key")
	for i, e := range rows {
		if top > 0 && i == top {
			fmt.Fprintf(tw, "\t\t\t  ... %d more kinds (--top 0 or --json lists them all)\n", len(rows)-top)
			break
		}
		varies := ""
		if e.Varies {
			varies = " (varies; the largest)"
		}
		// Plain decimals: a total of 2.1e+08 us is 212285400 in a column.
		// Runtimes are whole nanoseconds, so both figures are rounded to
		// them: a float product prints 62.568000000000005.
		us := func(v float64) string { return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64) }
		fmt.Fprintf(tw, "%d\t%s\t%s\t  %s%s\n", e.Count, us(e.PredictedUs), us(float64(e.Count)*e.PredictedUs), printable(e.TimingKey), varies)
	}
	tw.Flush()
}
