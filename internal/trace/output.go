package trace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Stdout is the destination name that means standard output.
const Stdout = "-"

// tempMarker sits between a destination's name and the writing process's
// id in a temporary file's name: ".NAME.fastsim-tmp-PID". The pid lets a
// later run tell a leftover of a dead process from a file being written.
const tempMarker = ".fastsim-tmp-"

// Output is one output file being written. For a regular file (or a name
// that does not exist yet) the bytes go to a temporary file beside it,
// renamed onto it by Commit, so the destination is whole or untouched. A
// device, a named pipe or standard output cannot be replaced by a rename,
// and must not be: they are written directly.
type Output struct {
	// W receives the content.
	W io.Writer

	path   string
	f      *os.File // the temporary file or the direct destination
	direct bool     // written in place: no rename
	done   bool
}

// temps lists the temporary files of this process not yet committed or
// aborted, so a signal handler can remove them.
var temps struct {
	sync.Mutex
	names  map[string]bool
	closed bool // RemoveTemps ran: no more temporary files
}

// CheckDest reports, before any work is done, whether path can be written:
// standard output, an existing device or pipe, or a file whose directory
// exists and is writable (and which is not itself a directory).
func CheckDest(path string) error {
	if path == Stdout {
		return nil
	}
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return fmt.Errorf("%s is a directory", path)
	case err == nil && !st.Mode().IsRegular():
		if err := syscall.Access(path, 2 /* W_OK */); err != nil {
			return fmt.Errorf("%s: not writable: %w", path, err)
		}
		return nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return err
	}
	dir := filepath.Dir(path)
	dst, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: directory %s does not exist", path, dir)
	}
	if err != nil {
		return fmt.Errorf("%s: directory %s: %w", path, dir, err)
	}
	if !dst.IsDir() {
		return fmt.Errorf("%s: %s is not a directory", path, dir)
	}
	// A file made and removed there proves what the permission bits
	// cannot: root passes access(2) on a read-only or virtual file system
	// (sysfs, procfs) whose every create fails.
	probe, err := os.CreateTemp(dir, ".fastsim-probe-*")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("%s: directory %s is not writable: %w", path, dir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

// CreateOutput starts writing path ("-" for standard output). It first
// removes temporary files that earlier runs, since dead, left for the same
// destination.
func CreateOutput(path string) (*Output, error) {
	if path == Stdout {
		return &Output{W: os.Stdout, path: path, f: os.Stdout, direct: true}, nil
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("create %s: %w", path, err)
		}
		return &Output{W: f, path: path, f: f, direct: true}, nil
	}
	// A symbolic link to a file is kept: the file it points to is replaced.
	if st, err := os.Lstat(path); err == nil && st.Mode()&os.ModeSymlink != 0 {
		if target, err := filepath.EvalSymlinks(path); err == nil {
			path = target
		}
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	RemoveStaleTemps(path)
	temps.Lock()
	defer temps.Unlock()
	if temps.closed {
		return nil, fmt.Errorf("create %s: %w", path, ErrShuttingDown)
	}
	name := filepath.Join(dir, "."+base+tempMarker+strconv.Itoa(os.Getpid()))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	for i := 2; errors.Is(err, os.ErrExist) && i < 100; i++ { // the same destination twice in one run
		name = filepath.Join(dir, "."+base+tempMarker+strconv.Itoa(os.Getpid())+"."+strconv.Itoa(i))
		f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	if temps.names == nil {
		temps.names = map[string]bool{}
	}
	temps.names[name] = true
	return &Output{W: f, path: path, f: f}, nil
}

// Commit finishes the output: a temporary file is synced, closed and
// renamed onto the destination; a direct destination is closed (standard
// output is left open). On error a temporary file is removed.
func (o *Output) Commit() error {
	if o.done {
		return ErrClosed
	}
	o.done = true
	if o.direct {
		if o.f == os.Stdout {
			return nil
		}
		if err := o.f.Close(); err != nil {
			return fmt.Errorf("write %s: %w", o.path, err)
		}
		return nil
	}
	err := o.f.Chmod(fileMode)
	if err == nil {
		err = o.f.Sync()
	}
	err = errors.Join(err, o.f.Close())
	if err == nil {
		err = os.Rename(o.f.Name(), o.path)
	}
	forget(o.f.Name())
	if err != nil {
		os.Remove(o.f.Name())
		return fmt.Errorf("write %s: %w", o.path, err)
	}
	syncDir(filepath.Dir(o.path))
	return nil
}

// Abort discards the output: a temporary file is closed and removed (the
// destination keeps what it had); a direct destination is closed. It does
// nothing after Commit or Abort.
func (o *Output) Abort() {
	if o.done {
		return
	}
	o.done = true
	if o.direct {
		if o.f != os.Stdout {
			o.f.Close()
		}
		return
	}
	o.f.Close()
	os.Remove(o.f.Name())
	forget(o.f.Name())
}

func forget(name string) {
	temps.Lock()
	delete(temps.names, name)
	temps.Unlock()
}

// RemoveTemps removes every temporary file this process has open, and
// makes later CreateOutput calls fail. A signal handler calls it before the
// process exits.
func RemoveTemps() {
	temps.Lock()
	defer temps.Unlock()
	temps.closed = true
	for name := range temps.names {
		os.Remove(name)
	}
	temps.names = nil
}

// RemoveStaleTemps removes the temporary files left beside path by
// processes that no longer exist (killed with SIGKILL, or a machine that
// went down). Files of live processes, and names it cannot parse, are kept.
func RemoveStaleTemps(path string) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	prefix := "." + base + tempMarker
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		rest, _, _ = strings.Cut(rest, ".")
		pid, err := strconv.Atoi(rest)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// WriteFileAtomic writes data to path as an Output: through a temporary
// file renamed into place for a regular file, directly to a device, a pipe
// or standard output.
func WriteFileAtomic(path string, data []byte) error {
	o, err := CreateOutput(path)
	if err != nil {
		return err
	}
	if _, err := o.W.Write(data); err != nil {
		o.Abort()
		return err // an *os.PathError: "write PATH: ..."
	}
	return o.Commit()
}
