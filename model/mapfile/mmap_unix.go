//go:build unix

package mapfile

import (
	"fmt"
	"os"
	"syscall"
)

// Supported reports whether Map can map files on this platform.
const Supported = true

// Map maps the first size bytes of f into memory.
//
// The mapping is MAP_PRIVATE with PROT_READ|PROT_WRITE: reads are served
// from the page cache, shared with every process mapping the file, and the
// file can never be modified through it. Weights are only read, so no page
// is ever copied; a caller that does write a weight (tensor.Set on a
// loaded matrix) gets a private copy of that one page instead of the
// SIGSEGV a PROT_READ mapping would raise, which Go cannot recover from.
//
// The mapping outlives f: the caller may close the file at once. Reading a
// page of the mapping that the file no longer covers (it was truncated)
// raises SIGBUS: read mappings inside CatchFault.
func Map(f *os.File, size int64) ([]byte, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, fmt.Errorf("cannot map %d bytes", size)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	adviseWeights(data)
	return data, nil
}

// Unmap releases a mapping made by Map.
func Unmap(data []byte) error {
	return syscall.Munmap(data)
}
