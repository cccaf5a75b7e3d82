package costs

import (
	"math"
	"testing"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/sched"
)

// Hand-computed collectives on the h100-sxm preset: NVLink 450 GB/s ×
// 0.8222 = 369.99 B/ns per rank, network 50 GB/s × 0.94 = 47 B/ns per
// rank; NCCL latencies from tuning.cc (collective.go). The preset carries
// no measured efficiency curve; NVLS has 16 channels and 128 KiB chunks.
func TestHardwareCollectiveByHand(t *testing.T) {
	s := h100(t)
	const GiB = 1 << 30
	cases := []struct {
		what  string
		c     Collective
		bytes int64
		p     Placement
		want  int64
	}{
		// One host, all 8 GPUs, 1 GiB all-reduce, NVLS: 25 µs + 2·7/8·2^30
		// = 1,879,048,192 B / 476 B/ns = 3,947,580.2 ns, plus the
		// pipeline's fill: 2^30 is not below 64 loops of 128 KiB chunks
		// (64 × 16 channels × 8 heads × 128 KiB = 2^30), so the chunk
		// stays 128 KiB, a loop is 128 × 128 KiB = 16,777,216 B, and two
		// more stage times of 7/4 × 16,777,216 / 476 = 61,680.9 ns add
		// 123,361.9; total 4,095,942.1 -> 4,095,943. (Ring Simple: latency
		// 8.4 + 14 steps × 3.4 = 56.0 µs + 1,879,048,192 / 369.99 =
		// 5,078,645.9 ns = 5,134,645.9, slower; LL128 and LL slower still.)
		{"all-reduce in a host", AllReduce, GiB, Placement{8, 1, 8}, 4_095_943},
		// The same on 4 of the host's 8 GPUs: no NVLS (priced only for the
		// whole host), ring Simple: 8.4 + 6 × 3.4 = 28.8 µs + 2·3/4·2^30 =
		// 1,610,612,736 / 369.99 = 4,353,125.0 ns = 4,381,925.0 ->
		// 4,381,926.
		{"all-reduce on half a host", AllReduce, GiB, Placement{4, 1, 4}, 4_381_926},
		// Two hosts of 8: the
		// ring's 30 steps, 2 across hosts: (8.4 + 28 ×
		// 3.4 + 2 × 9.6) × 1.9 (plateau) = 233.32 µs; NVLink phase
		// 5,078,645.9 ns, network phase 2·(1/2)·2^30/8 = 134,217,728 B / 47
		// = 2,855,696.3 ns, pipelined: the slower, 5,078,645.9; total
		// 5,311,965.9 -> 5,311,966. (Tree Simple: 492 µs + 2^30 / (0.9 ×
		// 369.99 × 0.5) = 6,941,074 ns, slower.)
		{"all-reduce over two hosts", AllReduce, GiB, Placement{16, 2, 8}, 5_311_966},
		// 1e8 B between hosts, Simple: 8.4 + 9.6 = 18 µs + 1e8 / 47 =
		// 2,127,659.6 ns -> 2,145,660.
		{"send across hosts", PointToPoint, 100_000_000, Placement{2, 2, 1}, 2_145_660},
		// Reduce-scatter of 64 MiB in a host of 8, Simple: 8.4 + 7 × 3.4 =
		// 32.2 µs + 7/8 · 67,108,864 = 58,720,256 / 369.99 = 158,707.7 ns
		// = 190,907.7 -> 190,908. (LL128: 23.3 µs + 58,720,256 / (369.99 ×
		// 0.92 = 340.3908) = 172,508.4 ns = 195,808.4; slower.)
		{"reduce-scatter in a host", ReduceScatter, 64 << 20, Placement{8, 1, 8}, 190_908},
		// One rank: nothing to do.
		{"one rank", AllReduce, GiB, Placement{1, 1, 1}, 0},
	}
	for _, c := range cases {
		if got := HardwareCollectiveNs(s, c.c, c.bytes, c.p); got != c.want {
			t.Errorf("%s: %d ns, want %d", c.what, got, c.want)
		}
	}
}

// The protocol fastsim picks for a medium all-reduce on one 8 × A100 host
// is the one NCCL's tuning model picks (bench/COLLECTIVES.md, "Medium
// sizes: what NCCL runs"): LL at 1 MiB, LL128 from 2 to 16 MiB, Simple from
// 32 MiB. By hand on the a100-80gb preset, NVLink 300 GB/s × 0.7833 =
// 234.99 B/ns, 14 ring steps, bytes moved 2·7/8·S:
//
//	LL     3.6 + 14 × 0.47 = 10.18 µs, at 234.99/4     = 58.7475 B/ns
//	LL128 10.0 + 14 × 1.9  = 36.6 µs,  at 234.99 × .92 = 216.1908 B/ns
//	Simple 8.4 + 14 × 3.4  = 56.0 µs,  at 234.99 B/ns
//
// 1 MiB (1,835,008 B moved): LL 41,415.5, LL128 45,087.9, Simple 63,808.9 ns.
// 2 MiB (3,670,016 B): LL 72,651.0, LL128 53,575.8, Simple 71,617.8 ns.
// 16 MiB (29,360,128 B): LL128 172,406.6, Simple 180,942.0 ns.
// 32 MiB (58,720,256 B): LL128 308,213.1, Simple 305,884.1 ns.
//
// This is NCCL's model alone: the preset's measured efficiency curve is
// taken off here (TestMeasuredEfficiencyByHand prices it with the curve).
func TestMediumAllReduceProtocolByHand(t *testing.T) {
	a, err := hardware.Preset("a100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	s := *a
	s.Host.CollectiveEfficiency = nil
	host := Placement{Ranks: 8, Hosts: 1, MaxPerHost: 8}
	cases := []struct {
		what  string
		bytes int64
		want  int64
	}{
		{"1 MiB, LL", 1 << 20, 41_416},
		{"2 MiB, LL128", 2 << 20, 53_576},
		{"16 MiB, LL128", 16 << 20, 172_407},
		{"32 MiB, Simple", 32 << 20, 305_885},
	}
	for _, c := range cases {
		if got := HardwareCollectiveNs(&s, AllReduce, c.bytes, host); got != c.want {
			t.Errorf("%s: %d ns, want %d", c.what, got, c.want)
		}
	}
}

// The a100-80gb preset with its measured efficiency curve, by hand: the
// NVLink bandwidth of every protocol is scaled by the curve at the size.
//
// 16 MiB, a point of the curve (0.585), 29,360,128 B moved: LL128 36.6 µs
// + 29,360,128 / (234.99 × 0.585 × 0.92 = 126.4716) = 232,148.0 ns =
// 268,748.0 -> 268,748; Simple 56.0 µs + 29,360,128 / 137.4692 =
// 213,576.1 ns = 269,576.1, slower (LL128 is kept, as without the curve).
//
// 100 MB, between 64 MiB (0.770) and 128 MiB (0.773): a power law,
// 0.770 × (1e8 / 67,108,864)^(ln(0.773/0.770) / ln 2) = 0.770 ×
// 1.49012^0.0056100 = 0.771725; 1.75e8 B moved; Simple 56.0 µs +
// 1.75e8 / (234.99 × 0.771725 = 181.3476) = 964,997.5 ns = 1,020,997.5 ->
// 1,020,998 (without the curve 800,713: the curve adds 27.5%).
func TestMeasuredEfficiencyByHand(t *testing.T) {
	s, err := hardware.Preset("a100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	host := Placement{Ranks: 8, Hosts: 1, MaxPerHost: 8}
	for _, c := range []struct {
		bytes, want int64
	}{{16 << 20, 268_748}, {100_000_000, 1_020_998}} {
		if got := HardwareCollectiveNs(s, AllReduce, c.bytes, host); got != c.want {
			t.Errorf("%d B: %d ns, want %d", c.bytes, got, c.want)
		}
	}
	// Across hosts the curve is not applied: two hosts of 8 price as
	// without it.
	plain := *s
	plain.Host.CollectiveEfficiency = nil
	two := Placement{Ranks: 16, Hosts: 2, MaxPerHost: 8}
	for _, b := range []int64{16 << 20, 100_000_000} {
		if got, want := HardwareCollectiveNs(s, AllReduce, b, two), HardwareCollectiveNs(&plain, AllReduce, b, two); got != want {
			t.Errorf("%d B over two hosts: %d ns with the curve, %d without", b, got, want)
		}
	}
}

func modelBusBW(s *hardware.Spec, bytes float64, p Placement) float64 {
	ns := float64(HardwareCollectiveNs(s, AllReduce, int64(bytes), p))
	return BusBandwidthGBps(AllReduce, bytes, ns, p.Ranks)
}

// Single published figures without a full sweep; the sweeps are in
// testdata/nccl-tests/published.json (TestNCCLTestsPublished).
func TestBusBandwidthAgainstNCCLTests(t *testing.T) {
	a, err := hardware.Preset("a100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	// One host of 8 A100 (NVSwitch), large messages: 230-250 GB/s bus
	// bandwidth (docs.alayanew.com, "NCCL-tests in practice", reference
	// numbers for 8×A100 SXM4 NVLink).
	if got := modelBusBW(a, 1<<30, Placement{8, 1, 8}); got < 230*0.85 || got > 250*1.15 {
		t.Errorf("8 A100, 1 GiB: model %.1f GB/s, published 230-250", got)
	}
	// One host of 8 H200 at 16 GiB: 482.26 GB/s with NVLS (NCCL's
	// default), 367.61 GB/s with NVLink SHARP off (stas00/ml-engineering,
	// network/benchmarks/results/all-reduce-8xH200.md and its SHARP
	// section).
	h200, err := hardware.Preset("h200")
	if err != nil {
		t.Fatal(err)
	}
	if got := modelBusBW(h200, 16<<30, Placement{8, 1, 8}); math.Abs(got/482.26-1) > 0.15 {
		t.Errorf("8 H200 NVLS, 16 GiB: model %.1f GB/s, published 482.26", got)
	}
	ring := *h200
	ring.Host.NVLSGBps = 0
	if got := modelBusBW(&ring, 16<<30, Placement{8, 1, 8}); math.Abs(got/367.61-1) > 0.15 {
		t.Errorf("8 H200 ring, 16 GiB: model %.1f GB/s, published 367.61", got)
	}
	// OCI BM.GPU4.8 (8 A100-SXM4-40GB, 16 × 100 Gb/s RoCE per host, 25
	// GB/s per GPU as DGX A100), NCCL 2.26.5, all_reduce_perf at 10 GiB,
	// out-of-place: 232.20 GB/s on one host, 191.76 on two
	// (oracle-japan/ocitutorials,
	// content/hpc/benchmark/run-nccltests-ubuntu/index.md, commit
	// 4011426). Two hosts are NCCL's ring, at most the hosts' NIC total
	// (8 × 24 = 192 GB/s; "Model change: rings across hosts" in
	// bench/COLLECTIVES.md).
	a40, err := hardware.Preset("a100-40gb")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p   Placement
		pub float64
	}{{Placement{8, 1, 8}, 232.20}, {Placement{16, 2, 8}, 191.76}} {
		if got := modelBusBW(a40, 10<<30, c.p); math.Abs(got/c.pub-1) > 0.15 {
			t.Errorf("%d A100 on %d hosts, 10 GiB: model %.1f GB/s, published %.2f", c.p.Ranks, c.p.Hosts, got, c.pub)
		}
	}
}

// Spreading the same 64 ranks over more hosts (8 per host down to 1)
// never makes a collective faster, and more bytes never do either.
func TestCollectiveMonotone(t *testing.T) {
	s := h100(t)
	for _, c := range []Collective{AllReduce, ReduceScatter, AllGather, AllToAll, Broadcast} {
		prev := int64(0)
		for hosts := int64(8); hosts <= 64; hosts *= 2 {
			ns := HardwareCollectiveNs(s, c, 256<<20, Placement{64, hosts, 64 / hosts})
			if hosts > 8 && ns < prev {
				t.Errorf("%v on %d hosts: %d ns, faster than on %d: %d", c, hosts, ns, hosts/2, prev)
			}
			prev = ns
		}
		prev = 0
		for b := int64(1); b <= 1<<32; b *= 4 {
			ns := HardwareCollectiveNs(s, c, b, Placement{16, 2, 8})
			if ns < prev {
				t.Errorf("%v of %d B: %d ns, faster than a quarter of it: %d", c, b, ns, prev)
			}
			prev = ns
		}
	}
}

// The engine's description of a Reduce reaches the hardware model: hosts
// and ranks per host decide the price.
func TestReduceThroughHardwareModel(t *testing.T) {
	m, err := NewWithHardware(Config{}, h100(t))
	if err != nil {
		t.Fatal(err)
	}
	r := gen.Reduce{Reduction: "sum", LocalTensor: tensorOf(1, "bfloat16", 1<<14, 1<<15), Result: tensorOf(2, "bfloat16", 1<<14, 1<<15)}
	// 2^30 bytes over the 8 ranks of one host: NVLS, as by hand above.
	if got := m.ReduceRuntimeNs(&r, sched.Comm{Ranks: 8, SameHost: true, GPUsPerHost: 8, Hosts: 1, MaxPerHost: 8}); got != 4_095_943 {
		t.Errorf("in a host: %d", got)
	}
	if got := m.ReduceRuntimeNs(&r, sched.Comm{Ranks: 16, GPUsPerHost: 8, Hosts: 2, MaxPerHost: 8}); got != 5_311_966 {
		t.Errorf("over two hosts: %d", got)
	}
	// Without placement the model derives it from GPUsPerHost.
	if got := m.ReduceRuntimeNs(&r, sched.Comm{Ranks: 16, GPUsPerHost: 8}); got != 5_311_966 {
		t.Errorf("derived placement: %d", got)
	}
	// A "comm" section in the costs file still wins over the hardware.
	m2, err := NewWithHardware(Config{Comm: &Comm{}}, h100(t))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m2.ReduceRuntimeNs(&r, sched.Comm{Ranks: 8, SameHost: true}), m2.CollectiveNs(AllReduce, 1<<30, 8, true); got != want {
		t.Errorf("comm override: %d, want %d", got, want)
	}
}

// NCCL's NVLS chunk for a size (src/enqueue.cc calcCollChunking) and the
// pipeline fill it sets, by hand on the h200 preset: 16 channels × 8
// heads = 128 chunks in flight, largest chunk 128 KiB, bus 476 B/ns,
// latency 25 µs, bytes moved 7/4·S.
func TestNVLSPipelineByHand(t *testing.T) {
	const MiB = 1 << 20
	for _, c := range []struct{ S, want float64 }{
		// 64 KiB below 64 × 128 × 128 KiB = 1 GiB, 32 KiB below
		// 8 × 128 × 64 KiB = 64 MiB, 16 KiB below 2 × 128 × 32 KiB =
		// 8 MiB; each threshold itself keeps the larger chunk.
		{1 << 30, 131072}, {1<<30 - 1, 65536}, {64 * MiB, 65536}, {64*MiB - 1, 32768},
		{8 * MiB, 32768}, {8*MiB - 1, 16384}, {1 * MiB, 16384},
		// 2 MiB: 16 KiB, so 128 × 16 KiB is exactly one loop.
		{2 * MiB, 16384},
	} {
		if got := nvlsChunk(c.S, 128, 131072); got != c.want {
			t.Errorf("nvlsChunk(%g) = %g, want %g", c.S, got, c.want)
		}
	}
	s, err := hardware.Preset("h200")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what    string
		S, want float64
	}{
		// 1 MiB: chunk 16 KiB, a loop of 128 × 16 KiB = 2 MiB holds it
		// all, so the three stages each take the whole bandwidth term:
		// 25,000 + 3 × 1,835,008 / 476 (3,855.06) = 36,565.18 ns.
		{"1 MiB", MiB, 36565.18},
		// 16 MiB: chunk 32 KiB, loop 4 MiB: 25,000 + 29,360,128 / 476
		// (61,680.94) + 2 × 7,340,032 / 476 (15,420.24) = 117,521.41 ns.
		{"16 MiB", 16 * MiB, 117521.41},
	} {
		if got := nvlsAllReduce(&s.Host, c.S, 8, tuningFor("", 0)); math.Abs(got-c.want) > 0.01 {
			t.Errorf("NVLS all-reduce of %s: %.2f ns, want %.2f", c.what, got, c.want)
		}
	}
	// Without channels or chunk the fill is left out: tuning.cc's time.
	h := s.Host
	h.NVLSChannels = 0
	if got, want := nvlsAllReduce(&h, MiB, 8, tuningFor("", 0)), 25000+1835008/476.0; math.Abs(got-want) > 0.01 {
		t.Errorf("no pipeline: %.2f ns, want %.2f", got, want)
	}
}

// Across hosts without NVLS, NCCL runs a ring through all the ranks, whose
// host NICs carry what one rank sends; over two hosts its tuning model
// prefers the tree only where a channel's NIC is slow (twoHostTreeFirst).
// By hand, 2 hosts × 8 A100 (a100-80gb: NVLink 300 × 0.7833 = 234.99
// GB/s, NIC 25 × 0.96 = 24 GB/s per GPU), 1 GiB:
//
//   - all-reduce, ring Simple: the NIC term 2·15/16·2^30/8 B =
//     251,658,240 B at 24 GB/s = 10,485,760 ns exceeds the NVLink
//     term (7/8·2·15/16·2^30 / 234.99 = 7,496,522 ns); latency (8.4 +
//     28 × 3.4 + 2 × 9.6) × 1.9 = 233.32 µs; 10,719,080 ns (bus
//     bandwidth 1.875 × 2^30 / 10,719,080 = 187.82 GB/s). The tree is not preferred: per
//     channel 0.5 × min(0.92 × 2 × 25, 23.6) = 11.8 against the ring's
//     25 × 16/30 = 13.33;
//   - all-gather, ring Simple: 15/16·2^30/8 = 125,829,120 B at 24 =
//     5,242,880 ns, latency 8.4 + 14 × 3.4 + 9.6 = 65.6 µs: 5,308,480
//     ns (189.63 GB/s);
//   - with EFA's 6.25 GB/s per GPU (6.0 at this preset's 0.96) the tree is
//     preferred (0.5 × min(11.5, 23.6) = 5.75 against 3.33), and the
//     all-reduce takes the hierarchical form: each GPU sends 2^30/8 B
//     over the network, 134,217,728 / 6.0 = 22,369,621.3 ns, plus the
//     same 233.32 µs: 22,602,941.3 -> 22,602,942 ns.
func TestRingAcrossHostsByHand(t *testing.T) {
	s, err := hardware.Preset("a100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	two := Placement{Ranks: 16, Hosts: 2, MaxPerHost: 8}
	if got := HardwareCollectiveNs(s, AllReduce, 1<<30, two); got != 10_719_080 {
		t.Errorf("all-reduce: %d ns, want 10,719,080", got)
	}
	if got := HardwareCollectiveNs(s, AllGather, 1<<30, two); got != 5_308_480 {
		t.Errorf("all-gather: %d ns, want 5,308,480", got)
	}
	efa := *s
	efa.Network.NICGBpsPerGPU = 6.25
	if got := HardwareCollectiveNs(&efa, AllReduce, 1<<30, two); got != 22_602_942 {
		t.Errorf("all-reduce, EFA: %d ns, want 22,602,942", got)
	}
	if twoHostTreeFirst(&s.Network, 16) || !twoHostTreeFirst(&efa.Network, 16) {
		t.Error("tree preference: want the ring on HDR, the tree on EFA")
	}
}

// TestNCCLReleaseByHand prices the same collectives with the tuning
// constants of NCCL 2.7 (the default), 2.18 and 2.27 (tuningFor), by hand.
func TestNCCLReleaseByHand(t *testing.T) {
	s, err := hardware.Preset("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	s18 := *s
	s18.NCCL = "2.18"
	const MiB = 1 << 20
	p := Placement{Ranks: 8, Hosts: 1, MaxPerHost: 8}
	// NVLink bus bandwidth 450 × 0.8222 = 369.99 GB/s; an all-gather of
	// 1 MiB sends 7/8 × 1,048,576 = 917,504 B per rank over 7 steps.
	for _, c := range []struct {
		what string
		spec *hardware.Spec
		want int64
	}{
		// 2.7: ring LL, 3.6 + 7 × 0.47 = 6.89 µs; LL at a third of
		// the bus, 123.33 GB/s: 917,504 / 123.33 = 7,439.36 ns;
		// 14,329.36 ns. (LL128: 10.0 + 7 × 1.9 = 23.3 µs already.)
		{"2.7", s, 14330},
		// 2.18: ring LL, 6.6 + 7 × 0.6 = 10.8 µs; LL capped at
		// llMaxBw 87.7 GB/s: 917,504 / 87.7 = 10,461.85 ns;
		// 21,261.85 ns. (LL128: 14.0 + 7 × 1.9 = 27.3 µs already.)
		{"2.18", &s18, 21262},
	} {
		if got := HardwareCollectiveNs(c.spec, AllGather, MiB, p); got != c.want {
			t.Errorf("all-gather of 1 MiB with NCCL %s: %d ns, want %d", c.what, got, c.want)
		}
	}
	// NVLS latency: 2.18's baseLat[NVLS][Simple] is 23 µs, the preset's
	// (a later release's) 25: the same all-reduce is 2 µs faster.
	if got, want := nvlsAllReduce(&s.Host, MiB, 8, tuningFor("2.18", 0)), 23000+3*1835008/476.0; math.Abs(got-want) > 0.01 {
		t.Errorf("NVLS all-reduce of 1 MiB with NCCL 2.18: %.2f ns, want %.2f", got, want)
	}
	// 2.27 (tuningFor, v2.27.7-1): an all-reduce over the 8 GPUs of an
	// H200 host (the h200 preset: NVLink 450 × 0.8222 = 369.99 GB/s,
	// compute capability 9.0), 2 × 7/8 × S per rank over 14 ring steps.
	// Ring LL: 6.6 + 14 × 0.6 = 15.0 µs, at min(llMaxBws[Hopper][N1] =
	// 141, 369.99 × .5 = 185.0) = 141 GB/s.
	//   1 MiB: 15,000 + 1,835,008 / 141 = 15,000 + 13,014.24 =
	//   28,014.24 ns. (NVLS with its fill: 25,000 + 3 × 1,835,008 / 476
	//   = 36,565.0; LL128: 14.0 + 14 × 1.9 = 40.6 µs already.)
	//   2 MiB: 15,000 + 3,670,016 / 141 = 41,028.48 ns. (NVLS with its
	//   fill, one loop: 25,000 + 3 × 3,670,016 / 476 = 48,130.35; LL128:
	//   40,600 + 3,670,016 / (369.99 × 0.92) = 51,381.80.)
	// The same host with an Ampere's compute capability (8.0) caps LL at
	// llMaxBws[Ampere][N1] = 87.7 GB/s: 1 MiB takes 15,000 + 1,835,008 /
	// 87.7 = 35,923.69 ns (NVLS 36,565.0 is slower).
	h200, err := hardware.Preset("h200")
	if err != nil {
		t.Fatal(err)
	}
	s27 := *h200
	s27.NCCL = "2.27"
	s27amp := s27
	s27amp.GPU.ComputeCapability = 80
	for _, c := range []struct {
		what  string
		spec  *hardware.Spec
		bytes int64
		want  int64
	}{
		{"2.27, Hopper, 1 MiB", &s27, MiB, 28015},
		{"2.27, Hopper, 2 MiB", &s27, 2 * MiB, 41029},
		{"2.27, Ampere's LL cap, 1 MiB", &s27amp, MiB, 35924},
	} {
		if got := HardwareCollectiveNs(c.spec, AllReduce, c.bytes, p); got != c.want {
			t.Errorf("all-reduce with NCCL %s: %d ns, want %d", c.what, got, c.want)
		}
	}
	// 2.27's NVLS latency is hwLat[NVLINK][NVLS][Simple] = 25 µs.
	if got, want := nvlsAllReduce(&h200.Host, MiB, 8, tuningFor("2.27", 90)), 25000+3*1835008/476.0; math.Abs(got-want) > 0.01 {
		t.Errorf("NVLS all-reduce of 1 MiB with NCCL 2.27: %.2f ns, want %.2f", got, want)
	}
	// Every release hardware accepts has its constants: none falls back
	// to the default silently.
	for _, r := range hardware.NCCLReleases {
		if r != "2.7" && tuningFor(r, 90) == tuningFor("", 90) {
			t.Errorf("release %q has the default constants", r)
		}
	}
}

// TestEFAPluginLatencyByHand prices an all-reduce over two AWS p4de hosts
// (the aws-p4de preset: NVLink 300 × 0.7833 = 234.99 GB/s, EFA 6.25 ×
// 0.94 = 5.875 GB/s per GPU, plugin latency 75 µs) by hand. Each network
// step costs NCCL's own step latency plus 75 µs, Simple plus 150 µs
// (netStepLat: ring LL 2.7 + 75 = 77.7, Simple 9.6 + 150 = 159.6; tree
// LL 5.0 + 75 = 80, Simple 50 + 150 = 200). NCCL's model prefers the tree
// over two hosts here (twoHostTreeFirst), priced in the hierarchical form
// with the ring's latencies.
//
// 1 GiB, hierarchical Simple: latency (8.4 + 28 × 3.4 + 2 × 159.6) ×
// 1.9 (plateau) = 422.8 × 1.9 = 803.32 µs; network 2^30/8 =
// 134,217,728 B / 5.875 = 22,845,570.7 ns (NVLink: 1.75 × 2^30 / 234.99
// = 7,996,290 ns, hidden); 23,648,890.7 -> 23,648,891 ns. (Tree Simple:
// 2 × (7 × 28 + 200) = 792 µs + 2^30 / (0.9 × 47 × 0.5 = 21.15) =
// 50,767,934.9 ns, slower.)
//
// 1 MiB, hierarchical LL: latency 3.6 + 28 × 0.47 × 1.8 + 2 × 77.7 =
// 3.6 + 23.688 + 155.4 = 182.688 µs; network 131,072 B at 5.875/4 =
// 1.46875 GB/s = 89,240.5 ns (NVLink 1,835,008 / 58.7475 = 31,235.5,
// hidden); 271,928.5 -> 271,929 ns. (Tree LL: 4.4 + 2 × (7 × 0.52 + 80)
// = 171.68 µs + 1,048,576 / (42.3 × 0.5 / 3.8 = 5.5658) = 188,396.6 ns:
// 360,076.6; ring LL across all 16 ranks: 182.688 µs + 245,760 /
// 1.46875 = 167,326.0 ns: 350,014.0; Simple: 803.32 µs already.)
func TestEFAPluginLatencyByHand(t *testing.T) {
	s, err := hardware.Preset("aws-p4de")
	if err != nil {
		t.Fatal(err)
	}
	if s.Network.Kind != "efa" || s.Network.PluginLatencyUs != 75 {
		t.Fatalf("aws-p4de network: kind %q, plugin latency %g µs", s.Network.Kind, s.Network.PluginLatencyUs)
	}
	two := Placement{Ranks: 16, Hosts: 2, MaxPerHost: 8}
	for _, c := range []struct {
		bytes int64
		want  int64
	}{{1 << 30, 23_648_891}, {1 << 20, 271_929}} {
		if got := HardwareCollectiveNs(s, AllReduce, c.bytes, two); got != c.want {
			t.Errorf("all-reduce of %d B over two p4de hosts: %d ns, want %d", c.bytes, got, c.want)
		}
	}
	// The step latencies themselves, and none added where the plugin
	// reports none (NCCL's InfiniBand transport).
	for _, c := range []struct {
		plugin, hw float64
		p          protocol
		want       float64
	}{{75, 2.7, protoLL, 77.7}, {75, 4.0, protoLL128, 79}, {75, 9.6, protoSimple, 159.6}, {75, 50, protoSimple, 200}, {0, 9.6, protoSimple, 9.6}} {
		nw := hardware.Network{PluginLatencyUs: c.plugin}
		if got := netStepLat(&nw, c.hw, c.p); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("network step, plugin %g µs, hwLat %g, protocol %d: %g µs, want %g", c.plugin, c.hw, c.p, got, c.want)
		}
	}
}
