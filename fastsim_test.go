package fastsim

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// feedAll feeds hist line by line (header excluded) into a new Sim.
func feedAll(t *testing.T, hist []byte, h Header, opt Options) *Sim {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(hist))
	sc.Buffer(nil, 1<<26)
	sc.Scan() // the header: New takes it as a value
	s, err := New(h, opt)
	if err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		if err := s.Feed(sc.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestFeedEqualsReplay: feeding a history line by line gives the reports
// and trace that replaying it whole gives, for golden histories and a
// synthetic training job, grouped and not.
func TestFeedEqualsReplay(t *testing.T) {
	job := Train{PP: 2, DP: 2, TP: 2, Layers: 2, Hidden: 64, Seq: 32, Batch: 4, Micro: 2, Steps: 2, GPUsPerHost: 4}
	train, err := job.History()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{"train": train}
	for _, name := range []string{"random_101", "borrow", "to_mesh"} {
		data, err := os.ReadFile(filepath.Join("testdata", "golden", name+".hist"))
		if err != nil {
			t.Fatal(err)
		}
		cases[name] = data
	}
	for name, hist := range cases {
		for _, grouped := range []bool{false, true} {
			whole, err := Replay(bytes.NewReader(hist), Options{Grouped: grouped, KeepTrace: true})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			fed := feedAll(t, hist, whole.Header(), Options{Grouped: grouped, KeepTrace: true})
			if !reflect.DeepEqual(fed.Steps(), whole.Steps()) || !reflect.DeepEqual(fed.Report(), whole.Report()) {
				t.Errorf("%s grouped=%v: fed %+v, replayed %+v", name, grouped, fed.Report(), whole.Report())
			}
			var a, b bytes.Buffer
			if err := fed.WriteTrace(&a); err != nil {
				t.Fatal(err)
			}
			if err := whole.WriteTrace(&b); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Errorf("%s grouped=%v: traces differ", name, grouped)
			}
		}
	}
}

// TestDevicePeaks: the largest device peak is the report's peak, and
// grouped device peaks, expanded to their ranks, are the ungrouped ones.
func TestDevicePeaks(t *testing.T) {
	job := Train{PP: 2, DP: 2, TP: 2, Layers: 2, Hidden: 64, Seq: 32, Batch: 4, Micro: 2, Steps: 1}
	hist, err := job.History()
	if err != nil {
		t.Fatal(err)
	}
	flat, err := Replay(bytes.NewReader(hist), Options{})
	if err != nil {
		t.Fatal(err)
	}
	grouped, err := Replay(bytes.NewReader(hist), Options{Grouped: true})
	if err != nil {
		t.Fatal(err)
	}
	fr, gr := flat.Report(), grouped.Report()
	if len(fr.Devices) != 8 {
		t.Fatalf("%d devices, want 8", len(fr.Devices))
	}
	top := int64(0)
	for _, d := range fr.Devices {
		top = max(top, d.PeakBytes)
		if d.Ranks != 1 {
			t.Errorf("ungrouped device %d stands for %d ranks", d.LowestRank, d.Ranks)
		}
	}
	if top != fr.PeakBytes || top == 0 {
		t.Errorf("largest device peak %d, report %d", top, fr.PeakBytes)
	}
	// Grouped, the ranks of a stage receive the same commands; every
	// grouped entry's peak is the peak of the ranks it stands for. Groups
	// of this job are runs of consecutive ranks (a stage's ranks).
	covered := int64(0)
	for _, d := range gr.Devices {
		for r := d.LowestRank; r < d.LowestRank+d.Ranks; r++ {
			if fr.Devices[r].PeakBytes != d.PeakBytes {
				t.Errorf("rank %d: %d bytes ungrouped, %d in its group", r, fr.Devices[r].PeakBytes, d.PeakBytes)
			}
		}
		covered += d.Ranks
	}
	if covered != 8 || gr.PeakBytes != fr.PeakBytes {
		t.Errorf("grouped covers %d ranks, peak %d (want 8, %d)", covered, gr.PeakBytes, fr.PeakBytes)
	}
}

func TestErrors(t *testing.T) {
	s, err := New(Header{WorldSize: 2}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteTrace(&bytes.Buffer{}); !errors.Is(err, ErrNoTrace) {
		t.Errorf("WriteTrace without KeepTrace: %v", err)
	}
	// A rank outside the world names the line: the header is line 1.
	err = s.Feed([]byte(`{"ts":1,"ranks":[{"offset":5,"sizes":[1],"strides":[1]}],"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`))
	if err == nil || !strings.Contains(err.Error(), "sim:2") {
		t.Errorf("bad rank: %v, want an error naming sim:2", err)
	}
	if _, err := New(Header{WorldSize: 0}, Options{}); err == nil {
		t.Error("world 0 accepted")
	}
	strict, _ := New(Header{WorldSize: 1}, Options{Strict: true})
	if err := strict.Feed([]byte(`{"ts":1,"ranks":[{"offset":0,"sizes":[1],"strides":[1]}],"msg":{"type":"Martian"}}`)); !errors.Is(err, ErrUnknownType) {
		t.Errorf("strict unknown type: %v", err)
	}
	done, err := Replay(strings.NewReader(`{"fastsim":"history","version":1,"world_size":1}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := done.Feed([]byte(`{"step":0}`)); !errors.Is(err, ErrFinished) {
		t.Errorf("Feed after Replay: %v", err)
	}
	if _, err := ParseCosts([]byte(`{"nope":1}`)); err == nil {
		t.Error("bad costs accepted")
	}
	if err := (Train{PP: 3, DP: 1, TP: 1, Layers: 4, Hidden: 8, Seq: 1, Batch: 1, Micro: 1}).Check(); err == nil {
		t.Error("4 layers over 3 stages accepted")
	}
}

// TestTransformerHugeBatch: a micro-batch of 2^62 sequences times 8
// replicas wraps to 0 in an int64; the job must be refused with an error,
// not end the caller in a division by zero.
func TestTransformerHugeBatch(t *testing.T) {
	m, err := LoadModel("llama3-8b")
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range []Transformer{
		{Model: m, TP: 1, PP: 1, DP: 8, MicroBatch: 1 << 62, GlobalBatch: 8},
		{Model: m, TP: 1, PP: 1, DP: 8, MicroBatch: 1, GlobalBatch: 1 << 62},
		{Model: m, TP: 1, PP: 1, DP: 8, MicroBatch: 0, GlobalBatch: 8},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("micro batch %d, global batch %d: panic %v", tr.MicroBatch, tr.GlobalBatch, r)
				}
			}()
			if err := tr.WriteHistory(io.Discard); err == nil {
				t.Errorf("micro batch %d, global batch %d accepted", tr.MicroBatch, tr.GlobalBatch)
			}
		}()
	}
}

// TestTransformerHugeShape: hidden 2^20 in 65,536 heads with sequences of
// 2^24 tokens is within every field's limit, but its attention scores,
// 65,536 x 2^24 x 2^24 = 2^64 elements, do not fit in an int64; they
// wrapped into a wrong memory figure. Check refuses the job and names the
// tensor.
func TestTransformerHugeShape(t *testing.T) {
	tr := Transformer{Model: Model{Name: "big", Layers: 1, Hidden: 1 << 20, Heads: 1 << 16, Vocab: 51200, Seq: 1 << 24, Bias: true, Tied: true, Dtype: "bfloat16"},
		TP: 1, PP: 1, DP: 1, MicroBatch: 1, GlobalBatch: 1}
	if err := tr.Check(); err == nil || !strings.Contains(err.Error(), "attention scores") {
		t.Fatalf("Check = %v, want an error naming the attention scores", err)
	}
}
