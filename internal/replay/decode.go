package replay

import (
	"io"
	"time"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/values"
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
	reg := r.Registry()
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
		if !rec.IsStep {
			releaseDropped(reg, &rec.Msg)
		}
	}
}

// releaseDropped releases the borrow indexes the BorrowDrops of m (in a
// CommandGroup too) name. A replay's engine releases a borrow's index once
// no worker holds the borrow; with no engine, the drop is when, and
// without it the registry would hold every borrow the history ever made
// (about 900,000 indexes, 17 MB, in the 10M-command training history),
// growing and copying its tables, which a replay never does.
func releaseDropped(reg *values.Registry, m *gen.Msg) {
	switch m.Kind {
	case gen.MsgBorrowDrop:
		reg.ReleaseBorrow(m.BorrowDrop.BorrowIdx)
	case gen.MsgCommandGroup:
		releaseDroppedIn(reg, &m.CommandGroup.Commands)
	}
}

func releaseDroppedIn(reg *values.Registry, l *gen.Msgs) {
	for i := 0; i < l.Len(); i++ {
		switch l.Kind(i) {
		case gen.MsgBorrowDrop:
			reg.ReleaseBorrow(l.BorrowDropAt(i).BorrowIdx)
		case gen.MsgCommandGroup:
			releaseDroppedIn(reg, &l.CommandGroupAt(i).Commands)
		}
	}
}
