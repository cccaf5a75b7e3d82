package golden

import "errors"

var (
	// ErrFormat reports input that is not in the expected shape.
	ErrFormat = errors.New("golden: bad format")
	// ErrLimit reports input beyond one of the package's limits.
	ErrLimit = errors.New("golden: limit exceeded")
	// ErrDuplicateRank reports a rank covered by two device processes.
	ErrDuplicateRank = errors.New("golden: rank in two device processes")
)
