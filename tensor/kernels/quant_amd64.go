//go:build amd64

package kernels

// quantRowAVX512 is quantizeRow (and, when aux is not nil, laneAux) for one
// token in AVX-512; gs must be a multiple of 16. See quant_amd64.s.
//
//go:noescape
func quantRowAVX512(x *float32, q *int8, s *float32, aux *int32, ngroups int, gs int)

// swigluAVX512 is SwiGLU on n values, n a multiple of 8. See swiglu_amd64.s.
//
//go:noescape
func swigluAVX512(hb, hb2 *float32, n int, c *swigluConsts)

// expSubAVX512 is ExpSub on n values. See expsub_amd64.s.
//
//go:noescape
func expSubAVX512(s *float32, n int, mx float32, c *expConsts) float32

// quantRowSmallAVX512 is quantizeRow (and, when aux is not nil, laneAux's
// whole lanes) for one token with groups of 4 or 8; cols must be a
// multiple of gs. See quant_amd64.s.
//
//go:noescape
func quantRowSmallAVX512(x *float32, q *int8, s *float32, aux *int32, cols int, gs int)
