package synth

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/values"
)

// TestTrainSpellsEveryField: the typed messages come out as Monarch's
// recorder spells them, every field present, empty ones too ("default":
// false, "mutates":[], "scatter":false, "inplace":false, "out":null), in
// the key order of docs/HISTORY.md. The lines are written out by hand for
// the smallest job: one rank, one layer of hidden size 8, sequences of 4
// tokens, one microbatch of one sequence, 7 ns between commands.
//
//	weight shard: 8 x (4*8/tp=1) bf16 = 512 bytes, 256 elements, over dp=1
//	tokens:       1 sequence x 4 tokens x 8 bytes = 32 bytes (16 bf16)
//	activation:   1 x 4 x 8 bf16 = 64 bytes, 32 elements
func TestTrainSpellsEveryField(t *testing.T) {
	var b bytes.Buffer
	c := Train{PP: 1, DP: 1, TP: 1, Layers: 1, Hidden: 8, Seq: 4, Batch: 1, Micro: 1, Steps: 1, GPUsPerHost: 4, CommandNs: 7}
	if err := WriteTrain(&b, c); err != nil {
		t.Fatal(err)
	}
	all := `"ranks":[{"offset":0,"sizes":[1],"strides":[1]}]`
	stage := `"ranks":[{"offset":0,"sizes":[1,1],"strides":[1,1]}]`
	want := []string{
		`{"fastsim":"history","version":1,"world_size":1,"gpus_per_host":4}`,
		`{"ts":7,` + all + `,"msg":{"type":"CreateDeviceMesh","names":["pp","dp","tp"]}}`,
		`{"ts":14,` + all + `,"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`,
		`{"ts":21,` + all + `,"msg":{"type":"CreateStream","result":{"ref":2,"name":"comm"},"default":false}}`,
		`{"ts":28,` + stage + `,"msg":{"type":"CallFunction","ident":1,"function":"torch.ops.aten.empty.memory_format","args":[],"kwargs":{},"result":[{"tensor":1,"storage":1,"nbytes":512,"dtype":"bfloat16","shape":[256],"device":"cuda"}],"mutates":[],"stream":{"ref":2}}}`,
		`{"ts":35,` + stage + `,"msg":{"type":"PipeRecv","ident":2,"result":[{"tensor":2,"storage":2,"nbytes":32,"dtype":"bfloat16","shape":[16],"device":"cpu"}],"pipe":1,"stream":{"ref":1}}}`,
		`{"ts":42,` + stage + `,"msg":{"type":"CallFunction","ident":3,"function":"torch.ops.aten._to_copy.default","args":[{"tensor":2}],"kwargs":{},"result":[{"tensor":3,"storage":3,"nbytes":32,"dtype":"bfloat16","shape":[16],"device":"cuda"}],"mutates":[],"stream":{"ref":1}}}`,
		`{"ts":49,` + stage + `,"msg":{"type":"DeleteRefs","refs":[2]}}`,
		`{"ts":56,` + stage + `,"msg":{"type":"CallFunction","ident":4,"function":"torch.ops.aten.embedding.default","args":[{"tensor":3}],"kwargs":{},"result":[{"tensor":4,"storage":4,"nbytes":64,"dtype":"bfloat16","shape":[32],"device":"cuda"}],"mutates":[],"stream":{"ref":1}}}`,
		`{"ts":63,` + stage + `,"msg":{"type":"DeleteRefs","refs":[3]}}`,
		`{"ts":70,` + stage + `,"msg":{"type":"Reduce","result":{"tensor":5,"storage":5,"nbytes":512,"dtype":"bfloat16","shape":[256],"device":"cuda"},"local_tensor":{"tensor":1},"stream":{"ref":2},"dims":["dp"],"reduction":"stack","scatter":false,"inplace":false,"out":null}}`,
		`{"ts":77,` + stage + `,"msg":{"type":"BorrowCreate","result":{"tensor":6,"storage":6,"nbytes":512,"dtype":"bfloat16","shape":[256],"device":"cuda"},"borrow":1,"tensor":{"tensor":5},"from_stream":{"ref":2},"to_stream":{"ref":1}}}`,
		`{"ts":84,` + stage + `,"msg":{"type":"BorrowFirstUse","borrow":1}}`,
	}
	got := strings.Split(b.String(), "\n")
	for i, w := range want {
		if i >= len(got) || got[i] != w {
			t.Fatalf("line %d:\n got %s\nwant %s", i+1, got[min(i, len(got)-1)], w)
		}
	}
	// The step line carries no ts of its own: it is the last command's.
	if last := got[len(got)-2]; last != `{"step":0}` {
		t.Errorf("last line %s, want {\"step\":0}", last)
	}
}

// failAfter is a sink that takes n records, then fails every one.
type failAfter struct{ n, got int }

var errSink = errors.New("sink stopped")

func (f *failAfter) Write(rec *history.Record, reg *values.Registry) error {
	f.got++
	if f.got > f.n {
		return errSink
	}
	return nil
}

// TestEmitTrainStops: a sink that fails (a replay that stopped) ends the
// synthesis within a microbatch, with the sink's error. One microbatch of
// this job is 1 + 2 x 38 x 2 + 1 + 2 x 8 = about 170 records by Commands'
// count; 20 steps of 4 microbatches would be about 13,600.
func TestEmitTrainStops(t *testing.T) {
	c := Train{PP: 2, DP: 2, TP: 1, Layers: 2, Hidden: 8, Seq: 4, Batch: 8, Micro: 4, Steps: 20}
	all := &failAfter{n: 1 << 30}
	if err := EmitTrain(all, c); err != nil {
		t.Fatal(err)
	}
	f := &failAfter{n: 100}
	if err := EmitTrain(f, c); !errors.Is(err, errSink) {
		t.Fatalf("got %v, want the sink's error", err)
	}
	perMicro := all.got / (c.Steps * c.Micro)
	if f.got > f.n+perMicro+1 || all.got < 10*f.got {
		t.Errorf("a sink failing after %d records was sent %d (the whole history is %d, a microbatch about %d)", f.n, f.got, all.got, perMicro)
	}
}

// TestTrainCheckLimits: shapes whose sizes or times would wrap an int64
// are refused before anything is written. Each case is one wrap by hand:
// micro 2^62 x dp 4 = 2^64 wraps to 0, and the batch was divided by it;
// hidden 2^40 makes a 2^40 x 2^42 weight; 16,777,216 sequences of
// 16,777,216 tokens x 4 x 1,024 x 2 bytes are 2^61 bytes of activation;
// 677 commands (the default shape's estimate) 2^63-1 ns apart end past
// 2^63 ns; 2^40 layers or steps would write for ever.
func TestTrainCheckLimits(t *testing.T) {
	base := Train{PP: 2, DP: 2, TP: 1, Layers: 4, Hidden: 1024, Seq: 2048, Batch: 8, Micro: 2, Steps: 2, GPUsPerHost: 8}
	if err := base.Check(); err != nil {
		t.Fatalf("the default shape: %v", err)
	}
	for name, change := range map[string]func(*Train){
		"micro 2^62":      func(c *Train) { c.Micro, c.DP = 1<<62, 4 },
		"hidden 2^40":     func(c *Train) { c.Hidden = 1 << 40 },
		"layers 2^40":     func(c *Train) { c.Layers = 1 << 40 },
		"steps 2^40":      func(c *Train) { c.Steps = 1 << 40 },
		"activation 2^61": func(c *Train) { c.Batch, c.Seq, c.DP, c.Micro = 1<<24, 1<<24, 1, 1 },
		"command-ns 2^63": func(c *Train) { c.CommandNs = math.MaxInt64 },
		"seq past 2^24":   func(c *Train) { c.Seq = 1<<24 + 1 },
		"batch past 2^24": func(c *Train) { c.Batch = 1<<24 + 2 },
	} {
		c := base
		change(&c)
		if err := c.Check(); !errors.Is(err, ErrTrain) {
			t.Errorf("%s: %v, want ErrTrain", name, err)
		}
		if err := WriteTrain(io.Discard, c); !errors.Is(err, ErrTrain) {
			t.Errorf("%s: WriteTrain: %v, want ErrTrain", name, err)
		}
	}
}

// TestTrainCheckNamesTheField: a shape refused for one field's value
// names that field and its value: synth --steps -1 is not told about seq
// and micro, nor --steps 70000 about every limit at once.
func TestTrainCheckNamesTheField(t *testing.T) {
	base := Train{PP: 2, DP: 2, TP: 1, Layers: 4, Hidden: 1024, Seq: 2048, Batch: 8, Micro: 2, Steps: 2, GPUsPerHost: 8}
	for _, c := range []struct {
		change func(*Train)
		want   string
	}{
		{func(c *Train) { c.Steps = -1 }, "bad training shape: steps -1: want 0 or more"},
		{func(c *Train) { c.Seq = 0 }, "bad training shape: seq 0: want 1 or more tokens"},
		{func(c *Train) { c.Micro = -2 }, "bad training shape: micro -2: want 1 or more microbatches"},
		{func(c *Train) { c.Steps = 70000 }, "bad training shape: steps 70000 is over its limit of 65536"},
		{func(c *Train) { c.Seq = 1<<24 + 1 }, "bad training shape: seq 16777217 is over its limit of 2^24"},
		{func(c *Train) { c.Batch = 1<<24 + 4 }, "bad training shape: batch 16777220 is over its limit of 2^24"},
	} {
		tr := base
		c.change(&tr)
		if err := tr.Check(); err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %q", tr, err, c.want)
		}
	}
}
