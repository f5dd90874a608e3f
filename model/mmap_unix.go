//go:build unix

package model

import (
	"fmt"
	"os"
	"syscall"
)

// mmapSupported reports whether Load can map checkpoints on this platform.
const mmapSupported = true

// mapFile maps the first size bytes of f into memory.
//
// The mapping is MAP_PRIVATE with PROT_READ|PROT_WRITE: reads are served
// from the page cache, shared with every process mapping the file, and the
// file can never be modified through it. Weights are only read, so no page
// is ever copied; a caller that does write a weight (tensor.Set on a
// loaded matrix) gets a private copy of that one page instead of the
// SIGSEGV a PROT_READ mapping would raise, which Go cannot recover from.
//
// The mapping outlives f: the caller may close the file at once.
func mapFile(f *os.File, size int64) ([]byte, error) {
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

// unmapFile releases a mapping made by mapFile.
func unmapFile(data []byte) error {
	return syscall.Munmap(data)
}
