package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns the master and slave ends of a new pseudo-terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// TestChatTerminal runs infer chat on a pseudo-terminal, as a user at a
// terminal would: it prompts with "> ", Ctrl-C (the terminal's SIGINT)
// stops a long reply and the session goes on to the next turn, and
// Ctrl-D at the prompt ends the session with status 0.
func TestChatTerminal(t *testing.T) {
	master, slave := openPTY(t)
	defer master.Close()
	// A model slow enough (8 layers of width 256, greedy to the end of
	// the context) that the reply is still running when Ctrl-C comes.
	cmd := exec.Command(os.Args[0], "chat", "--checkpoint", "synthetic", "--synthetic.dim", "256", "--synthetic.hidden_dim", "688",
		"--synthetic.n_layers", "8", "--synthetic.n_kv_heads", "4", "--temperature", "0", "-c", "2048", "-n", "-1")
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var mu sync.Mutex
	var buf bytes.Buffer
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			mu.Lock()
			buf.Write(b[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	waitFor := func(what string, count int) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			n := strings.Count(buf.String(), what)
			mu.Unlock()
			if n >= count {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		cmd.Process.Kill()
		t.Fatalf("no %d× %q on the terminal; it shows %q", count, what, buf.String())
	}
	waitFor("> ", 1)
	master.Write([]byte("hi\n"))
	waitFor("hi\r\n", 1) // the echo; the reply streams after it
	time.Sleep(300 * time.Millisecond)
	master.Write([]byte{0x03}) // Ctrl-C
	waitFor("interrupted]", 1)
	waitFor("> ", 2) // the session goes on
	master.Write([]byte("again\n"))
	waitFor("again\r\n", 1)
	time.Sleep(300 * time.Millisecond)
	master.Write([]byte{0x03})
	waitFor("interrupted]", 2)
	waitFor("> ", 3)
	master.Write([]byte{0x04}) // Ctrl-D
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			mu.Lock()
			t.Fatalf("chat ended with %v; terminal: %q", err, buf.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("Ctrl-D did not end the session")
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(buf.String(), "[turn 2:") || strings.Contains(buf.String(), "infer:") {
		t.Fatalf("terminal: %q", buf.String())
	}
}
