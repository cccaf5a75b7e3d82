package costs

import (
	"errors"
	"math"
	"strings"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/values"
)

// ErrConfig reports a costs file that cannot be used.
var ErrConfig = errors.New("bad costs file")

// Model is a sched.CostModel built from a Config. It is immutable and safe
// for concurrent use.
type Model struct {
	fixed    sched.Costs
	runtimes map[string]int64
	refined  map[string]bool // names that have NAME:... keys
	comm     Comm            // with defaults filled in
	hasComm  bool
	roof     *Roofline // prices calls the table does not, when set
	// built is set by every constructor: a zero Model (new(Model), a
	// composite literal) has none of the reference's fixed runtimes and
	// would price every command at 0 ns, so Check refuses it.
	built bool
}

// ErrZero reports a Model that no constructor built (a zero value).
var ErrZero = errors.New("a zero-value cost model prices every command at 0 ns: build it from a cost model's JSON (ParseCosts), or give none for the reference's fixed runtimes")

// Check reports whether m was built by a constructor (New, Parse,
// Default, NewWithHardware, WithHardware): a zero Model is refused with
// ErrZero rather than pricing every command at 0 ns.
func (m *Model) Check() error {
	if !m.built {
		return ErrZero
	}
	return nil
}

var (
	_ sched.CostModel = (*Model)(nil)
	_ sched.Counting  = (*Model)(nil)
)

// Default returns the model of the empty Config: the reference's runtimes.
func Default() *Model {
	m, _ := New(Config{})
	return m
}

// New builds the Model of c.
func New(c Config) (*Model, error) {
	if _, err := c.check(); err != nil {
		return nil, err
	}
	return build(c), nil
}

// build makes the Model of a checked Config.
func build(c Config) *Model {
	m := &Model{fixed: sched.DefaultCosts(), built: true}
	set := func(dst *int64, v *int64) {
		if v != nil {
			*dst = *v
		}
	}
	set(&m.fixed.CallFunctionNs, c.Fixed.CallFunctionNs)
	set(&m.fixed.ReduceNs, c.Fixed.ReduceNs)
	set(&m.fixed.SendLocalNs, c.Fixed.SendLocalNs)
	set(&m.fixed.SendRemoteNs, c.Fixed.SendRemoteNs)
	set(&m.fixed.EventWaitNs, c.Fixed.EventWaitNs)
	set(&m.fixed.KernelLaunchNs, c.Fixed.KernelLaunchNs)
	if len(c.RuntimesNs) > 0 {
		m.runtimes = make(map[string]int64, len(c.RuntimesNs))
		m.refined = make(map[string]bool)
		for k, v := range c.RuntimesNs {
			m.runtimes[k] = v
			if name, _, ok := strings.Cut(k, ":"); ok {
				m.refined[name] = true
			}
		}
	}
	if c.Comm != nil {
		m.hasComm = true
		m.comm = DefaultComm()
		if v := c.Comm.IntraHostGBps; v > 0 {
			m.comm.IntraHostGBps = v
		}
		if v := c.Comm.InterHostGBps; v > 0 {
			m.comm.InterHostGBps = v
		}
		if v := c.Comm.IntraHostLatencyNs; v > 0 {
			m.comm.IntraHostLatencyNs = v
		}
		if v := c.Comm.InterHostLatencyNs; v > 0 {
			m.comm.InterHostLatencyNs = v
		}
		if v := c.Comm.AllToAllContention; v > 0 {
			m.comm.AllToAllContention = v
		}
	}
	return m
}

// NewWithHardware builds the Model of c on hardware s: calls that the
// runtime table does not price go to the roofline (roofline.go), and
// collectives and remote sends to the hardware collective model
// (collective.go) unless c has a "comm" section, which still wins.
func NewWithHardware(c Config, s *hardware.Spec) (*Model, error) {
	m, err := New(c)
	if err != nil {
		return nil, err
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	m.roof = NewRoofline(s)
	return m, nil
}

// WithHardware returns a copy of m priced on hardware s (see
// NewWithHardware). The copy counts its own unknown ops.
func (m *Model) WithHardware(s *hardware.Spec) (*Model, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	c := &Model{fixed: m.fixed, runtimes: m.runtimes, refined: m.refined, comm: m.comm, hasComm: m.hasComm, built: m.built}
	c.roof = NewRoofline(s)
	return c, nil
}

// Roofline returns the model's roofline, nil without hardware.
func (m *Model) Roofline() *Roofline { return m.roof }

// Counted is how many calls the model has counted so far: those its
// roofline priced by its default for an unknown op (the engine applies a
// recorded pass as one step only if its recording counted none, since
// the step prices nothing; sched.Counting).
func (m *Model) Counted() int64 {
	if m.roof == nil {
		return 0
	}
	return m.roof.unknownCalls.Load()
}

// Fixed returns the fixed runtimes in effect.
func (m *Model) Fixed() sched.Costs { return m.fixed }

// CallRuntimeNs looks the function up in the runtime table, most specific
// key first, else charges the fixed CallFunction runtime.
func (m *Model) CallRuntimeNs(c *gen.CallFunction, name string) int64 {
	if m.runtimes == nil {
		return m.callDefault(c, name)
	}
	if m.refined[name] {
		var arr [256]byte
		key, dtypeAt := AppendKey(arr[:0], name, c.Args.Leaves)
		if dtypeAt > 0 {
			if v, ok := m.runtimes[string(key)]; ok {
				return v
			}
			if v, ok := m.runtimes[string(key[:dtypeAt-1])]; ok {
				return v
			}
		}
	}
	if v, ok := m.runtimes[name]; ok {
		return v
	}
	return m.callDefault(c, name)
}

// callDefault prices a call the runtime table does not: with the roofline
// when there is hardware, else at the fixed runtime.
func (m *Model) callDefault(c *gen.CallFunction, name string) int64 {
	if m.roof != nil {
		return m.roof.CallNs(c, name)
	}
	return m.fixed.CallFunctionNs
}

// AppendKey appends the refined table key of a call to dst:
// NAME:SHAPES:DTYPE over the distinct tensor inputs among leaves (by id,
// first occurrence order). It returns the key and the offset of DTYPE in
// it, 0 when there are no inputs (the key is then the name alone).
func AppendKey(dst []byte, name string, leaves []values.Tensor) ([]byte, int) {
	dst = append(dst, name...)
	dst, n := values.AppendShapes(append(dst, ':'), leaves)
	if n == 0 {
		return dst[:len(dst)-1], 0
	}
	dst = append(dst, ':')
	at := len(dst)
	first, mixed := "", false
	for i := range leaves {
		if i == 0 {
			first = leaves[i].Dtype
		} else if leaves[i].Dtype != first {
			mixed = true
		}
	}
	if !mixed {
		return append(dst, first...), at
	}
	n = 0
	for i := range leaves {
		if seenBefore(leaves, i) {
			continue
		}
		if n > 0 {
			dst = append(dst, 'x')
		}
		n++
		dst = append(dst, leaves[i].Dtype...)
	}
	return dst, at
}

// seenBefore reports whether leaves[i]'s tensor appears earlier. Calls have
// a handful of inputs, so a scan beats a set.
func seenBefore(leaves []values.Tensor, i int) bool {
	for j := 0; j < i; j++ {
		if leaves[j].ID == leaves[i].ID {
			return true
		}
	}
	return false
}

// ReduceRuntimeNs prices a collective with the communication model, or the
// fixed Reduce runtime without one.
func (m *Model) ReduceRuntimeNs(r *gen.Reduce, c sched.Comm) int64 {
	bytes := max(TensorBytes(&r.LocalTensor), TensorBytes(&r.Result))
	switch {
	case m.hasComm:
		return m.CollectiveNs(CollectiveOf(r), bytes, c.Ranks, c.SameHost)
	case m.roof != nil:
		return HardwareCollectiveNs(m.roof.spec, CollectiveOf(r), bytes, PlacementOf(c))
	}
	return m.fixed.ReduceNs
}

// SendRuntimeNs prices a local copy with the fixed runtime and a transfer
// between ranks as point-to-point with the communication model (or the
// fixed runtime without one).
func (m *Model) SendRuntimeNs(s *gen.SendTensor, c sched.Comm) int64 {
	switch {
	case c.Local && m.roof != nil:
		// A copy on the device: read and write the tensor once.
		g := &m.roof.spec.GPU
		b := float64(2 * TensorBytes(&s.Tensor))
		return Estimate{MemoryNs: b / (g.HBMTBps * 1e3 * g.MemoryEfficiency.At(b)), LaunchNs: g.LaunchOverheadNs}.Ns()
	case c.Local:
		return m.fixed.SendLocalNs
	case m.hasComm:
		return m.CollectiveNs(PointToPoint, TensorBytes(&s.Tensor), 2, c.SameHost)
	case m.roof != nil:
		p := Placement{Ranks: 2, Hosts: 2, MaxPerHost: 1}
		if c.SameHost {
			p.Hosts, p.MaxPerHost = 1, 2
		}
		return HardwareCollectiveNs(m.roof.spec, PointToPoint, TensorBytes(&s.Tensor), p)
	}
	return m.fixed.SendRemoteNs
}

// WaitRuntimeNs is the fixed event wait.
func (m *Model) WaitRuntimeNs() int64 { return m.fixed.EventWaitNs }

// Collective is the communication pattern of a transfer (sched's: the
// engine labels a Reduce by the same classification).
type Collective = sched.Collective

// Collectives, by what they really do (not the trace's labels).
const (
	AllReduce     = sched.AllReduce
	ReduceScatter = sched.ReduceScatter
	AllGather     = sched.AllGather
	AllToAll      = sched.AllToAll
	PointToPoint  = sched.PointToPoint
	Broadcast     = sched.Broadcast
)

// CollectiveOf maps a Reduce to the collective it performs
// (sched.ReduceCollective).
func CollectiveOf(r *gen.Reduce) Collective { return sched.ReduceCollective(r) }

// Factor is the fraction of the buffer each rank sends in the ring
// algorithm over n ranks: all-reduce 2(n-1)/n, reduce-scatter and
// all-gather (n-1)/n, all-to-all (n-1)/n (before contention),
// point-to-point and broadcast 1. Fewer than 2 ranks move nothing.
func Factor(c Collective, n int64) float64 {
	if c == PointToPoint || c == Broadcast {
		return 1
	}
	if n < 2 {
		return 0
	}
	f := float64(n-1) / float64(n)
	if c == AllReduce {
		return 2 * f
	}
	return f
}

// CollectiveNs is latency + moved bytes / bandwidth, rounded up to a whole
// nanosecond, on the intra-host link when sameHost, else the inter-host
// one. bytes is the full buffer: the larger of input and output (an
// all-gather's output, a reduce-scatter's input).
func (m *Model) CollectiveNs(c Collective, bytes, ranks int64, sameHost bool) int64 {
	cm := m.comm
	if !m.hasComm {
		cm = DefaultComm()
	}
	gbps, lat := cm.InterHostGBps, cm.InterHostLatencyNs
	if sameHost {
		gbps, lat = cm.IntraHostGBps, cm.IntraHostLatencyNs
	}
	moved := float64(bytes) * Factor(c, ranks)
	if c == AllToAll {
		moved *= cm.AllToAllContention
	}
	// 1 GB/s is one byte per nanosecond.
	ns := math.Ceil(moved / gbps)
	if ns >= float64(MaxRuntimeNs) {
		return MaxRuntimeNs
	}
	return lat + int64(ns)
}

// TensorBytes is a tensor's size: its shape's element count times its
// dtype's size when both are known (a shape of at least one dimension),
// else its storage's nbytes.
func TensorBytes(t *values.Tensor) int64 {
	size := DtypeBytes(t.Dtype)
	if size == 0 || len(t.Shape) == 0 {
		return t.NBytes
	}
	n := size
	for _, d := range t.Shape {
		if d < 0 || d > 0 && n > math.MaxInt64/d {
			return t.NBytes
		}
		n *= d
	}
	return n
}

// DtypeBytes is the size of one element of a dtype ("bfloat16" or
// "torch.bfloat16"), 0 if unknown.
func DtypeBytes(dtype string) int64 {
	switch strings.TrimPrefix(dtype, "torch.") {
	case "float64", "double", "int64", "long", "complex64", "cfloat", "uint64":
		return 8
	case "float32", "float", "int32", "int", "uint32":
		return 4
	case "bfloat16", "float16", "half", "int16", "short", "uint16":
		return 2
	case "int8", "uint8", "bool", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz":
		return 1
	case "complex128", "cdouble":
		return 16
	}
	return 0
}
