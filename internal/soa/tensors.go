package soa

import "slices"

// Tensor flags.
const (
	TensorPending   uint8 = 1 << iota // deleted by the controller; removed once unreferenced
	TensorInStorage                   // counted among its storage's tensors (first use happened)
	TensorBorrowed                    // the result of a borrow: its storage is never counted
	TensorCPU                         // held by the worker, not by a stream

	// TensorFreed marks a recycled row (no live row has every flag).
	TensorFreed uint8 = 0xff
)

// Tensors holds one row per tensor copy alive on a worker (a tensor id on
// four workers is four rows). Refs counts the tasks and borrows that still
// use the row.
type Tensors struct {
	ID       []int64 // the controller's tensor id
	Idx      []int32 // its dense index in the history's tensor registry
	Storage  []int64 // storage id the tensor views
	NBytes   []int64 // size of that storage
	Refs     []int32 // tasks and borrows using the tensor
	Owner    []int32 // stream holding it, or the worker for CPU tensors
	Flags    []uint8
	free     []int32
	liveRows int
}

// Alloc returns a zeroed row, reusing a freed one when there is one.
func (t *Tensors) Alloc() int32 {
	t.liveRows++
	if n := len(t.free); n > 0 {
		r := t.free[n-1]
		t.free = t.free[:n-1]
		t.ID[r], t.Idx[r], t.Storage[r], t.NBytes[r], t.Refs[r], t.Owner[r], t.Flags[r] = 0, 0, 0, 0, 0, 0, 0
		return r
	}
	r := int32(len(t.ID))
	t.ID = append(t.ID, 0)
	t.Idx = append(t.Idx, 0)
	t.Storage = append(t.Storage, 0)
	t.NBytes = append(t.NBytes, 0)
	t.Refs = append(t.Refs, 0)
	t.Owner = append(t.Owner, 0)
	t.Flags = append(t.Flags, 0)
	return r
}

// Free recycles row r.
func (t *Tensors) Free(r int32) {
	t.liveRows--
	t.free = append(t.free, r)
	t.Flags[r] = TensorFreed
}

// Rows calls fn with every live row.
func (t *Tensors) Rows(fn func(r int32)) {
	for r := range t.ID {
		if t.Flags[r] != TensorFreed {
			fn(int32(r))
		}
	}
}

// Live is the number of rows in use.
func (t *Tensors) Live() int { return t.liveRows }

// Clone returns an independent copy: same rows, same ids.
func (t *Tensors) Clone() Tensors {
	return Tensors{
		ID:       slices.Clone(t.ID),
		Idx:      slices.Clone(t.Idx),
		Storage:  slices.Clone(t.Storage),
		NBytes:   slices.Clone(t.NBytes),
		Refs:     slices.Clone(t.Refs),
		Owner:    slices.Clone(t.Owner),
		Flags:    slices.Clone(t.Flags),
		free:     slices.Clone(t.free),
		liveRows: t.liveRows,
	}
}

// Storages holds one row per storage alive on a worker: how many of its
// tensors are in use and, when its allocation was counted, on which stream
// and when.
type Storages struct {
	Count       []int32 // tensors counted in the storage
	Bytes       []int64 // size charged when it was allocated
	AllocStream []int32 // stream charged with the allocation, or -1
	AllocNs     []int64 // when it was allocated
	free        []int32
}

// Alloc returns a fresh row with no allocation recorded.
func (s *Storages) Alloc() int32 {
	if n := len(s.free); n > 0 {
		r := s.free[n-1]
		s.free = s.free[:n-1]
		s.Count[r], s.Bytes[r], s.AllocStream[r], s.AllocNs[r] = 0, 0, -1, 0
		return r
	}
	r := int32(len(s.Count))
	s.Count = append(s.Count, 0)
	s.Bytes = append(s.Bytes, 0)
	s.AllocStream = append(s.AllocStream, -1)
	s.AllocNs = append(s.AllocNs, 0)
	return r
}

// Free recycles row r.
func (s *Storages) Free(r int32) { s.free = append(s.free, r) }

// Clone returns an independent copy: same rows, same ids.
func (s *Storages) Clone() Storages {
	return Storages{
		Count:       slices.Clone(s.Count),
		Bytes:       slices.Clone(s.Bytes),
		AllocStream: slices.Clone(s.AllocStream),
		AllocNs:     slices.Clone(s.AllocNs),
		free:        slices.Clone(s.free),
	}
}
