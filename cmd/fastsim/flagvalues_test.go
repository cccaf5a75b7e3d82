package main

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestNumericFlagValues: every numeric flag of every command, given a
// value that is not a number, is refused in one line that names the flag
// as it is written and what it wants (the flag package said `invalid
// value "x" for flag -jobs: parse error`), with exit status 2; an
// integer too large for its type says the range.
func TestNumericFlagValues(t *testing.T) {
	// What each type wants, as the message says it.
	wants := map[string]string{
		"int":      "want an integer",
		"int64":    "want an integer",
		"uint":     "want an integer of 0 or more",
		"uint64":   "want an integer of 0 or more",
		"float64":  "want a number, such as 80, 0.5 or 1e9",
		"duration": "want a duration, such as 300ms, 90s or 1.5h",
	}
	found := map[string]int{}
	defer func() { parsing = nil }()
	for _, cmd := range [][]string{{"replay"}, {"synth"}, {"convert"}, {"search"}, {"search", "merge"}, {"predict"}, {"ops"}, {"hardware"}} {
		var flags []*flag.Flag
		parsing = func(fs *flag.FlagSet) { fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) }) }
		if code, _, stderr := runCLI(append(cmd, "--help")...); code != exitOK {
			t.Fatalf("%s --help: exit %d, %q", cmd, code, stderr)
		}
		parsing = nil
		name := strings.Join(cmd, " ")
		for _, f := range flags {
			g, ok := f.Value.(flag.Getter)
			if !ok {
				continue // a value of the command's own, with its own messages
			}
			typ := ""
			switch g.Get().(type) {
			case int:
				typ = "int"
			case int64:
				typ = "int64"
			case uint:
				typ = "uint"
			case uint64:
				typ = "uint64"
			case float64:
				typ = "float64"
			case time.Duration:
				typ = "duration"
			default:
				continue
			}
			found[typ]++
			for _, c := range []struct{ value, want string }{
				{"x", wants[typ]},
				{"", wants[typ]},
				{"1,5", wants[typ]},
			} {
				code, stdout, stderr := runCLI(append(append([]string(nil), cmd...), "--"+f.Name, c.value)...)
				want := fmt.Sprintf("fastsim %s: --%s %q: %s (see fastsim %s --help)\n", name, f.Name, c.value, c.want, name)
				if code != exitInput || stdout != "" || stderr != want {
					t.Errorf("%s --%s %q (%s): exit %d, stdout %q, stderr %q; want %d and %q", name, f.Name, c.value, typ, code, stdout, stderr, exitInput, want)
				}
			}
			// The flag given last, with no value.
			code, stdout, stderr := runCLI(append(append([]string(nil), cmd...), "--"+f.Name)...)
			want := fmt.Sprintf("fastsim %s: --%s needs a value: %s (see fastsim %s --help)\n", name, f.Name, wants[typ], name)
			if code != exitInput || stdout != "" || stderr != want {
				t.Errorf("%s --%s with no value (%s): exit %d, stdout %q, stderr %q; want %d and %q", name, f.Name, typ, code, stdout, stderr, exitInput, want)
			}
			if typ == "float64" || typ == "duration" {
				continue
			}
			// 2^64 fits no integer flag.
			code, _, stderr = runCLI(append(append([]string(nil), cmd...), "--"+f.Name, "18446744073709551616")...)
			if code != exitInput || !strings.Contains(stderr, fmt.Sprintf("--%s \"18446744073709551616\": want an integer from ", f.Name)) {
				t.Errorf("%s --%s 2^64 (%s): exit %d, %q; want the range said", name, f.Name, typ, code, stderr)
			}
		}
	}
	// The commands have int, int64 and float64 flags (and no unsigned or
	// duration one yet).
	for _, typ := range []string{"int", "int64", "float64"} {
		if found[typ] == 0 {
			t.Errorf("no %s flag found: %v", typ, found)
		}
	}
	t.Logf("numeric flags checked: %v", found)
}

// TestBoolFlagValue: a bool flag given a value that is not one says so.
func TestBoolFlagValue(t *testing.T) {
	code, _, stderr := runCLI("replay", "--quiet=maybe", "h.hist")
	if want := "fastsim replay: --quiet \"maybe\": want true or false (see fastsim replay --help)\n"; code != exitInput || stderr != want {
		t.Errorf("exit %d, %q; want %d, %q", code, stderr, exitInput, want)
	}
}

// TestEmptyPathFlagRefused: a flag whose value is a path or a name given
// as "" (an unset shell variable) is refused in one line naming it, as an
// empty argument is, where it would otherwise mean its default without a
// word (--trace "" wrote no trace).
func TestEmptyPathFlagRefused(t *testing.T) {
	for _, args := range [][]string{
		{"replay", "--trace", "", example},
		{"replay", "--report-only", "--summary-json", "", example},
		{"replay", "--report-only", "--hardware", "", example},
		{"ops", "--json", "", example},
		{"predict", "--model", "", "--world", "8"},
		{"search", "--world", "8", "--layers", "4", "--csv", ""},
		{"synth", "--steps", "1", "--model", "", "-"},
	} {
		code, stdout, stderr := runCLI(args...)
		flag := ""
		for i, a := range args {
			if a == "" {
				flag = args[i-1]
			}
		}
		want := fmt.Sprintf("fastsim %s: %s \"\": an empty value where a path or name goes", args[0], flag)
		if code != exitInput || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and one line starting %q", args, code, stdout, stderr, exitInput, want)
		}
	}
}
