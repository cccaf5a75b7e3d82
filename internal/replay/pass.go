package replay

import (
	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/sched"
)

// A producer that writes the same run of records again and again with new
// ids (internal/workload's recorded layer passes) tells the Sim where each
// run begins and ends; the engine then applies a run it has seen before
// as one step, without its records, when that is exact (see
// internal/sched's pass.go for when). The Sim keeps the records' counts of
// each pass, so that what it reports does not depend on it.

// passCount is what a pass's records add to a Result.
type passCount struct {
	records int64
	kinds   [gen.MsgUnknown + 1]int64
}

// passState is the Sim's part of applying passes as steps.
type passState struct {
	counts map[sched.PassKey]*passCount
	alike  map[int32][]*passCount // by recording, the distinct counts
	cur    *passCount             // the records of the pass being fed, counted
	open   bool                   // the engine was told of the pass being fed
	key    sched.PassKey
	rec0   int64
	kinds0 [gen.MsgUnknown + 1]int64
}

// BeginPass is called by a producer before the records of pass p. It
// returns true if the pass was applied whole, as one step: its records
// must then not be fed. Otherwise the records follow, then EndPass.
func (s *Sim) BeginPass(p *sched.Pass) bool {
	s.pass.cur, s.pass.open = nil, false
	if s.err != nil || s.opt.PerCommand || s.opt.EachCommand != nil || s.treg == nil || s.interrupted() {
		return false
	}
	p.Line = s.line + 1
	if c := s.pass.counts[p.Key]; c != nil {
		if s.eng.BeginPass(p) {
			s.res.Records += c.records
			for k, n := range c.kinds {
				s.res.Kinds[k] += n
			}
			s.line += c.records
			s.res.LastLine = s.line
			return true
		}
		s.pass.open = true
		return false
	}
	s.eng.BeginPass(p)
	s.pass.open = true
	s.pass.cur = &passCount{}
	s.pass.key, s.pass.rec0, s.pass.kinds0 = p.Key, s.res.Records, s.res.Kinds
	return false
}

// EndPass follows the records of a pass BeginPass did not apply.
func (s *Sim) EndPass() {
	c, open := s.pass.cur, s.pass.open
	s.pass.cur, s.pass.open = nil, false
	if !open || s.err != nil {
		return
	}
	s.eng.EndPass()
	if c == nil {
		return
	}
	c.records = s.res.Records - s.pass.rec0
	for k := range c.kinds {
		c.kinds[k] = s.res.Kinds[k] - s.pass.kinds0[k]
	}
	if s.pass.counts == nil {
		s.pass.counts = make(map[sched.PassKey]*passCount)
		s.pass.alike = make(map[int32][]*passCount)
	}
	// A recording's passes count alike on every stage: one copy of their
	// counts serves them all and stays in the caches.
	tpl := s.pass.key.Tpl
	for _, o := range s.pass.alike[tpl] {
		if *o == *c {
			s.pass.counts[s.pass.key] = o
			return
		}
	}
	s.pass.alike[tpl] = append(s.pass.alike[tpl], c)
	s.pass.counts[s.pass.key] = c
}
