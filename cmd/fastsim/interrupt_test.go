package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fastsim/fastsim/internal/synth"
)

// TestInterruptWhileWaitingForInput: Ctrl-C while the replay waits on a
// pipe that stays open and silent ends it at once with the PARTIAL report
// and exit status 130, with the pipe still open, decoding beside the
// engine or not, from a named pipe or from standard input, and while the
// header is awaited too (the interrupt was noticed only at the next
// record, so the replay kept waiting for it).
func TestInterruptWhileWaitingForInput(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	var hist bytes.Buffer
	if err := synth.WriteTrain(&hist, synth.Train{PP: 2, DP: 2, TP: 1, Layers: 8, Hidden: 64, Seq: 16, Batch: 8, Micro: 2, Steps: 4}); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(hist.String(), "\n")
	for _, c := range []struct {
		name   string
		stdin  bool // the pipe is standard input, not a named pipe
		jobs   string
		lines  int    // written before the interrupt
		stdout string // what the report says
		stderr string
	}{
		{"mid-history", false, "1", len(lines) / 2, "PARTIAL: interrupted after line", ""},
		{"mid-history-pipelined", false, "2", len(lines) / 2, "PARTIAL: interrupted after line", ""},
		{"before-header", false, "1", 0, "", "before the history's header was read"},
		{"after-header", false, "1", 1, "PARTIAL: interrupted after the header, before any command", ""},
		{"stdin-mid-history", true, "1", len(lines) / 2, "PARTIAL: interrupted after line", ""},
		{"stdin-before-header", true, "2", 0, "", "before the history's header was read"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var cmd *exec.Cmd
			var w *os.File
			fifo := ""
			if c.stdin {
				r, pw, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				cmd, w = child("replay", "--report-only", "--jobs", c.jobs, "-"), pw
				cmd.Stdin = r
				defer r.Close()
			} else {
				fifo = filepath.Join(t.TempDir(), "in.hist")
				if err := syscall.Mkfifo(fifo, 0o600); err != nil {
					t.Skip("no named pipes here:", err)
				}
				cmd = child("replay", "--report-only", "--jobs", c.jobs, fifo)
			}
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if !c.stdin {
				var err error
				if w, err = os.OpenFile(fifo, os.O_WRONLY, 0); err != nil {
					t.Fatal(err)
				}
			}
			defer w.Close() // open, and silent, until the child has exited
			// Half the history is about 220 kB, more than a pipe holds
			// (64 KiB, pipe(7)): the write returns only once the child has
			// read most of it, its header included, however loaded the
			// machine.
			w.WriteString(strings.Join(lines[:c.lines], ""))
			time.Sleep(300 * time.Millisecond) // the child reads the rest, then waits
			interruptAndWait(t, cmd, "waiting for input", &out, &errb)
			if !strings.Contains(out.String(), c.stdout) || !strings.Contains(errb.String(), c.stderr) {
				t.Errorf("stdout %q, stderr %q; want %q and %q", out.String(), errb.String(), c.stdout, c.stderr)
			}
			if c.lines > 0 && !strings.Contains(out.String(), "simulated time") {
				t.Errorf("no report: %q", out.String())
			}
		})
	}
}

// TestStopReader: what a stopReader reads is its source's bytes, whole
// and in order, whatever the caller's buffer size; once stop is closed, a
// Read waiting on a silent source returns errInterrupted.
func TestStopReader(t *testing.T) {
	src := make([]byte, 3*stopReadBytes+123)
	for i := range src {
		src[i] = byte(i * 7)
	}
	for _, size := range []int{1, 1000, stopReadBytes, 3 * stopReadBytes} {
		r := newStopReader(bytes.NewReader(src), make(chan struct{}))
		var got []byte
		p := make([]byte, size)
		for {
			n, err := r.Read(p)
			got = append(got, p[:n]...)
			if err != nil {
				if err != io.EOF {
					t.Fatalf("size %d: %v", size, err)
				}
				break
			}
		}
		if !bytes.Equal(got, src) {
			t.Errorf("size %d: read %d bytes, not the source's %d", size, len(got), len(src))
		}
	}
	pr, pw := io.Pipe() // silent until closed
	defer pw.Close()
	stop := make(chan struct{})
	r := newStopReader(pr, stop)
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 10))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	close(stop)
	select {
	case err := <-done:
		if err != errInterrupted {
			t.Errorf("after stop: %v, want errInterrupted", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read still waits 10 s after stop")
	}
}

// TestInterruptWhileOpeningFIFO: a named pipe given as HISTORY with no
// writer yet waits in open(2), which nothing cuts short; the open runs
// aside, and Ctrl-C there ends the replay at once with exit status 130
// and one line saying nothing was replayed (it was lost, and only a
// second Ctrl-C ended the process, with no message).
func TestInterruptWhileOpeningFIFO(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	fifo := filepath.Join(t.TempDir(), "in.hist")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	cmd := child("replay", "--report-only", fifo)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the child is waiting in open(2)
	interruptAndWait(t, cmd, "opening the named pipe", &out, &errb)
	if !strings.Contains(errb.String(), "before the history's header was read") || out.Len() != 0 {
		t.Errorf("stdout %q, stderr %q; want nothing and the interrupt named", out.String(), errb.String())
	}
}

// interruptAndWait sends the started child cmd SIGINT and requires it to
// exit with status 130 within 20 s (a child still doing what after that
// is killed); out and errb are its standard output and error.
func interruptAndWait(t *testing.T, cmd *exec.Cmd, what string, out, errb *bytes.Buffer) {
	t.Helper()
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("still %s 20 s after SIGINT; stdout %q", what, out.String())
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("%v, want exit %d; stdout %q, stderr %q", err, exitInterrupted, out.String(), errb.String())
	}
}
