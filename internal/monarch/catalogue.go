package monarch

import (
	"strings"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/jsonl"
	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/values"
)

// CommandType is one entry of the catalogue: export_command_types' fields,
// plus fastsim's prediction.
type CommandType struct {
	TimingKey string `json:"timing_key"`
	// Count is how many tasks of this kind the workers run, rank by rank
	// (Monarch's IR has one command node per worker).
	Count       int64     `json:"count"`
	InputShapes [][]int64 `json:"input_shapes,omitempty"` // CallFunction
	TensorShape *[]int64  `json:"tensor_shape,omitempty"` // Reduce, SendTensor
	Dtype       string    `json:"dtype,omitempty"`
	NumDevices  int64     `json:"num_devices,omitempty"` // Reduce
	FuncPath    string    `json:"func_path,omitempty"`   // CallFunction: the function as the history names it
	// PredictedUs is the runtime the cost model gives one such task, in
	// microseconds (0 for a command that runs no task of its own:
	// BorrowFirstUse and BorrowDrop queue the waits their BorrowCreate and
	// BorrowLastUse made).
	PredictedUs float64 `json:"predicted_us"`
	// Varies is set when the model priced tasks of this key differently
	// (a communication model telling intra- from inter-host transfers);
	// PredictedUs is then the largest.
	Varies bool `json:"varies,omitempty"`
}

// Catalogue is the document `fastsim ops --json` writes:
// {"command_types": [...], "timing": {timing_key: microseconds}}, the
// second in import_timing's format, so the file is itself a timing file.
type Catalogue struct {
	CommandTypes []CommandType      `json:"command_types"`
	Timing       map[string]float64 `json:"timing"`
}

// Builder collects the catalogue of a replay: Record each record's message
// before the engine applies it, and give the engine Model(), which prices
// as the wrapped model does and notes each price by key.
type Builder struct {
	base  sched.CostModel
	byKey map[string]int // index in list
	list  []CommandType
	buf   []byte
}

// NewBuilder wraps the pricing model.
func NewBuilder(model sched.CostModel) *Builder {
	return &Builder{base: model, byKey: map[string]int{}}
}

func (b *Builder) entry(key []byte) *CommandType {
	if i, ok := b.byKey[string(key)]; ok {
		return &b.list[i]
	}
	k := string(key)
	b.byKey[k] = len(b.list)
	b.list = append(b.list, CommandType{TimingKey: k, PredictedUs: -1})
	return &b.list[len(b.list)-1]
}

func (b *Builder) price(key []byte, ns int64) {
	e := b.entry(key)
	us := float64(ns) / 1000
	if e.PredictedUs >= 0 && e.PredictedUs != us {
		e.Varies = true
	}
	e.PredictedUs = max(e.PredictedUs, us)
}

// Model returns the recording cost model to give the engine.
func (b *Builder) Model() sched.CostModel { return (*recorder)(b) }

type recorder Builder

func (r *recorder) CallRuntimeNs(c *gen.CallFunction, name string) int64 {
	ns := r.base.CallRuntimeNs(c, name)
	r.buf = AppendCallKey(r.buf[:0], c, name)
	(*Builder)(r).price(r.buf, ns)
	return ns
}

func (r *recorder) ReduceRuntimeNs(m *gen.Reduce, c sched.Comm) int64 {
	ns := r.base.ReduceRuntimeNs(m, c)
	r.buf = AppendReduceKey(r.buf[:0], m, c.Ranks)
	(*Builder)(r).price(r.buf, ns)
	return ns
}

func (r *recorder) SendRuntimeNs(m *gen.SendTensor, c sched.Comm) int64 {
	ns := r.base.SendRuntimeNs(m, c)
	r.buf = AppendSendKey(r.buf[:0], m)
	(*Builder)(r).price(r.buf, ns)
	return ns
}

func (r *recorder) WaitRuntimeNs() int64 { return r.base.WaitRuntimeNs() }

// Record counts the tasks of a message sent to ranks workers (sub-commands
// of a group included).
func (b *Builder) Record(m *gen.Msg, ranks int64) {
	switch m.Kind {
	case gen.MsgCommandGroup:
		l := &m.CommandGroup.Commands
		var sub gen.Msg
		for i := 0; i < l.Len(); i++ {
			l.At(i, &sub)
			b.Record(&sub, ranks)
		}
	case gen.MsgCallFunction:
		c := &m.CallFunction
		b.buf = AppendCallKey(b.buf[:0], c, CleanName(c.Function))
		e := b.entry(b.buf)
		if e.Count == 0 {
			ts := c.Args.Leaves
			if len(ts) == 0 {
				ts = c.Result.Leaves
			}
			for i := range ts {
				if !seenBefore(ts, i) {
					e.InputShapes = append(e.InputShapes, append([]int64{}, ts[i].Shape...))
				}
			}
			if len(e.InputShapes) > 0 {
				e.Dtype = ts[0].Dtype
			}
			e.FuncPath = c.Function
		}
		e.Count += ranks
	case gen.MsgReduce:
		r := &m.Reduce
		b.buf = AppendReduceKey(b.buf[:0], r, ranks)
		e := b.entry(b.buf)
		if e.Count == 0 {
			shape := append([]int64{}, r.LocalTensor.Shape...)
			e.TensorShape, e.Dtype, e.NumDevices = &shape, r.LocalTensor.Dtype, ranks
		}
		e.Count += ranks
	case gen.MsgSendTensor:
		s := &m.SendTensor
		b.buf = AppendSendKey(b.buf[:0], s)
		e := b.entry(b.buf)
		if e.Count == 0 {
			shape := append([]int64{}, s.Tensor.Shape...)
			e.TensorShape, e.Dtype = &shape, s.Tensor.Dtype
		}
		n := s.FromRanks.Len()
		if !s.FromRanks.Equal(&s.ToRanks) {
			n += s.ToRanks.Len()
		}
		e.Count += n
	case gen.MsgBorrowCreate, gen.MsgBorrowFirstUse, gen.MsgBorrowLastUse, gen.MsgBorrowDrop:
		name := m.Kind.String()
		e := b.entry(append(b.buf[:0], name...))
		if m.Kind == gen.MsgBorrowCreate || m.Kind == gen.MsgBorrowLastUse {
			b.price([]byte(name), b.base.WaitRuntimeNs())
		} else {
			b.price([]byte(name), 0)
		}
		e.Count += ranks
	}
}

// Catalogue returns the command types in order of first appearance.
func (b *Builder) Catalogue() *Catalogue {
	c := &Catalogue{CommandTypes: make([]CommandType, 0, len(b.list)), Timing: map[string]float64{}}
	for _, e := range b.list {
		if e.Count == 0 {
			continue // priced but never sent (cannot happen with Record before Apply)
		}
		if e.PredictedUs < 0 {
			e.PredictedUs = 0 // a key the engine never priced (no task ran)
		}
		c.CommandTypes = append(c.CommandTypes, e)
		c.Timing[e.TimingKey] = e.PredictedUs
	}
	return c
}

// CleanName is docs/SEMANTICS.md's clean_name: torch.ops.aten.mm.default
// becomes aten.mm.
func CleanName(f string) string {
	if strings.HasPrefix(f, "torch.ops.aten.") {
		f = f[len("torch.ops."):]
	}
	return strings.TrimSuffix(f, ".default")
}

func seenBefore(ts []values.Tensor, i int) bool {
	for j := 0; j < i; j++ {
		if ts[j].ID == ts[i].ID {
			return true
		}
	}
	return false
}

// RankCounter counts the distinct ranks a record's slices name, with a
// cache: a training loop sends to the same few slices again and again.
type RankCounter struct {
	cache map[string]int64
	key   []byte
	seen  map[int64]struct{}
	ranks []int64
}

// Count returns how many distinct ranks ss name.
func (rc *RankCounter) Count(ss []values.Slice) int64 {
	if rc.cache == nil {
		rc.cache = map[string]int64{}
	}
	k := rc.key[:0]
	for i := range ss {
		k = jsonl.AppendSlice(k, &ss[i])
	}
	rc.key = k
	if n, ok := rc.cache[string(k)]; ok {
		return n
	}
	if rc.seen == nil {
		rc.seen = map[int64]struct{}{}
	}
	clear(rc.seen)
	for i := range ss {
		rc.ranks = ss[i].AppendRanks(rc.ranks[:0])
		for _, r := range rc.ranks {
			rc.seen[r] = struct{}{}
		}
	}
	n := int64(len(rc.seen))
	if len(rc.cache) < 1<<16 {
		rc.cache[string(k)] = n
	}
	return n
}
