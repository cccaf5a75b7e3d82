package fastsim_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportDirections guards the direction of the house: lower floors never
// import upper ones. Each rule names a package and the module packages it
// may never depend on, directly or through others (go list -deps), in the
// manner of CockroachDB's coldata/dep_test.go.
func TestImportDirections(t *testing.T) {
	const mod = "github.com/fastsim/fastsim"
	rules := []struct {
		pkg       string
		forbidden []string
		why       string
	}{
		{"internal/soa", []string{"gen", "internal/"}, "generic tables know nothing of messages or the engine"},
		{"internal/values", []string{"gen", "internal/"}, "the values of a history sit below both codecs, the messages and the engine"},
		{"internal/jsonpos", []string{"gen", "internal/"}, "finding an error's line in a JSON text needs nothing of the module"},
		{"internal/smallfile", []string{"gen", "internal/"}, "reading a small file whole, bounded, needs nothing of the module"},
		{"internal/batchring", []string{"gen", "internal/"}, "a ring of batches between two goroutines knows nothing of what they hold"},
		{"internal/jsonl", []string{"gen", "internal/binform", "internal/history", "internal/sched", "internal/groups"}, "the JSON-lines codec knows only the values it reads and writes"},
		{"internal/binform", []string{"gen", "internal/history", "internal/sched", "internal/groups"}, "the binary codec knows only the values it reads and writes (and trees' JSON text)"},
		{"internal/groups", []string{"gen", "internal/sched", "internal/history", "internal/binform", "internal/jsonl"}, "rank sets know nothing of messages or codecs"},
		// The generated message package holds the codecs beside the
		// messages, so binform is below gen and the engine sees it through
		// gen only; the engine itself never names it.
		{"internal/sched", []string{"cmd/", "internal/history", "internal/replay", "internal/search", "internal/synth", "internal/costs"}, "the engine never imports the CLI, the reader or its drivers"},
		{"internal/trace", []string{"gen", "internal/sched", "internal/history"}, "the trace writer only writes"},
		{"internal/costs", []string{"cmd/", "internal/history", "internal/replay", "internal/search"}, "cost models price messages; they do not read files"},
		{"internal/history", []string{"internal/sched", "internal/replay", "internal/costs", "internal/synth", "internal/workload", "cmd/"}, "decoding never depends on simulating, nor on the programs that write histories through it"},
		{"gen", []string{"internal/sched", "internal/history", "internal/replay", "internal/groups", "cmd/"}, "generated messages sit below the engine and the reader"},
		{"internal/replay", []string{"cmd/"}, "the CLI is a shell over the replay"},
		{".", []string{"cmd/"}, "the API never imports the CLI"},
	}
	// Direct imports: the engine never names a codec's package; it sees
	// values through internal/values and messages through gen.
	direct := map[string][]string{
		"internal/sched": {"internal/binform", "internal/jsonl"},
		"internal/costs": {"internal/binform", "internal/jsonl"},
	}
	for pkg, forbidden := range direct {
		out, err := exec.Command("go", "list", "-f", "{{join .Imports \"\\n\"}}", mod+"/"+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, imp := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				if imp == mod+"/"+f {
					t.Errorf("%s imports %s directly", pkg, f)
				}
			}
		}
	}
	for _, r := range rules {
		path := mod
		if r.pkg != "." {
			path += "/" + r.pkg
		}
		out, err := exec.Command("go", "list", "-deps", path).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", path, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			rel, ok := strings.CutPrefix(dep, mod+"/")
			if !ok || dep == path {
				continue
			}
			for _, f := range r.forbidden {
				if rel == f || strings.HasSuffix(f, "/") && strings.HasPrefix(rel, f) {
					t.Errorf("%s depends on %s: %s", r.pkg, rel, r.why)
				}
			}
		}
	}
}
