package workload

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPresetParams checks the presets' parameter counts. For the GPT
// presets Narayanan et al., SC'21, §5.1 give P = 12lh^2(1 + 13/(12h) +
// (V+s)/(12lh)) = 12lh^2 + 13lh + (V+s)h (we also count the final norm's
// 2h), and Table 1 lists P rounded to 0.1 billion; e.g. megatron-1.7b:
// 12*24*2304^2 + 13*24*2304 + (51200+2048)*2304 + 2*2304 =
// 1,528,823,808 + 718,848 + 122,683,392 + 4,608 = 1,652,230,656 -> 1.7.
// The Llama counts are those of the released checkpoints (e.g. Llama-2
// 7B: 32 layers of 4h^2 + 3*h*11008 + 2h with h = 4096, plus two 32000 x
// 4096 embeddings and the final norm: 6,738,415,616).
func TestPresetParams(t *testing.T) {
	tenths := map[string]int64{ // Narayanan et al., SC'21, Table 1
		"megatron-1.7b": 17, "megatron-3.6b": 36, "megatron-7.5b": 75, "megatron-18b": 184, "megatron-39b": 391,
		"megatron-76b": 761, "megatron-145b": 1456, "megatron-310b": 3101, "megatron-530b": 5296, "megatron-1t": 10080,
	}
	for name, want := range tenths {
		m, _ := Preset(name)
		l, h := int64(m.Layers), int64(m.Hidden)
		p := m.Params(1)
		if formula := 12*l*h*h + 13*l*h + (51200+2048)*h + 2*h; p != formula {
			t.Errorf("%s: %d parameters, the formula gives %d", name, p, formula)
		}
		if got := (p + 50_000_000) / 100_000_000; got != want {
			t.Errorf("%s: %d parameters round to %d tenths of a billion, Table 1 says %d", name, p, got, want)
		}
	}
	exact := map[string]int64{
		"llama2-7b": 6_738_415_616, "llama2-70b": 68_976_648_192,
		"llama3-8b": 8_030_261_248, "llama3-70b": 70_553_706_496,
	}
	for name, want := range exact {
		m, _ := Preset(name)
		if got := m.Params(1); got != want {
			t.Errorf("%s: %d parameters, want %d", name, got, want)
		}
	}
	// GPT-3 175B: 96 layers of h = 12288, its 50,257 tokens padded to
	// 50,304: 174,604,836,864 parameters, "175B".
	if m, _ := Preset("gpt3-175b"); m.Params(1) != 174_604_836_864 {
		t.Errorf("gpt3-175b: %d parameters", m.Params(1))
	}
	for _, m := range Presets {
		if err := m.Check(); err != nil || m.Source == "" {
			t.Errorf("preset %s: %v, source %q", m.Name, err, m.Source)
		}
	}
}

func TestModelFile(t *testing.T) {
	m, err := LoadModel("../../examples/model.json")
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "gpt2-medium" || m.Layers != 24 || m.Hidden != 1024 || m.Heads != 16 || !m.Tied {
		t.Errorf("examples/model.json: %+v", m)
	}
	dir := t.TempDir()
	for _, c := range []struct{ text, want string }{
		{"{\"name\":\"x\",\n\"layers\":2,\n\"hiden\":64}", ":3: bad model"},
		// A value of the wrong type is reported on its own line, not at the
		// end of the object; text after the object is an error, on its line.
		{"{\"name\":\"x\",\n\"layers\":\"2\",\n\"hidden\":64,\n\"heads\":4,\"vocab\":8,\"seq\":8}", ":2: bad model: layers is a string, want a whole number"},
		{"{\"name\":\"x\",\"layers\":2,\"hidden\":64,\"heads\":4,\"vocab\":8,\"seq\":8}\n\n{}", ":3: bad model: trailing data"},
		{"{\"name\":\"x\",\"layers\":2,\"hidden\":64,\"heads\":3,\"vocab\":8,\"seq\":8}", ":1: bad model: hidden 64 does not split into 3 heads"},
		// A key left out reads as 0, and the message says it was left out.
		{"{\"name\":\"x\",\"hidden\":64,\"heads\":4,\"vocab\":8,\"seq\":8}", ":1: bad model: layers is 0, want 1 to 65536 (the file gives no \"layers\")"},
		{"{\"name\":\"x\",\"layers\":2,\"hidden\":64,\"heads\":4,\"vocab\":8,\"seq\":8,\"dtype\":\"float16\"}", "only bfloat16"},
	} {
		p := filepath.Join(dir, "m.json")
		if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadModel(p)
		if err == nil || !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), p+":") {
			t.Errorf("%s: error %v, want FILE%s", c.text, err, c.want)
		}
	}
	if _, err := LoadModel("no-such-preset"); err == nil || !strings.Contains(err.Error(), "megatron-1.7b") {
		t.Errorf("unknown name: %v", err)
	}
}

// TestModelCheckLines: a value the checks refuse is blamed on its key's
// line. The file is eleven lines, one key each from line 2 ("name") to
// line 10 ("dtype"); each case changes one value in place, and the line
// is counted by hand.
func TestModelCheckLines(t *testing.T) {
	good := `{
  "name": "small",
  "layers": 4,
  "hidden": 256,
  "heads": 4,
  "kv_heads": 2,
  "ffn": 1024,
  "vocab": 1000,
  "seq": 128,
  "dtype": "bfloat16"
}
`
	if _, err := ParseModel([]byte(good)); err != nil {
		t.Fatalf("the good file: %v", err)
	}
	p := filepath.Join(t.TempDir(), "m.json")
	for _, c := range []struct {
		old, new string
		line     int
		what     string
	}{
		{`"layers": 4`, `"layers": -3`, 3, "layers is -3, want 1 to 65536"},
		{`"hidden": 256`, `"hidden": 2097152`, 4, "hidden is 2097152, want 1 to 2^20"},
		{`"heads": 4`, `"heads": 3`, 5, "hidden 256 does not split into 3 heads"},
		{`"kv_heads": 2`, `"kv_heads": 3`, 6, "4 heads do not split into 3 KV head groups"},
		{`"ffn": 1024`, `"ffn": -1`, 7, "ffn is -1"},
		{`"vocab": 1000`, `"vocab": 0`, 8, "vocab is 0"},
		{`"seq": 128`, `"seq": 16777217`, 9, "seq is 16777217"},
		{`"dtype": "bfloat16"`, `"dtype": "float16"`, 10, `dtype "float16"`},
	} {
		bad := strings.Replace(good, c.old, c.new, 1)
		if bad == good {
			t.Fatalf("%q not in the file", c.old)
		}
		if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadModel(p)
		want := fmt.Sprintf("%s:%d: bad model: %s", p, c.line, c.what)
		if err == nil || !errors.Is(err, ErrModel) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s -> %s: got %v, want it to start with %q", c.old, c.new, err, want)
		}
	}
}
