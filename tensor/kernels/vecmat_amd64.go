//go:build amd64

package kernels

// vecMatAVX512 is VecMat on the first n columns, n a multiple of 16, with
// d ≥ 1 rows stride elements apart. See vecmat_amd64.s.
//
//go:noescape
func vecMatAVX512(dst, a *float32, d int, x *float32, stride, n int)

// rowMaxAVX512 is RowMax for n ≥ 16. See rowmax_amd64.s.
//
//go:noescape
func rowMaxAVX512(s *float32, n int) float32
