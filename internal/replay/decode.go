package replay

import (
	"io"
	"time"

	"github.com/fastsim/fastsim/internal/history"
)

// DecodeOnly reads every record of the history at path (any form),
// decompressing and decoding it without simulating anything, and returns
// how many records it read and how long that took: the replay's floor.
func DecodeOnly(path string) (records int64, wall time.Duration, err error) {
	began := time.Now()
	r, err := history.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer r.Close()
	var rec history.Record
	for {
		err := r.Next(&rec)
		if err == io.EOF {
			return records, time.Since(began), nil
		}
		if err != nil {
			return records, time.Since(began), err
		}
		records++
	}
}
