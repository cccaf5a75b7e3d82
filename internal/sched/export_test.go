package sched

import "reflect"

// CheckPasses makes the engine apply every later run of a recorded pass
// command by command and compute its effect again; fn is told, for each,
// whether that effect is the recorded one. CheckPasses(nil) ends it.
func CheckPasses(fn func(k PassKey, same bool)) {
	if fn == nil {
		passCheck = nil
		return
	}
	passCheck = func(k PassKey, recorded, seen *passEffect) {
		fn(k, seen != nil && reflect.DeepEqual(recorded, seen))
	}
}

// SetCarry turns carrying what passes applied as steps leave behind on
// (the default) or off (carry.go).
func SetCarry(on bool) { carryOff = !on }

// SetSettle turns the settlement of memory events on (the default) or
// off: off, every event waits for the report that merges it.
func SetSettle(on bool) { settleOff = !on }

// SetBatch turns holding runs of Reduces to apply them together on (the
// default) or off.
func SetBatch(on bool) { batchOff = !on }

// SetShare turns sharing the body of alike effects recorded on
// different groups on (the default) or off (shareBody).
func SetShare(on bool) { shareOff = !on }

// EffectBodies returns how many effects the engine keeps and how many
// distinct bodies they have: every effect is given carry information of
// its own when recorded, which only sharing gives to another.
func (e *Engine) EffectBodies() (effects, bodies int) {
	seen := map[*carryInfo]bool{}
	for _, fx := range e.pass.effects {
		seen[fx.carry] = true
	}
	return len(e.pass.effects), len(seen)
}
