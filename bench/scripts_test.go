package bench

import (
	"os"
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
