//go:build unix

package mapfile

import (
	"os"
	"syscall"
)

// nonblock makes open(2) of a FIFO or device return at once.
const nonblock = syscall.O_NONBLOCK

// clearNonblock puts f back in blocking mode (Fd does so), which is what
// mapping and positional reads of a regular file expect.
func clearNonblock(f *os.File) { _ = f.Fd() }
