package replay

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fastsim/fastsim/internal/sched"
	"github.com/fastsim/fastsim/internal/values"
)

// passTpl is a random pass: given len(ins) tensors of those sizes, op i
// makes tensor base+i from the tensors src[i] (codes: < 0 the input
// -1-code, else a tensor made earlier), on its own storage or, when
// view[i], on its first source's; at the end it deletes the made tensors
// listed in drop and the inputs listed in consume.
type passTpl struct {
	key     sched.PassKey
	ins     []int // input sizes
	src     [][]int
	view    []bool
	size    []int
	drop    []int
	consume []int
}

func randomTpl(r *rand.Rand, key sched.PassKey) *passTpl {
	p := &passTpl{key: key}
	for range 1 + r.IntN(2) {
		p.ins = append(p.ins, 400*(1+r.IntN(3)))
	}
	n := 1 + r.IntN(5)
	for i := range n {
		var src []int
		for range 1 + r.IntN(2) {
			if k := r.IntN(len(p.ins) + i); k < len(p.ins) {
				src = append(src, -1-k)
			} else {
				src = append(src, k-len(p.ins))
			}
		}
		src = slices.Compact(src)
		p.src = append(p.src, src)
		v := r.IntN(4) == 0
		p.view = append(p.view, v)
		p.size = append(p.size, 400*(1+r.IntN(4)))
		if v {
			if c := src[0]; c < 0 {
				p.size[i] = p.ins[-1-c]
			} else {
				p.size[i] = p.size[c]
			}
		}
	}
	for i := range n {
		if r.IntN(2) == 0 {
			p.drop = append(p.drop, i)
		}
	}
	for k := range p.ins {
		if r.IntN(3) == 0 {
			p.consume = append(p.consume, k)
		}
	}
	return p
}

// ptensor is a tensor the random history holds: id, storage, size, and
// the ranks' mask it lives on.
type ptensor struct{ id, storage, nbytes, mask int }

// passHistory builds segments: passes of a few templates on the whole
// world of two ranks or on rank 0, given tensors the history made,
// between them commands that make, view, use and delete tensors, on
// both ranks or one (which splits the group), and steps.
func passHistory(seed uint64) []passSegment {
	r := rand.New(rand.NewPCG(seed, 11))
	ranks := func(mask int) string {
		switch mask {
		case 1:
			return `[{"offset":0,"sizes":[1],"strides":[1]}]`
		case 2:
			return `[{"offset":1,"sizes":[1],"strides":[1]}]`
		}
		return `[{"offset":0,"sizes":[2],"strides":[1]}]`
	}
	ts, next := 1, 100
	line := func(mask int, msg string) string {
		ts++
		return fmt.Sprintf(`{"ts":%d,"ranks":%s,"msg":%s}`, ts, ranks(mask), msg)
	}
	full := func(t ptensor) string { return jsonTensor(t.id, t.storage, t.nbytes) }
	call := func(mask int, fn string, args []ptensor, out ptensor) string {
		var as []string
		for _, a := range args {
			as = append(as, full(a))
		}
		return line(mask, fmt.Sprintf(`{"type":"CallFunction","ident":0,"function":%q,"args":[%s],"kwargs":{},"result":[%s],"mutates":[],"stream":{"ref":1}}`, fn, strings.Join(as, ","), full(out)))
	}
	del := func(mask int, ts []ptensor) string {
		var ids []string
		for _, t := range ts {
			ids = append(ids, fmt.Sprint(t.id))
		}
		return line(mask, fmt.Sprintf(`{"type":"DeleteRefs","refs":[%s]}`, strings.Join(ids, ",")))
	}
	var tpls []*passTpl
	for i := range 3 {
		tpls = append(tpls, randomTpl(r, sched.PassKey{Tpl: int32(i)}))
	}
	var live []ptensor
	segs := []passSegment{{lines: []string{line(3, `{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}`)}}}
	// A loan from the main stream to a second one runs a command at a
	// time, with passes in between: the pass may be given the lent
	// tensor, or find its stream waiting for the loan's last use.
	var loan []string
	borrow, side := 0, 0 // side: the ranks that have the second stream
	free := func(ts []ptensor) {
		live = slices.DeleteFunc(live, func(u ptensor) bool {
			return slices.ContainsFunc(ts, func(t ptensor) bool { return t.id == u.id })
		})
	}
	for range 60 + r.IntN(60) {
		switch k := r.IntN(10); {
		case k < 2: // a new tensor
			mask := []int{3, 3, 1}[r.IntN(3)]
			t := ptensor{next, next, 400 * (1 + r.IntN(3)), mask}
			next++
			segs = append(segs, passSegment{lines: []string{call(mask, "torch.ops.aten.ones.default", nil, t)}})
			live = append(live, t)
		case k < 3 && len(live) > 0: // a view of one, or a use of one
			s := live[r.IntN(len(live))]
			t := ptensor{next, next, 400, s.mask}
			next++
			fn := "torch.ops.aten.relu.default"
			if r.IntN(2) == 0 {
				t.storage, t.nbytes, fn = s.storage, s.nbytes, "torch.ops.aten.view.default"
			}
			segs = append(segs, passSegment{lines: []string{call(s.mask, fn, []ptensor{s}, t)}})
			live = append(live, t)
		case k < 4 && len(live) > 0: // a delete
			t := live[r.IntN(len(live))]
			segs = append(segs, passSegment{lines: []string{del(t.mask, []ptensor{t})}})
			free([]ptensor{t})
		case k < 5:
			segs = append(segs, passSegment{lines: []string{`{"step":0}`}})
		case k < 6 && len(loan) > 0:
			segs = append(segs, passSegment{lines: loan[:1]})
			loan = loan[1:]
		case k < 6 && len(live) > 0:
			// The loan's later commands are written now (their ts
			// are set again at the end).
			s := live[r.IntN(len(live))]
			borrow++
			res := ptensor{next, next, s.nbytes, s.mask}
			out := ptensor{next + 1, next + 1, 400, s.mask}
			next += 2
			if m := s.mask &^ side; m != 0 {
				segs = append(segs, passSegment{lines: []string{line(m, `{"type":"CreateStream","result":{"ref":2,"name":"side"},"default":false}`)}})
				side |= m
			}
			loan = []string{
				fmt.Sprintf(`{"type":"BorrowCreate","result":%s,"borrow":%d,"tensor":%s,"from_stream":{"ref":1},"to_stream":{"ref":2}}`, full(res), borrow, full(s)),
				fmt.Sprintf(`{"type":"BorrowFirstUse","borrow":%d}`, borrow),
				fmt.Sprintf(`{"type":"CallFunction","ident":0,"function":"torch.ops.aten.neg.default","args":[%s],"kwargs":{},"result":[%s],"mutates":[],"stream":{"ref":2}}`, jsonRef(res.id), full(out)),
				fmt.Sprintf(`{"type":"BorrowLastUse","borrow":%d}`, borrow),
				fmt.Sprintf(`{"type":"DeleteRefs","refs":[%d,%d]}`, res.id, out.id),
				fmt.Sprintf(`{"type":"BorrowDrop","borrow":%d}`, borrow),
			}
			for i := range loan {
				loan[i] = line(s.mask, loan[i])
			}
			segs = append(segs, passSegment{lines: loan[:1]})
			loan = loan[1:]
		default: // a pass, given live tensors of the sizes it takes
			p := tpls[r.IntN(len(tpls))]
			mask := []int{3, 3, 1}[r.IntN(3)]
			var ins []ptensor
			for _, n := range p.ins {
				i := slices.IndexFunc(live, func(t ptensor) bool {
					// Inputs on storages of their own, as the recording's
					// may not be: the engine checks that, not the producer.
					return t.nbytes == n && t.mask == mask && !slices.ContainsFunc(ins, func(u ptensor) bool { return u.storage == t.storage })
				})
				if i < 0 {
					break
				}
				ins = append(ins, live[i])
			}
			if len(ins) < len(p.ins) {
				continue
			}
			segs = append(segs, p.run(line, call, del, mask, ins, next))
			made := make([]ptensor, len(p.src))
			for i := range made {
				made[i] = ptensor{next + i, next + i, p.size[i], mask}
				if p.view[i] {
					if c := p.src[i][0]; c < 0 {
						made[i].storage = ins[-1-c].storage
					} else {
						made[i].storage = made[c].storage
					}
				}
			}
			next += len(p.src)
			var gone []ptensor
			for _, i := range p.drop {
				gone = append(gone, made[i])
			}
			for _, k := range p.consume {
				gone = append(gone, ins[k])
			}
			for _, m := range made {
				if !slices.ContainsFunc(gone, func(t ptensor) bool { return t.id == m.id }) {
					live = append(live, m)
				}
			}
			free(gone)
		}
	}
	for _, l := range loan {
		segs = append(segs, passSegment{lines: []string{l}})
	}
	// ts never decreases: the loan's commands were written early.
	t := 0
	for _, s := range segs {
		for i, l := range s.lines {
			if strings.HasPrefix(l, `{"ts":`) {
				t++
				s.lines[i] = fmt.Sprintf(`{"ts":%d,`, t) + l[strings.Index(l, `"ranks"`):]
			}
		}
	}
	return segs
}

// run writes the pass given ins on the ranks of mask, its ids from base.
func (p *passTpl) run(line func(int, string) string, call func(int, string, []ptensor, ptensor) string, del func(int, []ptensor) string, mask int, ins []ptensor, base int) passSegment {
	pass := &sched.Pass{Key: p.key, Rank: 0, Base: int64(base), Made: int64(len(p.src))}
	pass.Key.Stage = int32(mask)
	for _, t := range ins {
		pass.Ins = append(pass.Ins, values.Tensor{ID: int64(t.id), Storage: int64(t.storage), NBytes: int64(t.nbytes)})
	}
	made := make([]ptensor, len(p.src))
	var lines []string
	for i, src := range p.src {
		var args []ptensor
		for _, c := range src {
			if c < 0 {
				args = append(args, ins[-1-c])
			} else {
				args = append(args, made[c])
			}
		}
		made[i] = ptensor{base + i, base + i, p.size[i], mask}
		fn := "torch.ops.aten.mul.Tensor"
		if p.view[i] {
			made[i].storage, fn = args[0].storage, "torch.ops.aten.view.default"
		}
		lines = append(lines, call(mask, fn, args, made[i]))
	}
	var gone []ptensor
	for _, i := range p.drop {
		gone = append(gone, made[i])
	}
	for _, k := range p.consume {
		gone = append(gone, ins[k])
	}
	if len(gone) > 0 {
		lines = append(lines, del(mask, gone))
	}
	return passSegment{pass: pass, lines: lines}
}

// TestRandomPassesAsCommands replays random histories of passes, each
// applied as one step where the engine finds that exact, and command by
// command: the results must be the same.
func TestRandomPassesAsCommands(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 15
	}
	steps := int64(0)
	for seed := range seeds {
		segs := passHistory(uint64(seed))
		one, oneDev := feedSegments(t, 2, segs, true)
		fast, fastDev := feedSegments(t, 2, segs, false)
		steps += fast.PassSteps
		t.Run(fmt.Sprint(seed), func(t *testing.T) { sameResults(t, one, oneDev, fast, fastDev) })
	}
	if steps == 0 {
		t.Errorf("no pass was applied as a step: the histories test nothing")
	}
	t.Logf("passes applied as steps: %d", steps)
}
