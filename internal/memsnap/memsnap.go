// Package memsnap writes one simulated device's memory as a PyTorch CUDA
// memory snapshot: the pickle that torch.cuda.memory._dump_snapshot writes
// and pytorch.org/memory_viz opens.
//
// The layout is the one the docstring of torch.cuda.memory._snapshot
// documents (pytorch/pytorch, torch/cuda/memory.py): a dict
//
//	{"segments": [Segment, ...], "device_traces": [[TraceEntry, ...], ...]}
//
// where device_traces is indexed by CUDA device; a TraceEntry is
// {"action", "addr", "size", "stream", "frames"} with action "alloc",
// "free_requested" or "free_completed"; a Segment is {"device", "address",
// "total_size", "allocated_size", "active_size", "stream", "segment_type",
// "blocks"} and a Block {"address", "size", "requested_size", "state",
// "frames"}; a Frame {"filename", "line", "name"}. It is built the way
// torch/cuda/_memory_viz.py's _profile_to_snapshot builds a snapshot from
// allocation events alone: every allocation is an "alloc" entry, every
// release a "free_requested" then a "free_completed" entry, and the
// allocations still alive at the end are the active blocks of one segment,
// so the viewer can tell what existed before and after the trace.
//
// A simulated device has no allocator: addresses are invented (each
// allocation gets the next free range above a fixed base, never reused, so
// an address names one allocation), a release is matched with the oldest
// live allocation of the same size on the same stream (the engine releases a
// storage on the stream that allocated it), and the one frame of each entry
// names the stream. The device index is the rank's position on its host
// (rank mod gpus_per_host), as the process of that rank would number it.
package memsnap

import (
	"fmt"
	"io"
	"slices"

	"github.com/fastsim/fastsim/internal/pickle"
	"github.com/fastsim/fastsim/internal/sched"
)

// baseAddr is where the invented addresses start: any nonzero value works;
// this one is in the range CUDA device pointers usually take on Linux, so the
// viewer's address column looks familiar.
const baseAddr int64 = 0x7f0000000000

// Stats sums up what was written, for tests and messages.
type Stats struct {
	Device      int64 // the CUDA device index written
	Allocs      int64 // "alloc" entries
	Frees       int64 // "free_completed" entries (each after a "free_requested")
	LiveBytes   int64 // bytes still allocated at the end (the active blocks)
	PeakBytes   int64 // highest running total
	StreamNames []string
}

type live struct {
	addr, size int64
	stream     int
}

// Write writes the memory of the device simulating rank (its group, with
// grouped workers) to w. The engine must have kept its events.
func Write(w io.Writer, eng *sched.Engine, rank, gpusPerHost int64) (Stats, error) {
	if gpusPerHost < 1 {
		gpusPerHost = 1
	}
	st := Stats{Device: rank % gpusPerHost}
	next := baseAddr                  // the next invented address
	pending := map[[2]int64][]int64{} // (stream, size) -> live addresses, oldest first
	alive := map[int64]live{}         // live allocations by address
	pw := pickle.NewWriter(w)
	pw.BeginDict()
	pw.Key("device_traces")
	pw.BeginList()
	for d := int64(0); d < st.Device; d++ {
		pw.BeginList()
		pw.End()
	}
	pw.BeginList()
	var err error
	walk := eng.DeviceMemory(rank, func(stream int, streamName string, ns, delta, running int64) {
		if err != nil {
			return
		}
		for len(st.StreamNames) <= stream {
			st.StreamNames = append(st.StreamNames, "")
		}
		st.StreamNames[stream] = streamName
		st.PeakBytes = max(st.PeakBytes, running)
		if delta > 0 {
			addr := next
			next += delta
			k := [2]int64{int64(stream), delta}
			pending[k] = append(pending[k], addr)
			alive[addr] = live{addr, delta, stream}
			entry(pw, "alloc", addr, delta, stream, streamName)
			st.Allocs++
			return
		}
		k := [2]int64{int64(stream), -delta}
		q := pending[k]
		if len(q) == 0 {
			err = fmt.Errorf("memsnap: device %d releases %d bytes on stream %q with no such allocation live", rank, -delta, streamName)
			return
		}
		addr := q[0]
		if len(q) == 1 {
			delete(pending, k)
		} else {
			pending[k] = q[1:]
		}
		delete(alive, addr)
		entry(pw, "free_requested", addr, -delta, stream, streamName)
		entry(pw, "free_completed", addr, -delta, stream, streamName)
		st.Frees++
	})
	if walk != nil {
		return st, walk
	}
	if err != nil {
		return st, err
	}
	pw.End() // this device's trace
	for d := st.Device + 1; d < gpusPerHost; d++ {
		pw.BeginList()
		pw.End()
	}
	pw.End() // device_traces

	// One segment spans every address handed out: the allocations alive at
	// the end are its active blocks (in address order, which is allocation
	// order), the ranges between them inactive.
	pw.Key("segments")
	pw.BeginList()
	if next > baseAddr {
		addrs := make([]int64, 0, len(alive))
		for a, l := range alive {
			addrs = append(addrs, a)
			st.LiveBytes += l.size
		}
		slices.Sort(addrs)
		pw.BeginDict()
		for _, kv := range []struct {
			k string
			v int64
		}{
			{"device", st.Device}, {"address", baseAddr}, {"total_size", next - baseAddr},
			{"allocated_size", st.LiveBytes}, {"active_size", st.LiveBytes},
			{"requested_size", st.LiveBytes}, {"stream", 0},
		} {
			pw.Key(kv.k)
			pw.Int(kv.v)
		}
		pw.Key("segment_type")
		pw.String("large")
		pw.Key("blocks")
		pw.BeginList()
		at := baseAddr
		for _, a := range addrs {
			if a > at {
				block(pw, at, a-at, "inactive", "")
			}
			l := alive[a]
			block(pw, a, l.size, "active_allocated", st.StreamNames[l.stream])
			at = a + l.size
		}
		if next > at {
			block(pw, at, next-at, "inactive", "")
		}
		pw.End() // blocks
		pw.End() // segment
	}
	pw.End() // segments
	pw.End()
	return st, pw.Close()
}

// entry writes one TraceEntry.
func entry(pw *pickle.Writer, action string, addr, size int64, stream int, streamName string) {
	pw.BeginDict()
	pw.Key("action")
	pw.String(action)
	pw.Key("addr")
	pw.Int(addr)
	pw.Key("size")
	pw.Int(size)
	pw.Key("stream")
	pw.Int(int64(stream))
	pw.Key("frames")
	frames(pw, streamName)
	pw.End()
}

// block writes one Block of the segment.
func block(pw *pickle.Writer, addr, size int64, state, streamName string) {
	pw.BeginDict()
	pw.Key("address")
	pw.Int(addr)
	pw.Key("size")
	pw.Int(size)
	pw.Key("requested_size")
	pw.Int(size)
	pw.Key("state")
	pw.String(state)
	pw.Key("frames")
	if state == "inactive" {
		pw.BeginList()
		pw.End()
	} else {
		frames(pw, streamName)
	}
	pw.End()
}

// frames writes the one frame fastsim knows for an allocation: its stream.
func frames(pw *pickle.Writer, streamName string) {
	pw.BeginList()
	pw.BeginDict()
	pw.Key("filename")
	pw.String("fastsim")
	pw.Key("line")
	pw.Int(0)
	pw.Key("name")
	pw.String("stream " + streamName)
	pw.End()
	pw.End()
}
