package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// TestUnknownCommandListsAll: the message for an unknown command names
// every command.
func TestUnknownCommandListsAll(t *testing.T) {
	code, _, stderr := runCLI("bogus")
	if code != exitInput {
		t.Fatalf("exit %d", code)
	}
	for _, c := range []string{"replay", "synth", "convert", "search", "ops", "hardware", "help"} {
		if !strings.Contains(stderr, "fastsim "+c) {
			t.Errorf("%q does not list %s", stderr, c)
		}
	}
}

// TestNegativeFlagsRefused: --random -5 and --top -1 are errors naming the
// flag.
func TestNegativeFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"synth", "--random", "-5", filepath.Join(dir, "x.hist")}, "--random -5"},
		{[]string{"search", "--world", "8", "--top", "-1"}, "--top -1"},
		{[]string{"search", "merge", "--top", "-1", "x.json"}, "--top -1"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != exitInput || !strings.Contains(stderr, tc.flag) {
			t.Errorf("%q: exit %d, %q", tc.args, code, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.hist")); err == nil {
		t.Error("synth --random -5 wrote a history")
	}
}

// TestSynthFormByName: synth writes the form OUT's name asks for, and each
// replays to the same report as the plain one.
func TestSynthFormByName(t *testing.T) {
	dir := t.TempDir()
	magic := map[string]string{
		"a.hist":      `{"fastsim":"history"`,
		"a.hist.zst":  "\x28\xb5\x2f\xfd",
		"a.fhist.zst": "\x28\xb5\x2f\xfd",
		"a.fhist":     "\xf5FHIST", // uncompressed
		"a.fhist.s2":  "\xff\x06\x00\x00S2sTwO",
	}
	inner := map[string]string{ // after decompression
		"a.hist.zst":  `{"fastsim":"history"`,
		"a.fhist.zst": "\xf5FHIST",
		"a.fhist.s2":  "\xf5FHIST",
	}
	var want string
	for _, name := range []string{"a.hist", "a.hist.zst", "a.fhist.zst", "a.fhist", "a.fhist.s2"} {
		path := filepath.Join(dir, name)
		if code, _, stderr := runCLI("synth", "--random", "3", "--world", "4", "--commands", "200", path); code != exitOK {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		data, _ := os.ReadFile(path)
		if !strings.HasPrefix(string(data), magic[name]) {
			t.Errorf("%s starts with %q", name, data[:min(8, len(data))])
		}
		if want, ok := inner[name]; ok {
			var plain []byte
			var err error
			if strings.HasSuffix(name, ".s2") {
				plain, err = io.ReadAll(s2.NewReader(bytes.NewReader(data)))
			} else {
				dec, _ := zstd.NewReader(nil)
				plain, err = dec.DecodeAll(data, nil)
				dec.Close()
			}
			if err != nil || !strings.HasPrefix(string(plain), want) {
				t.Errorf("%s decompressed starts with %q (%v), want %q", name, plain[:min(8, len(plain))], err, want)
			}
		}
		code, stdout, stderr := runCLI("replay", "--report-only", path)
		if code != exitOK {
			t.Fatalf("replay %s: exit %d: %s", name, code, stderr)
		}
		report := stdout[:strings.Index(stdout, "commands replayed")]
		if want == "" {
			want = report
		} else if report != want {
			t.Errorf("%s reports\n%s\nwant\n%s", name, report, want)
		}
	}
}

// TestReplayStdin: "-" replays standard input.
func TestReplayStdin(t *testing.T) {
	data, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	cmd := child("replay", "--report-only", "-")
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	_, want, _ := runCLI("replay", "--report-only", example)
	cut := func(s string) string { return s[:strings.Index(s, "wall time")] }
	if cut(string(out)) != cut(want) {
		t.Errorf("stdin replay\n%s\nwant\n%s", out, want)
	}
	// The example has 393 lines: the header and 392 records.
	cmd = child("replay", "--decode-only", "-")
	cmd.Stdin = bytes.NewReader(data)
	if out, err := cmd.Output(); err != nil || !strings.HasPrefix(string(out), "decoded 392 records") {
		t.Errorf("--decode-only -: %v, %q", err, out)
	}
	cmd = child("replay", "--report-only", "-")
	cmd.Stdin = strings.NewReader("not a history\n")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInput || !strings.HasPrefix(errb.String(), "stdin:") {
		t.Errorf("bad stdin: %v, %q", err, errb.String())
	}
}

// TestLargeWorldHint: an ungrouped replay of a world over 4,096 ranks
// suggests --group-workers; a grouped one does not.
func TestLargeWorldHint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.hist")
	hist := `{"fastsim":"history","version":1,"world_size":5000}
{"ts":1000,"ranks":[{"offset":0,"sizes":[5000],"strides":[1]}],"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}
`
	os.WriteFile(path, []byte(hist), 0o644)
	_, _, stderr := runCLI("replay", "--report-only", path)
	if !strings.Contains(stderr, "--group-workers") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("ungrouped: %q", stderr)
	}
	_, _, stderr = runCLI("replay", "--report-only", "--group-workers", path)
	if strings.Contains(stderr, "hint") {
		t.Errorf("grouped: %q", stderr)
	}
}

// TestProgressLine: 1 MiB of 4 MiB read in 10 s is 25%, and the other
// three quarters at the same rate take 30 s.
func TestProgressLine(t *testing.T) {
	got := progressLine(5000, 1<<20, 4<<20, 10*time.Second)
	if !strings.Contains(got, "5000 records") || !strings.Contains(got, "25%") || !strings.Contains(got, "30s left") {
		t.Errorf("%q", got)
	}
	if got := progressLine(7, 100, -1, time.Second); strings.Contains(got, "%") {
		t.Errorf("unknown size: %q", got)
	}
}

// TestSearchNamesCostModel: the table says which model ranked the layouts.
func TestSearchNamesCostModel(t *testing.T) {
	code, stdout, stderr := runCLI("search", "--world", "4", "--layers", "2", "--hidden", "64", "--seq", "16", "--batch", "4", "--top", "2")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "fixed runtimes") || !strings.Contains(stdout, "not a hardware model") {
		t.Errorf("%q", stdout)
	}
	code, stdout, stderr = runCLI("search", "--world", "4", "--layers", "2", "--hidden", "64", "--seq", "16", "--batch", "4", "--top", "2", "--costs", "../../examples/costs.json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "costs: ../../examples/costs.json (sha256:") {
		t.Errorf("%q", stdout)
	}
}
