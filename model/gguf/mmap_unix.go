//go:build unix

package gguf

import (
	"os"
	"syscall"
)

// mapFile maps the first size bytes of f. The mapping is MAP_PRIVATE and
// writable, as model's checkpoint mapping is: the file can never be
// changed through it, and a stray write to a weight copies one page
// instead of raising a SIGSEGV that Go cannot recover from.
func mapFile(f *os.File, size int64) ([]byte, func([]byte) error, error) {
	if int64(int(size)) != size {
		return nil, nil, syscall.EFBIG
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, err
	}
	return data, syscall.Munmap, nil
}
