package soa

// Intern maps strings to dense int32 ids and back. Ids start at 0 and never
// change, so columns can hold a name as 4 bytes instead of a string header.
type Intern struct {
	ids   map[string]int32
	names []string
}

// ID returns the id of s, adding it on first sight. Looking up an existing
// name does not allocate.
func (in *Intern) ID(s string) int32 {
	if id, ok := in.ids[s]; ok {
		return id
	}
	if in.ids == nil {
		in.ids = make(map[string]int32)
	}
	id := int32(len(in.names))
	in.ids[s] = id
	in.names = append(in.names, s)
	return id
}

// IDBytes is ID for a name held in a byte slice; it allocates only when the
// name is new.
func (in *Intern) IDBytes(b []byte) int32 {
	if id, ok := in.ids[string(b)]; ok {
		return id
	}
	return in.ID(string(b))
}

// Name returns the string of id.
func (in *Intern) Name(id int32) string { return in.names[id] }

// Len is the number of distinct names.
func (in *Intern) Len() int { return len(in.names) }
