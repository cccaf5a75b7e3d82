package bench

import (
	"testing"
	"time"

	"github.com/fastsim/fastsim/internal/groups"
	"github.com/fastsim/fastsim/internal/values"
)

// Each benchmark here runs one kind of grouping work at input size n and
// at 2n, in the same run, and reports the ratio of their times as
// "time-2n/n": linear work gives about 2, quadratic work 4.

func slice(offset int64, sizes, strides []int64) values.Slice {
	return values.Slice{Offset: offset, Sizes: sizes, Strides: strides}
}

func noSplit(groups.GroupID, groups.GroupID) error { return nil }

// doubling times work(n) and work(2n) and reports their ratio.
func doubling(b *testing.B, n int, work func(n int)) {
	b.ReportAllocs()
	var t1, t2 time.Duration
	for b.Loop() {
		s := time.Now()
		work(n)
		t1 += time.Since(s)
		s = time.Now()
		work(2 * n)
		t2 += time.Since(s)
	}
	b.ReportMetric(float64(t2)/float64(t1), "time-2n/n")
}

// BenchmarkShiftSendDoubling: a send from ranks 0..n-2 to 1..n-1, grouped,
// splits every rank into its own group (n = 2^15 and 2^16).
func BenchmarkShiftSendDoubling(b *testing.B) {
	doubling(b, 1<<15, func(n int) {
		p, _ := groups.New(int64(n), true)
		from, to := slice(0, []int64{int64(n - 1)}, []int64{1}), slice(1, []int64{int64(n - 1)}, []int64{1})
		if _, _, err := p.Pairs(&from, &to, noSplit); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkStridedRowsDoubling: one record addressing rows of 4 ranks
// every 8 (sizes [n,4], strides [8,1]) at world 2^24, n = 2^20 and 2^21.
func BenchmarkStridedRowsDoubling(b *testing.B) {
	doubling(b, 1<<20, func(n int) {
		p, _ := groups.New(1<<24, true)
		s := slice(0, []int64{int64(n), 4}, []int64{8, 1})
		if _, err := p.Resolve([]values.Slice{s}, noSplit); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkSingleRankSplitsDoubling: n commands, each to one rank of a
// world of 2^20, split n single ranks off the big group (n = 2^13, 2^14).
func BenchmarkSingleRankSplitsDoubling(b *testing.B) {
	doubling(b, 1<<13, func(n int) {
		p, _ := groups.New(1<<20, true)
		for r := range n {
			if _, err := p.Resolve([]values.Slice{slice(int64(r)*61, nil, nil)}, noSplit); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSpellingsDoubling: n commands to the same 8 stages of a world
// of 2^20, each stage spelled three ways in turn (one dimension, two, and a
// size-1 dimension in front): after the first round every command must hit
// the cache (n = 2^14, 2^15).
func BenchmarkSpellingsDoubling(b *testing.B) {
	const world, stages = 1 << 20, 8
	const per = world / stages
	doubling(b, 1<<14, func(n int) {
		p, _ := groups.New(world, true)
		for i := range n {
			off := int64(i%stages) * per
			var s values.Slice
			switch (i / stages) % 3 {
			case 0:
				s = slice(off, []int64{per}, []int64{1})
			case 1:
				s = slice(off, []int64{per / 8, 8}, []int64{8, 1})
			default:
				s = slice(off, []int64{1, per}, []int64{world, 1})
			}
			if _, err := p.Resolve([]values.Slice{s}, noSplit); err != nil {
				b.Fatal(err)
			}
		}
	})
}
