package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// addedSpec is small.spec after the two edits a new message and a new
// field need: a message Pong with its fields and behaviour, and a field
// seq on the existing Ping.
func addedSpec(t *testing.T) []byte {
	t.Helper()
	src, err := os.ReadFile("testdata/small.spec")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	const anchor = "  field inner messages optional\n"
	if !strings.Contains(s, anchor) {
		t.Fatalf("small.spec no longer ends Ping with %q", anchor)
	}
	s = strings.Replace(s, anchor, anchor+"  field seq int optional\n", 1)
	s += "\nmessage Pong simulated runtime=3 controller=silent\n  field n int\n  field who string optional\n  field on stream optional\n"
	return []byte(s)
}

// addedHandler is everything written by hand besides the spec edit: the
// handler's methods for the new message, and a test of the generated
// decoder, writer, dispatch and declared behaviour.
const addedHandler = `package gen

import (
	"reflect"
	"testing"

	"github.com/fastsim/fastsim/internal/jsonl"
	"github.com/fastsim/fastsim/internal/values"
)

type handler struct {
	ping *Ping
	pong *Pong
}

func (h *handler) Ping(m *Ping) error     { h.ping = m; return nil }
func (h *handler) Pong(m *Pong) error     { h.pong = m; return nil }
func (h *handler) Accepted(MsgKind) error { return nil }
func (h *handler) Unknown(string) error   { return nil }

func decodeLine(t *testing.T, reg *values.Registry, line []byte) *Msg {
	t.Helper()
	var s jsonl.Scanner
	if err := s.Reset(line); err != nil {
		t.Fatal(err)
	}
	m := new(Msg)
	if err := DecodeMsg(&s, reg, m); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	if err := s.End(); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestAddedMessageAndField(t *testing.T) {
	reg := values.NewRegistry()
	ping := decodeLine(t, reg, []byte(` + "`" + `{"type":"Ping","id":1,"name":"a","on":{"ref":1},"t":{"tensor":1,"storage":1,"nbytes":4,"dtype":"float32","shape":[1],"device":"cuda"},"seq":9}` + "`" + `))
	pong := decodeLine(t, reg, []byte(` + "`" + `{"type":"Pong","n":42,"who":"w","on":{"ref":2}}` + "`" + `))
	var h handler
	if err := Dispatch(&h, ping); err != nil || h.ping == nil || h.ping.Seq != 9 {
		t.Fatalf("Ping's new field: %v %+v", err, h.ping)
	}
	if err := Dispatch(&h, pong); err != nil || h.pong == nil || h.pong.N != 42 || h.pong.Who != "w" || h.pong.On.Ref != 2 {
		t.Fatalf("Pong: %v %+v", err, h.pong)
	}
	// The writer is the decoder's inverse for the new message and field.
	for _, m := range []*Msg{ping, pong} {
		var w jsonl.Writer
		WriteMsgJSON(&w, m)
		again := decodeLine(t, values.NewRegistry(), w.Buf)
		if again.Kind != m.Kind || !reflect.DeepEqual(again.Pong, m.Pong) || again.Ping.Seq != m.Ping.Seq || again.Ping.Id != m.Ping.Id {
			t.Errorf("%v does not survive writing: %s", m.Kind, w.Buf)
		}
	}
	// What the message does comes from the spec line alone.
	if in := MsgPong.Info(); in.RuntimeNs != 3 || in.ControllerEvent || !MsgPong.Simulated() {
		t.Errorf("Pong's declared behaviour: %+v simulated %v", in, MsgPong.Simulated())
	}
	if KindOf([]byte("Pong")) != MsgPong || MsgPong.String() != "Pong" {
		t.Errorf("Pong's kind by name")
	}
}
`

// TestAddingAMessageIsOneEdit renders small.spec with a new message and a
// new field added, and runs a test of the generated package whose only
// hand-written code is the new message's handler: decoding, writing,
// dispatch and the message's declared behaviour all follow from the spec.
func TestAddingAMessageIsOneEdit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	outs := mustRender(t, "small.spec", addedSpec(t))
	dir := filepath.Join("testdata", "added-"+strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for _, o := range outs {
		if err := os.WriteFile(filepath.Join(dir, o.Name), o.Src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "handler_test.go"), []byte(addedHandler), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(gobin, "test", "-count=1", "./"+dir).CombinedOutput()
	if err != nil {
		t.Fatalf("the generated package with the new message fails: %v\n%s", err, out)
	}
}
