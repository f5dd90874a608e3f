//go:build linux

package mapfile

import "syscall"

// adviseWeights tells the kernel how a mapped checkpoint will be used;
// errors are ignored because the advice only tunes performance.
//
//   - MADV_HUGEPAGE asks for transparent huge pages where the kernel
//     supports them for the mapping (2 MiB pages: 512× fewer TLB entries
//     for the weights every token streams through).
//   - MADV_WILLNEED starts reading the whole file into the page cache in
//     the background, so the first token does not fault every page in
//     one at a time.
//
// MADV_SEQUENTIAL is deliberately not given: it lets the kernel drop pages
// behind the reader, but the weights are read again for every token.
func adviseWeights(data []byte) {
	_ = syscall.Madvise(data, syscall.MADV_HUGEPAGE)
	_ = syscall.Madvise(data, syscall.MADV_WILLNEED)
}
