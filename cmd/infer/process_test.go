package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// asMainEnv, when set, makes the test binary run main() with its
// arguments instead of the tests, so a test can start the real CLI as a
// separate process (signals, exit codes, a real stdout) without a build.
const asMainEnv = "STRIDE_INFER_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// proc is the CLI running as a child process.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	mu     sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer
	done   chan struct{}
}

// startCLI starts the CLI with args in a child process whose stdout and
// stderr are collected; stdout may be replaced by setting out.
func startCLI(t *testing.T, out *os.File, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, cmd: exec.Command(os.Args[0], args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), asMainEnv+"=1")
	var wg sync.WaitGroup
	pipe := func(dst *bytes.Buffer) *os.File {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			br := bufio.NewReader(r)
			buf := make([]byte, 4096)
			for {
				n, err := br.Read(buf)
				p.mu.Lock()
				dst.Write(buf[:n])
				p.mu.Unlock()
				if err != nil {
					r.Close()
					return
				}
			}
		}()
		return w
	}
	outW := out
	if outW == nil {
		outW = pipe(&p.stdout)
	}
	errW := pipe(&p.stderr)
	p.cmd.Stdout, p.cmd.Stderr = outW, errW
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if out == nil {
		outW.Close()
	}
	errW.Close()
	go func() {
		p.cmd.Wait()
		wg.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// waitFor waits until stdout (or stderr, if inStderr) contains s, failing
// the test after limit or if the process ends first.
func (p *proc) waitFor(s string, inStderr bool, limit time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		buf := p.stdout.String()
		if inStderr {
			buf = p.stderr.String()
		}
		p.mu.Unlock()
		if strings.Contains(buf, s) {
			return
		}
		select {
		case <-p.done:
			p.t.Fatalf("the process ended before printing %q: stdout %q, stderr %q", s, p.stdout.String(), p.stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	p.t.Fatalf("no %q after %v: stdout %q, stderr %q", s, limit, p.out(), p.err())
}

func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

// wait waits for the process to exit and returns its exit code (-1 when
// a signal killed it).
func (p *proc) wait(limit time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		p.cmd.Process.Kill()
		<-p.done
		p.t.Fatalf("still running after %v; stdout %q, stderr %q", limit, p.out(), p.err())
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) out() string { p.mu.Lock(); defer p.mu.Unlock(); return p.stdout.String() }
func (p *proc) err() string { p.mu.Lock(); defer p.mu.Unlock(); return p.stderr.String() }
