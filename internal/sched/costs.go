package sched

import (
	"slices"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/values"
)

// CostModel prices the tasks of a command. The engine asks once per command,
// not once per rank, so a model may do real work (look up a table, apply a
// formula); every rank of the command gets the same runtime, which keeps
// grouped and ungrouped replays identical.
type CostModel interface {
	// CallRuntimeNs is the runtime of a function; name is its clean name
	// (aten.mm), inputs its distinct tensor inputs.
	CallRuntimeNs(m *gen.CallFunction, name string) int64
	// ReduceRuntimeNs is the runtime of a collective.
	ReduceRuntimeNs(m *gen.Reduce, c Comm) int64
	// SendRuntimeNs is the runtime of a SendTensor: a local copy when c.Local,
	// else each send and receive of a point-to-point transfer.
	SendRuntimeNs(m *gen.SendTensor, c Comm) int64
	// WaitRuntimeNs is the runtime of a stream waiting for another's event.
	WaitRuntimeNs() int64
}

// Comm describes a communication for a CostModel.
type Comm struct {
	Ranks       int64 // ranks taking part (for a send between slices: 2)
	SameHost    bool  // every rank of the command is on one host
	Local       bool  // a SendTensor whose from_ranks equal its to_ranks
	GPUsPerHost int64
	// Hosts is the number of hosts the collective's ranks occupy (rank r
	// is on host r / GPUsPerHost), and MaxPerHost the most ranks on any
	// one of them. They come from the command's slices, not from the
	// groups, so grouped and ungrouped replays see the same values. For
	// a send between slices: 1 and 2 when SameHost, else 2 and 1.
	Hosts      int64
	MaxPerHost int64
}

// CallRuntimeNs is the fixed function runtime.
func (c Costs) CallRuntimeNs(*gen.CallFunction, string) int64 { return c.CallFunctionNs }

// ReduceRuntimeNs is the fixed collective runtime.
func (c Costs) ReduceRuntimeNs(*gen.Reduce, Comm) int64 { return c.ReduceNs }

// SendRuntimeNs is the fixed send runtime, local or remote.
func (c Costs) SendRuntimeNs(_ *gen.SendTensor, cm Comm) int64 {
	if cm.Local {
		return c.SendLocalNs
	}
	return c.SendRemoteNs
}

// WaitRuntimeNs is the fixed event wait.
func (c Costs) WaitRuntimeNs() int64 { return c.EventWaitNs }

// SliceComm describes a collective over the ranks of slices ss, as the
// engine describes a Reduce sent to them, for pricing it outside a
// replay: the distinct ranks, whether they share a host, how many hosts
// they occupy and the most ranks on one (rank r is on host
// r/gpusPerHost; gpusPerHost <= 0: one host).
func SliceComm(ss []values.Slice, gpusPerHost int64) Comm {
	var rs []int64
	for i := range ss {
		rs = ss[i].AppendRanks(rs)
	}
	slices.Sort(rs)
	rs = slices.Compact(rs)
	c := Comm{GPUsPerHost: gpusPerHost, Ranks: int64(len(rs))}
	host := func(r int64) int64 {
		if gpusPerHost <= 0 {
			return 0
		}
		return r / gpusPerHost
	}
	run := int64(0)
	for i, r := range rs {
		if i == 0 || host(r) != host(rs[i-1]) {
			c.Hosts++
			run = 0
		}
		run++
		c.MaxPerHost = max(c.MaxPerHost, run)
	}
	c.SameHost = c.Hosts <= 1
	return c
}
