package jsonl

// Limits on everything that comes from input.
const (
	// MaxDepth is the deepest nesting of objects and arrays in one line.
	MaxDepth = 64
	// MaxLineBytes is the longest line a history reader accepts (256 MiB).
	MaxLineBytes = 256 << 20
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
	// MaxInterned is the most distinct strings a Scanner interns; more are
	// copied instead (one allocation each).
	MaxInterned = 1 << 16
	// MaxInternedBytes is the longest string a Scanner interns.
	MaxInternedBytes = 256
)
