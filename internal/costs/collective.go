package costs

import (
	"math"

	"github.com/fastsim/fastsim/internal/hardware"
	"github.com/fastsim/fastsim/internal/sched"
)

// The hardware collective model prices a collective over n ranks on M
// hosts, at most G of them on one host, the way NCCL's own tuning model
// does (NVIDIA/nccl src/graph/tuning.cc, commit 01afd20): for each
// algorithm and protocol, time = latency + bytes / bandwidth, and the
// fastest is chosen, so small messages take the low-latency protocols and
// large ones the full-bandwidth one.
//
// Bandwidth. NCCL's bus bandwidth is what each rank sends per unit of
// time; a collective of S bytes moves, per rank, S times the factor of
// nccl-tests' doc/PERFORMANCE.md: all-reduce 2(n-1)/n, reduce-scatter and
// all-gather (n-1)/n, broadcast and point-to-point 1; all-to-all (n-1)/n.
// Within a host the bus is NVLink at host.nvlink_gbps × nvlink_efficiency.
// Across hosts the collective is hierarchical: the ranks of each host work
// over NVLink (an all-reduce: reduce-scatter, then all-gather, moving
// 2(G-1)/G·S per rank) while each rank exchanges its 1/G share with its
// peers on the other hosts over the network (an all-reduce: 2(M-1)/M·S/G
// per rank). The two phases are pipelined, so the slower sets the time.
// That form is what NCCL's tree does over two hosts, and it stands in for
// NCCL's NVLS tree on Hopper hosts (NVLS within each host, a tree across),
// though at the ring's NVLink bandwidth, not NVLS's (bench/COLLECTIVES.md,
// "Tried: NCCL's NVLS tree across hosts"); it is kept for an all-reduce
// over whole NVLS hosts, and over two hosts where NCCL's model prefers the
// tree (twoHostTreeFirst). Otherwise NCCL runs a
// ring through all n ranks, the only algorithm it has for reduce-scatter
// and all-gather across hosts and its choice for large all-reduces: each
// channel's ring leaves a host through one NIC, so the host's NICs
// together carry what one rank sends (2(n-1)/n·S for an all-reduce,
// (n-1)/n·S for the others), and a host's bus bandwidth is at most its
// NICs'.
// A host's NICs are shared by its GPUs: each rank has
// network.nic_gbps_per_gpu × nic_efficiency, whatever else runs.
//
// Protocols (tuning.cc): Simple at the full bus bandwidth; LL128 at 0.92
// of it; LL at 1/4 (all-reduce, or across hosts) or 1/3. Latency: a base
// per protocol (ring: LL 3.6, LL128 10.0, Simple 8.4 µs in v2.7.5; the
// spec's NCCL release may hold others, tuningFor) plus one step
// latency per ring step: NVLink steps at host.nvlink_step_latency_us,
// network steps at network.step_latency_us. As in tuning.cc, a ring
// all-reduce over n ranks on M hosts takes 2(n-1) steps of which 2(M-1)
// cross the network (reduce-scatter and all-gather half as many); across
// hosts LL's NVLink steps count 1.8 times, Simple all-reduce latency 1.9
// times ("plateau effect of ring"), and LL128 is off (tuning.cc enables it
// by default only within NVLink). A network whose NCCL plugin reports a
// latency (network.plugin_latency_us: AWS EFA through aws-ofi-nccl) adds
// it to every network step, twice for Simple, as tuning.cc does from
// v2.18 (netStepLat).
//
// Trees: for an all-reduce across hosts NCCL may pick a tree instead
// (tuning.cc: base latency LL 4.4, LL128 4.4, Simple 0 µs; per step
// NVLink .52/1.2/28, network 5.0/8.5/50 µs; 2·((G-1) NVLink steps +
// log2(M) network steps); bus bandwidth ×0.9 with algorithm bandwidth
// half the bus, LL ×1/3.8; LL128 off across hosts). The faster of ring and tree is
// taken, which picks the tree for small messages over many hosts.
//
// NVLS: an all-reduce over all the GPUs of one host whose NVSwitches
// reduce (host.nvls_gbps > 0, Hopper) may take NCCL's NVLS algorithm
// instead: latency host.nvls_latency_us plus 2(n-1)/n·S at the NVLS bus
// bandwidth (tuning.cc at NVIDIA/nccl commit 5067397c; the preset's
// sources derive the bandwidth from tuning.cc, search.cc and topo.h),
// plus the fill of NCCL's three-stage NVLS kernel, whose stage is one
// loop of chunks of the size NCCL picks for the collective (nvlsAllReduce).
// Across hosts NCCL's NVLS tree reduces within each host first, which the
// hierarchical form above stands in for.
//
// Measured efficiency: within one host, the NVLink bandwidth of a ring
// all-reduce, reduce-scatter or all-gather (every protocol) is multiplied
// by host.collective_efficiency at the collective's bytes, where a preset
// carries one (the A100 presets: NCCL's model is 22-56% fast for 1-128
// MiB on one Azure 8 × A100 VM, bench/COLLECTIVES.md, "Medium sizes:
// what NCCL runs"), a factor on bandwidth, not latency; NCCL corrects a
// similar gap for trees with a table (treeCorrectionFactor). Latencies
// are untouched, and nothing is scaled across hosts (a different chunk
// size per rank, and the network usually the bottleneck), for NVLS (its
// medium sizes are the pipeline fill above) or for point-to-point,
// all-to-all and broadcast (other kernels).

// protocol indexes NCCL's protocols.
type protocol int

const (
	protoLL protocol = iota
	protoLL128
	protoSimple
	numProtocols
)

// NCCL's tuning constants (tuning.cc, commit 01afd20), in µs.
var (
	treeBaseLatUs = [numProtocols]float64{4.4, 4.4, 0}
	treeNVLatUs   = [numProtocols]float64{.52, 1.2, 28}
	treeNetLatUs  = [numProtocols]float64{5.0, 8.5, 50}
)

// ncclTuning is what differs between the NCCL releases the model holds
// (hardware.NCCLReleases) for a ring within one host and NVLS: later
// releases raised the ring's latencies and capped LL's bandwidth.
type ncclTuning struct {
	ringBaseLatUs [numProtocols]float64 // baseLat[Ring], µs
	// nvLLStepUs replaces the preset's NVLink LL step latency
	// (hwLat[NVLINK][Ring][LL]) where it is not 0.
	nvLLStepUs float64
	// llMaxGBps caps the LL ring's bus bandwidth within one host where it
	// is not 0 (llMaxBws[compCap][N1]).
	llMaxGBps float64
	// llShare replaces the share of the bus bandwidth the LL ring reaches
	// within one host (ringProtoBW's 1/4 or 1/3) where it is not 0.
	llShare float64
	// nvlsLatUs replaces the preset's NVLS latency where it is not 0.
	nvlsLatUs float64
}

// tuningFor returns the constants of NCCL release r ("" is "2.7") for a
// GPU of compute capability cc (major × 10 + minor; 0 where the spec
// gives none).
//
// "2.7": tuning.cc at v2.7.5 (commit 01afd20): ring base latency LL 3.6,
// LL128 10.0, Simple 8.4 µs; the step latencies are the presets'; no LL
// cap; NVLS did not exist (the presets' NVLS latency applies).
//
// "2.18": `git show v2.18.3-1:src/graph/tuning.cc` (the file is the same
// at v2.18.5-1): baseLat[Ring] = {6.6, 14.0, 8.4}; hwLat[NVLINK][Ring] =
// {.6, 1.9, 3.4} (LL128 and Simple as the presets'); the LL ring's bus
// bandwidth is min(llMaxBw, busBw/4 or /3) with llMaxBws[Ampere or
// Hopper][N1] = 87.7 GB/s on one host; baseLat[NVLS][Simple] = 23.0 and
// hwLat[NVLINK][NVLS] = 0. Its LL128 cap (nChannels × 36.7 GB/s on
// Hopper, 20 on Ampere) is not modelled: with NCCL's 16 or more ring
// channels on these hosts it is above the NVLink bus bandwidth. Its
// changes across hosts (tree base latencies, network Simple step 14 µs,
// the ring's plateau factor) are not taken: no table across hosts ran it.
//
// "2.27": `git show v2.27.7-1:src/graph/tuning.cc`: baseLat[Ring] and
// hwLat[NVLINK][Ring] as 2.18's; the LL ring's bus bandwidth is
// min(llMaxBw, busBw × .5) for every collective ("busBw * .5"), with
// llMaxBws[compCapIndex][N1] = 87.7 GB/s on Ampere (compute capability
// 8.x), 141.0 on Hopper (9.x) and 2 × 141.0 on Blackwell (10.x and up),
// on one host; NVLS: baseLat 0 and hwLat[NVLINK][NVLS][Simple] = 25 µs.
// The LL128 cap (perChMaxRingLL128Bws, 36.7 GB/s per channel on Hopper)
// is left out as for 2.18, and so are its changes across hosts (LL at
// llMaxBws by CPU vendor, network Simple step 14 µs, the ring's plateau
// factor 1.4 from compute capability 8.0, NCCL's network overhead per
// step): no table across hosts ran it.
func tuningFor(r string, cc int) ncclTuning {
	switch r {
	case "2.18":
		return ncclTuning{
			ringBaseLatUs: [numProtocols]float64{6.6, 14.0, 8.4},
			nvLLStepUs:    0.6,
			llMaxGBps:     87.7,
			nvlsLatUs:     23.0,
		}
	case "2.27":
		// llMaxBws[compCapIndex][N1], v2.27.7-1: compCapIndex is
		// Blackwell from compute capability 10.0, Hopper from 9.0,
		// Ampere from 8.0.
		llMax := 87.7
		switch {
		case cc >= 100:
			llMax = 2 * 141.0
		case cc >= 90:
			llMax = 141.0
		}
		return ncclTuning{
			ringBaseLatUs: [numProtocols]float64{6.6, 14.0, 8.4},
			nvLLStepUs:    0.6,
			llMaxGBps:     llMax,
			llShare:       0.5,
			nvlsLatUs:     25.0,
		}
	}
	return ncclTuning{ringBaseLatUs: [numProtocols]float64{3.6, 10.0, 8.4}}
}

func protoLat(p hardware.Protocols, i protocol) float64 {
	return [numProtocols]float64{p.LL, p.LL128, p.Simple}[i]
}

// ringProtoBW is the fraction of the bus bandwidth protocol p reaches in a
// ring (tuning.cc: LL 1/4 for all-reduce or across hosts, else 1/3;
// LL128 0.92; Simple 1).
func ringProtoBW(p protocol, c Collective, hosts int64) float64 {
	switch p {
	case protoLL:
		if c == AllReduce || hosts > 1 {
			return 1.0 / 4
		}
		return 1.0 / 3
	case protoLL128:
		return 0.92
	}
	return 1
}

// Placement is where a collective's ranks sit.
type Placement struct {
	Ranks      int64 // ranks taking part
	Hosts      int64 // hosts they occupy
	MaxPerHost int64 // the most ranks on one host
}

// PlacementOf reads a placement from the engine's description, deriving
// hosts from SameHost and GPUsPerHost when the engine gave none.
func PlacementOf(c sched.Comm) Placement {
	p := Placement{Ranks: c.Ranks, Hosts: c.Hosts, MaxPerHost: c.MaxPerHost}
	if p.Hosts <= 0 || p.MaxPerHost <= 0 {
		switch {
		case c.SameHost || c.GPUsPerHost <= 0:
			p.Hosts, p.MaxPerHost = 1, c.Ranks
		default:
			p.Hosts = (c.Ranks + c.GPUsPerHost - 1) / c.GPUsPerHost
			p.MaxPerHost = min(c.Ranks, c.GPUsPerHost)
		}
	}
	return p
}

// HardwareCollectiveNs prices collective c of bytes (the full buffer: an
// all-gather's output, a reduce-scatter's input) over placement p on
// spec s, in whole nanoseconds.
func HardwareCollectiveNs(s *hardware.Spec, c Collective, bytes int64, p Placement) int64 {
	ns := hardwareCollective(s, c, float64(bytes), p)
	if !(ns < float64(MaxRuntimeNs)) {
		return MaxRuntimeNs
	}
	return int64(math.Ceil(ns))
}

func hardwareCollective(s *hardware.Spec, c Collective, S float64, p Placement) float64 {
	n, M, G := float64(p.Ranks), float64(max(p.Hosts, 1)), float64(max(p.MaxPerHost, 1))
	if c != PointToPoint && p.Ranks < 2 {
		return 0
	}
	nv := s.Host.NVLinkGBps * s.Host.NVLinkEfficiency // bytes per ns
	eff := 1.0                                        // measured share of it at this size
	if M == 1 && (c == AllReduce || c == ReduceScatter || c == AllGather) {
		eff = s.Host.CollectiveEfficiency.At(S)
	}
	net := s.Network.NICGBpsPerGPU * s.Network.NICEfficiency // bytes per ns, per rank
	// Bytes each rank moves over NVLink and over the network, and the
	// ring's steps in all and across hosts (tuning.cc: a ring over n
	// ranks on M hosts takes 2(n-1) steps for an all-reduce, 2(M-1) of
	// them across hosts; n-1 and M-1 for reduce-scatter and all-gather).
	var intraB, interB, steps, interSteps float64
	// An all-reduce across hosts may also be priced in the hierarchical
	// form (hier), with these bytes.
	var hierIntra, hierInter float64
	hier := false
	switch c {
	case AllReduce:
		intraB, interB = 2*(G-1)/G*S, 2*(M-1)/M*S/G
		steps, interSteps = 2*(n-1), 2*(M-1)
		nvlsTree := s.Host.NVLSGBps > 0 && int(p.MaxPerHost) == s.Host.GPUsPerHost
		if M > 1 && !nvlsTree {
			// Without NVLS NCCL's ring runs through every rank: as
			// for reduce-scatter below, a host's NICs carry what one
			// rank sends, 2(n-1)/n·S. The hierarchical form stays as
			// the price of the tree where NCCL's model picks it over
			// two hosts (twoHostTreeFirst); across more hosts its
			// model gives the ring the larger bandwidth.
			hierIntra, hierInter = intraB, interB
			hier = M == 2 && twoHostTreeFirst(&s.Network, n)
			intraB, interB = (G-1)/G*2*(n-1)/n*S, 2*(n-1)/n*S/G
		}
	case ReduceScatter, AllGather:
		intraB, interB = (G-1)/G*S, (M-1)/M*S/G
		steps, interSteps = n-1, M-1
		if M > 1 {
			// NCCL runs these only as rings (no tree: RunWorkElement
			// has RING and, within one host, NVLS for them in
			// src/collectives/device/all_gather.h and
			// reduce_scatter.h, v2.17.1 to v2.18.5; tuning.cc turns
			// NVLS off across hosts). Each channel's ring runs
			// through the G GPUs of a host and leaves it through
			// one NIC, so a host's NICs together carry what one
			// rank sends, (n-1)/n·S, a 1/G share each, and a rank
			// sends over NVLink in G-1 of every G channels.
			intraB, interB = (G-1)/G*(n-1)/n*S, (n-1)/n*S/G
		}
	case AllToAll:
		// Each rank keeps 1/n, sends (G-1)/n of S to its own host and
		// (n-G)/n over the network, all at once.
		intraB, interB = (G-1)/n*S, (n-G)/n*S
		steps, interSteps = 1, 0
		if M > 1 {
			steps, interSteps = 2, 1
		}
	case Broadcast:
		// Pipelined along a ring: every rank receives S; across hosts
		// the host's ranks relay a share each.
		intraB = S
		if M > 1 {
			interB = S / G
		}
		steps, interSteps = n, M
	case PointToPoint:
		if M > 1 {
			interB, steps, interSteps = S, 1, 1
		} else {
			intraB, steps = S, 1
		}
	}
	tu := tuningFor(s.NCCL, s.GPU.ComputeCapability)
	best := math.Inf(1)
	for pr := protoLL; pr < numProtocols; pr++ {
		if pr == protoLL128 && M > 1 {
			// tuning.cc enables LL128 by default only within NVLink.
			continue
		}
		f := ringProtoBW(pr, c, p.Hosts)
		bw := nv * eff * f // NVLink bus bandwidth of this protocol
		intraLat := protoLat(s.Host.NVLinkStepLatencyUs, pr)
		if pr == protoLL {
			if tu.nvLLStepUs > 0 {
				intraLat = tu.nvLLStepUs
			}
			if tu.llShare > 0 && M == 1 {
				bw = nv * eff * tu.llShare
			}
			if tu.llMaxGBps > 0 && M == 1 {
				bw = min(bw, tu.llMaxGBps)
			}
		}
		if pr == protoLL && M > 1 {
			intraLat *= 1.8 // tuning.cc: LL's NVLink steps slow down when the ring crosses hosts
		}
		lat := tu.ringBaseLatUs[pr] + (steps-interSteps)*intraLat + interSteps*netStepLat(&s.Network, protoLat(s.Network.StepLatencyUs, pr), pr)
		if pr == protoSimple && c == AllReduce && M > 1 && S >= n/16*65536 {
			lat *= 1.9 // tuning.cc: the "plateau effect of ring" across hosts
		}
		t := lat*1e3 + max(intraB/bw, interB/(net*f))
		best = min(best, t)
		if hier {
			best = min(best, lat*1e3+max(hierIntra/bw, hierInter/(net*f)))
		}
	}
	if c == AllReduce && M > 1 {
		best = min(best, treeAllReduce(s, S, M, G, nv, net))
	}
	if c == AllReduce && M == 1 && p.Ranks > 1 && int(p.Ranks) == s.Host.GPUsPerHost && s.Host.NVLSGBps > 0 {
		// NVLink SHARP. Its bus bandwidth is the host's figure for all
		// its GPUs; a smaller group has fewer NVLS heads, so only the
		// whole host is priced.
		best = min(best, nvlsAllReduce(&s.Host, S, n, tu))
	}
	return best
}

// netStepLat is the latency of one network step of a ring or tree whose
// transport's own step latency is hw µs (tuning.cc's hwLat[NET][algo][p]),
// with the latency the network's plugin reports to NCCL added as NCCL's
// tuning model adds it from v2.18.1 (src/graph/tuning.cc: "interLat =
// hwLat[NCCL_HW_NET][a][p] + graphs[a]->latencyInter", and for Simple
// "Also add the flush extra latency": once more). On AWS EFA the
// aws-ofi-nccl plugin reports 75 µs on p4d, p4de and p5 (platform-aws.c),
// a figure AWS chose by measuring all-reduce latencies and solving NCCL's
// tuning formula for the network latency; NCCL's InfiniBand transport
// reports 0. NCCL before v2.12 ignores the figure, and v2.12 to v2.17 use
// it instead of hwLat (not modelled: a spec that sets it describes the
// later form). fastsim takes it on every network step it prices,
// point-to-point, all-to-all and broadcast included, whose steps stand in
// for kernels NCCL's tuning model does not price.
func netStepLat(nw *hardware.Network, hw float64, p protocol) float64 {
	l := hw + nw.PluginLatencyUs
	if p == protoSimple {
		l += nw.PluginLatencyUs
	}
	return l
}

// twoHostTreeFirst reports whether NCCL's tuning model gives its tree a
// larger all-reduce bandwidth than its ring over two hosts of n ranks in
// all, so that NCCL runs the tree for large messages. Over at most two
// hosts tuning.cc prices both from their graphs' intra-host speed
// (src/graph/tuning.cc: "bw = nNodes <= 2 ... ? graphs[a]->bwIntra :
// graphs[a]->bwInter"); the ring's is its network speed per channel b,
// while the graph search may raise a tree's up to twice that
// (src/graph/search.cc: "See if we can increase bwIntra for trees (2 nodes
// or collnet)", while bwIntra < bwInter*2). The tree's bus bandwidth per
// channel is then min(0.92 × 2b, perChMaxTreeBw) and its algorithm
// bandwidth half of it; the ring's algorithm bandwidth is b·n/(2(n-1))
// (ratio nRanks/nsteps). b is taken as the network's rate per GPU, a
// channel's NIC where each GPU has one. So a fast NIC per channel (HDR's
// 25 GB/s on A100: ring 13.3, tree 11.8 per channel) keeps the ring,
// a slow one (EFA's 6.25 per A100 on p4de: ring 3.3, tree 5.75) takes
// the tree.
func twoHostTreeFirst(nw *hardware.Network, n float64) bool {
	if nw.TreeMaxGBpsPerChannel <= 0 || n < 2 {
		return false
	}
	b := nw.NICGBpsPerGPU
	tree := 0.5 * min(0.92*2*b, nw.TreeMaxGBpsPerChannel)
	ring := b * n / (2 * (n - 1))
	return tree > ring
}

// nvlsStages is the depth of NCCL's single-host NVLS all-reduce pipeline:
// each channel's warps are split into scatter, reduce and gather groups
// (NVIDIA/nccl src/device/all_reduce.h, RunWorkElement for NCCL_ALGO_NVLS,
// the oneNode branch), each looping over the channel's data one loop of
// nHeads chunks at a time and handing it on through the NVLS buffers.
const nvlsStages = 3

// nvlsAllReduce prices an all-reduce of S bytes over the n GPUs of one
// host by NCCL's NVLS algorithm: tuning.cc's latency
// (hwLat[NVLINK][NVLS][Simple], or the release's, tu) and bus bandwidth (2(n-1)/n·S at
// host.nvls_gbps, Simple only), plus the fill of the kernel's pipeline,
// which tuning.cc leaves out. A loop moves channels × heads chunks (heads
// = n, one NVLS head per GPU), each stage of it taking that share of the
// bandwidth term; the first loop's output is out after nvlsStages stage
// times, each further loop one stage time later, so the fill adds
// (nvlsStages-1) stage times of min(S, loop) bytes. The chunk is NCCL's
// for the size (nvlsChunk), so medium sizes, which NCCL cuts into small
// chunks, pay a small fill, and a collective of one loop or less pays
// nvlsStages times its bandwidth term.
func nvlsAllReduce(h *hardware.Host, S, n float64, tu ncclTuning) float64 {
	f := 2 * (n - 1) / n // bytes per rank per byte, as a ring's (tuning.cc: ratio nRanks/nsteps)
	lat := h.NVLSLatencyUs
	if tu.nvlsLatUs > 0 {
		lat = tu.nvlsLatUs
	}
	t := lat*1e3 + f*S/h.NVLSGBps
	if h.NVLSChannels > 0 && h.NVLSChunkBytes > 0 {
		ops := float64(h.NVLSChannels) * n // calcCollChunking's concurrentOps
		loop := ops * nvlsChunk(S, ops, h.NVLSChunkBytes)
		t += (nvlsStages - 1) * f * min(S, loop) / h.NVLSGBps
	}
	return t
}

// nvlsChunk is the chunk NCCL's calcCollChunking (src/enqueue.cc, v2.20.5
// to v2.27.7) gives an NVLS all-reduce of S bytes with ops chunks in
// flight (channels × heads), starting from the largest chunk: 64 KiB
// below 64 loops of it, then 32 KiB below 8 loops, then 16 KiB below 2.
func nvlsChunk(S, ops, largest float64) float64 {
	c := largest
	if S < 64*ops*c && c > 65536 {
		c = 65536
	}
	if S < 8*ops*c && c > 32768 {
		c = 32768
	}
	if S < 2*ops*c && c > 16384 {
		c = 16384
	}
	return c
}

// treeAllReduce is NCCL's tree all-reduce: a chain within each host, a
// binary tree across hosts; bus bandwidth 0.9 of the slower of NVLink and
// the host's share of the network, algorithm bandwidth half of it.
func treeAllReduce(s *hardware.Spec, S, M, G, nv, net float64) float64 {
	bus := 0.9 * min(nv, G*net)
	protoBW := [numProtocols]float64{1 / 3.8, 0, 1}
	best := math.Inf(1)
	for pr := protoLL; pr < numProtocols; pr++ {
		if pr == protoLL128 {
			continue // off across hosts, as for rings
		}
		lat := treeBaseLatUs[pr] + 2*((G-1)*treeNVLatUs[pr]+math.Log2(M)*netStepLat(&s.Network, treeNetLatUs[pr], pr))
		t := lat*1e3 + S/(bus*0.5*protoBW[pr])
		best = min(best, t)
	}
	return best
}

// BusBandwidthGBps is nccl-tests' bus bandwidth of a collective of bytes
// taking ns over n ranks (doc/PERFORMANCE.md): the algorithm bandwidth
// bytes/time times the collective's factor.
func BusBandwidthGBps(c Collective, bytes, ns float64, n int64) float64 {
	return bytes / ns * Factor(c, n)
}
