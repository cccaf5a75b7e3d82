// Package monarch speaks the timing interchange of Monarch's simulator IR:
// the timing keys that name a command kind, the catalogue of command kinds
// a history holds ({"command_types": [...]}), and timing files that give
// each key a duration in microseconds.
//
// Everything here follows python/monarch/simulator/ir.py of
// meta-pytorch/monarch: IRGraph._get_timing_key (the key formats),
// IRGraph.export_command_types (the catalogue's fields) and
// IRGraph.import_timing (a timing file is a JSON object mapping timing keys
// to durations in microseconds). The key formats, fields separated by
// colons:
//
//	CallFunction:{func}:{input_shapes}:{dtype}     CallFunction:aten.mm:(3x4)x(4x5):float32
//	CallFunction:{func}:{dtype}                    (a call without tensors)
//	Reduce:{reduce_type}:{tensor_shape}:{dtype}:{num_devices}
//	SendTensor:{tensor_shape}:{dtype}
//	BorrowCreate, BorrowFirstUse, ...              (bare type names)
//
// A shape is "(d1xd2x...)" and several are joined with "x"; shapes are the
// command's input tensors, or its outputs when it has no inputs; the dtype
// is the first shape's, "unknown" when there is none. fastsim's inputs are a
// call's distinct tensors in args (docs/SEMANTICS.md), its outputs those of
// result; a reduce's shape is its local tensor's, its type the collective's
// label (all_reduce, reduce_scatter, all_gather, all_to_all, the reference
// simulator's names) and num_devices the ranks taking part; a send's shape
// is the sent tensor's.
package monarch

import (
	"strconv"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/values"
)

// unknownDtype is Monarch's dtype when a command has no tensor.
const unknownDtype = "unknown"

// appendShapes appends the distinct tensors of ts (by id, first occurrence
// first) as "(3x4)x(4x5)" and returns the dtype of the first, and how many
// it wrote.
func appendShapes(dst []byte, ts []values.Tensor) ([]byte, string, int) {
	dst, n := values.AppendShapes(dst, ts)
	dtype := unknownDtype
	if n > 0 && ts[0].Dtype != "" {
		dtype = ts[0].Dtype
	}
	return dst, dtype, n
}

// AppendCallKey appends the timing key of a call whose clean name is name.
func AppendCallKey(dst []byte, m *gen.CallFunction, name string) []byte {
	dst = append(dst, "CallFunction:"...)
	dst = append(dst, name...)
	dst = append(dst, ':')
	ts := m.Args.Leaves
	if !hasTensor(ts) {
		ts = m.Result.Leaves
	}
	start := len(dst)
	dst, dtype, n := appendShapes(dst, ts)
	if n == 0 {
		dst = dst[:start]
		return append(dst, dtype...)
	}
	dst = append(dst, ':')
	return append(dst, dtype...)
}

func hasTensor(ts []values.Tensor) bool { return len(ts) > 0 }

// ReduceLabel is the collective's name, the reference simulator's labels.
func ReduceLabel(m *gen.Reduce) string {
	switch {
	case m.Reduction == "stack" && m.Scatter:
		return "all_to_all"
	case m.Reduction == "stack":
		return "all_gather"
	case m.Scatter:
		return "all_reduce"
	}
	return "reduce_scatter"
}

// AppendReduceKey appends the timing key of a reduce over devices ranks.
func AppendReduceKey(dst []byte, m *gen.Reduce, devices int64) []byte {
	dst = append(dst, "Reduce:"...)
	dst = append(dst, ReduceLabel(m)...)
	dst = append(dst, ':')
	dst, dtype, _ := appendShapes(dst, []values.Tensor{m.LocalTensor})
	dst = append(dst, ':')
	dst = append(dst, dtype...)
	dst = append(dst, ':')
	return strconv.AppendInt(dst, devices, 10)
}

// AppendSendKey appends the timing key of a send.
func AppendSendKey(dst []byte, m *gen.SendTensor) []byte {
	dst = append(dst, "SendTensor:"...)
	dst, dtype, _ := appendShapes(dst, []values.Tensor{m.Tensor})
	dst = append(dst, ':')
	return append(dst, dtype...)
}
