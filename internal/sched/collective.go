package sched

import "github.com/fastsim/fastsim/gen"

// Collective is the communication pattern of a transfer.
type Collective uint8

// Collectives, by what they really do (not the trace's labels).
const (
	AllReduce Collective = iota + 1
	ReduceScatter
	AllGather
	AllToAll
	PointToPoint
	Broadcast
)

func (c Collective) String() string {
	switch c {
	case AllReduce:
		return "all-reduce"
	case ReduceScatter:
		return "reduce-scatter"
	case AllGather:
		return "all-gather"
	case AllToAll:
		return "all-to-all"
	case PointToPoint:
		return "point-to-point"
	case Broadcast:
		return "broadcast"
	}
	return "invalid"
}

// ReduceCollective is the collective a Reduce performs, the one place a
// Reduce is classified: reduction "stack" gathers (all-gather; with scatter,
// all-to-all); any other reduction reduces (with scatter, reduce-scatter;
// else all-reduce). Cost models price it; the trace labels it (reduceLabel).
func ReduceCollective(r *gen.Reduce) Collective {
	switch {
	case r.Reduction == "stack" && r.Scatter:
		return AllToAll
	case r.Reduction == "stack":
		return AllGather
	case r.Scatter:
		return ReduceScatter
	}
	return AllReduce
}

// reduceLabel is the trace's name of a Reduce performing c: the
// reference's labels, kept as they are, swap all-reduce and
// reduce-scatter.
func reduceLabel(c Collective) string {
	switch c {
	case AllToAll:
		return "all_to_all"
	case AllGather:
		return "all_gather"
	case ReduceScatter:
		return "all_reduce"
	}
	return "reduce_scatter"
}
