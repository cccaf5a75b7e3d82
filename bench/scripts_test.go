package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// reopensStd matches a script line that opens standard output or error
// again by name (tee /dev/stderr, > /dev/stdout, > /dev/fd/2): on Linux
// that opens the file behind the descriptor anew and truncates it, so
// `bench/X.sh > log 2>&1` loses what was written before and garbles the
// rest. >&2 and >> keep the descriptor's offset.
var reopensStd = regexp.MustCompile(`tee\b[^|]*/dev/(stdout|stderr|fd/)|(^|[^>&])>\s*/dev/(stdout|stderr|fd/)`)

// TestScriptsKeepTheirLog: no bench script reopens its standard output or
// error by name.
func TestScriptsKeepTheirLog(t *testing.T) {
	scripts, err := filepath.Glob("*.sh")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, s := range scripts {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			if reopensStd.MatchString(line) {
				t.Errorf("%s:%d: %s: write to the descriptor (>&2, or a pipe to cat >&2), not to its /dev name", s, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// TestProbePatchesApply: bench/sendstate.sh and bench/pipestats.sh apply
// their probe patch to a copy of the tree (REV, by default HEAD); a patch
// that no longer applies to the code it counts in makes the script fail
// before it measures anything. Each patch is tried on a copy of the files
// it touches, as they are in this tree.
func TestProbePatchesApply(t *testing.T) {
	if _, err := exec.LookPath("patch"); err != nil {
		t.Skip("no patch command")
	}
	patches, err := filepath.Glob("*.patch")
	if err != nil || len(patches) == 0 {
		t.Fatalf("no patches: %v", err)
	}
	for _, p := range patches {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		for _, line := range strings.Split(string(text), "\n") {
			name, ok := strings.CutPrefix(line, "--- a/")
			if !ok {
				continue
			}
			name, _, _ = strings.Cut(name, "\t")
			src, err := os.ReadFile(filepath.Join("..", name))
			if err != nil {
				t.Fatalf("%s patches %s: %v", p, name, err)
			}
			if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("patch", "-p1", "--dry-run", "-i", abs)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), "FAILED") {
			t.Errorf("%s does not apply to this tree: %v\n%s", p, err, out)
		}
	}
}
