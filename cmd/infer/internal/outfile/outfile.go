// Package outfile writes the CLI's output files so that nothing is ever
// clobbered or left half-written:
//
//   - a regular file, or a path that does not exist yet, is written to a
//     temporary file in the target's own directory, flushed, fsynced and
//     renamed over the target at Commit, so the target holds either its
//     old bytes or all of the new ones. A symlink is followed to its
//     target: the link stays, the file it names is replaced;
//   - a character device or a FIFO (/dev/stdout, a named pipe, a tty) is
//     written through directly: it cannot be replaced, and a device node
//     is never replaced by a regular file. Paths under /dev/ and /proc/
//     are always written through, since /dev/stdout can be a link to the
//     very file the shell redirected stdout to;
//   - a directory, socket or block device is refused with an error that
//     says what the path is.
//
// A new file gets mode 0666 minus the umask, as any file the shell
// creates; a replaced file keeps its mode (and, best effort, its owner),
// and must be writable by the caller, as with a shell's redirection. A
// replaced file is a new inode: hard links to the old one keep the old
// bytes.
// The temporary file is removed on every error path (Abort), and
// RemoveTemps removes every live one for a signal handler that must exit
// at once. Writes fail once the context given to Create is done, so a
// cancelled command stops writing and its deferred Abort cleans up.
package outfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// File is an output file being written. Write to it, then Commit; call
// Abort (safe after Commit) on every other path, typically deferred.
type File struct {
	ctx    context.Context
	target string   // the file that Commit makes hold the bytes
	f      *os.File // the temporary file, or the target when direct
	direct bool     // written through (device or FIFO): no rename
	done   bool     // committed or aborted
}

// Create opens path for writing as the package comment says. ctx, when
// done, makes every later Write fail with its error.
func Create(ctx context.Context, path string) (*File, error) {
	if path == "" {
		return nil, errors.New("no output path given")
	}
	if strings.HasSuffix(path, "/") {
		return nil, fmt.Errorf("%s names a directory, not a file", path)
	}
	target, err := resolve(path)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(target)
	switch {
	case err == nil && !st.Mode().IsRegular():
		return openDirect(ctx, path, st)
	case err == nil && throughDev(path):
		// /dev/stdout → /proc/self/fd/1 → a regular file: write through
		// the descriptor the shell opened rather than renaming over it.
		return openDirect(ctx, path, st)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	if st != nil && unix.Access(target, unix.W_OK) != nil {
		// Renaming over a file we may not write would succeed (only the
		// directory's permission counts); refuse, as a shell's > would.
		return nil, fmt.Errorf("%s: %w", path, fs.ErrPermission)
	}
	out := &File{ctx: ctx, target: target}
	if out.f, err = createTemp(target); err != nil {
		return nil, err
	}
	if st != nil {
		// Keep the replaced file's mode and owner. Chown fails for a
		// user who does not own the file; then it stays theirs, which is
		// what the rename gives anyway.
		if err := out.f.Chmod(st.Mode().Perm()); err != nil {
			out.Abort()
			return nil, err
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			_ = out.f.Chown(int(sys.Uid), int(sys.Gid))
		}
	}
	return out, nil
}

// throughDev reports whether path names a file through /dev or /proc,
// where a regular-file target is an open descriptor's file, not a name
// to replace.
func throughDev(path string) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	return strings.HasPrefix(abs, "/dev/") || strings.HasPrefix(abs, "/proc/")
}

// openDirect opens a non-regular target for writing through, or refuses
// it.
func openDirect(ctx context.Context, path string, st fs.FileInfo) (*File, error) {
	m := st.Mode()
	switch {
	case m.IsDir():
		return nil, fmt.Errorf("%s is a directory", path)
	case m&fs.ModeSocket != 0:
		return nil, fmt.Errorf("%s is a socket; refusing to write to it", path)
	case m&fs.ModeDevice != 0 && m&fs.ModeCharDevice == 0:
		return nil, fmt.Errorf("%s is a block device; refusing to write to it", path)
	case !m.IsRegular() && m&(fs.ModeCharDevice|fs.ModeNamedPipe) == 0:
		return nil, fmt.Errorf("%s is not a regular file, device or FIFO (%v)", path, m.Type())
	}
	// No O_CREATE: the node exists, and must not become a regular file if
	// it vanished in between. No O_TRUNC on a regular file reached
	// through /dev: the shell's redirection already chose to truncate.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	return &File{ctx: ctx, target: path, f: f, direct: true}, nil
}

// resolve follows path's symlinks (up to 40, as the kernel does) to the
// file that should be replaced, which may not exist yet (a dangling link
// creates its target).
func resolve(path string) (string, error) {
	p := path
	for i := 0; i < 40; i++ {
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
		if err != nil {
			return "", err
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		link, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(p), link)
		}
		p = link
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// createTemp creates an empty temporary file beside target with mode
// 0666 (the kernel applies the umask), and registers it for RemoveTemps.
func createTemp(target string) (*os.File, error) {
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	seed := uint64(time.Now().UnixNano()) ^ uint64(os.Getpid())<<32
	for try := 0; try < 100; try++ {
		seed = seed*6364136223846793005 + 1442695040888963407
		name := filepath.Join(dir, "."+base+".tmp"+strconv.FormatUint(seed>>40, 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the temporary name would only confuse
			}
			return nil, fmt.Errorf("cannot create %s: %w", target, err)
		}
		temps.add(name)
		return f, nil
	}
	return nil, fmt.Errorf("cannot create a temporary file beside %s", target)
}

// Name is the path the caller gave for the target's final name: the
// resolved target for a replaced file, the path itself when direct.
func (o *File) Name() string { return o.target }

// Write writes p, failing once the context is done. An error names the
// target, not the temporary file.
func (o *File) Write(p []byte) (int, error) {
	if err := o.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := o.f.Write(p)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = &fs.PathError{Op: pe.Op, Path: o.target, Err: pe.Err}
	}
	return n, err
}

// Commit makes the target hold what was written: fsync, close and
// rename (then fsync the directory) for a replaced file; close for a
// direct one. On failure the temporary file is removed.
func (o *File) Commit() error {
	if o.done {
		return errors.New("outfile: Commit after Commit or Abort")
	}
	if o.direct {
		o.done = true
		return o.f.Close()
	}
	err := o.ctx.Err()
	if err == nil {
		err = o.f.Sync()
	}
	if err == nil {
		err = o.f.Close()
	}
	if err == nil {
		err = os.Rename(o.f.Name(), o.target)
	}
	if err != nil {
		o.Abort()
		return err
	}
	o.done = true
	temps.remove(o.f.Name())
	if d, err := os.Open(filepath.Dir(o.target)); err == nil {
		_ = d.Sync() // make the rename durable; not every file system can
		d.Close()
	}
	return nil
}

// Abort discards the output: the temporary file is closed and removed
// (a direct target is closed, keeping what reached it). It does nothing
// after Commit.
func (o *File) Abort() {
	if o.done {
		return
	}
	o.done = true
	o.f.Close()
	if !o.direct {
		os.Remove(o.f.Name())
		temps.remove(o.f.Name())
	}
}

// RemoveTemps removes every temporary file not yet committed or aborted.
// It is for a signal handler about to exit without running deferred
// Aborts.
func RemoveTemps() {
	temps.mu.Lock()
	defer temps.mu.Unlock()
	for name := range temps.names {
		os.Remove(name)
		delete(temps.names, name)
	}
}

// tempSet is the set of live temporary files.
type tempSet struct {
	mu    sync.Mutex
	names map[string]bool
}

var temps = &tempSet{names: map[string]bool{}}

func (t *tempSet) add(name string) {
	t.mu.Lock()
	t.names[name] = true
	t.mu.Unlock()
}

func (t *tempSet) remove(name string) {
	t.mu.Lock()
	delete(t.names, name)
	t.mu.Unlock()
}
