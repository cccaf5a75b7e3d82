package replay

import (
	"errors"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/memlimit"
)

// TestLimitAdvice: a LimitError's own text names no flag (a program
// embedding the replay has none); Advise names the ones given, and
// suggests grouping only to a replay that did not group.
func TestLimitAdvice(t *testing.T) {
	for _, grouped := range []bool{false, true} {
		le := &LimitError{File: "h.hist", Line: 7, Msg: "the replay's memory passed its budget of 1.0 GiB", Grouped: grouped}
		if !errors.Is(le, memlimit.ErrLimit) || !strings.HasPrefix(le.Error(), "h.hist:7: memory limit: the replay's memory") || strings.Contains(le.Error(), "--") {
			t.Errorf("grouped %v: %q", grouped, le.Error())
		}
		cli := le.Advise("--max-memory", "--group-workers")
		if !strings.Contains(cli, "raise --max-memory") || strings.Contains(cli, "--group-workers") == grouped {
			t.Errorf("grouped %v: %q", grouped, cli)
		}
	}
}
