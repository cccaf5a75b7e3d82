package gen

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/jsonl"
	"github.com/fastsim/fastsim/internal/values"
)

func decode(t *testing.T, reg *values.Registry, m *Msg, line string) error {
	t.Helper()
	var s jsonl.Scanner
	if err := s.Reset([]byte(line)); err != nil {
		t.Fatal(err)
	}
	if err := DecodeMsg(&s, reg, m); err != nil {
		return err
	}
	return s.End()
}

const t1 = `{"tensor":1,"storage":1,"nbytes":400,"dtype":"float32","shape":[10,10],"device":"cuda"}`

func TestDecodeEveryKind(t *testing.T) {
	reg := values.NewRegistry()
	var m Msg
	if err := decode(t, reg, &m, `{"type":"CallFunction","ident":3,"function":"aten.mm","args":[`+t1+`,{"k":[{"tensor":1}]}],"kwargs":{"x":1},"result":{"tensor":2,"storage":1,"nbytes":400,"dtype":"float32","shape":[100],"device":"cuda"},"mutates":[{"tensor":1}],"stream":{"ref":1},"extra":{"a":[1]}}`); err != nil {
		t.Fatal(err)
	}
	t1v, _ := reg.Lookup(1)
	t2v, _ := reg.Lookup(2)
	want := map[MsgKind]struct {
		line string
		get  func(*Msg) any
		want any
	}{
		MsgCreateStream: {`{"type":"CreateStream","result":{"ref":2,"name":"comm"},"default":true}`,
			func(m *Msg) any { return m.CreateStream },
			CreateStream{Result: values.Stream{Ref: 2, Name: "comm", HasName: true}, Default: true}},
		MsgCallFunction: {`{"stream":{"ref":1},"type":"CallFunction","function":"f","args":[{"tensor":2}]}`,
			func(m *Msg) any { return m.CallFunction.Args.Leaves },
			[]values.Tensor{t2v}},
		MsgSendTensor: {`{"type":"SendTensor","result":{"tensor":3,"storage":3,"nbytes":8,"dtype":"int64","shape":[1],"device":"cpu"},"tensor":{"tensor":1},"from_ranks":{"offset":0,"sizes":[2],"strides":[1]},"to_ranks":{"offset":2,"sizes":[2],"strides":[1]},"from_stream":{"ref":1},"to_stream":{"ref":2}}`,
			func(m *Msg) any { x := m.SendTensor; x.Result = values.Tensor{}; return x },
			SendTensor{Tensor: t1v, FromRanks: values.Slice{Offset: 0, Sizes: []int64{2}, Strides: []int64{1}}, ToRanks: values.Slice{Offset: 2, Sizes: []int64{2}, Strides: []int64{1}}, FromStream: values.Stream{Ref: 1}, ToStream: values.Stream{Ref: 2}}},
		MsgReduce: {`{"type":"Reduce","result":{"tensor":2},"local_tensor":{"tensor":1},"stream":{"ref":1},"dims":["gpu"],"reduction":"sum","scatter":true,"inplace":false,"out":{"tensor":1}}`,
			func(m *Msg) any { return m.Reduce },
			Reduce{Result: t2v, LocalTensor: t1v, Stream: values.Stream{Ref: 1}, Dims: []string{"gpu"}, Reduction: "sum", Scatter: true, Out: t1v, HasOut: true}},
		MsgBorrowCreate: {`{"type":"BorrowCreate","result":{"tensor":2},"borrow":7,"tensor":{"tensor":1},"from_stream":{"ref":1},"to_stream":{"ref":2}}`,
			func(m *Msg) any { return m.BorrowCreate },
			BorrowCreate{Result: t2v, Borrow: 7, Tensor: t1v, FromStream: values.Stream{Ref: 1}, ToStream: values.Stream{Ref: 2}}},
		MsgBorrowFirstUse: {`{"type":"BorrowFirstUse","borrow":7}`, func(m *Msg) any { return m.BorrowFirstUse }, BorrowFirstUse{Borrow: 7}},
		MsgBorrowLastUse:  {`{"type":"BorrowLastUse","borrow":8}`, func(m *Msg) any { return m.BorrowLastUse }, BorrowLastUse{Borrow: 8}},
		MsgBorrowDrop:     {`{"borrow":9,"type":"BorrowDrop"}`, func(m *Msg) any { return m.BorrowDrop }, BorrowDrop{Borrow: 9}},
		MsgDeleteRefs:     {`{"type":"DeleteRefs","refs":[1,2,-3]}`, func(m *Msg) any { return m.DeleteRefs }, DeleteRefs{Refs: []int64{1, 2, -3}}},
		MsgPipeRecv: {`{"type":"PipeRecv","ident":4,"result":[],"pipe":2,"stream":{"ref":1}}`,
			func(m *Msg) any { x := m.PipeRecv; x.Result.Leaves = nil; return x },
			PipeRecv{Ident: 4, Result: values.Tree{Raw: []byte("[]")}, Pipe: 2, Stream: values.Stream{Ref: 1}}},
		MsgCommandGroup: {`{"type":"CommandGroup","commands":[{"type":"BorrowDrop","borrow":1},{"type":"Exit"},{"type":"Nope"}]}`,
			func(m *Msg) any {
				var ks []MsgKind
				for i := 0; i < m.CommandGroup.Commands.Len(); i++ {
					ks = append(ks, m.CommandGroup.Commands.Kind(i))
				}
				return ks
			},
			[]MsgKind{MsgBorrowDrop, MsgExit, MsgUnknown}},
	}
	for k := MsgInvalid + 1; k < MsgUnknown; k++ {
		if !k.Simulated() {
			if err := decode(t, reg, &m, `{"type":"`+k.String()+`","anything":[1,{"tensor":"not parsed"}]}`); err != nil {
				t.Errorf("%v: %v", k, err)
			}
			if m.Kind != k || m.TypeName != k.String() {
				t.Errorf("%v: decoded kind %v %q", k, m.Kind, m.TypeName)
			}
			continue
		}
		tc, ok := want[k]
		if !ok {
			t.Errorf("%v: no test", k)
			continue
		}
		if err := decode(t, reg, &m, tc.line); err != nil {
			t.Errorf("%v: %v", k, err)
			continue
		}
		if m.Kind != k {
			t.Errorf("%v: decoded as %v", k, m.Kind)
		}
		if got := tc.get(&m); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v:\n got %+v\nwant %+v", k, got, tc.want)
		}
	}
	// Decoding again reuses m: stale optional fields are reset.
	if err := decode(t, reg, &m, `{"type":"Reduce","result":{"tensor":2},"local_tensor":{"tensor":1},"stream":{"ref":1},"reduction":"avg","out":null}`); err != nil {
		t.Fatal(err)
	}
	if m.Reduce.HasOut || len(m.Reduce.Dims) != 0 || m.Reduce.Scatter {
		t.Errorf("stale fields after reuse: %+v", m.Reduce)
	}
}

func TestDecodeErrors(t *testing.T) {
	reg := values.NewRegistry()
	var m Msg
	for _, tc := range []struct{ line, want string }{
		{`{"refs":[]}`, `missing field "type"`},
		{`{"type":3}`, `field "type": want a string, got a number`},
		{`{"type":"DeleteRefs"}`, `DeleteRefs: missing field "refs"`},
		{`{"type":"DeleteRefs","refs":["a"]}`, `DeleteRefs: field "refs": want an integer, got a string`},
		{`{"type":"CreateStream","result":{"name":"x"}}`, `CreateStream: field "result": missing field "ref"`},
		{`{"type":"Reduce","result":{"tensor":2,"storage":2,"nbytes":0,"dtype":"float32","shape":[],"device":"cuda"},"local_tensor":{"tensor":1,"storage":1,"nbytes":0,"dtype":"float32","shape":[],"device":"cuda"},"stream":{"ref":1}}`, `Reduce: missing field "reduction"`},
		{`[]`, `want an object, got a list`},
	} {
		err := decode(t, reg, &m, tc.line)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.line, err, tc.want)
		}
	}
}

func TestKinds(t *testing.T) {
	for k := MsgInvalid; k <= MsgUnknown; k++ {
		if k > MsgInvalid && k < MsgUnknown && KindOf([]byte(k.String())) != k {
			t.Errorf("KindOf(%q) = %v", k.String(), KindOf([]byte(k.String())))
		}
	}
	if KindOf([]byte("callfunction")) != MsgUnknown || MsgUnknown.String() != "Unknown" || MsgCallFunction.String() != "CallFunction" {
		t.Error("KindOf/String")
	}
	if MsgUnknown.Simulated() || MsgExit.Simulated() || !MsgCommandGroup.Simulated() {
		t.Error("Simulated")
	}
	if n := testing.AllocsPerRun(100, func() { _ = KindOf([]byte("CommandGroup")) }); n != 0 {
		t.Errorf("KindOf allocates %v times", n)
	}
}

type recorder struct{ got []string }

func (r *recorder) add(s string) error { r.got = append(r.got, s); return nil }

func (r *recorder) CreateStream(m *CreateStream) error     { return r.add("CreateStream") }
func (r *recorder) CallFunction(m *CallFunction) error     { return r.add("CallFunction " + m.Function) }
func (r *recorder) SendTensor(m *SendTensor) error         { return r.add("SendTensor") }
func (r *recorder) Reduce(m *Reduce) error                 { return r.add("Reduce") }
func (r *recorder) BorrowCreate(m *BorrowCreate) error     { return r.add("BorrowCreate") }
func (r *recorder) BorrowFirstUse(m *BorrowFirstUse) error { return r.add("BorrowFirstUse") }
func (r *recorder) BorrowLastUse(m *BorrowLastUse) error   { return r.add("BorrowLastUse") }
func (r *recorder) BorrowDrop(m *BorrowDrop) error         { return r.add("BorrowDrop") }
func (r *recorder) DeleteRefs(m *DeleteRefs) error         { return r.add("DeleteRefs") }
func (r *recorder) PipeRecv(m *PipeRecv) error             { return r.add("PipeRecv") }
func (r *recorder) CommandGroup(m *CommandGroup) error {
	var sub Msg
	for i := 0; i < m.Commands.Len(); i++ {
		m.Commands.At(i, &sub)
		if err := Dispatch(r, &sub); err != nil {
			return err
		}
	}
	return nil
}
func (r *recorder) Accepted(k MsgKind) error { return r.add("Accepted " + k.String()) }
func (r *recorder) Unknown(name string) error {
	if name == "Fail" {
		return errors.New("fail")
	}
	return r.add("Unknown " + name)
}

func TestDispatch(t *testing.T) {
	reg := values.NewRegistry()
	var m Msg
	if err := decode(t, reg, &m, `{"type":"CommandGroup","commands":[{"type":"CallFunction","function":"f","stream":{"ref":1}},{"type":"DeleteRefs","refs":[]},{"type":"Exit"},{"type":"Mystery"}]}`); err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	if err := Dispatch(r, &m); err != nil {
		t.Fatal(err)
	}
	want := []string{"CallFunction f", "DeleteRefs", "Accepted Exit", "Unknown Mystery"}
	if !reflect.DeepEqual(r.got, want) {
		t.Errorf("got %q, want %q", r.got, want)
	}
	m = Msg{Kind: MsgUnknown, TypeName: "Fail"}
	if err := Dispatch(r, &m); err == nil {
		t.Error("handler error lost")
	}
}

func TestTaskTable(t *testing.T) {
	var tt TaskTable
	a, b := tt.Alloc(), tt.Alloc()
	tt.Wait[a], tt.StartNs[b] = 7, 9
	tt.CopyRow(a, b)
	if tt.StartNs[a] != 9 || tt.Wait[a] != tt.Wait[b] {
		t.Error("CopyRow")
	}
	tt.Free(a)
	if tt.Len() != 2 || tt.Live() != 1 {
		t.Errorf("Len %d Live %d", tt.Len(), tt.Live())
	}
	if c := tt.Alloc(); c != a || tt.StartNs[c] != 0 {
		t.Error("Alloc does not reuse a zeroed row")
	}
	tt.Reset()
	if tt.Len() != 0 || tt.Live() != 0 || cap(tt.State) == 0 {
		t.Error("Reset")
	}
}
