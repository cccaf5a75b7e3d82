package history

import "io"

// Synthetic histories for this package's tests come from internal/synth,
// which writes through this package's Writer; so the package's own tests
// cannot import it, and synth_test.go (an external test) hands them its
// writers through SetSynth.
var (
	writeRandom func(w io.Writer, seed uint64, world, commands int) error
	writeTrain  func(w io.Writer, c trainShape) error
)

// trainShape is a toy training job (synth.Train): pipeline stages, data
// replicas, tensor shards, layers, hidden size, sequence length, batch,
// microbatches and steps.
type trainShape struct{ PP, DP, TP, Layers, Hidden, Seq, Batch, Micro, Steps int }

// SetSynth installs synth's writers of random histories and toy training
// jobs.
func SetSynth(random func(w io.Writer, seed uint64, world, commands int) error,
	train func(w io.Writer, pp, dp, tp, layers, hidden, seq, batch, micro, steps int) error) {
	writeRandom = random
	writeTrain = func(w io.Writer, c trainShape) error {
		return train(w, c.PP, c.DP, c.TP, c.Layers, c.Hidden, c.Seq, c.Batch, c.Micro, c.Steps)
	}
}

// ZstdSync reports whether r decompresses synchronously (startZstd's
// choice for the binary form).
func (r *Reader) ZstdSync() bool { return r.dec != nil && r.dec == r.dec1 }
