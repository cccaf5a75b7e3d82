package history

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// BenchmarkDecode reads random_105.hist from memory; one op is the whole
// file. In steady state (a Reader reused with Reset) it allocates nothing.
func BenchmarkDecode(b *testing.B) {
	data, err := os.ReadFile("../../testdata/golden/random_105.hist")
	if err != nil {
		data, err = os.ReadFile("testdata/fuzz-seed/random_105.hist")
	}
	if err != nil {
		b.Skip("random_105.hist not found")
	}
	src := bytes.NewReader(data)
	r, err := NewReader(src, "random_105.hist")
	if err != nil {
		b.Fatal(err)
	}
	var rec Record
	records := 0
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		src.Reset(data)
		if err := r.Reset(src, "random_105.hist"); err != nil {
			b.Fatal(err)
		}
		records = 0
		for {
			err := r.Next(&rec)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			records++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(records), "ns/record")
}
