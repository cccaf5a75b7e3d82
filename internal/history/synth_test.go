package history_test

import (
	"io"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/synth"
)

func init() {
	history.SetSynth(synth.Random, func(w io.Writer, pp, dp, tp, layers, hidden, seq, batch, micro, steps int) error {
		return synth.WriteTrain(w, synth.Train{PP: pp, DP: dp, TP: tp, Layers: layers, Hidden: hidden, Seq: seq, Batch: batch, Micro: micro, Steps: steps})
	})
}
