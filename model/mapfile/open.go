// Package mapfile opens and memory-maps the files a model is read from
// (checkpoints, tokenizers), so that no format package repeats the three
// ways such a file can hurt the process that reads it:
//
//   - A path that names a FIFO, a device or a socket must not be opened
//     for reading as if it were a file: open(2) of a FIFO with no writer
//     blocks forever, and /dev/zero never ends. Open uses O_NONBLOCK, so
//     open(2) returns at once whatever the path is, then fstat(2)s the
//     descriptor (not the path, which could change in between) and keeps
//     only regular files (and, when asked, directories).
//   - A mapped file can be truncated by another process while it is in
//     use; touching a page past the new end raises SIGBUS, which kills a
//     Go program with a stack trace. CatchFault turns that into an error
//     on the goroutine that runs it.
//   - Mapping (Map) is private and advised, see Map.
//
// It imports only the standard library, so any format package (and the
// tokenizer readers) can use it.
package mapfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrNotRegular is wrapped by Open's error for a path that is neither a
// regular file nor an accepted directory.
var ErrNotRegular = errors.New("not a regular file")

// Open opens path for reading if it is a regular file, or a directory
// when dirOK is set (for formats that are directories, such as Hugging
// Face checkpoints). The open is non-blocking, so a FIFO or a device is
// refused at once instead of hanging; the type is taken from fstat of
// the opened descriptor. The error does not repeat path unless it comes
// from the operating system (*fs.PathError), so callers prefix it with
// what the file was for: "checkpoint <path>: <err>".
func Open(path string, dirOK bool) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|nonblock, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	mode := st.Mode()
	if mode.IsRegular() || (dirOK && mode.IsDir()) {
		// Regular files ignore O_NONBLOCK; clearing it anyway keeps the
		// descriptor exactly as a plain os.Open would leave it.
		clearNonblock(f)
		return f, st, nil
	}
	f.Close()
	return nil, nil, fmt.Errorf("%w (%s)", ErrNotRegular, describeMode(mode))
}

// describeMode names the kind of a non-regular file.
func describeMode(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return "mode " + m.String()
}
