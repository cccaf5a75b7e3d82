// Package workload describes transformer training jobs and writes them as
// command histories: a model (layers, hidden size, heads, FFN width,
// vocabulary, sequence length) with published presets, laid out on a mesh
// the way Megatron-LM lays it out (tensor, pipeline and data parallelism,
// sequence parallelism, ZeRO stages, activation recomputation, the GPipe,
// 1F1B and interleaved pipeline schedules), and the history of its training
// steps: every ATen operator with N-d shapes and arguments in schema order,
// every collective and point-to-point transfer, and every tensor allocated
// and freed when the program would allocate and free it.
package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fastsim/fastsim/internal/jsonpos"
	"github.com/fastsim/fastsim/internal/smallfile"
)

// ErrModel reports a model description that is not a transformer.
var ErrModel = errors.New("bad model")

// Model is a decoder-only transformer.
type Model struct {
	Name    string `json:"name"`
	Layers  int    `json:"layers"`
	Hidden  int    `json:"hidden"`
	Heads   int    `json:"heads"`
	KVHeads int    `json:"kv_heads"` // grouped-query attention; 0: Heads
	FFN     int    `json:"ffn"`      // MLP width; 0: 4*Hidden
	Vocab   int    `json:"vocab"`
	Seq     int    `json:"seq"`
	// Gated is a gated MLP (SwiGLU: fc1 yields gate and up, silu(gate)*up
	// feeds fc2), as Llama has; otherwise fc1, GELU, fc2 as GPT has.
	Gated bool `json:"gated"`
	// Bias: the linear layers have biases and the model learned position
	// embeddings (GPT); without, rotary positions and no biases (Llama).
	Bias bool `json:"bias"`
	// Tied: the output layer shares the word embedding's weight.
	Tied  bool   `json:"tied"`
	Dtype string `json:"dtype"` // "bfloat16" (the only one written)
	// Source cites where the figures come from.
	Source string `json:"source"`
}

const (
	megatronSC21 = "Narayanan et al., SC'21, \"Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM\", Table 1 (vocabulary 51,200 and sequence 2,048: §5)"
	korthikanti  = "Korthikanti et al. 2022, \"Reducing Activation Recomputation in Large Transformer Models\", Table 3 (vocabulary 51,200 and sequence 2,048: §6)"
	gpt3         = "Brown et al. 2020, \"Language Models are Few-Shot Learners\", Table 2.1 (vocabulary: the GPT-2 BPE, 50,257 tokens, §2.1)"
	llama2       = "Touvron et al. 2023, \"Llama 2: Open Foundation and Fine-Tuned Chat Models\", Table 1 and §2.2 (GQA for 70B); shapes as in the released config.json"
	llama3       = "Llama Team 2024, \"The Llama 3 Herd of Models\", Table 3; shapes as in the released config.json (8,192-token context)"
)

func gptPreset(name string, layers, hidden, heads int, src string) Model {
	return Model{Name: name, Layers: layers, Hidden: hidden, Heads: heads, Vocab: 51200, Seq: 2048, Bias: true, Tied: true, Dtype: "bfloat16", Source: src}
}

// Presets are the published models, by name.
var Presets = []Model{
	// Narayanan et al. SC'21 Table 1: heads, hidden size, layers.
	gptPreset("megatron-1.7b", 24, 2304, 24, megatronSC21),
	gptPreset("megatron-3.6b", 30, 3072, 32, megatronSC21),
	gptPreset("megatron-7.5b", 36, 4096, 32, megatronSC21),
	gptPreset("megatron-18b", 40, 6144, 48, megatronSC21),
	gptPreset("megatron-39b", 48, 8192, 64, megatronSC21),
	gptPreset("megatron-76b", 60, 10240, 80, megatronSC21),
	gptPreset("megatron-145b", 80, 12288, 96, megatronSC21),
	gptPreset("megatron-310b", 96, 16384, 128, megatronSC21),
	gptPreset("megatron-530b", 105, 20480, 128, megatronSC21),
	gptPreset("megatron-1t", 128, 25600, 160, megatronSC21),
	// Korthikanti et al. 2022 Table 3.
	gptPreset("korthikanti-22b", 48, 6144, 64, korthikanti),
	gptPreset("korthikanti-175b", 96, 12288, 96, korthikanti),
	gptPreset("korthikanti-530b", 105, 20480, 128, korthikanti),
	gptPreset("korthikanti-1t", 128, 25600, 160, korthikanti),
	{Name: "gpt3-175b", Layers: 96, Hidden: 12288, Heads: 96, Vocab: 50257, Seq: 2048, Bias: true, Tied: true, Dtype: "bfloat16", Source: gpt3},
	{Name: "llama2-7b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 32, FFN: 11008, Vocab: 32000, Seq: 4096, Gated: true, Dtype: "bfloat16", Source: llama2},
	{Name: "llama2-70b", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, FFN: 28672, Vocab: 32000, Seq: 4096, Gated: true, Dtype: "bfloat16", Source: llama2},
	{Name: "llama3-8b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, FFN: 14336, Vocab: 128256, Seq: 8192, Gated: true, Dtype: "bfloat16", Source: llama3},
	{Name: "llama3-70b", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, FFN: 28672, Vocab: 128256, Seq: 8192, Gated: true, Dtype: "bfloat16", Source: llama3},
}

// PresetNames lists the presets' names.
func PresetNames() []string {
	names := make([]string, len(Presets))
	for i := range Presets {
		names[i] = Presets[i].Name
	}
	return names
}

// Preset returns the preset called name.
func Preset(name string) (Model, bool) {
	for _, m := range Presets {
		if m.Name == name {
			return m, true
		}
	}
	return Model{}, false
}

// MaxModelBytes is the largest model description LoadModel reads (a
// model is a few hundred bytes).
const MaxModelBytes = 1 << 20

// LoadModel returns the preset called nameOrFile, or else reads the JSON
// model description in that file (the fields of Model; unknown fields are
// errors). Errors name the file and what is wrong.
func LoadModel(nameOrFile string) (Model, error) {
	if m, ok := Preset(nameOrFile); ok {
		return m, nil
	}
	data, err := smallfile.Read(nameOrFile, MaxModelBytes, "a model description")
	if errors.Is(err, smallfile.ErrTooLarge) {
		return Model{}, fmt.Errorf("%s: %w: %w", nameOrFile, ErrModel, err)
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !strings.ContainsAny(nameOrFile, "./") {
			return Model{}, fmt.Errorf("%w: %q is neither a preset (%s) nor a file", ErrModel, nameOrFile, strings.Join(PresetNames(), ", "))
		}
		return Model{}, err
	}
	m, err := ParseModel(data)
	if err != nil {
		return Model{}, fmt.Errorf("%s:%w", nameOrFile, err)
	}
	return m, nil
}

// ParseModel reads a JSON model description and checks it; errors start
// with the line they are about ("3: ...").
func ParseModel(data []byte) (Model, error) {
	var m Model
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Model{}, fmt.Errorf("%d: %w: %s", jsonpos.Line(data, err), ErrModel, jsonpos.Describe(data, err))
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return Model{}, fmt.Errorf("%d: %w: trailing data after the JSON object", jsonpos.Trailing(data, end), ErrModel)
	}
	if line, msg, dup := jsonpos.Duplicate(data); dup {
		return Model{}, fmt.Errorf("%d: %w: %s", line, ErrModel, msg)
	}
	if m.Dtype == "" {
		m.Dtype = "bfloat16"
	}
	if key, err := m.check(); err != nil {
		if !jsonpos.Has(data, key) {
			// A key left out reads as 0: say so.
			return Model{}, fmt.Errorf("%d: %w (the file gives no %q)", jsonpos.Key(data, key), err, key)
		}
		return Model{}, fmt.Errorf("%d: %w", jsonpos.Key(data, key), err)
	}
	return m, nil
}

// Check reports the first thing about m that is not a transformer.
func (m *Model) Check() error {
	_, err := m.check()
	return err
}

// check is Check, also naming the JSON key of the value at fault, so that
// ParseModel can give its line.
func (m *Model) check() (key string, err error) {
	for _, d := range []struct {
		key   string
		v     int
		least int
		most  int
		want  string
	}{
		{"layers", m.Layers, 1, 1 << 16, "1 to 65536"},
		{"hidden", m.Hidden, 1, 1 << 20, "1 to 2^20"},
		{"heads", m.Heads, 1, 1 << 16, "1 to 65536"},
		{"kv_heads", m.KVHeads, 0, 1 << 16, "0 (as many as heads) to 65536"},
		{"ffn", m.FFN, 0, 1 << 22, "0 (4 × hidden) to 2^22"},
		{"vocab", m.Vocab, 1, 1 << 24, "1 to 2^24"},
		{"seq", m.Seq, 1, 1 << 24, "1 to 2^24"},
	} {
		if d.v < d.least || d.v > d.most {
			return d.key, fmt.Errorf("%w: %s is %d, want %s", ErrModel, d.key, d.v, d.want)
		}
	}
	switch {
	case m.Hidden%m.Heads != 0:
		return "heads", fmt.Errorf("%w: hidden %d does not split into %d heads", ErrModel, m.Hidden, m.Heads)
	case m.KVHeads > 0 && m.Heads%m.KVHeads != 0:
		return "kv_heads", fmt.Errorf("%w: %d heads do not split into %d KV head groups", ErrModel, m.Heads, m.KVHeads)
	case m.Dtype != "bfloat16":
		return "dtype", fmt.Errorf("%w: dtype %q (only bfloat16 is written)", ErrModel, m.Dtype)
	}
	return "", nil
}

// kv is the number of key/value heads.
func (m *Model) kv() int {
	if m.KVHeads == 0 {
		return m.Heads
	}
	return m.KVHeads
}

// ffn is the MLP width.
func (m *Model) ffn() int {
	if m.FFN == 0 {
		return 4 * m.Hidden
	}
	return m.FFN
}

// HeadDim is the width of one attention head.
func (m *Model) HeadDim() int { return m.Hidden / m.Heads }

// PaddedVocab is the vocabulary padded, as Megatron-LM pads it, to a
// multiple of 128 times the tensor-parallel size (--make-vocab-size-
// divisible-by 128), so it splits evenly over the shards.
func (m *Model) PaddedVocab(tp int) int {
	q := 128 * tp
	return (m.Vocab + q - 1) / q * q
}

// Params is the number of parameters with the vocabulary padded for tp:
// per layer the attention (Q, K and V projections and the output
// projection), the MLP and the two norms (with biases when m.Bias), plus the
// word embedding, learned positions (m.Bias), the final norm and an untied
// output layer.
func (m *Model) Params(tp int) int64 {
	h := int64(m.Hidden)
	hd := int64(m.HeadDim())
	qkv := int64(m.Heads+2*m.kv()) * hd
	f := int64(m.ffn())
	fc1 := f
	if m.Gated {
		fc1 = 2 * f
	}
	layer := h*qkv + h*h + h*fc1 + f*h + 2*h // weights and norm scales
	if m.Bias {
		layer += qkv + h + fc1 + h + 2*h // biases and norm shifts
	}
	v := int64(m.PaddedVocab(tp))
	n := int64(m.Layers)*layer + v*h + h
	if m.Bias {
		n += int64(m.Seq)*h + h
	}
	if !m.Tied {
		n += v * h
	}
	return n
}
