package replay

import (
	"errors"

	"github.com/fastsim/fastsim/internal/history"
	"github.com/fastsim/fastsim/internal/sched"
)

// Typed replays a history that a program produces as typed records, with
// no text in between: produce writes every record to the Sim it is given
// (a workload's Emit, say; see Sim.Feed for what such records carry),
// and each is applied as it comes. name labels errors, whose line is the
// record's position. Options' Stop ends the replay early (the result is
// marked Partial).
func Typed(h history.Header, name string, produce func(s *Sim) error, opt Options) (*Result, error) {
	s, err := New(h, name, opt)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if err := produce(s); err != nil && !(errors.Is(err, ErrStopped) && s.res.Partial) {
		return nil, err
	}
	if s.err != nil && !s.res.Partial {
		return nil, s.err
	}
	return s.End()
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
	res.PassSteps, res.PassesRecorded = eng.PassSteps()
}
