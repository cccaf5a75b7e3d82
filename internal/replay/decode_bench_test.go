package replay

import (
	"bytes"
	"io"
	"testing"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/synth"
)

// decodeBenchTrain is the history of BenchmarkDecodeRecord: the
// world-65,536 training job of bench/scale.sh (pp 8, dp 1024, tp 8, 32
// layers, 4 microbatches), one step: about 5,000 records.
var decodeBenchTrain = synth.Train{PP: 8, DP: 1024, TP: 8, Layers: 32, Hidden: 4096, Seq: 2048, Batch: 4096, Micro: 4, Steps: 1}

// decodeRecords reads every record of data, returning how many there were.
func decodeRecords(b *testing.B, r *history.Reader, src *bytes.Reader, data []byte, rec *history.Record) int {
	src.Reset(data)
	if err := r.Reset(src, "bench"); err != nil {
		b.Fatal(err)
	}
	n := 0
	for {
		err := r.Next(rec)
		if err == io.EOF {
			return n
		}
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
}

// BenchmarkDecodeRecord decodes the same history, held in memory, in each
// form and reports the time per record (ns/record) and the allocations of
// a whole pass (one op). bench/decode.sh runs it; it takes seconds.
func BenchmarkDecodeRecord(b *testing.B) {
	var js bytes.Buffer
	if err := synth.WriteTrain(&js, decodeBenchTrain); err != nil {
		b.Fatal(err)
	}
	forms := []struct {
		name string
		form history.Form
	}{{"json", history.FormJSON}, {"binary", history.FormBinary}}
	for _, f := range forms {
		data := js.Bytes()
		if f.form != history.FormJSON {
			data = convertTo(b, js.Bytes(), f.form)
		}
		b.Run(f.name, func(b *testing.B) {
			src := bytes.NewReader(data)
			r, err := history.NewReader(src, "bench")
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			var rec history.Record
			n := decodeRecords(b, r, src, data, &rec)
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				decodeRecords(b, r, src, data, &rec)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/record")
		})
	}
}

// convertTo rewrites the JSON-lines history data in form f. It calls only
// what the reader and writer have offered since the binary form began
// (NewReader, NewWriter, Convert), not history.ConvertBytes: bench/decode.sh
// copies this file into the tree of an older commit to time its decoder the
// same way.
func convertTo(b *testing.B, data []byte, f history.Form) []byte {
	r, err := history.NewReader(bytes.NewReader(data), "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	r.KeepExtra = true
	var out bytes.Buffer
	w, err := history.NewWriter(&out, f, r.Header(), r.RawHeader())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := history.Convert(r, w); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return out.Bytes()
}
