package replay

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// speedscopeIndex is where tools/browser/setup.sh installs speedscope.
const speedscopeIndex = "../../tools/browser/node_modules/speedscope/dist/release/index.html"

// importInSpeedscope loads trace (Chrome trace JSON) into speedscope in
// headless Chromium, the way speedscope's own command line does (a script
// calling speedscope.loadFileFromBase64, named in #localProfilePath), and
// returns the page title and Chromium's log, which holds the page's console.
func importInSpeedscope(t *testing.T, chromium, index string, name string, trace []byte) (title, log string) {
	t.Helper()
	dir := t.TempDir()
	js := filepath.Join(dir, "load.js")
	src := "speedscope.loadFileFromBase64(" + strconv.Quote(name) + ", " + strconv.Quote(base64.StdEncoding.EncodeToString(trace)) + ")"
	if err := os.WriteFile(js, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--enable-logging=stderr", "--v=0",
		"--virtual-time-budget=10000", "--dump-dom", "file://"+index+"#localProfilePath="+js)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
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
	dom := out.String()
	if i := strings.Index(dom, "<title>"); i >= 0 {
		if j := strings.Index(dom[i:], "</title>"); j > 0 {
			title = dom[i+len("<title>") : i+j]
		}
	}
	return title, errb.String()
}

// TestSpeedscopeNesting imports the trace of the golden history with the
// most zero-length controller events into speedscope (in headless
// Chromium; skipped unless tools/browser/setup.sh installed both) and
// checks that speedscope closes every frame it opens: its importer warns
// "Tried to end frame ..." or "... was still open at end of profile"
// otherwise. The same trace with its instant events turned back into
// zero-length complete events must draw those warnings, or the check
// proves nothing.
func TestSpeedscopeNesting(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium (tools/browser/setup.sh installs it)")
	}
	index, err := filepath.Abs(speedscopeIndex)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(index); err != nil {
		t.Skip("no speedscope (tools/browser/setup.sh installs it)")
	}
	path := filepath.Join(t.TempDir(), "trace.json")
	if _, err := File(filepath.Join(goldenDir, "random_105.hist"), Options{TracePath: path}); err != nil {
		t.Fatal(err)
	}
	trace, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	warned := func(log string) int {
		return strings.Count(log, "Tried to end") + strings.Count(log, "still open at end of profile")
	}
	title, log := importInSpeedscope(t, chromium, index, "random_105.json", trace)
	if !strings.HasPrefix(title, "random_105.json") {
		t.Fatalf("speedscope did not import the trace (title %q):\n%s", title, log)
	}
	if n := warned(log); n > 0 {
		t.Errorf("speedscope warned %d times about unbalanced frames:\n%s", n, log)
	}

	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(trace, &doc); err != nil {
		t.Fatal(err)
	}
	for _, ev := range doc.TraceEvents {
		if ev["ph"] == "i" {
			ev["ph"], ev["dur"] = "X", 0
			delete(ev, "s")
		}
	}
	old, _ := json.Marshal(doc)
	if _, log := importInSpeedscope(t, chromium, index, "zero.json", old); warned(log) == 0 {
		t.Error("zero-length complete events drew no warning: the check cannot tell good from bad")
	}
}
