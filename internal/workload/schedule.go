package workload

// action is one unit of a stage's pipeline work: the forward or the
// backward of one microbatch through one model chunk.
type action struct {
	fwd   bool
	mb    int
	chunk int
}

// actions lists what stage s runs in one step, in the order it runs them
// (Narayanan et al., SC'21, §2.2 and Fig. 4; the interleaved order is
// Megatron-LM's: the virtual microbatch k of a stage is model chunk
// (k/p) mod v, microbatch (k/(p*v))*p + k mod p, and stage s runs
// (p-s-1)*2 + (v-1)*p warm-up forwards).
func actions(sched Schedule, p, v, m, s int) []action {
	out := make([]action, 0, 2*m*v)
	switch sched {
	case GPipe:
		for i := 0; i < m; i++ {
			out = append(out, action{fwd: true, mb: i})
		}
		for i := 0; i < m; i++ {
			out = append(out, action{mb: i})
		}
	case OneFOneB:
		warm := min(p-s-1, m)
		for i := 0; i < warm; i++ {
			out = append(out, action{fwd: true, mb: i})
		}
		for i := 0; i < m-warm; i++ {
			out = append(out, action{fwd: true, mb: warm + i}, action{mb: i})
		}
		for i := m - warm; i < m; i++ {
			out = append(out, action{mb: i})
		}
	case Interleaved:
		total := m * v
		warm := min((p-s-1)*2+(v-1)*p, total)
		vmb := func(k int, fwd bool) action {
			c := (k / p) % v
			if !fwd {
				c = v - 1 - c
			}
			return action{fwd: fwd, mb: (k/(p*v))*p + k%p, chunk: c}
		}
		for k := 0; k < warm; k++ {
			out = append(out, vmb(k, true))
		}
		for i := 0; i < total-warm; i++ {
			out = append(out, vmb(warm+i, true), vmb(i, false))
		}
		for k := total - warm; k < total; k++ {
			out = append(out, vmb(k, false))
		}
	}
	return out
}
