package costs

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/hardware"
)

// ncclTable is one published nccl-tests sweep; testdata/nccl-tests/
// published.json holds them, each with its source, system and NCCL
// version, and says what is checked and why.
type ncclTable struct {
	Name          string       `json:"name"`
	System        string       `json:"system"`
	Preset        string       `json:"preset"`
	NICGBpsPerGPU float64      `json:"nic_gbps_per_gpu"`
	Collective    string       `json:"collective"`
	Ranks         int64        `json:"ranks"`
	Hosts         int64        `json:"hosts"`
	PerHost       int64        `json:"per_host"`
	Check         string       `json:"check"`
	CheckedFrom   float64      `json:"checked_from_bytes"`
	Why           string       `json:"why"`
	Source        string       `json:"source"`
	Points        [][2]float64 `json:"points"` // bytes, published bus bandwidth in GB/s
	// TimesUs are bytes and the published time in µs, for a source that
	// gives times rather than bus bandwidths; loadNCCLTables turns each
	// into a point by nccl-tests' definition (bytes / time x the
	// collective's factor, doc/PERFORMANCE.md).
	TimesUs [][2]float64 `json:"times_us"`
	// HostOverheadUs is time the benchmark's timed region holds besides
	// the collective (the host issuing the call after the timer started);
	// it is added to fastsim's time, its source in the table's "harness".
	HostOverheadUs float64 `json:"timed_host_overhead_us"`
	// Algo is the NCCL_ALGO the benchmark forced, if any; fastsim then
	// prices that algorithm instead of its fastest ("NVLS" only).
	Algo string `json:"nccl_algo"`
	// NCCL is the NCCL version the sweep ran ("2.18.3", or prose where
	// the source does not state it).
	NCCL string `json:"nccl"`
	// Misses are the sizes, from checked_from_bytes up, where fastsim is
	// known to miss 15%: each must miss (so this list and
	// bench/COLLECTIVES.md stay true) and every other size must not.
	Misses []float64 `json:"misses"`
}

// maxBusBWError is the project's tolerance against published bus
// bandwidths.
const maxBusBWError = 0.15

// maxKnownMiss bounds a listed miss, so that a change cannot make one
// worse without notice. The worst today is +63.9% (OCI's 8 x A100 host
// at 2 MiB: 32.66 GB/s, where Azure's 8 x A100 host on the same NVSwitch
// design measures 53.54, 64% more; bench/COLLECTIVES.md); 70% leaves the
// others room for a model change's small moves, not for a new error.
const maxKnownMiss = 0.70

func loadNCCLTables(t *testing.T) []ncclTable {
	t.Helper()
	data, err := os.ReadFile("testdata/nccl-tests/published.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Tables []ncclTable `json:"tables"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Tables) == 0 {
		t.Fatal("no tables")
	}
	for i := range f.Tables {
		tb := &f.Tables[i]
		c := collectiveNamed(t, tb.Collective)
		for _, pt := range tb.TimesUs {
			if pt[1] <= 0 {
				t.Fatalf("%s: time %v not positive", tb.Name, pt)
			}
			tb.Points = append(tb.Points, [2]float64{pt[0], BusBandwidthGBps(c, pt[0], pt[1]*1e3, tb.Ranks)})
		}
	}
	return f.Tables
}

// spec is the table's preset with the system's network where it differs,
// priced with the tuning constants of the NCCL release the table ran.
func (tb *ncclTable) spec(t *testing.T) *hardware.Spec {
	t.Helper()
	s, err := hardware.Preset(tb.Preset)
	if err != nil {
		t.Fatal(err)
	}
	c := *s
	if tb.Check != "source" {
		// The run's NCCL release where the model holds its constants.
		// A curve's source rows keep the preset's, the constants the
		// curve was derived with (TestCollectiveEfficiencyDerivation).
		c.NCCL = ncclRelease(tb.NCCL)
	}
	if tb.NICGBpsPerGPU > 0 {
		c.Network.NICGBpsPerGPU = tb.NICGBpsPerGPU
	}
	return &c
}

// ncclRelease is the release series of NCCL version v whose tuning
// constants the model holds (hardware.NCCLReleases), or "" (the default
// constants) for any other version or an unstated one.
func ncclRelease(v string) string {
	for _, r := range hardware.NCCLReleases {
		if strings.HasPrefix(v, r+".") {
			return r
		}
	}
	return ""
}

// collectiveNamed maps nccl-tests' binary names (all_reduce_perf, ...)
// to fastsim's collectives.
func collectiveNamed(t *testing.T, name string) Collective {
	t.Helper()
	switch name {
	case "all_reduce":
		return AllReduce
	case "all_gather":
		return AllGather
	case "reduce_scatter":
		return ReduceScatter
	case "alltoall":
		return AllToAll
	case "broadcast":
		return Broadcast
	case "sendrecv":
		return PointToPoint
	}
	t.Fatalf("unknown collective %q", name)
	return 0
}

// Every published point is priced on its preset and placement and turned
// into nccl-tests' bus bandwidth (algbw = bytes/time times the factor of
// doc/PERFORMANCE.md). Where the table is checked, fastsim must be within
// 15% from checked_from_bytes up and never slower below it; an upper-bound
// table must never be slower. A "source" table is the one a preset's
// measured collective efficiency curve was derived from: fastsim matches
// it by construction (within 1%, the curve's rounding), so its points are
// printed but not counted as checks. A table whose benchmark times more
// than the collective (timed_host_overhead_us) has that added to
// fastsim's time. `go test -run NCCLTests -v` prints the comparison
// (bench/COLLECTIVES.md).
func TestNCCLTestsPublished(t *testing.T) {
	var b strings.Builder
	checked, source, within := 0, 0, 0
	// Checked points and those within 15%, by size band (1-8 MiB,
	// 16-128 MiB, 256 MiB-1 GiB).
	var bandChecked, bandWithin [3]int
	// The same, by the GPU of the table's preset and by collective, in
	// order of first appearance (bench/COLLECTIVES.md prints both).
	type tally struct {
		key             string
		checked, within int
	}
	var byGPU, byColl []tally
	count := func(ts *[]tally, key string, ok bool) {
		i := slices.IndexFunc(*ts, func(t tally) bool { return t.key == key })
		if i < 0 {
			*ts = append(*ts, tally{key: key})
			i = len(*ts) - 1
		}
		(*ts)[i].checked++
		if ok {
			(*ts)[i].within++
		}
	}
	band := func(bytes float64) int {
		switch {
		case bytes <= 8<<20:
			return 0
		case bytes <= 128<<20:
			return 1
		}
		return 2
	}
	for _, tb := range loadNCCLTables(t) {
		tabChecked, tabWithin := 0, 0
		s := tb.spec(t)
		c := collectiveNamed(t, tb.Collective)
		p := Placement{Ranks: tb.Ranks, Hosts: tb.Hosts, MaxPerHost: tb.PerHost}
		fmt.Fprintf(&b, "\n%s: %s, %d ranks on %d hosts (check: %s)\n", tb.Name, tb.System, tb.Ranks, tb.Hosts, tb.Check)
		fmt.Fprintf(&b, "  %10s %10s %10s %7s\n", "bytes", "published", "fastsim", "error")
		for _, pt := range tb.Points {
			bytes, pub := pt[0], pt[1]
			if bytes < 1<<20 || bytes > 1<<30 || pub <= 0 {
				t.Fatalf("%s: point %v outside 1 MiB..1 GiB or not positive", tb.Name, pt)
			}
			var ns float64
			switch tb.Algo {
			case "":
				ns = float64(HardwareCollectiveNs(s, c, int64(bytes), p))
			case "NVLS":
				if c != AllReduce || tb.Hosts != 1 || s.Host.NVLSGBps <= 0 {
					t.Fatalf("%s: NCCL_ALGO=NVLS priced only for an all-reduce within one NVLS host", tb.Name)
				}
				ns = math.Ceil(nvlsAllReduce(&s.Host, bytes, float64(tb.Ranks), tuningFor(s.NCCL, s.GPU.ComputeCapability)))
			default:
				t.Fatalf("%s: unknown nccl_algo %q", tb.Name, tb.Algo)
			}
			ns += tb.HostOverheadUs * 1e3
			got := BusBandwidthGBps(c, bytes, ns, tb.Ranks)
			rel := got/pub - 1
			mark := ""
			switch {
			case tb.Check == "source":
				source++
				mark = "source, not a check"
				if math.Abs(rel) > 0.01 {
					t.Errorf("%s, %d B: fastsim %.2f GB/s, published %.2f: %+.1f%%, but the preset's curve was derived from it", tb.Name, int64(bytes), got, pub, 100*rel)
				}
			case tb.Check == "within" && bytes >= tb.CheckedFrom:
				mark = "checked"
				miss := slices.Contains(tb.Misses, bytes)
				switch {
				case miss && math.Abs(rel) <= maxBusBWError:
					t.Errorf("%s, %d B: fastsim %.2f GB/s, published %.2f: %+.1f%%, within 15%% but listed as a miss", tb.Name, int64(bytes), got, pub, 100*rel)
				case miss && math.Abs(rel) > maxKnownMiss:
					t.Errorf("%s, %d B: fastsim %.2f GB/s, published %.2f: %+.1f%%, a listed miss past %.0f%%", tb.Name, int64(bytes), got, pub, 100*rel, 100*maxKnownMiss)
				case miss:
					mark = "checked, known miss"
				case math.Abs(rel) > maxBusBWError:
					t.Errorf("%s, %d B: fastsim %.2f GB/s, published %.2f: %+.1f%%", tb.Name, int64(bytes), got, pub, 100*rel)
				}
			case tb.Check == "within" || tb.Check == "upper_bound":
				mark = "bound"
				if rel < 0 {
					t.Errorf("%s, %d B: fastsim %.2f GB/s slower than published %.2f", tb.Name, int64(bytes), got, pub)
				}
			case tb.Check != "none":
				t.Fatalf("%s: unknown check %q", tb.Name, tb.Check)
			}
			if tb.Check == "within" || tb.Check == "upper_bound" {
				checked++
				tabChecked++
				bandChecked[band(bytes)]++
				gpu := gpuName(s.GPU.Model)
				count(&byGPU, gpu, math.Abs(rel) <= maxBusBWError)
				count(&byColl, tb.Collective, math.Abs(rel) <= maxBusBWError)
				if math.Abs(rel) <= maxBusBWError {
					within++
					tabWithin++
					bandWithin[band(bytes)]++
				}
			}
			fmt.Fprintf(&b, "  %10s %10.2f %10.2f %+6.1f%% %s\n", sizeName(bytes), pub, got, 100*rel, mark)
		}
		for _, m := range tb.Misses {
			if !slices.ContainsFunc(tb.Points, func(pt [2]float64) bool { return pt[0] == m && m >= tb.CheckedFrom }) {
				t.Errorf("%s: listed miss %g B is not a checked point", tb.Name, m)
			}
		}
		if tabChecked > 0 {
			fmt.Fprintf(&b, "  within 15%%: %d of %d\n", tabWithin, tabChecked)
		}
	}
	if checked == 0 {
		t.Fatal("nothing checked")
	}
	fmt.Fprintf(&b, "\n%d points checked, %d within 15%% (1-8 MiB: %d of %d; 16-128 MiB: %d of %d; 256 MiB-1 GiB: %d of %d); %d more are the source of a preset's efficiency curve, not checks\n",
		checked, within, bandWithin[0], bandChecked[0], bandWithin[1], bandChecked[1], bandWithin[2], bandChecked[2], source)
	for _, g := range []struct {
		name string
		ts   []tally
	}{{"by GPU", byGPU}, {"by collective", byColl}} {
		fmt.Fprintf(&b, "%s:", g.name)
		for i, t := range g.ts {
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(&b, "%s %s %d of %d", sep, t.key, t.within, t.checked)
		}
		fmt.Fprintln(&b)
	}
	t.Log(b.String())
}

// gpuName is the short name of a preset's GPU model, for the count by
// GPU: "NVIDIA A100-SXM4-80GB" is a100, "NVIDIA H100 SXM5 80GB" h100.
func gpuName(model string) string {
	f := strings.Fields(strings.TrimPrefix(model, "NVIDIA "))
	if len(f) == 0 {
		return model
	}
	name, _, _ := strings.Cut(f[0], "-")
	return strings.ToLower(name)
}

func sizeName(bytes float64) string {
	if bytes >= 1<<30 {
		return fmt.Sprintf("%g GiB", bytes/(1<<30))
	}
	return fmt.Sprintf("%g MiB", bytes/(1<<20))
}
