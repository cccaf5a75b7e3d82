package synth

import (
	"bufio"
	"io"
	"strconv"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/jsonl"
	"github.com/fastsim/fastsim/internal/values"
)

// spelled is the number of declared fields of the messages whose empty
// fields synth writes too ("default":false, "ident":0, "mutates":[],
// "scatter":false, "inplace":false, "out":null), as Monarch's recorder
// spells every field: each message lists them all in its key order
// (values.Extras.Order), which the generated writer follows. The other
// messages synth writes have no empty field.
var spelled = [...]uint8{
	gen.MsgCreateStream: 2,
	gen.MsgCallFunction: 7,
	gen.MsgReduce:       8,
	gen.MsgPipeRecv:     4,
	gen.MsgCommandGroup: 0,
}

// allFields numbers the declared fields 1, 2, 3, ... for Extras.Order.
var allFields = [...]uint8{1, 2, 3, 4, 5, 6, 7, 8}

// Sink takes a history's records one at a time, as typed values: a
// history.Writer writes them out (WriteTrain), a replay (replay.Sim)
// applies them directly, with no text in between (EmitTrain). A record is
// valid until Write returns. It is workload.Sink's method set.
type Sink interface {
	Write(rec *history.Record, reg *values.Registry) error
}

// out sends a history's records to a Sink: a history.Writer, which owns
// the record's envelope (ts, ranks, msg, step) and writes messages with
// the generated writer, or a replay. Tensors are indexed by id (Idx = ID);
// trees list their tensors as leaves.
//
// With text (a history writer), a tree carries its JSON text as well,
// every tensor in full at its first mention and by id after, and every
// message spells all its fields. Without (a replay), a tree is its leaves
// only, each tensor with every field at every mention: the replay takes
// the fields of a first mention and the dense indexes of the others, as a
// reader resolving the text would give them.
type out struct {
	sink Sink
	text bool
	bw   *bufio.Writer // with a history writer: its buffer, flushed by close
	w    *history.Writer
	rec  history.Record
	sub  gen.Msg // a CommandGroup's sub-message being built
	err  error
	// Reused for every record: the trees' text and leaves, the mutated
	// tensors.
	argRaw, resRaw []byte
	argLv, resLv   []values.Tensor
	mut            []values.Tensor
}

// newOut starts a history of header h on dst, written as JSON lines.
func newOut(dst io.Writer, h history.Header) (*out, error) {
	bw := bufio.NewWriterSize(dst, 1<<20)
	w, err := history.NewWriter(bw, history.FormJSON, h, nil)
	if err != nil {
		return nil, err
	}
	return &out{sink: w, text: true, bw: bw, w: w}, nil
}

// setKind makes m a message of kind k, with every field in its key order.
func setKind(m *gen.Msg, k gen.MsgKind) {
	m.Kind, m.TypeName = k, k.String()
	m.Extra.Reset()
	if int(k) < len(spelled) {
		m.Extra.Order = append(m.Extra.Order, allFields[:spelled[k]]...)
	}
}

// msg starts the next record's message, of kind k.
func (o *out) msg(k gen.MsgKind) *gen.Msg {
	if !o.text {
		// Only a writer reads the key order.
		m := &o.rec.Msg
		m.Kind, m.TypeName = k, k.String()
		m.Extra.Reset()
		return m
	}
	setKind(&o.rec.Msg, k)
	return &o.rec.Msg
}

// send writes the message built with msg, sent at ts to ranks.
func (o *out) send(ts int64, ranks ...values.Slice) {
	o.rec.IsStep = false
	o.rec.Ts = ts
	o.rec.Ranks = append(o.rec.Ranks[:0], ranks...)
	if err := o.sink.Write(&o.rec, nil); err != nil && o.err == nil {
		o.err = err
	}
}

// step writes step line n; ts is the last command's, so the line has no
// "ts" of its own.
func (o *out) step(n, ts int64) {
	o.rec.IsStep, o.rec.Step, o.rec.Ts = true, n, ts
	o.rec.Ranks = o.rec.Ranks[:0]
	o.rec.Msg.Kind = gen.MsgInvalid
	if err := o.sink.Write(&o.rec, nil); err != nil && o.err == nil {
		o.err = err
	}
	o.rec.IsStep = false
}

// close ends the history and, with a history writer, flushes it.
func (o *out) close() error {
	if o.err != nil {
		return o.err
	}
	if o.w == nil {
		return nil
	}
	if err := o.w.Close(); err != nil {
		return err
	}
	return o.bw.Flush()
}

// tree makes a tree of tensors: leaves lv (reusing its capacity) and, with
// text, their JSON text appended to raw[:0], in full for those in full[i]
// and by id for the others.
func (o *out) tree(raw []byte, lv []values.Tensor, ts []values.Tensor, full func(i int) bool) ([]byte, values.Tree) {
	lv = append(lv[:0], ts...)
	if !o.text {
		return raw, values.Tree{Leaves: lv}
	}
	raw, _ = tensorTree(raw[:0], nil, ts, full)
	return raw, values.Tree{Raw: raw, Leaves: lv}
}

// kwargs is a call's keyword arguments, none: "{}" in text.
func (o *out) kwargs() values.Tree {
	if !o.text {
		return values.Tree{}
	}
	return values.Tree{Raw: emptyKwargs}
}

var emptyKwargs = []byte("{}")

// tensorTree appends a tree (a list) of tensors to raw, in full for those
// in full[i] and by id for the others, and their leaves to lv.
func tensorTree(raw []byte, lv []values.Tensor, ts []values.Tensor, full func(i int) bool) ([]byte, []values.Tensor) {
	raw = append(raw, '[')
	for i := range ts {
		if i > 0 {
			raw = append(raw, ',')
		}
		raw = appendTensor(raw, &ts[i], full(i))
		lv = append(lv, ts[i])
	}
	return append(raw, ']'), lv
}

// appendTensor appends a tensor as a tree holds it: every field at its
// first mention, {"tensor":ID} after.
func appendTensor(b []byte, t *values.Tensor, full bool) []byte {
	if !full {
		b = append(b, `{"tensor":`...)
		b = strconv.AppendInt(b, t.ID, 10)
		return append(b, '}')
	}
	w := jsonl.Writer{Buf: b}
	whole := *t
	whole.Idx = -1 // in full, whatever w has written
	w.Tensor(&whole)
	return w.Buf
}

// idx is a tensor's index in the writer's record of what it has written:
// its id, dense from 1; -1 (always in full) past int32.
func idx(id int64) int32 {
	if id > 1<<31-1 {
		return -1
	}
	return int32(id)
}

// slice1 is a one-dimensional strided block of ranks.
func slice1(offset, size, stride int64) values.Slice {
	return values.Slice{Offset: offset, Sizes: []int64{size}, Strides: []int64{stride}}
}
