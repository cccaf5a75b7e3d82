package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/synth"
)

// abortedReader serves data, then, as a reader that a stop aborts does
// (the CLI's for a pipe), closes stop and fails.
type abortedReader struct {
	data []byte
	stop chan struct{}
}

func (a *abortedReader) Read(p []byte) (int, error) {
	if len(a.data) > 0 {
		n := copy(p, a.data)
		a.data = a.data[n:]
		return n, nil
	}
	close(a.stop)
	return 0, errors.New("input aborted")
}

// TestInputAbortedByStop: an input that fails once a stop is asked for
// ends the replay with a partial result, not an error, serially and
// pipelined: the result covers records of the first half of a training
// history at most (cut at a line's end; pipelined, the engine may notice
// the stop before the decoder's error reaches it, at any record).
func TestInputAbortedByStop(t *testing.T) {
	var b bytes.Buffer
	c := synth.Train{PP: 2, DP: 2, TP: 1, Layers: 4, Hidden: 32, Seq: 8, Batch: 4, Micro: 2, Steps: 4}
	if err := synth.WriteTrain(&b, c); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(b.String(), "\n")
	half := strings.Join(lines[:len(lines)/2], "")
	for _, jobs := range []int{1, 2} {
		stop := make(chan struct{})
		res, err := Reader(&abortedReader{data: []byte(half), stop: stop}, "p.hist", Options{Grouped: true, Jobs: jobs, Stop: stop})
		if err != nil {
			t.Fatalf("jobs %d: %v; want a partial result", jobs, err)
		}
		if !res.Partial || res.LastLine > int64(len(lines)/2) {
			t.Errorf("jobs %d: partial %v at line %d; want partial, at most line %d", jobs, res.Partial, res.LastLine, len(lines)/2)
		}
	}
}

// TestStopBeforeEndNotLost: a stop asked for before the history's end is
// read makes the result partial even when no command record came after it
// to notice it (step lines do not look: the interrupt was lost, and the
// replay reported a complete run).
func TestStopBeforeEndNotLost(t *testing.T) {
	hist := "{\"fastsim\":\"history\",\"version\":1,\"world_size\":2}\n{\"step\":0}\n{\"step\":1}\n"
	stop := make(chan struct{})
	close(stop)
	res, err := Reader(strings.NewReader(hist), "s.hist", Options{Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Partial {
		t.Errorf("a stop asked for before the end: result not partial")
	}
}

// endReader serves data, then, as a Ctrl-C just as the input ends would,
// closes stop and reports the end.
type endReader struct {
	data []byte
	stop chan struct{}
}

func (e *endReader) Read(p []byte) (int, error) {
	if len(e.data) > 0 {
		n := copy(p, e.data)
		e.data = e.data[n:]
		return n, nil
	}
	select {
	case <-e.stop:
	default:
		close(e.stop)
	}
	return 0, io.EOF
}

// TestStopAtEndComplete: a stop asked for once every record has been
// read and applied leaves nothing out, so the result is complete, not
// partial, with every step. Serially only: pipelined, the decoder reaches
// the end ahead of the engine, so a stop asked for there can still come
// before records the engine has to apply.
func TestStopAtEndComplete(t *testing.T) {
	var b bytes.Buffer
	c := synth.Train{PP: 2, DP: 2, TP: 1, Layers: 4, Hidden: 32, Seq: 8, Batch: 4, Micro: 2, Steps: 2}
	if err := synth.WriteTrain(&b, c); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	res, err := Reader(&endReader{data: b.Bytes(), stop: stop}, "e.hist", Options{Grouped: true, Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	if res.Partial || len(res.Steps) != c.Steps {
		t.Errorf("partial %v, %d steps of %d; want the whole history", res.Partial, len(res.Steps), c.Steps)
	}
}

// TestStopInFinalFlush: a stop that comes after the last record, while
// the replay's end applies the Reduce it held back over 65,536 groups
// (the engine asks for a stop once per 65,536 groups), ends the replay
// partial, with its report, as a stop within a command does; not with the
// engine's bare "stopped". World 65,536: sixteen functions, the k-th on
// the ranks whose bit k is set, split the ranks into 65,536 groups of one;
// then one all-reduce over every rank, held until the end.
func TestStopInFinalFlush(t *testing.T) {
	if testing.Short() {
		t.Skip("65,536 groups")
	}
	const world = 1 << 16
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"fastsim":"history","version":1,"world_size":%d,"gpus_per_host":8}`+"\n", world)
	all := fmt.Sprintf(`{"offset":0,"sizes":[%d],"strides":[1]}`, world)
	ts := int64(1000)
	line := func(ranks, msg string) {
		fmt.Fprintf(&b, `{"ts":%d,"ranks":[%s],"msg":%s}`+"\n", ts, ranks, msg)
		ts += 1000
	}
	tensor := func(id int) string {
		return fmt.Sprintf(`{"tensor":%d,"storage":%d,"nbytes":4096,"dtype":"float32","shape":[1024],"device":"cuda"}`, id, id)
	}
	line(all, `{"type":"CreateDeviceMesh","names":["dp"],"ranks":`+all+`}`)
	line(all, `{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}`)
	line(all, `{"type":"CallFunction","ident":1,"function":"torch.ops.aten.mm.default","args":[],"kwargs":{},"result":[`+tensor(1)+`],"mutates":[],"stream":{"ref":1}}`)
	for k := 0; k < 16; k++ {
		// The ranks with bit k set: blocks of 2^k, 2^(k+1) apart.
		ranks := fmt.Sprintf(`{"offset":%d,"sizes":[%d,%d],"strides":[%d,1]}`, 1<<k, world>>(k+1), 1<<k, 2<<k)
		line(ranks, fmt.Sprintf(`{"type":"CallFunction","ident":%d,"function":"torch.ops.aten.mm.default","args":[],"kwargs":{},"result":[%s],"mutates":[],"stream":{"ref":1}}`, 2+k, tensor(2+k)))
	}
	line(all, `{"type":"Reduce","result":`+tensor(100)+`,"local_tensor":{"tensor":1},"stream":{"ref":1},"dims":["dp"],"reduction":"sum","scatter":false,"inplace":false,"out":null}`)
	records := int64(strings.Count(b.String(), "\n") - 1)

	r, err := history.NewReader(bytes.NewReader(b.Bytes()), "f.hist")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s, err := New(r.Header(), "f.hist", Options{Grouped: true, Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Run(r); err != nil {
		t.Fatal(err)
	}
	// (Reading the result here would apply the held Reduce.)
	s.stop.Store(true) // a Ctrl-C, as the watcher of Options.Stop sets it
	res, err := s.End()
	if err != nil {
		t.Fatalf("stopped in the final flush: %v, want a partial result", err)
	}
	if !res.Partial || res.Records != records || res.LastLine != records+1 || res.Groups != world {
		t.Errorf("partial %v, %d records to line %d, %d groups; want partial, %d records to line %d, %d groups", res.Partial, res.Records, res.LastLine, res.Groups, records, records+1, world)
	}
}
