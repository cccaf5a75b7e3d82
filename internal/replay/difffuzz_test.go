package replay

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/fastsim/fastsim/internal/binform"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/sched"
)

// otherForm converts a history to the other form (JSON lines to binary,
// binary to JSON lines), as fastsim convert does.
func otherForm(data []byte) ([]byte, error) {
	form := history.FormBinary
	if bytes.HasPrefix(data, binform.Magic) {
		form = history.FormJSON
	}
	return history.ConvertBytes(data, "fuzz", form)
}

// decodeOnly reads every record, as --decode-only does.
func decodeOnly(data []byte) error {
	r, err := history.NewReader(bytes.NewReader(data), "fuzz")
	if err != nil {
		return err
	}
	defer r.Close()
	var rec history.Record
	for {
		if err := r.Next(&rec); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// outcome is what one replay says: its error's text, or its reports.
type outcome struct {
	err   string
	final sched.Report
	steps []sched.Report
}

func (o outcome) same(p outcome) bool {
	if o.err != p.err || o.final != p.final || len(o.steps) != len(p.steps) {
		return false
	}
	for i := range o.steps {
		if o.steps[i] != p.steps[i] {
			return false
		}
	}
	return true
}

func replayOutcome(t *testing.T, data []byte, opt Options) outcome {
	res, err := Reader(bytes.NewReader(data), "fuzz", opt)
	if err != nil {
		var he *history.Error
		if !errors.As(err, &he) {
			t.Fatalf("error without a file and line: %v", err)
		}
		return outcome{err: err.Error()}
	}
	return outcome{final: res.Final, steps: res.Steps}
}

var linePrefix = regexp.MustCompile(`^fuzz:\d*:? ?`)

// FuzzDifferential holds every way of reading a history to one answer:
// for any input, the input and its conversion to the other form, grouped
// and ungrouped, in every trace mode, replay the same (same acceptance,
// same message, same reports); a history decode-only rejects, replay and
// convert reject with the same message.
func FuzzDifferential(f *testing.F) {
	for _, pattern := range []string{"../../internal/history/testdata/fuzz-seed/*.hist", "../../internal/history/testdata/fuzz-binary/*.fhist", "../../testdata/bad/*.hist"} {
		files, _ := filepath.Glob(pattern)
		if os.Getenv("FASTSIM_FUZZ_LARGE_SEEDS") != "" && pattern == "../../testdata/bad/*.hist" {
			more, _ := filepath.Glob("../../testdata/golden/*.hist")
			files = append(files, more...)
		}
		for _, p := range files {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Binary inputs mostly get their checksums mended, so mutations
		// reach the records (see FuzzBinary).
		if len(data) > 0 && data[len(data)-1]&1 != 0 {
			data = binform.MendChecksums(data)
		}
		decErr := decodeOnly(data)
		other, convErr := otherForm(data)
		if (convErr == nil) != (decErr == nil) {
			t.Fatalf("decode-only error %v, convert error %v", decErr, convErr)
		}
		if convErr != nil && convErr.Error() != decErr.Error() {
			t.Fatalf("decode-only and convert say different things:\n%v\n%v", decErr, convErr)
		}
		// JSON lines may hold blank lines, which the binary form does not
		// number: then messages are compared without their line.
		lines := !bytes.HasPrefix(data, binform.Magic) && (bytes.Contains(data, []byte("\n\n")) || bytes.Contains(data, []byte("\r")) || bytes.HasPrefix(data, []byte("\n")))
		var first outcome
		for i, mode := range []sched.Mode{sched.Everything, sched.StreamOnly, sched.ControllerOnly} {
			var ref outcome
			for j, grouped := range []bool{false, true} {
				opt := Options{MaxWorld: 64, Mode: mode, Grouped: grouped, Jobs: 1 + j}
				o := replayOutcome(t, data, opt)
				if decErr != nil && o.err != decErr.Error() {
					// An engine error may come first, at an earlier line;
					// the replay must fail all the same.
					if o.err == "" {
						t.Fatalf("%v grouped=%v: replay accepts what decode-only rejects: %v", mode, grouped, decErr)
					}
				}
				if j == 0 {
					ref = o
				} else if !o.same(ref) {
					t.Fatalf("%v: ungrouped %+v, grouped %+v", mode, ref, o)
				}
				if i == 0 && j == 0 {
					first = o
				}
				if convErr != nil {
					continue
				}
				p := replayOutcome(t, other, opt)
				if lines {
					o.err, p.err = linePrefix.ReplaceAllString(o.err, ""), linePrefix.ReplaceAllString(p.err, "")
				}
				if !o.same(p) {
					t.Fatalf("%v grouped=%v: the input gives %+v, its other form %+v", mode, grouped, o, p)
				}
			}
			// Errors found by decoding are the same in every mode.
			if decErr != nil && ref.err == decErr.Error() && first.err == decErr.Error() && ref.err != first.err {
				t.Fatalf("%v says %q, everything mode %q", mode, ref.err, first.err)
			}
		}
	})
}
