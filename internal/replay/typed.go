package replay

import (
	"errors"
	"fmt"
	"time"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/jsonl"
	"github.com/fastsim/fastsim/internal/sched"
)

// Typed replays a history that a program produces as typed records, with
// no text in between: produce sends every record to the sink it is given
// (a workload's Emit, say), and each is applied to the engine as it comes.
// The records' tensors must carry their fields in every mention; the sink
// gives them, their storages, streams and borrows dense indexes with its
// own registry, as a history reader does. name labels errors, whose line
// is the record's position. Options' Stop ends the replay early (the result is
// marked Partial); TracePath and Progress are not used.
func Typed(h history.Header, name string, produce func(sink *TypedSink) error, opt Options) (*Result, error) {
	began := time.Now()
	if opt.MaxWorld > 0 && h.WorldSize > opt.MaxWorld {
		return nil, &history.Error{File: name, Line: 1, Err: fmt.Errorf("%w: world size %d is over the limit of %d", sched.ErrOptions, h.WorldSize, opt.MaxWorld)}
	}
	eng, err := sched.New(sched.Options{
		WorldSize:   h.WorldSize,
		Mode:        opt.Mode,
		Costs:       opt.Costs,
		Model:       opt.Model,
		Controller:  opt.Controller,
		GPUsPerHost: h.GPUsPerHost,
		Grouped:     opt.Grouped,
		Jobs:        opt.Jobs,
	})
	if err != nil {
		return nil, &history.Error{File: name, Line: 1, Err: err}
	}
	defer eng.Close()
	s := &TypedSink{eng: eng, name: name, strict: opt.Strict, stop: opt.Stop, res: &Result{Header: h}, line: 1, reg: jsonl.NewRegistry()}
	s.reg.DeferFree(true) // rows are released by the engine
	s.indexFn = s.index
	if err := produce(s); err != nil && !(errors.Is(err, ErrStopped) && s.res.Partial) {
		return nil, err
	}
	if s.err != nil && !s.res.Partial {
		return nil, s.err
	}
	res := s.res
	if !res.Partial {
		if err := Finish(eng, name); err != nil {
			return nil, err
		}
	}
	fillResult(eng, res)
	res.Wall = time.Since(began)
	return res, nil
}

// TypedSink applies typed records to an engine (Typed gives it to the
// producer); it has the Write method of a history.Writer.
type TypedSink struct {
	eng     *sched.Engine
	name    string
	strict  bool
	stop    <-chan struct{}
	res     *Result
	line    int64
	reg     *jsonl.Registry
	indexFn func(*jsonl.Tensor)
	err     error
}

// ErrStopped is returned by TypedSink.Write after an earlier record
// failed: the producer should stop.
var ErrStopped = errors.New("the replay stopped at an earlier record")

// Write applies one record; reg is not used (records carry their tensors).
func (s *TypedSink) Write(rec *history.Record, _ *jsonl.Registry) error {
	if s.err != nil {
		return ErrStopped
	}
	s.line++
	if rec.IsStep {
		s.res.Steps = append(s.res.Steps, s.eng.Step())
		return nil
	}
	s.res.Records++
	s.res.LastLine = s.line
	if s.stop != nil && s.res.Records&255 == 0 {
		select {
		case <-s.stop:
			s.res.Partial = true
			s.err = ErrStopped
			return s.err
		default:
		}
	}
	if s.strict && rec.Msg.Kind == gen.MsgUnknown {
		s.err = &history.Error{File: s.name, Line: s.line, Err: fmt.Errorf("%w %q (--strict)", ErrUnknownType, rec.Msg.TypeName)}
		return s.err
	}
	s.reg.ClearFresh()
	rec.Msg.EachTensor(s.indexFn)
	if s.err != nil {
		return s.err
	}
	rec.Msg.Index(s.reg)
	history.DeleteRefs(s.reg, &rec.Msg)
	if err := s.eng.Command(s.line, rec.Ts, rec.Ranks, &rec.Msg, s.reg); err != nil {
		s.err = &history.Error{File: s.name, Line: s.line, Err: err}
		return s.err
	}
	return nil
}

// index gives tensor t its dense indexes: those of its id's first mention,
// which defines it.
func (s *TypedSink) index(t *jsonl.Tensor) {
	if s.err != nil {
		return
	}
	if idx := s.reg.TensorIdx(t.ID); idx >= 0 {
		t.Idx, t.StorageIdx = idx, s.reg.StorageIdxOf(idx)
		return
	}
	d, err := s.reg.Define(t.ID, t.Storage, t.NBytes, t.Dtype, t.Shape, t.CPU)
	if err != nil {
		s.err = &history.Error{File: s.name, Line: s.line, Err: err}
		return
	}
	t.Idx, t.StorageIdx = d.Idx, d.StorageIdx
}

// fillResult fills in what a replay reports at its end.
func fillResult(eng *sched.Engine, res *Result) {
	res.Final = eng.Report()
	if res.Final.PeakDevice >= 0 {
		_, res.PeakDeviceFinalBytes = eng.DeviceBytes(res.Final.PeakDevice)
	}
	res.Commands = eng.Commands()
	res.Groups = eng.Groups()
	res.WorkerTasks = eng.WorkerTasks()
	res.Warnings, res.FirstWarning = eng.Warnings()
}
