//go:build !linux

package mapfile

// adviseWeights gives no advice here: the syscall package exposes
// madvise only on Linux, and the advice only tunes performance.
func adviseWeights(data []byte) {}
