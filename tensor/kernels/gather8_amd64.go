//go:build amd64

package kernels

// dotRows8TAVX512 scores n query rows of 8 against nblk·16 keys staged
// transposed (kT [8, ldk]) with dotRows8wAVX512's arithmetic. See
// gather8_amd64.s.
//
//go:noescape
func dotRows8TAVX512(out *float32, ldo int, q *float32, n int, kT *float32, ldk int, nblk int)

// axpyRows8x4AVX512 is axpyRows8wAVX512 for four accumulators at once.
// See gather8_amd64.s.
//
//go:noescape
func axpyRows8x4AVX512(acc, p *float32, ldp int, base *float32, rows *int, n int)
