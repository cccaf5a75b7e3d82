package history

import (
	"bytes"
	"io"
	"testing"
)

// benchTrain is the history of BenchmarkDecodeForms: a training job of
// pp 8, dp 8, tp 8 (512 ranks), 8 layers, 20 steps.
var benchTrain = trainShape{PP: 8, DP: 8, TP: 8, Layers: 8, Hidden: 1024, Seq: 128, Batch: 16, Micro: 2, Steps: 20}

// decodeAll reads every record of data with r (reset), returning the count.
func decodeAll(b *testing.B, r *Reader, src *bytes.Reader, data []byte) int {
	src.Reset(data)
	if err := r.Reset(src, "bench"); err != nil {
		b.Fatal(err)
	}
	var rec Record
	n := 0
	for {
		err := r.Next(&rec)
		if err == io.EOF {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
}

// BenchmarkDecodeForms decodes the same synthesized history as plain JSON
// lines, zstd JSON lines and the binary form; one op is the whole history.
// Compare the records/s metrics.
func BenchmarkDecodeForms(b *testing.B) {
	var js bytes.Buffer
	if err := writeTrain(&js, benchTrain); err != nil {
		b.Fatal(err)
	}
	forms := []struct {
		name string
		data []byte
	}{
		{"json", js.Bytes()},
		{"json-zstd", convert(b, js.Bytes(), FormJSONZstd)},
		{"binary", convert(b, js.Bytes(), FormBinary)},
	}
	for _, f := range forms {
		b.Run(f.name, func(b *testing.B) {
			src := bytes.NewReader(f.data)
			r, err := NewReader(src, "bench")
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			n := decodeAll(b, r, src, f.data)
			b.ReportAllocs()
			b.SetBytes(int64(len(f.data)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				decodeAll(b, r, src, f.data)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
