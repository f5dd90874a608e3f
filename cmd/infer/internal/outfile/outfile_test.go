package outfile

import (
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stride-lm/stride/cmd/infer/internal/outfile/outfiletest"
)

// write creates path, writes data and commits, returning the first error.
func write(ctx context.Context, path, data string) error {
	f, err := Create(ctx, path)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write([]byte(data)); err != nil {
		return err
	}
	return f.Commit()
}

// TestModes: a new file gets 0666 minus the umask (os.CreateTemp would
// give 0600); a replaced file keeps its mode whatever the umask.
func TestModes(t *testing.T) {
	dir := t.TempDir()
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	p := filepath.Join(dir, "new.bin")
	if err := write(context.Background(), p, "a"); err != nil {
		t.Fatal(err)
	}
	if m := outfiletest.Mode(t, p); m != 0o644 {
		t.Fatalf("new file under umask 022: mode %v, want 0644", m)
	}
	syscall.Umask(0o002)
	q := filepath.Join(dir, "new2.bin")
	if err := write(context.Background(), q, "a"); err != nil {
		t.Fatal(err)
	}
	if m := outfiletest.Mode(t, q); m != 0o664 {
		t.Fatalf("new file under umask 002: mode %v, want 0664", m)
	}
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	syscall.Umask(0o077)
	if err := write(context.Background(), p, "bb"); err != nil {
		t.Fatal(err)
	}
	if m := outfiletest.Mode(t, p); m != 0o640 {
		t.Fatalf("replaced file: mode %v, want its old 0640", m)
	}
	if b, _ := os.ReadFile(p); string(b) != "bb" {
		t.Fatalf("replaced file holds %q", b)
	}
	if got := outfiletest.Entries(t, dir); strings.Join(got, ",") != "new.bin,new2.bin" {
		t.Fatalf("directory holds %v", got)
	}
}

// TestSymlinkIsFollowed: the link stays a link and the file it names is
// replaced; a dangling link creates its target.
func TestSymlinkIsFollowed(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "real")
	os.Mkdir(sub, 0o755)
	target := filepath.Join(sub, "model.bin")
	os.WriteFile(target, []byte("old"), 0o600)
	link := filepath.Join(dir, "link.bin")
	if err := os.Symlink("real/model.bin", link); err != nil {
		t.Fatal(err)
	}
	if err := write(context.Background(), link, "new"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the symlink was replaced: %v %v", st.Mode(), err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Fatalf("target holds %q", b)
	}
	if m := outfiletest.Mode(t, target); m != 0o600 {
		t.Fatalf("target mode %v, want 0600 kept", m)
	}
	if got := outfiletest.Entries(t, sub); len(got) != 1 {
		t.Fatalf("%s holds %v", sub, got)
	}
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(sub, "made.bin"), dangling)
	if err := write(context.Background(), dangling, "x"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(sub, "made.bin")); string(b) != "x" {
		t.Fatalf("dangling link's target holds %q", b)
	}
	loop := filepath.Join(dir, "loop")
	os.Symlink("loop", loop)
	if err := write(context.Background(), loop, "x"); err == nil || !strings.Contains(err.Error(), "symbolic links") {
		t.Fatalf("symlink loop: %v", err)
	}
}

// TestFIFOIsWrittenThrough: a FIFO is written to, and stays a FIFO.
func TestFIFOIsWrittenThrough(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan string)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- string(b)
	}()
	if err := write(context.Background(), fifo, "through the pipe"); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through the pipe" {
		t.Fatalf("reader got %q", s)
	}
	if m := outfiletest.Mode(t, fifo); m&fs.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO became %v", m)
	}
}

// TestRefused: a directory and a socket are refused, naming what they
// are, and nothing is created.
func TestRefused(t *testing.T) {
	dir := t.TempDir()
	if err := write(context.Background(), dir, "x"); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("directory: %v", err)
	}
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Skipf("unix socket: %v", err)
	}
	defer l.Close()
	if err := write(context.Background(), sock, "x"); err == nil || !strings.Contains(err.Error(), "socket") {
		t.Fatalf("socket: %v", err)
	}
	if err := write(context.Background(), filepath.Join(dir, "none", "x.bin"), "x"); err == nil ||
		!strings.Contains(err.Error(), "x.bin") || strings.Contains(err.Error(), ".tmp") {
		t.Fatalf("missing directory: %v", err)
	}
	if got := outfiletest.Entries(t, dir); len(got) != 1 {
		t.Fatalf("directory holds %v", got)
	}
}

// TestCancelAndAbortLeaveNothing: once the context is done writes fail,
// and Abort (or RemoveTemps, for a signal handler) removes the
// temporary file; the old target is untouched.
func TestCancelAndAbortLeaveNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.bin")
	os.WriteFile(p, []byte("old"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	f, err := Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("part")); err != nil {
		t.Fatal(err)
	}
	if len(outfiletest.Entries(t, dir)) != 2 {
		t.Fatalf("no temporary file beside the target: %v", outfiletest.Entries(t, dir))
	}
	cancel()
	if _, err := f.Write([]byte("more")); err != context.Canceled {
		t.Fatalf("write after cancel: %v", err)
	}
	if err := f.Commit(); err == nil {
		t.Fatal("Commit after cancel succeeded")
	}
	f.Abort()
	if got := outfiletest.Entries(t, dir); len(got) != 1 {
		t.Fatalf("left behind: %v", got)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("target holds %q", b)
	}

	g, err := Create(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	RemoveTemps()
	if got := outfiletest.Entries(t, dir); len(got) != 1 {
		t.Fatalf("RemoveTemps left %v", got)
	}
	g.Abort()
}

// TestThroughDevIsDirect: a path under /dev is written through even
// when it leads to a regular file (/dev/stdout redirected to a file).
func TestThroughDevIsDirect(t *testing.T) {
	if !throughDev("/dev/stdout") || !throughDev("/proc/self/fd/1") || throughDev(t.TempDir()) {
		t.Fatal("throughDev")
	}
	p := filepath.Join(t.TempDir(), "redirected")
	r, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fd := filepath.Join("/proc/self/fd", strconv.Itoa(int(r.Fd())))
	if _, err := os.Stat(fd); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	f, err := Create(context.Background(), fd)
	if err != nil {
		t.Fatal(err)
	}
	if !f.direct {
		t.Fatal("a regular file reached through /proc/self/fd was not written through")
	}
	f.Write([]byte("x"))
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "x" {
		t.Fatalf("file holds %q", b)
	}
}

// TestReadOnlyTargetRefused: a file the caller may not write is not
// replaced by renaming over it (root may write anything, so the check is
// skipped there), and a path ending in / is refused.
func TestReadOnlyTargetRefused(t *testing.T) {
	if err := write(context.Background(), t.TempDir()+"/sub/", "x"); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("trailing slash: %v", err)
	}
	if os.Geteuid() == 0 {
		t.Skip("root may write a read-only file")
	}
	p := filepath.Join(t.TempDir(), "ro.bin")
	os.WriteFile(p, []byte("old"), 0o444)
	if err := write(context.Background(), p, "new"); err == nil || !strings.Contains(err.Error(), "permission") {
		t.Fatalf("read-only target: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("read-only target holds %q", b)
	}
}
