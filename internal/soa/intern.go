package soa

// Intern maps strings to dense ids of type ID and back. Ids start at 0 and
// never change, so columns can hold a name as 4 bytes instead of a string
// header.
type Intern[ID ~int32] struct {
	ids   map[string]ID
	names []string
}

// ID returns the id of s, adding it on first sight. Looking up an existing
// name does not allocate.
func (in *Intern[ID]) ID(s string) ID {
	if id, ok := in.ids[s]; ok {
		return id
	}
	if in.ids == nil {
		in.ids = make(map[string]ID)
	}
	id := ID(len(in.names))
	in.ids[s] = id
	in.names = append(in.names, s)
	return id
}

// IDBytes is ID for a name held in a byte slice; it allocates only when the
// name is new.
func (in *Intern[ID]) IDBytes(b []byte) ID {
	if id, ok := in.ids[string(b)]; ok {
		return id
	}
	return in.ID(string(b))
}

// Name returns the string of id.
func (in *Intern[ID]) Name(id ID) string { return in.names[id] }

// Len is the number of distinct names.
func (in *Intern[ID]) Len() int { return len(in.names) }
