package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fastsim/fastsim/internal/trace"
)

// exitTerminated is the status after SIGTERM (128 + 15, as a shell reports
// a process the signal killed).
const exitTerminated = 143

// handleSignals makes the process stop cleanly. The first SIGINT (Ctrl-C)
// closes the returned channel: the replay stops at the next record and
// reports what it did. A second SIGINT, or a SIGTERM at any time, removes
// the temporary files of outputs being written and exits at once (130 or
// 143), so no ".NAME.fastsim-tmp-PID" file is left behind. release undoes
// the handling. A SIGINT within sameInterrupt of the first is the same
// interrupt delivered twice: GNU timeout -s INT signals the process and
// then its process group, which holds the process too.
func handleSignals() (stop <-chan struct{}, release func()) {
	stopc := make(chan struct{})
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		var first time.Time
		for {
			select {
			case s := <-sig:
				switch {
				case s == syscall.SIGTERM:
					trace.RemoveTemps()
					os.Exit(exitTerminated)
				case !first.IsZero():
					if secondInterrupt(first, time.Now()) {
						trace.RemoveTemps()
						os.Exit(exitInterrupted)
					}
				default:
					first = time.Now()
					close(stopc)
				}
			case <-done:
				return
			}
		}
	}()
	return stopc, func() {
		signal.Stop(sig)
		close(done)
	}
}

// sameInterrupt is how close two SIGINTs must come to be one: far less
// than a person takes to press Ctrl-C twice.
const sameInterrupt = 200 * time.Millisecond

// secondInterrupt reports whether a SIGINT at now, after the first at
// first, is a second Ctrl-C rather than the first delivered again.
func secondInterrupt(first, now time.Time) bool { return now.Sub(first) >= sameInterrupt }

// removeTempsOnSignal makes SIGINT and SIGTERM remove the temporary files of
// the outputs being written before the process exits (130 or 143), for the
// commands that have nothing to report when interrupted (synth, convert,
// search merge, predict, ops); it says so in one line on stderr, naming command
// cmd ("fastsim synth"). release undoes it.
func removeTempsOnSignal(cmd string, stderr io.Writer) (release func()) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sig:
			trace.RemoveTemps()
			name := "SIGINT"
			if s == syscall.SIGTERM {
				name = "SIGTERM"
			}
			fmt.Fprintf(stderr, "%s: stopped by %s; the outputs not yet complete were removed\n", cmd, name)
			if s == syscall.SIGTERM {
				os.Exit(exitTerminated)
			}
			os.Exit(exitInterrupted)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sig)
		close(done)
	}
}
