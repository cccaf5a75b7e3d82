package history

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/values"
)

// convert reads src (any form) with extras kept and writes it in form f.
func convert(t testing.TB, src []byte, f Form) []byte {
	t.Helper()
	out, err := ConvertBytes(src, "in", f)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// dumpMsg renders the meaningful part of m (the kind's own struct).
func dumpMsg(b *strings.Builder, m *gen.Msg) {
	fmt.Fprintf(b, "%v %q", m.Kind, m.TypeName)
	if m.Kind == gen.MsgCommandGroup {
		b.WriteString(" [")
		for i := 0; i < m.CommandGroup.Commands.Len(); i++ {
			var sub gen.Msg
			m.CommandGroup.Commands.At(i, &sub)
			dumpMsg(b, &sub)
			b.WriteString("; ")
		}
		b.WriteString("]")
	} else if m.Kind.Simulated() {
		v := reflect.ValueOf(m).Elem().FieldByName(m.Kind.String())
		fmt.Fprintf(b, " %+v", dumpValue(v))
	}
	dumpExtras(b, &m.Extra)
}

// dumpValue turns byte slices (raw JSON) into strings so dumps are readable.
func dumpValue(v reflect.Value) string {
	var b strings.Builder
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		if v.Type() == reflect.TypeFor[values.Tree]() {
			// A tree is its leaves and its text, however it holds the
			// text (raw, or a template the binary form's reader keeps).
			t := v.Interface().(values.Tree)
			b.WriteString("{Leaves:")
			walk(v.FieldByName("Leaves"))
			if t.Given() {
				fmt.Fprintf(&b, " Text:%q}", t.Text())
			} else {
				b.WriteString(" Text:<nil>}")
			}
			return
		}
		switch v.Kind() {
		case reflect.Struct:
			b.WriteString("{")
			for i := 0; i < v.NumField(); i++ {
				fmt.Fprintf(&b, "%s:", v.Type().Field(i).Name)
				walk(v.Field(i))
				b.WriteString(" ")
			}
			b.WriteString("}")
		case reflect.Slice:
			if v.Type().Elem().Kind() == reflect.Uint8 {
				if v.IsNil() {
					b.WriteString("<nil>")
				} else {
					fmt.Fprintf(&b, "%q", v.Bytes())
				}
				return
			}
			b.WriteString("[")
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
				b.WriteString(",")
			}
			b.WriteString("]")
		default:
			fmt.Fprintf(&b, "%v", v.Interface())
		}
	}
	walk(v)
	return b.String()
}

func dumpExtras(b *strings.Builder, ex *values.Extras) {
	for i, k := range ex.Keys {
		fmt.Fprintf(b, " +%q=%s", k, ex.Vals[i])
	}
}

// dumpAll reads src with extras kept and renders every record (without its
// line number, which differs between the forms when there are blank lines).
func dumpAll(t testing.TB, src []byte) string {
	t.Helper()
	r, err := NewReader(bytes.NewReader(src), "in")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return dumpReader(t, r)
}

// dumpReader renders every record r has left, as dumpAll does, with
// extras kept.
func dumpReader(t testing.TB, r *Reader) string {
	t.Helper()
	r.KeepExtra = true
	var b strings.Builder
	fmt.Fprintf(&b, "%+v %s\n", r.Header(), r.RawHeader())
	var rec Record
	for {
		err := r.Next(&rec)
		if err == io.EOF {
			return b.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "ts=%d step=%v,%d ranks=%s ", rec.Ts, rec.IsStep, rec.Step, dumpValue(reflect.ValueOf(rec.Ranks)))
		if !rec.IsStep {
			dumpMsg(&b, &rec.Msg)
		}
		dumpExtras(&b, &rec.Extra)
		b.WriteString("\n")
	}
}

// roundTrip checks JSON -> binary -> JSON -> binary on src.
func roundTrip(t *testing.T, name string, src []byte) {
	want := dumpAll(t, src)
	bin1 := convert(t, src, FormBinary)
	if got := dumpAll(t, bin1); got != want {
		t.Fatalf("%s: binary decodes differently:\n%s", name, firstDiff(want, got))
	}
	// The uncompressed binary form is the same stream without its frame.
	bare := convert(t, src, FormBinaryBare)
	if !bytes.Equal(bare, unzstd(t, bin1)) {
		t.Fatalf("%s: the uncompressed binary form is not the zstd one's stream", name)
	}
	if got := dumpAll(t, bare); got != want {
		t.Fatalf("%s: uncompressed binary decodes differently:\n%s", name, firstDiff(want, got))
	}
	// And in S2 framing, the same stream again.
	inS2 := convert(t, src, FormBinaryS2)
	if !bytes.Equal(bare, unS2(t, inS2)) {
		t.Fatalf("%s: the S2 binary form is not the uncompressed one's stream", name)
	}
	if got := dumpAll(t, inS2); got != want {
		t.Fatalf("%s: S2 binary decodes differently:\n%s", name, firstDiff(want, got))
	}
	js := convert(t, bin1, FormJSON)
	if got := dumpAll(t, js); got != want {
		t.Fatalf("%s: JSON from binary decodes differently:\n%s", name, firstDiff(want, got))
	}
	jz := convert(t, bin1, FormJSONZstd)
	if got := dumpAll(t, jz); got != want {
		t.Fatalf("%s: zstd JSON from binary decodes differently:\n%s", name, firstDiff(want, got))
	}
	bin2 := convert(t, js, FormBinary)
	if !bytes.Equal(bin1, bin2) {
		t.Fatalf("%s: JSON->bin->JSON->bin is not byte-identical (%d vs %d bytes)", name, len(bin1), len(bin2))
	}
	if js2 := convert(t, bin2, FormJSON); !bytes.Equal(js, js2) {
		t.Fatalf("%s: bin->JSON is not deterministic", name)
	}
	t.Logf("%s: %d bytes JSON, %d bytes binary", name, len(src), len(bin1))
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("record %d:\nwant %s\n got %s", i, al[i], bl[i])
		}
	}
	return fmt.Sprintf("lengths differ: %d vs %d lines", len(al), len(bl))
}

func TestRoundTripGolden(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/golden/*.hist")
	if len(files) == 0 {
		t.Skip("no golden histories")
	}
	for _, p := range files {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, filepath.Base(p), src)
	}
}

func TestRoundTripRandom(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		var b bytes.Buffer
		if err := writeRandom(&b, seed, 2+int(seed%7), 300); err != nil {
			t.Fatal(err)
		}
		roundTrip(t, fmt.Sprintf("random seed %d", seed), b.Bytes())
	}
	var b bytes.Buffer
	if err := writeTrain(&b, trainShape{PP: 2, DP: 2, TP: 2, Layers: 2, Hidden: 64, Seq: 16, Batch: 8, Micro: 2, Steps: 3}); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, "train", b.Bytes())
}

// TestRoundTripExtras covers what only a lossless conversion keeps: unknown
// header keys, tb frames and other record keys, undeclared message fields,
// keys out of spec order (which decide the order of first mentions),
// unknown and accepted message types, nested groups, escapes, blank lines
// and step lines with a ts.
func TestRoundTripExtras(t *testing.T) {
	src := `{"version":1,"fastsim":"history","world_size":4,"recorder":{"v":"x"}}` + "\n" +
		`{"ts":5,"ranks":[{"offset":0,"sizes":[4],"strides":[1]}],"msg":{"type":"CreateDeviceMesh","names":["gpu"],"dims":{"a":[1,2]}},"tb":[{"file":"t.py","line":3,"name":"f"}]}` + "\n" +
		"\n" +
		`{"msg":{"device_mesh":7,"result":{"ref":1,"name":"ma\"in\u00e9"},"type":"CreateStream","default":true},"ranks":[{"offset":0,"sizes":[4],"strides":[1]}],"ts":6}` + "\n" +
		`{"ts":7,"ranks":[{"offset":1,"sizes":[],"strides":[]}],"msg":{"type":"SendTensor","tensor":{"tensor":10,"storage":3,"nbytes":8,"dtype":"int64","shape":[1],"device":"cpu"},"result":{"tensor":11,"storage":11,"nbytes":4,"dtype":"int64","shape":[],"device":"cuda"},"from_ranks":{"offset":0,"sizes":[2],"strides":[1]},"to_ranks":{"offset":2,"sizes":[2],"strides":[1]},"from_stream":{"ref":1},"to_stream":{"ref":1},"factory":null}}` + "\n" +
		`{"step":0,"ts":9,"note":"end"}` + "\n" +
		`{"ts":9,"ranks":[],"msg":{"type":"CommandGroup","commands":[{"type":"Mystery","x":[1,{"tensor":99}]},{"stream":{"ref":1},"type":"CallFunction","function":"f","args":[{"tensor":12,"storage":12,"nbytes":1,"dtype":"bf16","shape":[],"device":"cuda"},{"tensor":10}],"kwargs":{},"mutates":[{"tensor":11}],"source_mesh":"m"},{"type":"Exit"}]}}` + "\n" +
		`{"ts":10,"ranks":[{"offset":0,"sizes":[2,2],"strides":[2,1]}],"msg":{"type":"Reduce","out":null,"result":{"tensor":13,"storage":10,"nbytes":8,"dtype":"int64","shape":[1],"device":"cpu"},"local_tensor":{"tensor":10},"stream":{"ref":1},"reduction":"sum","dims":["gpu"],"scatter":true}}` + "\n" +
		`{"ts":10,"ranks":[{"offset":0,"sizes":[4],"strides":[1]}],"msg":{"type":"DeleteRefs","refs":[10,11,-3]}}` + "\n" +
		`{"step":1}` + "\n"
	roundTrip(t, "extras", []byte(src))
	bin := convert(t, []byte(src), FormBinary)
	js := string(convert(t, bin, FormJSON))
	for _, want := range []string{`"recorder":{"v":"x"}`, `"tb":[{"file":"t.py","line":3,"name":"f"}]`, `"device_mesh":7`, `"factory":null`, `"source_mesh":"m"`, `{"type":"Mystery","x":[1,{"tensor":99}]}`, `"note":"end"`, `"dims":{"a":[1,2]}`} {
		if !strings.Contains(js, want) {
			t.Errorf("converted JSON lacks %s:\n%s", want, js)
		}
	}
	// The tensors keep the order of their first mentions: tensor 10 is
	// written before 11 although the spec declares "result" first.
	if i, j := strings.Index(js, `{"tensor":10,`), strings.Index(js, `{"tensor":11,`); i < 0 || j < 0 || i > j {
		t.Errorf("first mentions out of order:\n%s", js)
	}
}

// TestPlainReadSkipsExtras: without KeepExtra nothing is kept.
func TestPlainReadSkipsExtras(t *testing.T) {
	src := hdr + `{"ts":1,"ranks":[],"msg":{"type":"Exit","a":1},"tb":[]}` + "\n"
	recs, err := readAll(t, []byte(src), "t.hist")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs[0].Extra.Keys) != 0 || len(recs[0].Msg.Extra.Keys) != 0 || len(recs[0].Msg.Extra.Order) != 0 {
		t.Errorf("extras kept without KeepExtra: %+v %+v", recs[0].Extra, recs[0].Msg.Extra)
	}
}

// TestRoundTripEmptyFields: optional fields given with empty values
// ("default":false, "mutates":[], "dims":[], "scatter":false, "out":null,
// "ident":0), in spec order or not and inside a command group, come back
// byte for byte from JSON -> binary -> JSON and JSON -> JSON.
func TestRoundTripEmptyFields(t *testing.T) {
	all := `"ranks":[{"offset":0,"sizes":[2],"strides":[1]}]`
	src := `{"fastsim":"history","version":1,"world_size":2}` + "\n" +
		`{"ts":1,` + all + `,"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":false}}` + "\n" +
		`{"ts":2,` + all + `,"msg":{"type":"CallFunction","ident":0,"function":"f","args":[],"kwargs":{},"result":[{"tensor":1,"storage":1,"nbytes":8,"dtype":"float32","shape":[2],"device":"cuda"}],"mutates":[],"stream":{"ref":1}}}` + "\n" +
		`{"ts":3,` + all + `,"msg":{"type":"Reduce","result":{"tensor":2,"storage":2,"nbytes":8,"dtype":"float32","shape":[2],"device":"cuda"},"local_tensor":{"tensor":1},"stream":{"ref":1},"dims":[],"reduction":"sum","scatter":false,"inplace":false,"out":null}}` + "\n" +
		`{"ts":4,` + all + `,"msg":{"type":"CommandGroup","commands":[{"type":"CallFunction","mutates":[],"function":"g","stream":{"ref":1},"args":[{"tensor":2}]},{"type":"CreateStream","default":false,"result":{"ref":2,"name":"side"}}]}}` + "\n" +
		`{"step":0}` + "\n"
	roundTrip(t, "empty fields", []byte(src))
	if got := string(convert(t, convert(t, []byte(src), FormBinary), FormJSON)); got != src {
		t.Errorf("JSON -> binary -> JSON:\n%s\nwant\n%s", got, src)
	}
	if got := string(convert(t, []byte(src), FormJSON)); got != src {
		t.Errorf("JSON -> JSON:\n%s\nwant\n%s", got, src)
	}
}

// TestRoundTripTreeForms: trees whose tensor objects are written as a
// JSON-lines writer writes them (sent as templates) and otherwise (spaces,
// a key order of their own, "cuda:0", an undeclared key: sent as text),
// in one tree and across records, with tensors deleted and their ids and
// slots used again, come back byte for byte from JSON -> binary -> JSON.
func TestRoundTripTreeForms(t *testing.T) {
	all := `"ranks":[{"offset":0,"sizes":[2],"strides":[1]}]`
	src := `{"fastsim":"history","version":1,"world_size":2}` + "\n" +
		`{"ts":1,` + all + `,"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}` + "\n" +
		`{"ts":2,` + all + `,"msg":{"type":"CallFunction","function":"f","args":[],"kwargs":{},"result":[{"tensor":1,"storage":1,"nbytes":8,"dtype":"float32","shape":[2],"device":"cuda"}],"stream":{"ref":1}}}` + "\n" +
		`{"ts":3,` + all + `,"msg":{"type":"CallFunction","function":"f","args":[{"tensor":1},{"k":[{"tensor":1}]}],"kwargs":{"x":{"tensor":1}},"result":[{"tensor":2,"storage":1,"nbytes":8,"dtype":"float32","shape":[2],"device":"cuda"},{"tensor":3, "storage":3,"nbytes":4,"dtype":"int64","shape":[],"device":"cpu"}],"stream":{"ref":1}}}` + "\n" +
		`{"ts":4,` + all + `,"msg":{"type":"CallFunction","function":"g","args":[{"storage":4,"tensor":4,"nbytes":2,"dtype":"bf16","shape":[1],"device":"cuda:0"},{"tensor":2,"note":1}],"result":[{"tensor":5,"storage":5,"nbytes":0,"dtype":"u\u00e9","shape":[0,3],"device":"cuda"}],"stream":{"ref":1}}}` + "\n" +
		`{"ts":5,` + all + `,"msg":{"type":"DeleteRefs","refs":[1,3,1,77]}}` + "\n" +
		`{"ts":6,` + all + `,"msg":{"type":"CallFunction","function":"f","args":[{"tensor":2}],"kwargs":{},"result":[{"tensor":1,"storage":6,"nbytes":8,"dtype":"float32","shape":[2],"device":"cuda"},{"tensor":6,"storage":6,"nbytes":8,"dtype":"float32","shape":[2],"device":"cuda"}],"stream":{"ref":1}}}` + "\n" +
		`{"ts":7,` + all + `,"msg":{"type":"CommandGroup","commands":[{"type":"DeleteRefs","refs":[6]},{"type":"CallFunction","function":"f","args":[{"tensor":1},{"tensor":5}],"result":[{"tensor":7,"storage":7,"nbytes":8,"dtype":"float32","shape":[2],"device":"cuda"}],"stream":{"ref":1}}]}}` + "\n" +
		`{"ts":8,` + all + `,"msg":{"type":"CallFunction","function":"f","args":[{"tensor":7},{"tensor":4},{"tensor":2}],"result":[{"tensor":8,"storage":8,"nbytes":8,"dtype":"float32","shape":[2],"device":"cuda"}],"stream":{"ref":1}}}` + "\n" +
		`{"step":0}` + "\n"
	roundTrip(t, "tree forms", []byte(src))
	if got := string(convert(t, convert(t, []byte(src), FormBinary), FormJSON)); got != src {
		t.Errorf("JSON -> binary -> JSON:\n%s\nwant\n%s", got, src)
	}
}

// TestRoundTripTightRecords converts records whose parts take the fewest
// bytes the binary form allows: rank slices all in the slice table (one
// byte each) and tensor definitions whose fields are in the blob table
// (three bytes each). A reader that counted more bytes for each refused
// what the writer wrote.
func TestRoundTripTightRecords(t *testing.T) {
	one := func(r int) string { return fmt.Sprintf(`{"offset":%d,"sizes":[1],"strides":[1]}`, r) }
	four := `"ranks":[` + one(0) + "," + one(1) + "," + one(2) + "," + one(3) + "]"
	// The second BorrowFirstUse: four slice references and a message of
	// three bytes, 7 bytes for 4 slices.
	slicesSrc := `{"fastsim":"history","version":1,"world_size":4}` + "\n" +
		`{"ts":1,` + four + `,"msg":{"type":"BorrowFirstUse","borrow":15}}` + "\n" +
		`{"ts":2,` + four + `,"msg":{"type":"BorrowFirstUse","borrow":15}}` + "\n"
	roundTrip(t, "slice references", []byte(slicesSrc))

	// 80 tensors defined by one record, all with the fields of a tensor
	// defined before: 3 bytes a definition and a byte for each mention,
	// fewer than 5 bytes a definition with the rest of the record.
	tensor := func(id int) string {
		return fmt.Sprintf(`{"tensor":%d,"storage":%d,"nbytes":16,"dtype":"float32","shape":[4],"device":"cuda"}`, id, id)
	}
	var many []string
	for id := 2; id < 82; id++ {
		many = append(many, tensor(id))
	}
	rank := `"ranks":[` + one(0) + `]`
	defsSrc := `{"fastsim":"history","version":1,"world_size":1}` + "\n" +
		`{"ts":1,` + rank + `,"msg":{"type":"CreateStream","result":{"ref":1,"name":"s"},"default":true}}` + "\n" +
		`{"ts":2,` + rank + `,"msg":{"type":"CallFunction","ident":0,"function":"f","args":[],"kwargs":{},"result":[],"mutates":[` + tensor(1) + `],"stream":{"ref":1}}}` + "\n" +
		`{"ts":3,` + rank + `,"msg":{"type":"CallFunction","ident":0,"function":"f","args":[],"kwargs":{},"result":[],"mutates":[` + strings.Join(many, ",") + `],"stream":{"ref":1}}}` + "\n"
	roundTrip(t, "definitions", []byte(defsSrc))
}
