package sched

import (
	"fmt"

	"github.com/fastsim/fastsim/internal/jsonl"
	"github.com/fastsim/fastsim/internal/soa"
)

func (e *Engine) newStream(w int32, ref int64, name, waitFor int32) int32 {
	id := int32(len(e.streams))
	e.streams = append(e.streams, stream{
		worker:  w,
		ref:     ref,
		name:    name,
		waitFor: waitFor,
		last:    -1,
		tensors: make(map[int64]int32),
	})
	e.workers[w].streams = append(e.workers[w].streams, id)
	return id
}

// streamOf finds worker w's stream by its ref, or -1. Workers have a handful
// of streams, so a scan beats a map.
func (e *Engine) streamOf(w int32, ref int64) int32 {
	for _, s := range e.workers[w].streams {
		if e.streams[s].ref == ref {
			return s
		}
	}
	return -1
}

func (e *Engine) streamName(s int32) string { return e.names.Name(e.streams[s].name) }

// newest is the task an event on stream s records: the newest queued task,
// else the last executed one, else -1.
func (e *Engine) newest(s int32) soa.TaskID {
	st := &e.streams[s]
	if st.queue.Len() > 0 {
		return st.queue.Back()
	}
	return st.last
}

// newEvent makes an event task that waits for task recorded of stream
// recordedOn. It is queued later, on another stream, by enqueue.
func (e *Engine) newEvent(recordedOn int32, recorded soa.TaskID) soa.TaskID {
	t := e.tasks.Alloc()
	e.tasks.State[t] = statePending
	e.tasks.StartNs[t] = e.nowNs
	e.tasks.RuntimeNs[t] = e.opt.Costs.EventWaitNs
	e.tasks.Stream[t] = -1
	e.tasks.Name[t] = e.streams[recordedOn].waitFor
	e.tasks.Command[t] = e.cmdID
	e.tasks.Coll[t] = -1
	e.tasks.Wait[t] = recorded
	e.tasks.Borrow[t] = -1
	e.tasks.Flags[t] = taskEvent
	e.tasks.Holds[recorded]++
	return t
}

// enqueue puts an existing task (an event) at the back of stream s.
func (e *Engine) enqueue(s int32, t soa.TaskID) {
	st := &e.streams[s]
	e.tasks.StartNs[t] = max(st.nowNs, e.tasks.StartNs[t])
	e.tasks.Stream[t] = s
	e.tasks.Flags[t] |= taskQueued
	e.tasks.IOOff[t] = st.io.Tail()
	st.queue.Push(t)
	if st.queue.Len() == 1 {
		e.wake(s)
	}
}

// addTask queues a task on worker w's stream ref. ins and outs are distinct
// tensors; an output that is also an input is not new.
func (e *Engine) addTask(w int32, ref int64, name int32, runtimeNs int64, ins, outs []jsonl.Tensor, coll int32) (soa.TaskID, error) {
	s := e.streamOf(w, ref)
	if s < 0 {
		return -1, e.noStream(w, ref)
	}
	st := &e.streams[s]
	wk := &e.workers[w]
	off := st.io.Tail()
	// Inputs first: a CPU tensor of the worker, else a tensor of this stream.
	for i := range ins {
		row, ok := wk.cpu[ins[i].ID]
		if !ok {
			row, ok = st.tensors[ins[i].ID]
		}
		if !ok {
			return -1, fmt.Errorf("%w: input tensor %d is neither on stream %q of worker %d nor a CPU tensor of that worker", ErrMissingTensor, ins[i].ID, e.streamName(s), w)
		}
		e.tensors.Refs[row]++
		st.io.Push(row)
	}
	nOut := int32(0)
outputs:
	for i := range outs {
		for j := range ins {
			if ins[j].ID == outs[i].ID {
				continue outputs
			}
		}
		row := e.putTensor(s, &outs[i])
		if e.tensors.Refs[row] > 0 {
			return -1, fmt.Errorf("%w: output tensor %d is already on stream %q of worker %d and used by a queued task", ErrTensorInUse, outs[i].ID, e.streamName(s), w)
		}
		e.tensors.Refs[row] = 1
		st.io.Push(row)
		nOut++
	}
	t := e.tasks.Alloc()
	e.tasks.State[t] = statePending
	e.tasks.StartNs[t] = max(st.nowNs, e.nowNs)
	e.tasks.RuntimeNs[t] = runtimeNs
	e.tasks.Stream[t] = s
	e.tasks.Name[t] = name
	e.tasks.Command[t] = e.cmdID
	e.tasks.Coll[t] = coll
	e.tasks.Wait[t] = -1
	e.tasks.Borrow[t] = -1
	e.tasks.Flags[t] = taskQueued
	if name == e.viewName {
		e.tasks.Flags[t] |= taskView
	}
	e.tasks.IOOff[t] = off
	e.tasks.NIn[t] = int32(len(ins))
	e.tasks.NOut[t] = nOut
	wk.active = true
	st.queue.Push(t)
	if st.queue.Len() == 1 {
		e.wake(s)
	}
	return t, nil
}

func (e *Engine) wake(s int32) {
	if !e.streams[s].inWork {
		e.streams[s].inWork = true
		e.work = append(e.work, s)
	}
}

// run moves stream heads until nothing can move. Only streams that were
// woken are visited: a stream whose head got a new task, or whose head waits
// for a peer or an event that just changed.
func (e *Engine) run() error {
	for len(e.work) > 0 {
		s := e.work[len(e.work)-1]
		e.work = e.work[:len(e.work)-1]
		e.streams[s].inWork = false
		if err := e.advance(s); err != nil {
			e.work = e.work[:0]
			return err
		}
	}
	return nil
}

// advance moves the head of stream s as far as it can go.
func (e *Engine) advance(s int32) error {
	tk := &e.tasks
	for {
		st := &e.streams[s]
		if st.queue.Len() == 0 {
			return nil
		}
		t := st.queue.Front()
		if tk.State[t] == statePending {
			// The head's one dependency is the stream's last task, which
			// has executed: it is READY and at once EXECUTING.
			if st.last >= 0 {
				tk.StartNs[t] = max(tk.StartNs[t], tk.EndNs[st.last])
			}
			tk.State[t] = stateExecuting
			start := tk.StartNs[t]
			off := tk.IOOff[t] + int64(tk.NIn[t])
			for i := int64(0); i < int64(tk.NOut[t]); i++ {
				if err := e.firstUse(st.io.At(off+i), start, s); err != nil {
					return err
				}
			}
			if c := tk.Coll[t]; c >= 0 {
				e.colls.Pending[c]--
				e.colls.MaxStartNs[c] = max(e.colls.MaxStartNs[c], start)
				if e.colls.Pending[c] == 0 {
					for _, m := range e.colls.MembersOf(c) {
						if m != t {
							e.wake(tk.Stream[m])
						}
					}
				}
			}
		}
		if c := tk.Coll[t]; c >= 0 && e.colls.Pending[c] > 0 {
			return nil // a peer has not started yet
		}
		if w := tk.Wait[t]; w >= 0 && tk.State[w] != stateExecuted {
			return nil // woken when w executes
		}
		if err := e.finish(s, t); err != nil {
			return err
		}
	}
}

// finish executes the head task t of stream s.
func (e *Engine) finish(s int32, t soa.TaskID) error {
	tk := &e.tasks
	st := &e.streams[s]
	start, end := tk.StartNs[t], int64(0)
	c, w := tk.Coll[t], tk.Wait[t]
	if c >= 0 {
		end = e.colls.MaxStartNs[c] + tk.RuntimeNs[t]
	}
	if w >= 0 {
		end = max(end, tk.EndNs[w])
	}
	if tk.Flags[t]&taskView != 0 {
		end = start
	} else {
		end = max(end, start+tk.RuntimeNs[t])
	}
	tk.EndNs[t] = end
	tk.State[t] = stateExecuted
	st.queue.Pop(1)
	old := st.last
	st.last = t
	tk.Holds[t]++
	if old >= 0 {
		e.release(old)
	}

	n := int(tk.NIn[t] + tk.NOut[t])
	if tk.Flags[t]&taskEvent != 0 {
		if b := tk.Borrow[t]; b >= 0 {
			if err := e.returnAtEvent(s, b, end); err != nil {
				return err
			}
		}
	} else {
		off := tk.IOOff[t]
		for i := 0; i < n; i++ {
			if err := e.unref(st.io.At(off+int64(i)), end); err != nil {
				return err
			}
		}
	}
	st = &e.streams[s]
	st.io.Pop(n)
	if end > start {
		if end > e.evMaxNs {
			e.evMaxNs = end
		}
		if e.opt.KeepEvents {
			st.evStart = append(st.evStart, start)
			st.evEnd = append(st.evEnd, end)
			st.evName = append(st.evName, tk.Name[t])
			st.evCmd = append(st.evCmd, tk.Command[t])
		}
	}
	st.nowNs = end
	if c >= 0 {
		e.colls.Done(c)
		tk.Coll[t] = -1
	}
	if w >= 0 {
		tk.Wait[t] = -1
		e.release(w)
	}
	// Wake the worker's streams whose head waits for t.
	for _, o := range e.workers[st.worker].streams {
		os := &e.streams[o]
		if o != s && os.queue.Len() > 0 && tk.Wait[os.queue.Front()] == t {
			e.wake(o)
		}
	}
	return nil
}

// returnAtEvent handles a borrow's create event executing on stream s: if s
// holds the lent tensor, the borrow's reference on it goes.
func (e *Engine) returnAtEvent(s, b int32, endNs int64) error {
	br := &e.borrows[b]
	row, ok := e.streams[s].tensors[br.src]
	if !ok {
		return nil
	}
	if !br.holdsSrc || row != br.srcRow {
		return fmt.Errorf("%w: lent tensor %d returned twice", ErrBorrow, br.src)
	}
	br.holdsSrc = false
	return e.unref(row, endNs)
}

// release drops one hold on task t and recycles its row when nothing can
// reach it any more.
func (e *Engine) release(t soa.TaskID) {
	tk := &e.tasks
	tk.Holds[t]--
	if tk.Holds[t] > 0 {
		return
	}
	if tk.State[t] != stateExecuted {
		if tk.Flags[t]&taskQueued != 0 {
			return // still queued: the stream will finish it
		}
		if w := tk.Wait[t]; w >= 0 { // an event that was never queued
			tk.Wait[t] = -1
			e.release(w)
		}
	}
	tk.Free(t)
}
