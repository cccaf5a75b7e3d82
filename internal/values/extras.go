package values

// Extras is what a typed decode of an object drops, kept when a jsonl.Scanner has
// KeepExtra set (for lossless conversion): the fields the spec does not
// declare, as raw JSON, and the order in which keys were written. Ordinary
// decoding leaves it empty and pays nothing for it.
type Extras struct {
	// Order lists the object's keys as written (without "type"): the
	// 1-based number of a declared field, or 0 for the next extra field.
	// Empty means declared fields in spec order, then the extra fields.
	Order []uint8
	// Keys are the names of the extra fields, in order.
	Keys []string
	// Vals are their raw JSON values. They may alias the line buffer and
	// are valid until the next record.
	Vals [][]byte
}

// Reset empties e, keeping its capacity.
func (e *Extras) Reset() {
	e.Order, e.Keys, e.Vals = e.Order[:0], e.Keys[:0], e.Vals[:0]
}

// Empty reports whether e holds no extra field and no key order.
func (e *Extras) Empty() bool { return len(e.Order) == 0 && len(e.Keys) == 0 }

// Add appends the extra field key with raw JSON value val to e.
func (e *Extras) Add(key string, val []byte) {
	e.Keys = append(e.Keys, key)
	e.Vals = append(e.Vals, val)
}

// MaxFields is the most declared fields an object may have (a field number
// fits in a uint8 and a set of fields in a uint64).
const MaxFields = 64

// Seq appends to dst the normalised key order of an object whose declared
// fields present are the bits of mask (bit i: field number i+1) out of
// nfields, together with the fields e.Order lists (Given): e.Order without
// repeats, then any present field it lacks (in spec order), then any extra
// field it lacks. An empty Order gives the canonical sequence: present
// fields in spec order, then every extra field.
//
// A field in e.Order but not in mask was given with an empty value (false,
// [], 0, null) that a message does not otherwise mark as present; keeping it
// in the sequence is what makes "default":false or "mutates":[] survive a
// conversion.
func (e *Extras) Seq(dst []uint8, mask uint64, nfields int) []uint8 {
	var done uint64
	extras := 0
	for _, it := range e.Order {
		if it == 0 {
			if extras < len(e.Keys) {
				dst = append(dst, 0)
				extras++
			}
			continue
		}
		if int(it) > nfields || it > MaxFields {
			continue
		}
		bit := uint64(1) << (it - 1)
		if done&bit != 0 {
			continue
		}
		done |= bit
		dst = append(dst, it)
	}
	for i := 0; i < nfields && i < MaxFields; i++ {
		bit := uint64(1) << i
		if mask&bit != 0 && done&bit == 0 {
			dst = append(dst, uint8(i+1))
		}
	}
	for ; extras < len(e.Keys); extras++ {
		dst = append(dst, 0)
	}
	return dst
}

// Given returns the declared fields (bit i: field number i+1, out of
// nfields) that e.Order lists: the fields the input gave, empty or not.
func (e *Extras) Given(nfields int) uint64 {
	var given uint64
	for _, it := range e.Order {
		if it > 0 && int(it) <= nfields && it <= MaxFields {
			given |= 1 << (it - 1)
		}
	}
	return given
}

// Canonical reports whether seq (a result of Seq) is the canonical order:
// declared fields in increasing order, then the extra fields.
func Canonical(seq []uint8) bool {
	prev := uint8(0)
	for i, it := range seq {
		if it == 0 {
			for _, rest := range seq[i:] {
				if rest != 0 {
					return false
				}
			}
			return true
		}
		if it < prev {
			return false
		}
		prev = it
	}
	return true
}
