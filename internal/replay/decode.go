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
	return decodeAll(r, began)
}

// DecodeOnlyReader is DecodeOnly on a history read from src; name labels
// errors.
func DecodeOnlyReader(src io.Reader, name string) (records int64, wall time.Duration, err error) {
	began := time.Now()
	r, err := history.NewReader(src, name)
	if err != nil {
		return 0, 0, err
	}
	return decodeAll(r, began)
}

func decodeAll(r *history.Reader, began time.Time) (records int64, wall time.Duration, err error) {
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
