package costs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/fastsim/fastsim/internal/jsonpos"
	"github.com/fastsim/fastsim/internal/smallfile"
)

// Config is the JSON document of a --costs file. Every field is optional;
// the empty document {} prices exactly like sched.DefaultCosts. Unknown
// fields are errors, so a typo does not go unnoticed.
//
//	{
//	  "fixed": {"call_function_ns": 10000, "reduce_ns": 100000},
//	  "runtimes_ns": {
//	    "aten.mm": 250000,
//	    "aten.mm:(4096x4096)x(4096x4096):bfloat16": 1100000
//	  },
//	  "comm": {"intra_host_gbps": 150, "inter_host_gbps": 25}
//	}
type Config struct {
	// Fixed overrides the reference's runtime of a message kind; a field
	// left out keeps the reference's value.
	Fixed Fixed `json:"fixed"`
	// RuntimesNs prices CallFunction by function. A key is the clean name
	// (aten.mm), optionally refined: "NAME:SHAPES" or "NAME:SHAPES:DTYPE",
	// where SHAPES lists the shape of each distinct tensor input in order,
	// each in parentheses with dimensions joined by "x", the inputs joined
	// by "x" ("(4096x4096)x(4096x1024)"; a 0-d tensor is "()"), and DTYPE
	// is the inputs' dtype as the history writes it (bfloat16), or their
	// dtypes joined by "x" when they differ. The most specific key present
	// wins: NAME:SHAPES:DTYPE, then NAME:SHAPES, then NAME, then
	// fixed.call_function_ns.
	RuntimesNs map[string]int64 `json:"runtimes_ns"`
	// Comm, when present (even as {}), prices Reduce and remote
	// SendTensor with the communication model; its missing fields take
	// DefaultComm's values. Without it those use the fixed runtimes.
	Comm *Comm `json:"comm"`
}

// Fixed holds runtimes in nanoseconds, one per message kind; nil keeps the
// reference's value.
type Fixed struct {
	CallFunctionNs *int64 `json:"call_function_ns"` // reference: 10,000
	ReduceNs       *int64 `json:"reduce_ns"`        // reference: 100,000
	SendLocalNs    *int64 `json:"send_local_ns"`    // from_ranks == to_ranks; reference: 1,000
	SendRemoteNs   *int64 `json:"send_remote_ns"`   // reference: 100,000
	EventWaitNs    *int64 `json:"event_wait_ns"`    // reference: 500
	// KernelLaunchNs is accepted for completeness; it is CPU-side only and
	// does not affect results, as in the reference.
	KernelLaunchNs *int64 `json:"kernel_launch_ns"`
}

// Comm is the communication model's parameters. A field left at 0 takes
// DefaultComm's value.
type Comm struct {
	// IntraHostGBps is the effective per-GPU bandwidth between GPUs of one
	// host, in GB/s (1e9 bytes/s).
	IntraHostGBps float64 `json:"intra_host_gbps"`
	// IntraHostLatencyNs is the fixed cost of one intra-host operation.
	IntraHostLatencyNs int64 `json:"intra_host_latency_ns"`
	// InterHostGBps is the effective per-GPU bandwidth when the ranks span
	// hosts, in GB/s.
	InterHostGBps float64 `json:"inter_host_gbps"`
	// InterHostLatencyNs is the fixed cost of one inter-host operation.
	InterHostLatencyNs int64 `json:"inter_host_latency_ns"`
	// AllToAllContention multiplies the bytes an all-to-all moves (>= 1):
	// every rank sends to every other at once, and links and switches
	// do not reach the ring's efficiency.
	AllToAllContention float64 `json:"all_to_all_contention"`
}

// DefaultComm returns the communication model's defaults:
//
//   - intra-host 150 GB/s, 5 µs: NVLink 3 (A100) gives 300 GB/s per
//     direction per GPU (600 GB/s both ways) and nccl-tests reach a bus
//     bandwidth around 230 GB/s on large all-reduces within a DGX; 150 GB/s
//     is an effective figure for the medium (MB-scale) messages of a
//     training step, and 5 µs the per-operation overhead NCCL shows on
//     small messages within a node.
//   - inter-host 25 GB/s, 10 µs: one 200 Gb/s HDR InfiniBand (or RoCE) NIC
//     per GPU, as in a DGX A100, is 25 GB/s of line rate per GPU; crossing
//     the network adds latency over NVLink.
//   - all-to-all contention 1.5: all-to-all reaches noticeably less bus
//     bandwidth than the ring collectives on the same links.
func DefaultComm() Comm {
	return Comm{
		IntraHostGBps:      150,
		IntraHostLatencyNs: 5_000,
		InterHostGBps:      25,
		InterHostLatencyNs: 10_000,
		AllToAllContention: 1.5,
	}
}

// Limits on a costs file.
const (
	// MaxConfigBytes is the largest costs file read.
	MaxConfigBytes = 64 << 20
	// MaxRuntimes is the most entries of runtimes_ns.
	MaxRuntimes = 1 << 20
	// MaxKeyBytes is the longest key of runtimes_ns.
	MaxKeyBytes = 4096
	// MaxRuntimeNs is the largest runtime a cost model gives (about 36.5
	// years): a modelled time past it is clamped to it.
	MaxRuntimeNs = int64(1) << 60
	// MaxConfigRuntimeNs is the largest runtime or latency a costs file
	// may give (10^14 ns, about 28 hours, longer than any one kernel or
	// transfer runs). A stream's time is an int64 of nanoseconds, so it
	// overflows only after some 92,000 commands of this length; at
	// MaxRuntimeNs 8 of them overflowed it, and the error named a
	// history line rather than the costs file.
	MaxConfigRuntimeNs = int64(100_000_000_000_000)
)

// Parse reads a Config from JSON and builds its Model. An error in the
// JSON text is a *jsonpos.Error naming its line.
func Parse(data []byte) (*Model, error) {
	if len(data) > MaxConfigBytes {
		return nil, fmt.Errorf("%w: more than %d bytes, the most a costs file may hold", ErrConfig, MaxConfigBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, &jsonpos.Error{Line: jsonpos.Line(data, err), Err: fmt.Errorf("%w: %s", ErrConfig, jsonpos.Describe(data, err))}
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return nil, &jsonpos.Error{Line: jsonpos.Trailing(data, end), Err: fmt.Errorf("%w: trailing data after the JSON object", ErrConfig)}
	}
	if line, msg, dup := jsonpos.Duplicate(data); dup {
		return nil, &jsonpos.Error{Line: line, Err: fmt.Errorf("%w: %s", ErrConfig, msg)}
	}
	if path, err := c.check(); err != nil {
		return nil, &jsonpos.Error{Line: jsonpos.Key(data, path...), Err: err}
	}
	return build(c), nil
}

// ReadFile returns the text of the costs file at path, refusing one of
// more than MaxConfigBytes; errors name the file.
func ReadFile(path string) ([]byte, error) {
	data, err := smallfile.Read(path, MaxConfigBytes, "a costs file")
	if errors.Is(err, smallfile.ErrTooLarge) {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrConfig, err)
	}
	return data, err
}

// Load reads the costs file at path; errors name the file.
func Load(path string) (*Model, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := Parse(data)
	if err != nil {
		return nil, jsonpos.InFile(path, err)
	}
	return m, nil
}

// check validates c's values; path names the key of the value at fault
// ("fixed", "reduce_ns").
func (c *Config) check() (path []string, err error) {
	fixed := []struct {
		name string
		v    *int64
	}{
		{"call_function_ns", c.Fixed.CallFunctionNs},
		{"reduce_ns", c.Fixed.ReduceNs},
		{"send_local_ns", c.Fixed.SendLocalNs},
		{"send_remote_ns", c.Fixed.SendRemoteNs},
		{"event_wait_ns", c.Fixed.EventWaitNs},
		{"kernel_launch_ns", c.Fixed.KernelLaunchNs},
	}
	for _, f := range fixed {
		if f.v != nil && (*f.v < 0 || *f.v > MaxConfigRuntimeNs) {
			return []string{"fixed", f.name}, fmt.Errorf("%w: fixed.%s is %d, want 0..%d", ErrConfig, f.name, *f.v, MaxConfigRuntimeNs)
		}
	}
	if len(c.RuntimesNs) > MaxRuntimes {
		return []string{"runtimes_ns"}, fmt.Errorf("%w: runtimes_ns has %d entries, over the limit of %d", ErrConfig, len(c.RuntimesNs), MaxRuntimes)
	}
	// In key order, so that of several bad keys the same one is named
	// every time (a map's order is random).
	for _, k := range slices.Sorted(maps.Keys(c.RuntimesNs)) {
		v := c.RuntimesNs[k]
		switch {
		case k == "" || strings.HasPrefix(k, ":"):
			return []string{"runtimes_ns", jsonpos.Exact(k)}, fmt.Errorf("%w: runtimes_ns key %q has no function name", ErrConfig, k)
		case len(k) > MaxKeyBytes:
			return []string{"runtimes_ns", jsonpos.Exact(k)}, fmt.Errorf("%w: runtimes_ns key of %d bytes, over the limit of %d", ErrConfig, len(k), MaxKeyBytes)
		case strings.Count(k, ":") > 2:
			return []string{"runtimes_ns", jsonpos.Exact(k)}, fmt.Errorf("%w: runtimes_ns key %q: want NAME, NAME:SHAPES or NAME:SHAPES:DTYPE", ErrConfig, k)
		case v < 0 || v > MaxConfigRuntimeNs:
			return []string{"runtimes_ns", jsonpos.Exact(k)}, fmt.Errorf("%w: runtimes_ns[%q] is %d, want 0..%d", ErrConfig, k, v, MaxConfigRuntimeNs)
		}
	}
	if m := c.Comm; m != nil {
		switch {
		case !okGBps(m.IntraHostGBps):
			return []string{"comm", "intra_host_gbps"}, fmt.Errorf("%w: comm.intra_host_gbps is %g, want 1e-06 to 1e+09 GB/s (0: the default)", ErrConfig, m.IntraHostGBps)
		case !okGBps(m.InterHostGBps):
			return []string{"comm", "inter_host_gbps"}, fmt.Errorf("%w: comm.inter_host_gbps is %g, want 1e-06 to 1e+09 GB/s (0: the default)", ErrConfig, m.InterHostGBps)
		case m.IntraHostLatencyNs < 0 || m.IntraHostLatencyNs > MaxConfigRuntimeNs:
			return []string{"comm", "intra_host_latency_ns"}, fmt.Errorf("%w: comm latencies must be 0..%d ns (0: the default)", ErrConfig, MaxConfigRuntimeNs)
		case m.InterHostLatencyNs < 0 || m.InterHostLatencyNs > MaxConfigRuntimeNs:
			return []string{"comm", "inter_host_latency_ns"}, fmt.Errorf("%w: comm latencies must be 0..%d ns (0: the default)", ErrConfig, MaxConfigRuntimeNs)
		case m.AllToAllContention != 0 && m.AllToAllContention < 1:
			return []string{"comm", "all_to_all_contention"}, fmt.Errorf("%w: comm.all_to_all_contention is %g, want at least 1 (0: the default)", ErrConfig, m.AllToAllContention)
		}
	}
	return nil, nil
}

// okGBps reports whether v is a bandwidth a costs file may give: 0 (the
// default) or 1e-06 to 1e+09 GB/s, the range of a hardware spec's figures
// (a bandwidth of 1e-300 would price every transfer at the cost models'
// longest runtime, decades).
func okGBps(v float64) bool { return v == 0 || v >= 1e-6 && v <= 1e9 }
