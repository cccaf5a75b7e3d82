package history

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/fastsim/fastsim/gen"
)

// FuzzReader feeds arbitrary bytes to the reader: it must return records or
// errors, never panic.
func FuzzReader(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/fuzz-seed/*.hist")
	seeds = append(seeds, largeSeeds("../../testdata/golden/*.hist")...)
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	group := []byte(hdr + `{"ts":1,"ranks":[{"offset":0,"sizes":[2,2],"strides":[2,1]}],"msg":{"type":"CommandGroup","commands":[{"type":"DeleteRefs","refs":[1]}]}}`)
	f.Add(group)
	// The same history in S2 framing, as JSON lines and in the binary
	// form, so that mutations reach the S2 decoder and the cut and
	// damage it reports.
	f.Add(inS2(f, group, 4<<10))
	f.Add(convert(f, group, FormBinaryS2))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data), "fuzz.hist")
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is not *Error", err)
			}
			return
		}
		defer r.Close()
		var rec Record
		var ranks []int64
		for i := 0; i < 1<<16; i++ {
			err := r.Next(&rec)
			if err == io.EOF {
				return
			}
			if err != nil {
				if _, ok := err.(*Error); !ok {
					t.Fatalf("error %T is not *Error", err)
				}
				return
			}
			for j := range rec.Ranks {
				s := &rec.Ranks[j]
				lo, hi := s.Bounds()
				if s.Len() > 0 && (lo < 0 || hi >= r.Header().WorldSize) {
					t.Fatalf("line %d: slice %+v outside the world", rec.Line, s)
				}
				if s.Len() <= 1<<12 {
					ranks = s.AppendRanks(ranks[:0])
					if int64(len(ranks)) != s.Len() {
						t.Fatalf("line %d: %d ranks, Len %d", rec.Line, len(ranks), s.Len())
					}
				}
			}
			_ = gen.Dispatch(nopHandler{}, &rec.Msg)
		}
	})
}

// largeSeeds lists the files of pattern when FASTSIM_FUZZ_LARGE_SEEDS is
// set (bench/fuzz.sh sets it for long runs). The committed corpora hold
// small seeds only: a short run spends its seconds minimizing the first
// interesting input, and a 100 KB seed takes longer than CI gives it.
func largeSeeds(pattern string) []string {
	if os.Getenv("FASTSIM_FUZZ_LARGE_SEEDS") == "" {
		return nil
	}
	files, _ := filepath.Glob(pattern)
	return files
}

type nopHandler struct{}

func (nopHandler) CreateStream(*gen.CreateStream) error     { return nil }
func (nopHandler) CallFunction(*gen.CallFunction) error     { return nil }
func (nopHandler) SendTensor(*gen.SendTensor) error         { return nil }
func (nopHandler) Reduce(*gen.Reduce) error                 { return nil }
func (nopHandler) BorrowCreate(*gen.BorrowCreate) error     { return nil }
func (nopHandler) BorrowFirstUse(*gen.BorrowFirstUse) error { return nil }
func (nopHandler) BorrowLastUse(*gen.BorrowLastUse) error   { return nil }
func (nopHandler) BorrowDrop(*gen.BorrowDrop) error         { return nil }
func (nopHandler) DeleteRefs(*gen.DeleteRefs) error         { return nil }
func (nopHandler) PipeRecv(*gen.PipeRecv) error             { return nil }
func (nopHandler) CommandGroup(*gen.CommandGroup) error     { return nil }
func (nopHandler) Accepted(gen.MsgKind) error               { return nil }
func (nopHandler) Unknown(string) error                     { return nil }
