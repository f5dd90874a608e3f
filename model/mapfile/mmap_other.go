//go:build !unix

package mapfile

import (
	"errors"
	"os"
)

// Supported reports whether Map can map files on this platform: not
// here, so formats read their files into memory instead.
const Supported = false

// Map is unsupported on this platform.
func Map(f *os.File, size int64) ([]byte, error) { return nil, errors.ErrUnsupported }

// Unmap has nothing to release on this platform.
func Unmap(data []byte) error { return nil }
