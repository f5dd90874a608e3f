//go:build !unix

package mapfile

import "os"

// nonblock is 0 where open(2) has no O_NONBLOCK: the fstat check still
// refuses what is not a regular file, but only after the open returned.
const nonblock = 0

func clearNonblock(f *os.File) {}
