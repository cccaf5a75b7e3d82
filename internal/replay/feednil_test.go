package replay

import (
	"errors"
	"testing"

	"github.com/fastsim/fastsim/internal/history"
)

// TestFeedNilRecord: Feed refuses a nil record with ErrNilRecord and
// changes nothing: no record or line counted, no sticky error.
func TestFeedNilRecord(t *testing.T) {
	s, err := New(history.Header{WorldSize: 2}, "sim", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 2 {
		if err := s.Feed(nil, nil); !errors.Is(err, ErrNilRecord) {
			t.Fatalf("Feed(nil): %v, want ErrNilRecord", err)
		}
	}
	if s.line != 1 || s.res.Records != 0 || s.err != nil || s.res.LastLine != 0 {
		t.Errorf("after Feed(nil): line %d, %d records, error %v, last line %d; want 1, 0, nil, 0", s.line, s.res.Records, s.err, s.res.LastLine)
	}
	if err := s.Feed(&history.Record{IsStep: true}, nil); err != nil {
		t.Errorf("a step record after Feed(nil): %v", err)
	}
	if s.line != 2 {
		t.Errorf("the step record fed after Feed(nil) is line %d, want 2", s.line)
	}
}
