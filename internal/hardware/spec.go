package hardware

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fastsim/fastsim/internal/jsonpos"
	"github.com/fastsim/fastsim/internal/smallfile"
)

// ErrSpec reports a hardware spec that cannot be used.
var ErrSpec = errors.New("bad hardware spec")

// Spec describes one system: its GPU, its hosts and the network between
// them. Every field is required unless its comment says otherwise.
//
// Units are in the keys: _tflops is 10^12 FLOP/s, _tbps 10^12 bytes/s,
// _gb 10^9 bytes, and _gbps 10^9 bytes/s (GB/s, not the Gb/s of a NIC's
// datasheet: a 200 Gb/s HDR NIC is 25), _us microseconds, _ns
// nanoseconds.
type Spec struct {
	// Name is the preset's name (h100-sxm) or a file's own label.
	Name string `json:"name"`
	// Description says what system this is, in a line.
	Description string  `json:"description"`
	GPU         GPU     `json:"gpu"`
	Host        Host    `json:"host"`
	Network     Network `json:"network"`
	// NCCL is the NCCL release series whose tuning model prices the
	// collectives (optional): one of NCCLReleases. Empty means "2.7",
	// the constants the presets' step latencies come from.
	NCCL string `json:"nccl,omitempty"`
	// Sources cites where each figure comes from, keyed by the field it
	// backs ("gpu.peak_dense_tflops", "host.nvlink_gbps", ...).
	Sources map[string]string `json:"sources"`
}

// NCCLReleases are the NCCL release series whose tuning constants the
// collective model holds (internal/costs): "2.7" is NVIDIA/nccl
// src/graph/tuning.cc at v2.7.5 (commit 01afd20), "2.18" the same file at
// v2.18.3-1 (unchanged to v2.18.5-1), "2.27" the same file at v2.27.7-1.
// "2.27" caps the LL protocol per GPU generation, so a spec that names it
// needs gpu.compute_capability.
var NCCLReleases = []string{"2.7", "2.18", "2.27"}

// GPU is one accelerator.
type GPU struct {
	// Model names the part (NVIDIA H100 SXM5 80GB).
	Model string `json:"model"`
	// PeakDenseTFLOPS is the dense (no sparsity) tensor-core peak per
	// dtype, in TFLOP/s: keys bf16, fp16 and fp32 (required), tf32 and fp8
	// (where the GPU has them); fp32 is the CUDA-core (non-tensor) FP32
	// peak, used for float32 matmuls. A product of a dtype without a peak
	// (fp8 on a GPU without it) is priced at VectorTFLOPS and counted as
	// priced by default.
	PeakDenseTFLOPS map[string]float64 `json:"peak_dense_tflops"`
	// VectorTFLOPS is the non-tensor FP32 peak, used for the arithmetic of
	// elementwise and reduction kernels.
	VectorTFLOPS float64 `json:"vector_fp32_tflops"`
	// HBMGB is the memory capacity, HBMTBps its peak bandwidth.
	HBMGB   float64 `json:"hbm_gb"`
	HBMTBps float64 `json:"hbm_tbps"`
	// SMs is the number of streaming multiprocessors.
	SMs int `json:"sms"`
	// ComputeCapability is the GPU's CUDA compute capability as NCCL
	// holds it, major × 10 + minor (80 for A100, 90 for H100 and H200,
	// 100 for B200), optional: NCCL's tuning tables are indexed by GPU
	// generation (src/graph/tuning.cc, compCapIndex), and the releases
	// that cap a protocol per generation ("2.27") need it.
	ComputeCapability int `json:"compute_capability,omitempty"`
	// GEMMEfficiency is the fraction of the dtype's peak a matrix multiply
	// reaches, as a function of its FLOPs.
	GEMMEfficiency Curve `json:"gemm_efficiency"`
	// GEMMTile is the output tile [rows, columns] of one thread block of
	// the GPU's large GEMM kernels (optional). With it a matrix product
	// is also priced by its shape: its output is cut into tiles (in
	// either orientation, whichever wastes less), one per SM at a time,
	// and the product runs in whole waves of SMs tiles (wave and tile
	// quantization), at most at the curve's largest efficiency.
	GEMMTile [2]int `json:"gemm_tile,omitempty"`
	// MemoryEfficiency is the fraction of HBM bandwidth a memory-bound
	// kernel reaches, as a function of the bytes it moves. The presets
	// carry the STREAM Triad rate BabelStream measured on the GPU for
	// large kernels and, for small ones, e × B/(B + B0): a kernel moving B
	// bytes takes at least the DRAM latency L (Little's law), B0 = e ×
	// HBM × L (see each preset's sources).
	MemoryEfficiency Curve `json:"memory_efficiency"`
	// LaunchOverheadNs is added to every kernel's roofline time: what a
	// short kernel costs beyond its own run when the host launches each
	// one itself. The presets take RRZE gpu-benches' small kernels queued
	// back to back, one launch each, whose time per kernel includes the
	// kernel's own run, minus the model's own price of that kernel (see
	// each preset's sources; internal/costs launch_test.go checks the
	// sum). Between long kernels the host is ahead and the GPU's own gap
	// is shorter than even a CUDA graph's time per kernel (that kernel's
	// run included), so there it overstates each kernel by more than the
	// launch minus that time (A100 853 ns, H200 800), at most by all of it.
	LaunchOverheadNs float64 `json:"launch_overhead_ns"`
}

// Host is one server.
type Host struct {
	// GPUsPerHost is the system's GPUs per host. A replay places ranks by
	// its history's gpus_per_host; this one warns of a mismatch and sets
	// search's default.
	GPUsPerHost int `json:"gpus_per_host"`
	// NVLinkGBps is each GPU's NVLink bandwidth in one direction, in GB/s
	// (bytes).
	NVLinkGBps float64 `json:"nvlink_gbps"`
	// NVLinkEfficiency is the fraction of it a collective's bus reaches
	// (protocol overhead).
	NVLinkEfficiency float64 `json:"nvlink_efficiency"`
	// NVLinkStepLatencyUs is the latency of one ring step over NVLink, per
	// NCCL protocol.
	NVLinkStepLatencyUs Protocols `json:"nvlink_step_latency_us"`
	// NVLSGBps is the bus bandwidth (GB/s) of an all-reduce by NVLink SHARP (NCCL's
	// NVLS algorithm: the NVSwitch reduces), within one host; 0 when the
	// host's switches cannot.
	NVLSGBps float64 `json:"nvls_gbps,omitempty"`
	// NVLSLatencyUs is an NVLS all-reduce's latency.
	NVLSLatencyUs float64 `json:"nvls_latency_us,omitempty"`
	// NVLSChannels is the number of channels (thread blocks) NCCL runs an
	// NVLS all-reduce on, and NVLSChunkBytes its largest chunk; with
	// them the pipeline of NCCL's NVLS kernel (scatter, reduce through
	// the switch, gather) is priced: its fill depends on the chunk NCCL
	// picks for the size. Zero: no pipeline fill.
	NVLSChannels int `json:"nvls_channels,omitempty"`
	// NVLSChunkBytes is NCCL's NVLS chunk size (NCCL_NVLS_CHUNKSIZE).
	NVLSChunkBytes float64 `json:"nvls_chunk_bytes,omitempty"`
	// CollectiveEfficiency (optional) is a measured factor on the NVLink
	// bandwidth of a ring all-reduce, reduce-scatter or all-gather within
	// one host, as a function of the collective's
	// bytes (the full buffer): the share of NCCL's modelled bandwidth its
	// kernels reach at that size. Like NCCL's own treeCorrectionFactor
	// (src/graph/tuning.cc), which corrects trees at medium sizes, but
	// measured from a published nccl-tests sweep; the preset's sources give
	// the sweep and the arithmetic. Empty: 1 at every size.
	CollectiveEfficiency Curve `json:"collective_efficiency,omitempty"`
}

// Network connects hosts.
type Network struct {
	// NICGBpsPerGPU is the network bandwidth per GPU in one direction, in
	// GB/s (bytes: a 200 Gb/s NIC is 25); a host's NICs carry GPUsPerHost
	// times it, shared by its GPUs.
	NICGBpsPerGPU float64 `json:"nic_gbps_per_gpu"`
	// NICEfficiency is the fraction of line rate a collective reaches.
	NICEfficiency float64 `json:"nic_efficiency"`
	// StepLatencyUs is the latency of one step across the network, per
	// NCCL protocol.
	StepLatencyUs Protocols `json:"step_latency_us"`
	// TreeMaxGBpsPerChannel is the most bus bandwidth (GB/s) NCCL's tuning model
	// grants one channel of a tree all-reduce over two hosts
	// (perChMaxTreeBws in src/graph/tuning.cc, N2 column, by GPU
	// generation). It decides whether NCCL's model prefers the tree to
	// the ring on two hosts; 0: the ring.
	TreeMaxGBpsPerChannel float64 `json:"tree_max_gbps_per_channel,omitempty"`
	// Kind names the network's transport (optional): "" or "infiniband"
	// (NCCL's own InfiniBand and RoCE transport, the presets' step
	// latencies), or "efa" (AWS's Elastic Fabric Adapter, which NCCL
	// reaches through the aws-ofi-nccl plugin, NetworkKinds).
	Kind string `json:"kind,omitempty"`
	// PluginLatencyUs is the latency the network's NCCL plugin reports
	// (ncclNetProperties.latency; aws-ofi-nccl sets it per EC2 platform,
	// NCCL's own InfiniBand transport leaves it 0). NCCL's tuning model
	// adds it to every network step of its rings and trees, twice for the
	// Simple protocol (src/graph/tuning.cc from v2.18.1: interLat =
	// hwLat[NET][a][p] + graphs[a]->latencyInter, "Also add the flush
	// extra latency"). Optional; 0: none.
	PluginLatencyUs float64 `json:"plugin_latency_us,omitempty"`
}

// NetworkKinds are the values Network.Kind may take.
var NetworkKinds = []string{"", "infiniband", "efa"}

// Protocols holds one value per NCCL protocol.
type Protocols struct {
	LL     float64 `json:"ll"`
	LL128  float64 `json:"ll128"`
	Simple float64 `json:"simple"`
}

// Curve is an efficiency as a function of a size: points [x, efficiency]
// with x strictly increasing. At is constant below the first point and
// above the last, and a power law between points (linear in log-log):
// efficiency that grows like a power of the size, as wave quantization
// makes a GEMM's (tiles grow as d², FLOPs as d³), is exact between
// points. Check requires every segment's exponent to stay below 1, so
// that time = size / efficiency never falls as the size grows.
type Curve [][2]float64

// At is the curve's efficiency at x.
func (c Curve) At(x float64) float64 {
	n := len(c)
	if n == 0 {
		return 1
	}
	if x <= c[0][0] {
		return c[0][1]
	}
	if x >= c[n-1][0] {
		return c[n-1][1]
	}
	i := sort.Search(n, func(i int) bool { return c[i][0] >= x })
	x0, y0, x1, y1 := c[i-1][0], c[i-1][1], c[i][0], c[i][1]
	return y0 * math.Pow(x/x0, math.Log(y1/y0)/math.Log(x1/x0))
}

// MinEfficiency is the least efficiency a spec may give, the floor of its
// other figures (1e-06): far below any measured (the presets' lowest
// point, a copy of a few hundred bytes, is at about 0.0008 of the HBM
// bandwidth), and far above the 1e-300 that would price every operation at
// the cost models' longest runtime, decades, with nothing to say why.
const MinEfficiency = 1e-6

func (c Curve) check(name string) error {
	if len(c) == 0 {
		return atKey(name, fmt.Errorf("%w: %s has no points", ErrSpec, name))
	}
	for i, p := range c {
		point := name + "." + strconv.Itoa(i)
		if !(p[0] > 0) || !(p[1] >= MinEfficiency) || p[1] > 1 {
			return atKey(point, fmt.Errorf("%w: %s point %d is [%g, %g]: want a size > 0 and an efficiency from %g to 1", ErrSpec, name, i, p[0], p[1], MinEfficiency))
		}
		if i > 0 && p[0] <= c[i-1][0] {
			return atKey(point, fmt.Errorf("%w: %s sizes must increase (point %d)", ErrSpec, name, i))
		}
		if i > 0 && math.Log(p[1]/c[i-1][1]) >= math.Log(p[0]/c[i-1][0]) {
			return atKey(point, fmt.Errorf("%w: %s from point %d to %d grows as fast as the size or faster: a larger operation would run faster", ErrSpec, name, i-1, i))
		}
	}
	return nil
}

// keyError is an error of Check about the value at one key of a spec's
// JSON text, so that Parse can name the key's line.
type keyError struct {
	path []string // the keys from the top, as jsonpos.Key takes them
	err  error
}

func (e *keyError) Error() string { return e.err.Error() }
func (e *keyError) Unwrap() error { return e.err }

// atKey blames err on the value at key, a dotted path
// ("gpu.memory_efficiency.3": a curve's fourth point). The names Check
// blames are the JSON keys of the spec's fields; a key of a map (a
// peak_dense_tflops dtype) holding a dot is given by keyAt.
func atKey(key string, err error) error {
	return &keyError{path: strings.Split(key, "."), err: err}
}

// keyAt is atKey with the path given key by key.
func keyAt(err error, path ...string) error { return &keyError{path: path, err: err} }

// Dtypes are the keys PeakDenseTFLOPS may hold.
var Dtypes = []string{"bf16", "fp16", "tf32", "fp32", "fp8"}

// RequiredDtypes are the keys PeakDenseTFLOPS must hold.
var RequiredDtypes = []string{"bf16", "fp16", "fp32"}

// Check validates s. An error about one value names its key ("gpu.hbm_tbps
// is -2, ..."); Parse also gives the key's line.
func (s *Spec) Check() error {
	// Rates and sizes are bounded far beyond any hardware on both sides:
	// a bandwidth of 1e-300 TB/s prices every op past the largest time,
	// and the replay then blamed a line of the history.
	pos := func(name string, v float64) error {
		if !(v >= 1e-6 && v <= 1e9) {
			return atKey(name, fmt.Errorf("%w: %s is %g, want 1e-06 to 1e+09", ErrSpec, name, v))
		}
		return nil
	}
	// count checks a whole number of things.
	count := func(name string, v, most int) error {
		if v < 1 || v > most {
			return atKey(name, fmt.Errorf("%w: %s is %d, want 1 to %d", ErrSpec, name, v, most))
		}
		return nil
	}
	frac := func(name string, v float64) error {
		if !(v >= MinEfficiency) || v > 1 {
			return atKey(name, fmt.Errorf("%w: %s is %g, want a fraction from %g to 1", ErrSpec, name, v, MinEfficiency))
		}
		return nil
	}
	// within checks an optional value: 0 (absent) up to most.
	within := func(name string, v, most float64, want string) error {
		if v < 0 || v > most || math.IsNaN(v) {
			return atKey(name, fmt.Errorf("%w: %s is %g, want %s", ErrSpec, name, v, want))
		}
		return nil
	}
	if s.Name == "" {
		return atKey("name", fmt.Errorf("%w: no name", ErrSpec))
	}
	if s.NCCL != "" && !slices.Contains(NCCLReleases, s.NCCL) {
		return atKey("nccl", fmt.Errorf("%w: nccl is %q (want one of %s)", ErrSpec, s.NCCL, strings.Join(NCCLReleases, ", ")))
	}
	if v := s.GPU.ComputeCapability; v < 0 || v > 1000 {
		return atKey("gpu.compute_capability", fmt.Errorf("%w: gpu.compute_capability is %d, want 0..1000 (major × 10 + minor: 90 for 9.0)", ErrSpec, v))
	}
	if s.NCCL == "2.27" && s.GPU.ComputeCapability == 0 {
		return atKey("nccl", fmt.Errorf("%w: nccl %q caps LL per GPU generation: gpu.compute_capability is needed", ErrSpec, s.NCCL))
	}
	if len(s.GPU.PeakDenseTFLOPS) == 0 {
		return atKey("gpu.peak_dense_tflops", fmt.Errorf("%w: gpu.peak_dense_tflops is empty", ErrSpec))
	}
	// In sorted order, so that of two bad dtypes the same one is named
	// every time.
	dtypes := make([]string, 0, len(s.GPU.PeakDenseTFLOPS))
	for k := range s.GPU.PeakDenseTFLOPS {
		dtypes = append(dtypes, k)
	}
	sort.Strings(dtypes)
	for _, k := range dtypes {
		if !slices.Contains(Dtypes, k) {
			return keyAt(fmt.Errorf("%w: gpu.peak_dense_tflops has %q (want one of %s)", ErrSpec, k, strings.Join(Dtypes, ", ")), "gpu", "peak_dense_tflops", jsonpos.Exact(k))
		}
		if err := pos("gpu.peak_dense_tflops."+k, s.GPU.PeakDenseTFLOPS[k]); err != nil {
			// A map's key, matched exactly ("bf16", not "BF16").
			return keyAt(errors.Unwrap(err), "gpu", "peak_dense_tflops", jsonpos.Exact(k))
		}
	}
	// The dtypes a training program's matrix products take must have a
	// peak: without one they would be priced at the CUDA cores' rate
	// (vector_fp32_tflops), some 16 times slower on an A100, with no sign
	// of it in the result. tf32 and fp8 are optional (float32 products
	// use fp32; a GPU may have no fp8).
	for _, k := range RequiredDtypes {
		if _, ok := s.GPU.PeakDenseTFLOPS[k]; !ok {
			return atKey("gpu.peak_dense_tflops", fmt.Errorf("%w: gpu.peak_dense_tflops has no %s (%s are required)", ErrSpec, k, strings.Join(RequiredDtypes, ", ")))
		}
	}
	for _, e := range []error{
		pos("gpu.vector_fp32_tflops", s.GPU.VectorTFLOPS),
		pos("gpu.hbm_gb", s.GPU.HBMGB),
		pos("gpu.hbm_tbps", s.GPU.HBMTBps),
		count("gpu.sms", s.GPU.SMs, 1<<20),
		s.GPU.GEMMEfficiency.check("gpu.gemm_efficiency"),
		s.GPU.MemoryEfficiency.check("gpu.memory_efficiency"),
		count("host.gpus_per_host", s.Host.GPUsPerHost, 65536),
		pos("host.nvlink_gbps", s.Host.NVLinkGBps),
		frac("host.nvlink_efficiency", s.Host.NVLinkEfficiency),
		pos("network.nic_gbps_per_gpu", s.Network.NICGBpsPerGPU),
		frac("network.nic_efficiency", s.Network.NICEfficiency),
	} {
		if e != nil {
			return e
		}
	}
	if len(s.Host.CollectiveEfficiency) > 0 {
		if err := s.Host.CollectiveEfficiency.check("host.collective_efficiency"); err != nil {
			return err
		}
	}
	for _, e := range []error{
		within("host.nvls_gbps", s.Host.NVLSGBps, 1e6, "0..1e6"),
		within("host.nvls_latency_us", s.Host.NVLSLatencyUs, 1e6, "0..1e6"),
		within("network.tree_max_gbps_per_channel", s.Network.TreeMaxGBpsPerChannel, 1e6, "0..1e6"),
	} {
		if e != nil {
			return e
		}
	}
	if !slices.Contains(NetworkKinds, s.Network.Kind) {
		return atKey("network.kind", fmt.Errorf("%w: network.kind is %q (want infiniband or efa)", ErrSpec, s.Network.Kind))
	}
	for _, e := range []error{
		within("network.plugin_latency_us", s.Network.PluginLatencyUs, 1e6, "0..1e6"),
		within("host.nvls_channels", float64(s.Host.NVLSChannels), 1024, "0..1024"),
		within("host.nvls_chunk_bytes", s.Host.NVLSChunkBytes, 1<<30, "0..2^30"),
	} {
		if e != nil {
			return e
		}
	}
	if t := s.GPU.GEMMTile; t != [2]int{} && (t[0] <= 0 || t[1] <= 0 || t[0] > 1<<16 || t[1] > 1<<16) {
		return atKey("gpu.gemm_tile", fmt.Errorf("%w: gpu.gemm_tile is %v, want two sizes in 1..65536", ErrSpec, t))
	}
	if err := within("gpu.launch_overhead_ns", s.GPU.LaunchOverheadNs, 1e9, "0..1e9"); err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		v    Protocols
	}{{"host.nvlink_step_latency_us", s.Host.NVLinkStepLatencyUs}, {"network.step_latency_us", s.Network.StepLatencyUs}} {
		for _, v := range []struct {
			key string
			us  float64
		}{{"ll", p.v.LL}, {"ll128", p.v.LL128}, {"simple", p.v.Simple}} {
			if err := within(p.name+"."+v.key, v.us, 1e6, "0..1e6 µs"); err != nil {
				return err
			}
		}
	}
	return nil
}

// MaxSpecBytes is the largest spec file read.
const MaxSpecBytes = 1 << 20

// Parse reads a Spec from JSON; unknown fields are errors. Every error is
// a *jsonpos.Error naming its line: where the JSON text is wrong, or the
// key of a value Check refuses.
func Parse(data []byte) (*Spec, error) {
	s, err := decode(data)
	if err != nil {
		return nil, err
	}
	if err := s.Check(); err != nil {
		line := 1
		if ke := (*keyError)(nil); errors.As(err, &ke) {
			line = keyLine(data, ke.path)
			if !jsonpos.Has(data, ke.path...) {
				// A key left out reads as 0: say so.
				err = fmt.Errorf("%w (the file gives no %q)", err, strings.Join(ke.path, "."))
			}
		}
		return nil, &jsonpos.Error{Line: line, Err: err}
	}
	return s, nil
}

// keyLine is the line of path's key in data or, when the key is absent (a
// required value left out reads as 0), of the nearest object holding it
// that is there ("gpu" for a missing gpu.sms); 1 if none is. A key on
// line 1 is found so too: the keys holding it come no later.
func keyLine(data []byte, path []string) int {
	for n := len(path); n > 0; n-- {
		if line := jsonpos.Key(data, path[:n]...); line > 1 {
			return line
		}
	}
	return 1
}

// decode reads a Spec from JSON without checking its values; an error in
// the JSON text is a *jsonpos.Error naming its line.
func decode(data []byte) (*Spec, error) {
	if len(data) > MaxSpecBytes {
		return nil, fmt.Errorf("%w: more than %d bytes, the most a hardware spec may hold", ErrSpec, MaxSpecBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return nil, &jsonpos.Error{Line: jsonpos.Line(data, err), Err: fmt.Errorf("%w: %s", ErrSpec, jsonpos.Describe(data, err))}
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return nil, &jsonpos.Error{Line: jsonpos.Trailing(data, end), Err: fmt.Errorf("%w: trailing data after the JSON object", ErrSpec)}
	}
	if line, msg, dup := jsonpos.Duplicate(data); dup {
		return nil, &jsonpos.Error{Line: line, Err: fmt.Errorf("%w: %s", ErrSpec, msg)}
	}
	return &s, nil
}

//go:embed presets/*.json
var presetFS embed.FS

// Presets lists the built-in specs' names, sorted.
func Presets() []string {
	ents, _ := presetFS.ReadDir("presets")
	var names []string
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".json"))
	}
	sort.Strings(names)
	return names
}

// PresetJSON returns a built-in spec's JSON text.
func PresetJSON(name string) ([]byte, bool) {
	data, err := presetFS.ReadFile(path.Join("presets", name+".json"))
	return data, err == nil
}

// Preset returns a built-in spec by name.
func Preset(name string) (*Spec, error) {
	data, ok := PresetJSON(name)
	if !ok {
		return nil, fmt.Errorf("%w: no preset %q (presets: %s)", ErrSpec, name, strings.Join(Presets(), ", "))
	}
	// A preset is no file a user could edit: a value it gets wrong is
	// named by its key alone.
	s, err := decode(data)
	if err == nil {
		err = s.Check()
	}
	if err != nil {
		return nil, fmt.Errorf("preset %s: %w", name, err)
	}
	return s, nil
}

// ReadFile returns the text of the spec file at path, refusing one of
// more than MaxSpecBytes; errors name the file.
func ReadFile(path string) ([]byte, error) {
	data, err := smallfile.Read(path, MaxSpecBytes, "a hardware spec")
	if errors.Is(err, smallfile.ErrTooLarge) {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrSpec, err)
	}
	return data, err
}

// Load returns the preset called nameOrPath, else reads the spec file at
// that path; errors name the file.
func Load(nameOrPath string) (*Spec, error) {
	if _, ok := PresetJSON(nameOrPath); ok {
		return Preset(nameOrPath)
	}
	data, err := ReadFile(nameOrPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !strings.ContainsAny(nameOrPath, "/.") {
			return nil, fmt.Errorf("%w: %q is neither a preset (%s) nor a file", ErrSpec, nameOrPath, strings.Join(Presets(), ", "))
		}
		return nil, err
	}
	s, err := Parse(data)
	if err != nil {
		return nil, jsonpos.InFile(nameOrPath, err)
	}
	return s, nil
}

// PeakTFLOPS is the dense peak for an ATen dtype name ("bfloat16",
// "torch.float16", "float8_e4m3fn", ...), and whether the GPU has one:
// float32 uses fp32, the float8 kinds fp8.
func (g *GPU) PeakTFLOPS(dtype string) (float64, bool) {
	v, ok := g.PeakDenseTFLOPS[DtypeKey(dtype)]
	return v, ok
}

// DtypeKey maps an ATen dtype name to a PeakDenseTFLOPS key, "" if none.
func DtypeKey(dtype string) string {
	d := strings.TrimPrefix(dtype, "torch.")
	switch {
	case d == "bfloat16":
		return "bf16"
	case d == "float16" || d == "half":
		return "fp16"
	case d == "float32" || d == "float":
		return "fp32"
	case strings.HasPrefix(d, "float8"):
		return "fp8"
	}
	return ""
}
