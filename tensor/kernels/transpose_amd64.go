//go:build amd64

package kernels

// transpose8AVX2 is TransposeRows8 on nblocks blocks of eight rows. See
// transpose_amd64.s.
//
//go:noescape
func transpose8AVX2(dst *float32, n int, src *float32, rows *int, nblocks int)
