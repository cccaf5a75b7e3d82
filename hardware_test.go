package fastsim_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fastsim/fastsim"
)

// tensorJSON writes a tensor's first mention: nbytes from shape and dtype.
func tensorJSON(id int, dtype string, shape ...int) string {
	size := map[string]int{"bfloat16": 2, "float32": 4}[dtype]
	n := size
	dims := make([]string, len(shape))
	for i, d := range shape {
		n *= d
		dims[i] = fmt.Sprint(d)
	}
	return fmt.Sprintf(`{"tensor":%d,"storage":%d,"nbytes":%d,"dtype":%q,"shape":[%s],"device":"cuda"}`, id, id, n, dtype, strings.Join(dims, ","))
}

func callJSON(fn, args, results string) string {
	return `{"ts":0,"ranks":[{"offset":0,"sizes":[],"strides":[]}],"msg":{"type":"CallFunction","ident":1,"function":"torch.ops.aten.` +
		fn + `","args":[` + args + `],"kwargs":{},"result":[` + results + `],"mutates":[],"stream":{"ref":1}}}`
}

// A transformer block's forward on one H100 (batch 8, sequence 512,
// hidden 1024, 16 heads of 64), every command at ts 0 on one stream: the
// step time is the sum of the ops' roofline times. Each op by hand, on the
// h100-sxm preset (bf16 989,400 FLOP/ns, CUDA-core 66,900 FLOP/ns, HBM
// 3,350 B/ns times the preset's memory efficiency curve at the op's bytes,
// a power law between the two points around them as named below (0.8866,
// BabelStream Triad, for large ops, falling for small ones by Little's
// law), launch 2,060 ns (RRZE gpu-benches' H200 small kernels, one
// launch each, which the preset takes for the H100), GEMM efficiency 0.801 from
// 6.361e9 FLOPs, 0.3884 at 2^31, a power law between):
//
//  1. native_layer_norm x[8,512,1024]: 8 × 4,194,304 = 33,554,432 FLOPs /
//     66,900 = 501.6 ns; bytes x 8,388,608 + w, b 2 × 2,048 + out
//     8,388,608 + mean, rstd 2 × 16,384 = 16,814,080 (between [16,800,622,
//     0.834447] and [33,601,244, 0.859733]: 0.834476) -> 6,014.7 ns;
//     6,014.7 + 2,060 = 8,074.7 -> 8,075.
//  2. linear(x, w[3072,1024], b[3072]): 2·4096·1024·3072 + 4096·3072 =
//     25,782,386,688 FLOPs / (989,400 × 0.801) = 32,532.6 ns; bytes
//     8,388,608 + 6,291,456 + 6,144 + 25,165,824 = 39,852,032 (0.862970,
//     between 33,601,244 and 67,202,489 bytes) -> 13,785.1 ns; 32,532.6 + 2,060 = 34,592.6 -> 34,593.
//  3. causal flash attention q,k,v [8,16,512,64]: 4·8·16·512²·64 / 2 =
//     4,294,967,296 FLOPs, efficiency 0.3884 × 2^0.66617 = 0.61651:
//     7,041.3 ns; bytes 4 × 8,388,608 + lse 262,144 = 33,816,576 (between
//     [33,601,244, 0.859733] and [67,202,489, 0.87296]: 0.859854) ->
//     11,739.8 ns (memory-bound); + 2,060 = 13,799.8 -> 13,800.
//  4. linear(attn, w[1024,1024], b[1024]): 2·4096·1024² + 4096·1024 =
//     8,594,128,896 FLOPs -> 10,844.2 ns; bytes 18,876,416 (0.838644) ->
//     6,718.9; 10,844.2 + 2,060 = 12,904.2 -> 12,905.
//  5. add.Tensor(x, proj): 3 × 8,388,608 = 25,165,824 bytes (0.849096, between
//     16,800,622 and 33,601,244) -> 8,847.3 ns; + 2,060 = 10,907.3 -> 10,908.
//  6. gelu: 2 × 8,388,608 = 16,777,216 bytes (between [8,400,311, 0.788089] and
//     [16,800,622, 0.834447]: 0.834351) -> 6,002.4 ns; + 2,060 = 8,062.4 -> 8,063.
//
// Sum: 8,075 + 34,593 + 13,800 + 12,905 + 10,908 + 8,063 = 88,344 ns.
func TestHardwareReplayOfABlock(t *testing.T) {
	bf, f32 := "bfloat16", "float32"
	lines := []string{
		`{"ts":0,"ranks":[{"offset":0,"sizes":[],"strides":[]}],"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`,
	}
	// Step 0 creates the inputs and weights (ones() each); step 1 is the
	// block, timed as the difference of the two reports.
	for _, t := range []string{
		tensorJSON(1, bf, 8, 512, 1024),                  // x
		tensorJSON(2, bf, 1024), tensorJSON(3, bf, 1024), // norm weight, bias
		tensorJSON(7, bf, 3072, 1024), tensorJSON(8, bf, 3072), // qkv weight, bias
		tensorJSON(10, bf, 8, 16, 512, 64), tensorJSON(11, bf, 8, 16, 512, 64), tensorJSON(12, bf, 8, 16, 512, 64), // q, k, v
		tensorJSON(15, bf, 8, 512, 1024),                         // attention output, heads merged
		tensorJSON(16, bf, 1024, 1024), tensorJSON(17, bf, 1024), // projection weight, bias
	} {
		lines = append(lines, callJSON("ones.default", "", t))
	}
	lines = append(lines, `{"step":0}`,
		callJSON("native_layer_norm.default", `{"tensor":1},[1024],{"tensor":2},{"tensor":3},1e-05`,
			tensorJSON(4, bf, 8, 512, 1024)+","+tensorJSON(5, f32, 8, 512, 1)+","+tensorJSON(6, f32, 8, 512, 1)),
		callJSON("linear.default", `{"tensor":4},{"tensor":7},{"tensor":8}`, tensorJSON(9, bf, 8, 512, 3072)),
		callJSON("_scaled_dot_product_flash_attention.default", `{"tensor":10},{"tensor":11},{"tensor":12},0.0,true`,
			tensorJSON(13, bf, 8, 16, 512, 64)+","+tensorJSON(14, f32, 8, 16, 512)),
		callJSON("linear.default", `{"tensor":15},{"tensor":16},{"tensor":17}`, tensorJSON(18, bf, 8, 512, 1024)),
		callJSON("add.Tensor", `{"tensor":1},{"tensor":18}`, tensorJSON(19, bf, 8, 512, 1024)),
		callJSON("gelu.default", `{"tensor":19}`, tensorJSON(20, bf, 8, 512, 1024)),
		`{"step":1}`,
	)
	h100, err := fastsim.LoadHardware("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range []fastsim.Options{
		{Hardware: h100},
		{Hardware: h100, Controller: fastsim.ControllerNone},
		{Hardware: h100, Grouped: true},
	} {
		sim, err := fastsim.New(fastsim.Header{WorldSize: 1}, opt)
		if err != nil {
			t.Fatal(err)
		}
		if err := sim.Feed([]byte(strings.Join(lines, "\n"))); err != nil {
			t.Fatal(err)
		}
		steps := sim.Steps()
		if len(steps) != 2 {
			t.Fatalf("%d steps", len(steps))
		}
		if got := steps[1].ExecNs - steps[0].ExecNs; got != 88_344 {
			t.Errorf("%+v: the block took %d ns, want 88,344", opt, got)
		}
		if n, names := sim.UnknownOps(); n != 0 {
			t.Errorf("unknown ops: %v", names)
		}
	}
}

func TestLoadHardwareErrors(t *testing.T) {
	if _, err := fastsim.LoadHardware("tpu-v9"); err == nil {
		t.Error("an unknown preset loaded")
	}
	if _, err := fastsim.ParseHardware([]byte(`{"name":"x"}`)); err == nil {
		t.Error("an incomplete spec parsed")
	}
	if got := fastsim.HardwarePresets(); len(got) != 6 {
		t.Errorf("presets: %v", got)
	}
}
