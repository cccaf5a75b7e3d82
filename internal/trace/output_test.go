package trace

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestOutputDevice writes to /dev/null: it must stay the device, not become
// a regular file renamed over it.
func TestOutputDevice(t *testing.T) {
	st, err := os.Stat("/dev/null")
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Skip("no /dev/null device here")
	}
	if err := WriteFileAtomic("/dev/null", []byte("x")); err != nil {
		t.Fatal(err)
	}
	f, err := Create("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	writeSample(f.W)
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	st, err = os.Stat("/dev/null")
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is no longer a character device: %v %v", st.Mode(), err)
	}
}

// TestOutputFIFO writes a trace into a named pipe: the reader gets the
// whole trace and the pipe stays a pipe, with no temporary file beside it.
func TestOutputFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	got := make(chan []byte)
	go func() {
		r, err := os.Open(fifo)
		if err != nil {
			got <- nil
			return
		}
		data, _ := io.ReadAll(r)
		r.Close()
		got <- data
	}()
	var want bytes.Buffer
	w := NewWriter(&want)
	writeSample(w)
	w.Close()
	f, err := Create(fifo)
	if err != nil {
		t.Fatal(err)
	}
	writeSample(f.W)
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if data := <-got; !bytes.Equal(data, want.Bytes()) {
		t.Errorf("the pipe's reader got %d bytes, want %d", len(data), want.Len())
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe was replaced: %v", err)
	}
	if names := dirEntries(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v", names)
	}
}

// TestTempName checks the temporary file's name while an output is open.
func TestTempName(t *testing.T) {
	dir := t.TempDir()
	o, err := CreateOutput(filepath.Join(dir, "out.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := ".out.json.fastsim-tmp-" + strconv.Itoa(os.Getpid())
	if names := dirEntries(t, dir); len(names) != 1 || names[0] != want {
		t.Errorf("directory holds %v, want [%s]", names, want)
	}
	o2, err := CreateOutput(filepath.Join(dir, "out.json")) // the same destination twice
	if err != nil {
		t.Fatal(err)
	}
	o2.Abort()
	o.Abort()
	if names := dirEntries(t, dir); len(names) != 0 {
		t.Errorf("Abort left %v", names)
	}
}

// TestRemoveStaleTemps leaves temporary files of a dead process, of a live
// one and with a name that is not ours: creating the output removes only
// the dead process's.
func TestRemoveStaleTemps(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("cannot run true:", err)
	}
	dead := ".out.json.fastsim-tmp-" + strconv.Itoa(cmd.Process.Pid)
	live := ".out.json.fastsim-tmp-" + strconv.Itoa(os.Getppid())
	other := ".out.json.fastsim-tmp-notapid"
	for _, n := range []string{dead, live, other} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteFileAtomic(filepath.Join(dir, "out.json"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, n := range dirEntries(t, dir) {
		names[n] = true
	}
	if names[dead] || !names[live] || !names[other] || !names["out.json"] || len(names) != 3 {
		t.Errorf("directory holds %v; want the dead process's temp file gone, the rest kept", names)
	}
}

// TestRemoveTemps is what the signal handler does: every open temporary
// file goes, and no output can start afterwards.
func TestRemoveTemps(t *testing.T) {
	dir := t.TempDir()
	o, err := CreateOutput(filepath.Join(dir, "a.json"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Create(filepath.Join(dir, "b.json.zst"))
	if err != nil {
		t.Fatal(err)
	}
	writeSample(f.W)
	RemoveTemps()
	defer func() {
		temps.Lock()
		temps.closed = false
		temps.Unlock()
	}()
	if names := dirEntries(t, dir); len(names) != 0 {
		t.Errorf("RemoveTemps left %v", names)
	}
	if _, err := CreateOutput(filepath.Join(dir, "c.json")); err == nil {
		t.Error("CreateOutput after RemoveTemps succeeded")
	}
	o.Abort()
	f.Abort()
}

func TestCheckDest(t *testing.T) {
	dir := t.TempDir()
	for _, ok := range []string{Stdout, "/dev/null", filepath.Join(dir, "new.json")} {
		if err := CheckDest(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	for _, bad := range []string{dir, filepath.Join(dir, "missing", "x.json"), filepath.Join(file, "x.json")} {
		if err := CheckDest(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if os.Geteuid() == 0 {
		t.Log("running as root: a read-only directory is writable, not checked")
		return
	}
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o555)
	if err := CheckDest(filepath.Join(ro, "x.json")); err == nil {
		t.Error("a file in a read-only directory accepted")
	}
}

// TestOutputSymlink: writing through a symbolic link replaces the file it
// points to and keeps the link.
func TestOutputSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.json")
	link := filepath.Join(dir, "link.json")
	os.WriteFile(target, []byte("old"), 0o644)
	if err := os.Symlink("real.json", link); err != nil {
		t.Skip("no symlinks here:", err)
	}
	if err := WriteFileAtomic(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced by a file")
	}
	if got, _ := os.ReadFile(target); string(got) != "new" {
		t.Errorf("target holds %q", got)
	}
}

// TestCheckDestMissingDirectory: a destination in a directory that does
// not exist says so plainly, naming the directory once.
func TestCheckDestMissingDirectory(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	err := CheckDest(filepath.Join(missing, "x.json"))
	if err == nil || err.Error() != filepath.Join(missing, "x.json")+": directory "+missing+" does not exist" {
		t.Errorf("got %v", err)
	}
}

// TestWriteFileAtomicFull: a device that is full fails the write, and the
// error names the path once.
func TestWriteFileAtomicFull(t *testing.T) {
	if st, err := os.Stat("/dev/full"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Skip("no /dev/full")
	}
	err := WriteFileAtomic("/dev/full", []byte("{}\n"))
	if err == nil || strings.Count(err.Error(), "/dev/full") != 1 || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("got %v", err)
	}
}

// TestCheckDestUnwritableForRoot: a directory where no file can be made
// is refused even when access(2) says yes, as it does to root on sysfs.
// The case needs such a directory; /sys is one where it is sysfs.
func TestCheckDestUnwritableForRoot(t *testing.T) {
	if f, err := os.CreateTemp("/sys", ".probe-*"); err == nil {
		f.Close()
		os.Remove(f.Name())
		t.Skip("/sys takes files here")
	} else if _, err := os.Stat("/sys"); err != nil {
		t.Skip("no /sys")
	}
	err := CheckDest("/sys/x.json")
	if err == nil || !strings.HasPrefix(err.Error(), "/sys/x.json: directory /sys is not writable: ") {
		t.Errorf("got %v", err)
	}
}
