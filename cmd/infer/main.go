package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"syscall"

	"github.com/stride-lm/stride/cmd/infer/internal/outfile"
	"github.com/stride-lm/stride/model/mapfile"
)

// Exit codes: 0 success, 1 a command failed (one line "infer: <error>"
// on stderr, including a failed write to stdout and a mapped checkpoint
// that faulted because it was truncated while in use), 2 a bug panicked (the
// panic is recovered: a user never sees a Go stack trace), 130 the run
// was interrupted by SIGINT or SIGTERM after printing what it had.
const (
	exitOK          = 0
	exitFailed      = 1
	exitBug         = 2
	exitInterrupted = 130
)

func main() {
	ctx, stop := interruptContext(func() {
		outfile.RemoveTemps()
		os.Exit(exitInterrupted)
	})
	processStdin = os.Stdin
	code := runContext(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	// The last write's error may only surface at close (NFS, some FUSE
	// file systems); a pipe or terminal reports nothing here.
	if err := os.Stdout.Close(); err != nil && code == exitOK {
		fmt.Fprintf(os.Stderr, "infer: closing standard output: %v\n", err)
		code = exitFailed
	}
	os.Exit(code)
}

// runContext executes the CLI under ctx, whose cancellation is an
// interrupt, and returns the exit code (see exitOK...). Every write to
// stdout and stderr is checked: the first failure stops further writes
// and makes the exit code 1 with one line naming it.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	out := &checkedWriter{w: stdout, name: "standard output"}
	errw := &checkedWriter{w: stderr, name: "standard error"}
	// A mapped checkpoint truncated or rewritten while in use faults on
	// its next read (SIGBUS); with SetPanicOnFault that is a panic here
	// (the kernel workers re-raise theirs in this goroutine), reported as
	// one line like any bad input instead of a crash with a stack trace.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if fe := faultOf(r); fe != nil {
				fmt.Fprintf(stderr, "infer: %v\n", fe)
				code = exitFailed
				return
			}
			fmt.Fprintf(stderr, "infer: internal error: %v\n", r)
			code = exitBug
		}
	}()
	err := ExecuteContext(ctx, args, out, errw)
	switch {
	case out.err != nil:
		fmt.Fprintf(stderr, "infer: %v\n", out.err)
		return exitFailed
	case err == nil && errw.err != nil:
		return exitFailed // nowhere left to say so
	case err == nil:
		return exitOK
	case ctx.Err() != nil:
		fmt.Fprintln(stderr, "infer: interrupted")
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "infer: %v\n", err)
	return exitFailed
}

// faultOf returns the memory fault a recovered panic value describes (a
// runtime error with a faulting address, what SetPanicOnFault raises),
// or nil for any other panic.
func faultOf(r any) *mapfile.FaultError {
	if re, ok := r.(runtime.Error); ok {
		if a, ok := re.(interface{ Addr() uintptr }); ok {
			return &mapfile.FaultError{Addr: a.Addr()}
		}
	}
	return nil
}

// checkedWriter remembers the first write error; later writes fail with
// it without writing, so output never continues after a gap.
type checkedWriter struct {
	w    io.Writer
	name string
	err  error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		c.err = fmt.Errorf("writing %s: %w", c.name, err)
	}
	return n, c.err
}

// writeErr returns the first error of a checkedWriter (nil for any other
// writer): commands that stream call it to stop early.
func writeErr(w io.Writer) error {
	if c, ok := w.(*checkedWriter); ok {
		return c.err
	}
	return nil
}

// replyInterrupt, when set, sees SIGINT before the run's context does:
// infer chat on a terminal sets it so that Ctrl-C stops the current
// reply, not the session. It returns false to let the signal interrupt
// the run as usual (no reply is being generated).
var replyInterrupt atomic.Pointer[func() bool]

// interruptContext returns a context cancelled by the first SIGINT or
// SIGTERM, so the command stops at its next step and prints what it has;
// a second signal calls exitNow. stop releases the signals.
func interruptContext(exitNow func()) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go watchSignals(ch, cancel, exitNow)
	return ctx, func() {
		signal.Stop(ch)
		close(ch)
		cancel()
	}
}

// watchSignals cancels on the first signal and calls exitNow on the
// second; it returns when ch is closed.
func watchSignals(ch <-chan os.Signal, cancel, exitNow func()) {
	for {
		sig, ok := <-ch
		if !ok {
			return
		}
		if f := replyInterrupt.Load(); f != nil && sig == os.Interrupt && (*f)() {
			continue // infer chat stopped its reply; the session goes on
		}
		break
	}
	cancel()
	if _, ok := <-ch; ok {
		exitNow()
	}
}
