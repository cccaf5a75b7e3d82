package htmlout

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fastsim/fastsim/internal/replay"
	"github.com/fastsim/fastsim/internal/sched"
)

// page replays hist with events kept and returns its HTML page.
func pageOf(t *testing.T, hist string, grouped bool) string {
	t.Helper()
	var buf bytes.Buffer
	_, err := replay.Reader(strings.NewReader(hist), "h", replay.Options{
		KeepTrace: true,
		Grouped:   grouped,
		Inspect: func(eng *sched.Engine, res *replay.Result) error {
			return Write(&buf, Input{Title: "small.hist", Costs: "fixed", Res: res, Eng: eng})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// small: two ranks; stream main; functions a and b (10 us each by default)
// creating 1,000 and 500 bytes; a delete of the first; a step mark.
// By docs/SEMANTICS.md: a runs [2, 12] us, b [12, 22] us on each rank.
const small = `{"fastsim":"history","version":1,"world_size":2}
{"ts":1000,"ranks":[{"offset":0,"sizes":[2],"strides":[1]}],"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}
{"ts":2000,"ranks":[{"offset":0,"sizes":[2],"strides":[1]}],"msg":{"type":"CallFunction","function":"a","args":[],"result":[{"tensor":1,"storage":1,"nbytes":1000,"dtype":"u8","shape":[1000],"device":"cuda"}],"stream":{"ref":1}}}
{"ts":3000,"ranks":[{"offset":0,"sizes":[2],"strides":[1]}],"msg":{"type":"CallFunction","function":"b","args":[],"result":[{"tensor":2,"storage":2,"nbytes":500,"dtype":"u8","shape":[500],"device":"cuda"}],"stream":{"ref":1}}}
{"step":0}
{"ts":30000,"ranks":[{"offset":0,"sizes":[2],"strides":[1]}],"msg":{"type":"DeleteRefs","refs":[1]}}
`

func TestPage(t *testing.T) {
	for _, grouped := range []bool{false, true} {
		html := pageOf(t, small, grouped)
		if n := strings.Count(html, "<svg"); n != 4 {
			t.Errorf("grouped=%v: %d plots, want 4 (memory, busy, operations, mix)", grouped, n)
		}
		// Self-contained: no scripts, no links, no sources; the only URLs
		// are the SVG namespaces.
		for _, bad := range []string{"<script", "<link", "src=", "href=", "@import", "url("} {
			if strings.Contains(html, bad) {
				t.Errorf("grouped=%v: the page contains %q", grouped, bad)
			}
		}
		for _, u := range regexp.MustCompile(`https?://[^"' )]+`).FindAllString(html, -1) {
			if u != "http://www.w3.org/2000/svg" && u != "http://www.w3.org/1999/xlink" {
				t.Errorf("grouped=%v: the page refers to %s", grouped, u)
			}
		}
		// Step 0 ends when b does, at 22 us, with 1,500 bytes allocated on
		// each rank. Each operation runs 10 us on each of 2 ranks: 2 tasks,
		// 2e-05 s in total, 1e-05 s each. Records: 2 CallFunction, then 1
		// each of CreateStream and DeleteRefs.
		for _, want := range []string{
			"<td>0</td><td>0.000022</td><td>0.000022</td><td>0.001500</td>",
			`<td class="name">a</td><td>2</td><td>0.000020</td><td>0.000010000</td>`,
			`<td class="name">b</td><td>2</td><td>0.000020</td><td>0.000010000</td>`,
			`<td class="name">CallFunction</td><td>2</td>`,
			`<td class="name">CreateStream</td><td>1</td>`,
			`<td class="name">DeleteRefs</td><td>1</td>`,
		} {
			if !strings.Contains(html, want) {
				t.Errorf("grouped=%v: the page lacks %s", grouped, want)
			}
		}
	}
}

// TestBrowserRenders opens a page in headless Chromium (skipped where it is
// not installed; tools/browser/setup.sh installs it) and checks it loads
// without a failed request and that the DOM holds every plot.
func TestBrowserRenders(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium (tools/browser/setup.sh installs it)")
	}
	data, err := os.ReadFile("../../examples/train_step.hist")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	if err := os.WriteFile(path, []byte(pageOf(t, string(data), true)), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir=" + filepath.Join(dir, "profile"), "--enable-logging=stderr", "--v=0",
		"--window-size=1200,3000"}
	run := func(extra ...string) (string, string) {
		cmd := exec.Command(chromium, append(append(args, extra...), "file://"+path)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("chromium: %v\n%s", err, errb.String())
			}
		case <-time.After(90 * time.Second):
			cmd.Process.Kill()
			t.Fatal("chromium did not finish in 90 s")
		}
		return out.String(), errb.String()
	}
	dom, logs := run("--dump-dom")
	if n := strings.Count(dom, "<svg"); n != 4 {
		t.Errorf("the rendered DOM has %d plots, want 4", n)
	}
	if !strings.Contains(dom, "fastsim replay of") {
		t.Error("the rendered DOM lacks the heading")
	}
	for _, bad := range []string{"ERR_", "Uncaught", "Failed to load"} {
		if strings.Contains(logs, bad) {
			t.Errorf("chromium reported %q:\n%s", bad, logs)
		}
	}
	run("--screenshot=" + shot)
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Errorf("no screenshot of the page (%v)", err)
	}
	if keep := os.Getenv("FASTSIM_KEEP_SCREENSHOT"); keep != "" {
		b, _ := os.ReadFile(shot)
		os.WriteFile(keep, b, 0o644)
	}
}

// TestTicks checks the axis ticks by hand. 0 to 12.3 in about 6 intervals:
// a raw step of 2.05 rounds up to 5 (1, 2, 5 times a power of ten), so
// ticks 0, 5, 10, 15 with no decimals. 0 to 0.0169: raw 0.0028 rounds up to
// 0.005, ticks 0 to 0.02, three decimals.
func TestTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi   float64
		want     []float64
		from, to float64
		dec      int
	}{
		{0, 12.3, []float64{0, 5, 10, 15}, 0, 15, 0},
		{0, 0.0169, []float64{0, 0.005, 0.01, 0.015, 0.02}, 0, 0.02, 3},
	} {
		got, from, to, dec := ticks(c.lo, c.hi, numTicks)
		if len(got) != len(c.want) || from != c.from || math.Abs(to-c.to) > 1e-12 || dec != c.dec {
			t.Errorf("ticks(%v, %v) = %v, %v, %v, %d; want %v, %v, %v, %d", c.lo, c.hi, got, from, to, dec, c.want, c.from, c.to, c.dec)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-12 {
				t.Errorf("ticks(%v, %v)[%d] = %v, want %v", c.lo, c.hi, i, got[i], c.want[i])
			}
		}
	}
}

// TestPlotEscapes checks that a name is escaped in the SVG text.
func TestPlotEscapes(t *testing.T) {
	s := string(hbarPlot("t", "x", []string{`a<b&"c"`}, []float64{1}, 0, 2))
	if strings.Contains(s, `a<b`) || !strings.Contains(s, `a&lt;b&amp;&#34;c&#34;`) {
		t.Errorf("the name is not escaped: %s", s)
	}
}

// TestPageWithoutDeviceMemory: a replay in which no device holds memory has
// no peak device (Report.PeakDevice is -1). The page must not name a
// device -1 nor draw a memory plot for a device 0 that holds nothing: it
// leaves the device sections out and says why in one line each.
func TestPageWithoutDeviceMemory(t *testing.T) {
	// An empty history: no task, no memory; only the (empty) command mix
	// is drawn.
	empty := `{"fastsim":"history","version":1,"world_size":2}` + "\n"
	// Tasks but no memory: function a runs on rank 1 only and creates
	// nothing, so the busy time is rank 1's, the lowest rank that ran a
	// task (10 us, the default runtime: 0.000010 s in total on 1 rank).
	noMemory := `{"fastsim":"history","version":1,"world_size":2}
{"ts":1000,"ranks":[{"offset":0,"sizes":[2],"strides":[1]}],"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}
{"ts":2000,"ranks":[{"offset":1,"sizes":[1],"strides":[1]}],"msg":{"type":"CallFunction","function":"a","args":[],"result":[],"stream":{"ref":1}}}
`
	for _, c := range []struct {
		name, hist string
		plots      int
		want, not  []string
	}{
		{"empty", empty, 1,
			[]string{"0.000000 MB (no device held memory)", "No memory plot: no device held memory", "No busy time or operations: no stream ran a task"},
			[]string{"Memory over time", "Busy time per stream", "Most expensive operations"}},
		{"no memory", noMemory, 3,
			[]string{"0.000000 MB (no device held memory)", "No memory plot: no device held memory", "Busy time per stream, device 1",
				`<td class="name">a</td><td>1</td><td>0.000010</td><td>0.000010000</td>`},
			[]string{"Memory over time", "No busy time"}},
	} {
		for _, grouped := range []bool{false, true} {
			html := pageOf(t, c.hist, grouped)
			if strings.Contains(html, "device -1") || strings.Contains(html, "device 0") {
				t.Errorf("%s, grouped=%v: the page names a device that holds no memory", c.name, grouped)
			}
			if n := strings.Count(html, "<svg"); n != c.plots {
				t.Errorf("%s, grouped=%v: %d plots, want %d", c.name, grouped, n, c.plots)
			}
			for _, w := range c.want {
				if !strings.Contains(html, w) {
					t.Errorf("%s, grouped=%v: the page lacks %q", c.name, grouped, w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(html, w) {
					t.Errorf("%s, grouped=%v: the page has %q", c.name, grouped, w)
				}
			}
		}
	}
}

// TestPagePeakDeviceIsLowestRank: rank 1 reaches 4 MB at 2 us, rank 0 the
// same 4 MB at 50 us. The peak device is the lowest rank that reaches the
// peak (docs/SEMANTICS.md, "The report"), device 0, though rank 1 got there
// first; the page must say which rule it follows.
func TestPagePeakDeviceIsLowestRank(t *testing.T) {
	hist := `{"fastsim":"history","version":1,"world_size":2}
{"ts":1000,"ranks":[{"offset":0,"sizes":[2],"strides":[1]}],"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}
{"ts":2000,"ranks":[{"offset":1,"sizes":[1],"strides":[1]}],"msg":{"type":"CallFunction","function":"a","args":[],"result":[{"tensor":1,"storage":1,"nbytes":4000000,"dtype":"u8","shape":[4000000],"device":"cuda"}],"stream":{"ref":1}}}
{"ts":50000,"ranks":[{"offset":0,"sizes":[1],"strides":[1]}],"msg":{"type":"CallFunction","function":"a","args":[],"result":[{"tensor":2,"storage":2,"nbytes":4000000,"dtype":"u8","shape":[4000000],"device":"cuda"}],"stream":{"ref":1}}}
`
	for _, grouped := range []bool{false, true} {
		html := pageOf(t, hist, grouped)
		for _, w := range []string{"4.000000 MB on device 0", "device 0 (peak)", "Devices 0, 1: the peak device (the lowest rank that reaches the peak)"} {
			if !strings.Contains(html, w) {
				t.Errorf("grouped=%v: the page lacks %q", grouped, w)
			}
		}
		if strings.Contains(html, "first") {
			t.Errorf("grouped=%v: the page says a device peaks first", grouped)
		}
	}
}

// TestPageGroupedEqualsUngrouped: grouping changes nothing on the page but
// the count of simulated workers: not the devices of the memory plot
// (grouped, it took one rank a group, and showed ranks 8, 4, 12, 0 of the
// example where ungrouped shows 8, 9, 10, 11, the ranks that peak highest),
// nor the operations' totals (summed in float seconds, a group's n ranks at
// once against n additions, they differed in the last bits, and the
// chart's axis with them). The example history and the golden random ones.
func TestPageGroupedEqualsUngrouped(t *testing.T) {
	paths := []string{"../../examples/train_step.hist"}
	golden, _ := filepath.Glob("../../testdata/golden/random_*.hist")
	paths = append(paths, golden...)
	if len(paths) < 3 {
		t.Fatalf("histories: %v", paths)
	}
	workers := regexp.MustCompile(`\((\d+) simulated\)`)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		u := workers.ReplaceAllString(pageOf(t, string(data), false), "")
		g := workers.ReplaceAllString(pageOf(t, string(data), true), "")
		if u != g {
			ul, gl := strings.Split(u, "\n"), strings.Split(g, "\n")
			for i := range min(len(ul), len(gl)) {
				if ul[i] != gl[i] {
					t.Errorf("%s: line %d differs:\nungrouped %s\ngrouped   %s", p, i+1, ul[i], gl[i])
					break
				}
			}
		}
	}
}

// TestPagePartial: a replay stopped before the end of its history says so
// on its page, as its report and summary do; a whole one does not.
func TestPagePartial(t *testing.T) {
	stop := make(chan struct{})
	close(stop)
	var buf bytes.Buffer
	res, err := replay.Reader(strings.NewReader(small), "h", replay.Options{
		KeepTrace:    true,
		Stop:         stop,
		PartialTrace: true, // outputs are written after a stop only with it (--partial-trace)
		Inspect: func(eng *sched.Engine, res *replay.Result) error {
			return Write(&buf, Input{Title: "small.hist", Costs: "fixed", Res: res, Eng: eng})
		},
	})
	if res == nil || !res.Partial {
		t.Fatalf("the replay was not stopped (%v)", err)
	}
	if !strings.Contains(buf.String(), "<strong>PARTIAL:</strong> the replay stopped early") {
		t.Errorf("a partial replay's page does not say so:\n%s", buf.String())
	}
	if strings.Contains(pageOf(t, small, false), "PARTIAL") {
		t.Error("a whole replay's page says PARTIAL")
	}
}
