package jsonl

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// manyKeys builds an object of n distinct keys k0..k{n-1}, then extra.
func manyKeysObject(n int, extra string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `"k%d":%d,`, i, i)
	}
	b.WriteString(extra + "}")
	return b.String()
}

func TestDuplicateKeys(t *testing.T) {
	for _, c := range []struct {
		line string
		dup  string // the repeated key, or "" for none
	}{
		{`{"a":1,"b":2}`, ""},
		{`{"a":1,"a":2}`, "a"},
		{`{"a":1,"\u0061":2}`, "a"}, // the same key once unescaped
		{`{"a":{"a":1},"b":{"a":2}}`, ""},
		{`{"a":{"b":1,"b":2}}`, "b"},
		{`[{"a":1},{"a":2}]`, ""},
		{manyKeysObject(40, `"k39x":1`), ""},
		{manyKeysObject(40, `"k3":1`), "k3"},
		{manyKeysObject(40, `"n":`+manyKeysObject(20, `"k5":1`)), "k5"},
		{`{"o":` + manyKeysObject(20, `"z":1`) + `,"p":` + manyKeysObject(20, `"z":2`) + `}`, ""},
	} {
		var s Scanner
		if err := s.Reset([]byte(c.line)); err != nil {
			t.Fatal(err)
		}
		err := s.Skip()
		switch {
		case c.dup == "" && err != nil:
			t.Errorf("%.60s: %v, want no error", c.line, err)
		case c.dup != "" && (!errors.Is(err, ErrDuplicateKey) || !strings.Contains(err.Error(), fmt.Sprintf("key %q appears twice", c.dup))):
			t.Errorf("%.60s: %v, want key %q repeated", c.line, err, c.dup)
		}
	}
}

// A scan that reads some keys, rewinds and reads the object again (as the
// message decoder does to find "type") does not see its own keys twice.
func TestDuplicateKeysAfterRewind(t *testing.T) {
	for _, line := range []string{`{"x":1,"type":"T","y":2}`, manyKeysObject(30, `"type":"T"`)} {
		var s Scanner
		if err := s.Reset([]byte(line)); err != nil {
			t.Fatal(err)
		}
		m := s.Mark()
		if err := s.BeginObject(); err != nil {
			t.Fatal(err)
		}
		for {
			k, _, err := s.NextKey()
			if err != nil {
				t.Fatal(err)
			}
			if string(k) == "type" {
				break
			}
			if err := s.Skip(); err != nil {
				t.Fatal(err)
			}
		}
		s.Rewind(m)
		if err := s.Skip(); err != nil {
			t.Errorf("%.40s: after a rewind: %v", line, err)
		}
	}
}
