package jsonl

import "github.com/fastsim/fastsim/internal/values"

// The JSON form of the value kinds of package values: each Decode* reads one
// value at the scanner and fills a value of that package, resolving tensor mentions
// against a values.Registry.

// sliceKeys are the keys of a SLICE object, for NextField.
var sliceKeys = NewFields("offset", "sizes", "strides")

// DecodeSlice decodes a SLICE object into sl, reusing its slices.
func DecodeSlice(s *Scanner, sl *values.Slice) error {
	sl.Reset()
	if decodeSliceCompact(s, sl) {
		return checkSlice(sl)
	}
	if err := s.BeginObject(); err != nil {
		return err
	}
	var seen uint8
	next := 0
	for {
		f, key, at, ok, err := s.NextField(sliceKeys, next)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		next = f + 1
		switch string(key) {
		case "offset":
			if err := claim(&seen, 1, key, at); err != nil {
				return err
			}
			if sl.Offset, err = s.Int(); err != nil {
				return values.FieldError("offset", err)
			}
		case "sizes":
			if err := claim(&seen, 2, key, at); err != nil {
				return err
			}
			if sl.Sizes, err = s.Ints(sl.Sizes); err != nil {
				return values.FieldError("sizes", err)
			}
		case "strides":
			if err := claim(&seen, 4, key, at); err != nil {
				return err
			}
			if sl.Strides, err = s.Ints(sl.Strides); err != nil {
				return values.FieldError("strides", err)
			}
		default:
			if err := s.CheckKey(key, at); err != nil {
				return err
			}
			if err := s.Skip(); err != nil {
				return err
			}
		}
	}
	switch {
	case seen&1 == 0:
		return values.MissingError("offset")
	case seen&2 == 0:
		return values.MissingError("sizes")
	case seen&4 == 0:
		return values.MissingError("strides")
	}
	return checkSlice(sl)
}

// checkSlice checks what DecodeSlice read: dimensions within the limit, as
// many strides as sizes, no negative size.
func checkSlice(sl *values.Slice) error {
	if len(sl.Sizes) > values.MaxSliceDims {
		return values.Errorf(values.ErrLimit, "%d dimensions, more than the limit of %d", len(sl.Sizes), values.MaxSliceDims)
	}
	if len(sl.Sizes) != len(sl.Strides) {
		return values.Errorf(values.ErrSlice, "%d sizes but %d strides", len(sl.Sizes), len(sl.Strides))
	}
	for k, v := range sl.Sizes {
		if v < 0 {
			return values.Errorf(values.ErrSlice, "negative size %d in dimension %d", v, k)
		}
	}
	return nil
}

// streamKeys are the keys of a STREAM object, for NextField.
var streamKeys = NewFields("ref", "name")

// DecodeStream decodes a STREAM object: "ref" (required) and "name".
func DecodeStream(s *Scanner, st *values.Stream) error {
	*st = values.Stream{}
	// {"ref":N}, as a writer puts a stream it named before: read by its
	// text. Anything else takes the general path.
	const lead = `{"ref":`
	if b, i := s.buf, s.pos; s.depth < MaxDepth && hasAt(b, i, lead) {
		if ref, j, ok := uintAt(b, i+len(lead)); ok && j < len(b) && b[j] == '}' {
			st.Ref = ref
			s.pos = j + 1
			return nil
		}
	}
	if err := s.BeginObject(); err != nil {
		return err
	}
	hasRef := false
	next := 0
	for {
		f, key, at, ok, err := s.NextField(streamKeys, next)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		next = f + 1
		switch string(key) {
		case "ref":
			if hasRef {
				return Duplicate(key, at)
			}
			hasRef = true
			if st.Ref, err = s.Int(); err != nil {
				return values.FieldError("ref", err)
			}
		case "name":
			if st.HasName {
				return Duplicate(key, at)
			}
			if st.Name, err = s.String(); err != nil {
				return values.FieldError("name", err)
			}
			st.HasName = true
		default:
			if err := s.CheckKey(key, at); err != nil {
				return err
			}
			if err := s.Skip(); err != nil {
				return err
			}
		}
	}
	if !hasRef {
		return values.MissingError("ref")
	}
	return nil
}

// tensorKeys are the keys of a TENSOR object, for NextField.
var tensorKeys = NewFields("tensor", "storage", "nbytes", "dtype", "shape", "device")

// DecodeTensor decodes a TENSOR object and resolves it against reg.
func DecodeTensor(s *Scanner, reg *values.Registry, t *values.Tensor) error {
	if done, err := decodeTensorCompact(s, reg, t); done {
		return err
	}
	m := reg.Mention()
	if err := s.BeginObject(); err != nil {
		return err
	}
	next := 0
	for {
		f, key, at, ok, err := s.NextField(tensorKeys, next)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		next = f + 1
		switch string(key) {
		case "tensor":
			if err := claim(&m.Has, values.HasTensor, key, at); err != nil {
				return err
			}
			if m.ID, err = s.Int(); err != nil {
				return values.FieldError("tensor", err)
			}
		case "storage":
			if err := claim(&m.Has, values.HasStorage, key, at); err != nil {
				return err
			}
			if m.Storage, err = s.Int(); err != nil {
				return values.FieldError("storage", err)
			}
		case "nbytes":
			if err := claim(&m.Has, values.HasNBytes, key, at); err != nil {
				return err
			}
			if m.NBytes, err = s.Int(); err != nil {
				return values.FieldError("nbytes", err)
			}
			if m.NBytes < 0 {
				return values.FieldError("nbytes", values.Errorf(values.ErrRange, "negative size %d", m.NBytes))
			}
		case "dtype":
			if err := claim(&m.Has, values.HasDtype, key, at); err != nil {
				return err
			}
			d, err := s.Str()
			if err != nil {
				return values.FieldError("dtype", err)
			}
			m.Dtype = append(m.Dtype[:0], d...)
		case "shape":
			if err := claim(&m.Has, values.HasShape, key, at); err != nil {
				return err
			}
			if m.Shape, err = s.Ints(m.Shape); err != nil {
				return values.FieldError("shape", err)
			}
			if len(m.Shape) > values.MaxShapeDims {
				return values.FieldError("shape", values.Errorf(values.ErrLimit, "%d dimensions, more than the limit of %d", len(m.Shape), values.MaxShapeDims))
			}
		case "device":
			if err := claim(&m.Has, values.HasDevice, key, at); err != nil {
				return err
			}
			d, err := s.Str()
			if err != nil {
				return values.FieldError("device", err)
			}
			switch {
			case string(d) == "cpu":
				m.CPU = true
			case string(d) == "cuda" || (len(d) > 5 && string(d[:5]) == "cuda:"):
			default:
				return values.FieldError("device", values.Errorf(values.ErrRange, `want "cuda" or "cpu", got %q`, d))
			}
		default:
			if err := s.CheckKey(key, at); err != nil {
				return err
			}
			if err := s.Skip(); err != nil {
				return err
			}
		}
	}
	if m.Has&values.HasTensor == 0 {
		return values.MissingError("tensor")
	}
	return reg.Resolve(m, s, t)
}

// DecodeTensors decodes a list of TENSOR objects, appending them to dst[:0].
func DecodeTensors(s *Scanner, reg *values.Registry, dst []values.Tensor) ([]values.Tensor, error) {
	dst = dst[:0]
	if err := s.BeginArray(); err != nil {
		return dst, err
	}
	for {
		ok, err := s.NextElem()
		if err != nil || !ok {
			return dst, err
		}
		dst = append(dst, values.Tensor{})
		if err := DecodeTensor(s, reg, &dst[len(dst)-1]); err != nil {
			return dst, err
		}
	}
}

// DecodeTree decodes any JSON value into t, collecting its tensor leaves.
func DecodeTree(s *Scanner, reg *values.Registry, t *values.Tree) error {
	t.Reset()
	s.ws()
	start := s.pos
	if err := walkTree(s, reg, t); err != nil {
		return err
	}
	t.Raw = s.buf[start:s.pos:s.pos]
	return nil
}

// walkList walks the list at the scanner (its '['). Its elements are read
// as compact tensors while they are ({"tensor":...} as DecodeTensor's fast
// path takes them); from the first that is not, the general walk goes on
// with the scanner in the state NextElem expects.
func walkList(s *Scanner, reg *values.Registry, t *values.Tree) error {
	if err := s.push(); err != nil {
		return err
	}
	bit := uint64(1) << uint(s.depth-1)
	b := s.buf
	for {
		i := s.pos
		if s.more&bit != 0 {
			if i >= len(b) || b[i] != ',' {
				break
			}
			s.pos = i + 1
		}
		t.Leaves = append(t.Leaves, values.Tensor{})
		done, err := decodeTensorCompact(s, reg, &t.Leaves[len(t.Leaves)-1])
		if !done {
			t.Leaves = t.Leaves[:len(t.Leaves)-1]
			s.pos = i
			break
		}
		if err != nil {
			return err
		}
		s.more |= bit
	}
	for {
		ok, err := s.NextElem()
		if err != nil || !ok {
			return err
		}
		if err := walkTree(s, reg, t); err != nil {
			return err
		}
	}
}

func walkTree(s *Scanner, reg *values.Registry, t *values.Tree) error {
	if s.depth < MaxDepth && (s.startsWith("[]") || s.startsWith("{}")) {
		s.pos += 2 // empty: nothing to walk
		return nil
	}
	switch s.Kind() {
	case KindObject:
		// Leaves write "tensor" first; other objects are searched.
		tensor := s.startsWith(`{"tensor":`)
		if !tensor {
			var err error
			if tensor, err = s.objectHasKey("tensor"); err != nil {
				return err
			}
		}
		if tensor {
			t.Leaves = append(t.Leaves, values.Tensor{})
			return DecodeTensor(s, reg, &t.Leaves[len(t.Leaves)-1])
		}
		if err := s.BeginObject(); err != nil {
			return err
		}
		for {
			_, ok, err := s.NextKey()
			if err != nil || !ok {
				return err
			}
			if err := walkTree(s, reg, t); err != nil {
				return err
			}
		}
	case KindArray:
		return walkList(s, reg, t)
	default:
		return s.Skip()
	}
}

// objectHasKey reports whether the object at the scanner has the top-level
// key name, without consuming it.
func (s *Scanner) objectHasKey(name string) (bool, error) {
	m := s.Mark()
	defer s.Rewind(m)
	if err := s.BeginObject(); err != nil {
		return false, err
	}
	for {
		key, ok, err := s.NextKey()
		if err != nil || !ok {
			return false, err
		}
		if string(key) == name {
			return true, nil
		}
		if err := s.Skip(); err != nil {
			return false, err
		}
	}
}

// CaptureExtras rescans the object that starts at mark (its '{') and
// records in ex the order of its keys and its fields not among names (the
// declared fields, field number i+1 for names[i]); the key "type" is
// neither. The scanner ends after the object, where decoding it left it.
func (s *Scanner) CaptureExtras(mark Mark, names []string, ex *values.Extras) error {
	s.Rewind(mark)
	if err := s.BeginObject(); err != nil {
		return err
	}
	for {
		key, ok, err := s.NextKey()
		if err != nil || !ok {
			return err
		}
		if string(key) == "type" {
			if err := s.Skip(); err != nil {
				return err
			}
			continue
		}
		field := -1
		for i, n := range names {
			if n == string(key) {
				field = i
				break
			}
		}
		if field >= 0 && field < values.MaxFields {
			ex.Order = append(ex.Order, uint8(field+1))
			if err := s.Skip(); err != nil {
				return err
			}
			continue
		}
		k := s.Intern(key)
		s.ws()
		start := s.pos
		if err := s.Skip(); err != nil {
			return err
		}
		ex.Order = append(ex.Order, 0)
		ex.Add(k, s.buf[start:s.pos:s.pos])
	}
}

// claim records in *has that an object gave the field of bit, or reports
// the key at at as given twice.
func claim(has *uint8, bit uint8, key []byte, at int) error {
	if *has&bit != 0 {
		return Duplicate(key, at)
	}
	*has |= bit
	return nil
}

// The keys of a TENSOR object as a compact writer puts them, in order,
// as words to compare (fieldLit.match).
var (
	tensorLead    = newLit(`{"tensor":`)
	tensorStorage = newLit(`,"storage":`)
	tensorNBytes  = newLit(`,"nbytes":`)
	tensorDtype   = newLit(`,"dtype":"`)
	tensorShape   = newLit(`,"shape":`)
	tensorCUDA    = newLit(`,"device":"cuda"}`)
	tensorCPU     = newLit(`,"device":"cpu"}`)
)

// decodeTensorCompact decodes the two forms a writer gives a TENSOR object,
// the bare reference {"tensor":N} of a known tensor and the full first
// mention with its fields in order, without whitespace, by matching their
// text: no key is read or compared. Anything else (another order,
// whitespace, an unknown id, escapes, large numbers, errors) returns false
// with the scanner where it was, for DecodeTensor's general path, which
// accepts or rejects it exactly as before. What it does decode goes
// through the registry as the general path's would.
func decodeTensorCompact(s *Scanner, reg *values.Registry, t *values.Tensor) (bool, error) {
	b := s.buf
	start := s.pos
	// The general path nests one level for the object: the same limit.
	if s.depth >= MaxDepth-1 || !tensorLead.match(b, start, 0) {
		return false, nil
	}
	id, i, ok := uintAt(b, start+len(tensorLead.text))
	if !ok || i >= len(b) {
		return false, nil
	}
	if b[i] == '}' {
		tt, found := reg.Lookup(id)
		if !found {
			return false, nil // the general path reports what is missing
		}
		*t = tt
		s.pos = i + 1
		return true, nil
	}
	if !tensorStorage.match(b, i, 0) {
		return false, nil
	}
	storage, i, ok := uintAt(b, i+len(tensorStorage.text))
	if !ok || !tensorNBytes.match(b, i, 0) {
		return false, nil
	}
	nbytes, i, ok := uintAt(b, i+len(tensorNBytes.text))
	if !ok || !tensorDtype.match(b, i, 0) {
		return false, nil
	}
	i += len(tensorDtype.text)
	j := plainRun(b, i)
	if j >= len(b) || b[j] != '"' || !tensorShape.match(b, j+1, 0) {
		return false, nil
	}
	dtype := b[i:j]
	s.pos = j + 1 + len(tensorShape.text)
	s.depth++ // where the general path reads the shape
	m := reg.Mention()
	shape, ok := s.intsFast(m.Shape)
	s.depth--
	m.Shape = shape
	i = s.pos
	if !ok || len(shape) > values.MaxShapeDims {
		s.pos = start
		return false, nil
	}
	switch {
	case tensorCUDA.match(b, i, 0):
		i += len(tensorCUDA.text)
	case tensorCPU.match(b, i, 0):
		i += len(tensorCPU.text)
		m.CPU = true
	default:
		s.pos = start
		return false, nil
	}
	m.Has = values.HasTensor | values.HasStorage | values.HasNBytes | values.HasDtype | values.HasShape | values.HasDevice
	m.ID, m.Storage, m.NBytes = id, storage, nbytes
	m.Dtype = append(m.Dtype[:0], dtype...)
	s.pos = i
	return true, reg.Resolve(m, s, t)
}

// decodeSliceCompact reads a SLICE object written compactly with its keys
// in order, {"offset":N,"sizes":[...],"strides":[...]}, by its text, and
// reports whether it did; otherwise the scanner is where it was (sl may
// hold partial values: the general path resets them).
func decodeSliceCompact(s *Scanner, sl *values.Slice) bool {
	const (
		lead    = `{"offset":`
		sizes   = `,"sizes":`
		strides = `,"strides":`
	)
	b := s.buf
	start := s.pos
	// The lists are read one level down, as the general path reads them.
	if s.depth >= MaxDepth-1 || !hasAt(b, start, lead) {
		return false
	}
	off, i, ok := uintAt(b, start+len(lead))
	if !ok || !hasAt(b, i, sizes) {
		return false
	}
	s.depth++
	defer func() { s.depth-- }()
	s.pos = i + len(sizes)
	if sl.Sizes, ok = s.intsFast(sl.Sizes); !ok || !hasAt(b, s.pos, strides) {
		s.pos = start
		return false
	}
	s.pos += len(strides)
	if sl.Strides, ok = s.intsFast(sl.Strides); !ok || s.pos >= len(b) || b[s.pos] != '}' {
		s.pos = start
		return false
	}
	s.pos++
	sl.Offset = off
	return true
}
