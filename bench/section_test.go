package bench

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runSection runs bench/section.sh FILE NAME with body on its standard input.
func runSection(t *testing.T, file, name, body string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", "section.sh", file, name)
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestSectionRewritesOnlyItsSection rewrites each of bench/scale.sh's two
// sections and bench/engine.sh's one of a copy of bench/RESULTS.md and
// checks that every byte outside the section is what it was: the other
// scripts' sections ("Every speed row in one run", "Two cores", the engine
// section's dated subsections, ...) survive a scale.sh or engine.sh run.
func TestSectionRewritesOnlyItsSection(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	orig, err := os.ReadFile("RESULTS.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"scale-table", "scale-checks", "engine-speed"} {
		begin := "<!-- begin " + name + " -->\n"
		end := "<!-- end " + name + " -->\n"
		b := bytes.Index(orig, []byte(begin))
		e := bytes.Index(orig, []byte(end))
		if b < 0 || e < b {
			t.Fatalf("RESULTS.md has no %s section between marker lines", name)
		}
		before := orig[:b+len(begin)]
		after := orig[e:]
		file := filepath.Join(t.TempDir(), "RESULTS.md")
		if err := os.WriteFile(file, orig, 0o644); err != nil {
			t.Fatal(err)
		}
		// A body without its final newline still leaves the end marker on a
		// line of its own.
		body := "## New " + name + "\n\n| a | b |\n|---|---|\n| 1 | 2 |"
		if out, err := runSection(t, file, name, body); err != nil {
			t.Fatalf("section.sh %s: %v\n%s", name, err, out)
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		want := string(before) + body + "\n" + string(after)
		if string(got) != want {
			t.Errorf("section %s: the rewrite changed bytes outside the section (got %d bytes, want %d)", name, len(got), len(want))
		}
		if !strings.Contains(string(got), "## Two cores (bench/jobs.sh)") || !strings.Contains(string(got), "## Every speed row in one run") {
			t.Errorf("section %s: other sections lost", name)
		}
		// Rewriting again with the original body gives the original file back.
		if out, err := runSection(t, file, name, string(orig[b+len(begin):e])); err != nil {
			t.Fatalf("section.sh %s: %v\n%s", name, err, out)
		}
		if got, _ := os.ReadFile(file); !bytes.Equal(got, orig) {
			t.Errorf("section %s: rewriting the original body does not give the original file", name)
		}
	}
}

// TestSectionAppendsAndRefuses: a file without the section gets it appended
// after a blank line; a file with two begin markers is refused, unchanged.
func TestSectionAppendsAndRefuses(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "a.md")
	if err := os.WriteFile(file, []byte("# A\n\ntext"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runSection(t, file, "x", "body\n"); err != nil {
		t.Fatalf("section.sh: %v\n%s", err, out)
	}
	got, _ := os.ReadFile(file)
	if want := "# A\n\ntext\n\n<!-- begin x -->\nbody\n<!-- end x -->\n"; string(got) != want {
		t.Errorf("appended:\n%q\nwant\n%q", got, want)
	}
	twice := "<!-- begin x -->\n<!-- begin x -->\n<!-- end x -->\n"
	if err := os.WriteFile(file, []byte(twice), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runSection(t, file, "x", "body\n")
	if err == nil || !strings.Contains(out, "2 begin and 1 end markers") {
		t.Errorf("two begin markers: err %v, output %q", err, out)
	}
	if got, _ := os.ReadFile(file); string(got) != twice {
		t.Errorf("refused file changed: %q", got)
	}
}
