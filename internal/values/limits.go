package values

// Limits on the values that come from input, whatever their form.
const (
	// MaxSliceDims is the most dimensions a slice of ranks may have.
	MaxSliceDims = 32
	// MaxSliceRanks is the most ranks one slice may enumerate (with repeats).
	MaxSliceRanks = 1 << 24
	// MaxShapeDims is the most dimensions a tensor shape may have.
	MaxShapeDims = 64
	// MaxWorldSize is the most ranks a history's world may have.
	MaxWorldSize = 1 << 24
	// MaxRankSlices is the most slices one record's "ranks" may list.
	MaxRankSlices = 1 << 16
	// MaxTensors is the most distinct tensor ids a Registry holds.
	MaxTensors = 1 << 28
)
