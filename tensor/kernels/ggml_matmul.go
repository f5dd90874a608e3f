package kernels

// The matmul of the ggml block formats: MatMul prepares the activations
// (ggml_act.go) once per call, then each thread computes its rows, every
// output one row-by-token dot product in its Impl's kernel. A prefill
// (T > 1) runs tiles of ggmlTileRows rows × several tokens where the Impl
// has tile kernels, and each tile output sums exactly as the row kernel
// does. An output depends only on its row, its token and the Impl, so the
// result is bit-identical for any thread count, row partition and T.

// tokenActs is one token's quantized activations: values q, block scales
// d, for Q8_1 the blocks' d·Σq (s), and for Q8_K the sums of 16 (bsums) and of 32 (bs32, the pairwise
// sums ggml's AVX2 Q4_K code forms with _mm_hadd_epi16) and q8s, 32 times
// each pair's sum (maddubs(32, q8), which ggml's AVX2 Q6_K code forms per
// row).
type tokenActs struct {
	q                []int8
	d, s             []float32
	bsums, bs32, q8s []int16
}

// token is token t's slice of the prepared activations a: 32 values per
// scale for Q8_0 and Q8_1, 256 for Q8_K.
func (a *ggmlActs) token(t int) tokenActs {
	cols, sd := a.cols, 32
	if a.kind == actQ8_K {
		sd = 256
	}
	x := tokenActs{q: a.q[t*cols : (t+1)*cols], d: a.d[t*cols/sd : (t+1)*cols/sd]}
	if a.kind == actQ8_1 {
		x.s = a.s[t*cols/32 : (t+1)*cols/32]
	}
	if a.kind == actQ8_K {
		x.bsums = a.bsums[t*cols/16 : (t+1)*cols/16]
		x.bs32 = a.bs32[t*cols/32 : (t+1)*cols/32]
		x.q8s = a.q8s[t*cols/2 : (t+1)*cols/2]
	}
	return x
}

// ggmlRowsFn computes len(out) consecutive weight rows (w holds them, rb
// bytes each) against one token's activations.
type ggmlRowsFn func(w []byte, rb int, x *tokenActs, out []float32)

// ggmlDots is one Impl's set of row kernels, and tile kernels where it
// has them (nil: the prefill runs the row kernels token by token).
type ggmlDots struct {
	q8_0, q4_0, q4K, q6K ggmlRowsFn
	tileQ8_0, tileQ4_0   ggmlTileFn
	tileQ4K, tileQ6K     ggmlTileFn

	q4_1, q5_0, q5_1, q5K ggmlRowsFn // ggml_q5.go
	tileQ5_0, tileQ5K     ggmlTileFn
	tileQ4_1, tileQ5_1    ggmlTileFn
}

// rowsOf lifts a one-row dot product to a ggmlRowsFn.
func rowsOf(dot func(w []byte, xq []int8, xd []float32, bsums []int16) float32) ggmlRowsFn {
	return func(w []byte, rb int, x *tokenActs, out []float32) {
		for i := range out {
			out[i] = dot(w[i*rb:(i+1)*rb], x.q, x.d, x.bsums)
		}
	}
}

var genericGGMLDots = ggmlDots{
	q8_0: rowsOf(func(w []byte, xq []int8, xd []float32, _ []int16) float32 { return dotQ8_0Q8_0(w, xq, xd) }),
	q4_0: rowsOf(func(w []byte, xq []int8, xd []float32, _ []int16) float32 { return dotQ4_0Q8_0(w, xq, xd) }),
	q4K:  rowsOf(dotQ4KQ8K),
	q6K:  rowsOf(func(w []byte, xq []int8, xd []float32, _ []int16) float32 { return dotQ6KQ8K(w, xq, xd) }),

	q4_1: rowsQ8_1(dotQ4_1Q8_1),
	q5_0: rowsOf(func(w []byte, xq []int8, xd []float32, _ []int16) float32 { return dotQ5_0Q8_0(w, xq, xd) }),
	q5_1: rowsQ8_1(dotQ5_1Q8_1),
	q5K:  rowsOf(dotQ5KQ8K),
}

// simdGGMLDots[impl] holds the assembly kernels where they exist (set by
// the amd64 init); a nil entry falls back to the generic one.
var simdGGMLDots [3]ggmlDots

// ggmlDotsFor is the kernel set MatMul uses under impl, each kernel the
// SIMD one when there is one and the generic one otherwise.
func ggmlDotsFor(impl Impl) ggmlDots {
	d := genericGGMLDots
	if impl == ImplGeneric || int(impl) >= len(simdGGMLDots) {
		return d
	}
	s := &simdGGMLDots[impl]
	d.q8_0, d.q4_0 = orRows(s.q8_0, d.q8_0), orRows(s.q4_0, d.q4_0)
	d.q4K, d.q6K = orRows(s.q4K, d.q4K), orRows(s.q6K, d.q6K)
	d.q4_1, d.q5_0 = orRows(s.q4_1, d.q4_1), orRows(s.q5_0, d.q5_0)
	d.q5_1, d.q5K = orRows(s.q5_1, d.q5_1), orRows(s.q5K, d.q5K)
	d.tileQ8_0, d.tileQ4_0, d.tileQ4K, d.tileQ6K = s.tileQ8_0, s.tileQ4_0, s.tileQ4K, s.tileQ6K
	d.tileQ5_0, d.tileQ5K = s.tileQ5_0, s.tileQ5K
	d.tileQ4_1, d.tileQ5_1 = s.tileQ4_1, s.tileQ5_1
	return d
}

// orRows is k, or the fallback g where k is nil. (Assigning through
// pointers to d's fields instead moved d to the heap: an allocation per
// MatMul call and thread.)
func orRows(k, g ggmlRowsFn) ggmlRowsFn {
	if k != nil {
		return k
	}
	return g
}

// forFormat is format f's row kernel and its tile kernel (or nil), from
// the kernel set d.
func (d ggmlDots) forFormat(f Format) (rows ggmlRowsFn, tile ggmlTileFn) {
	switch f {
	case GGMLQ8_0:
		return d.q8_0, d.tileQ8_0
	case Q4_0:
		return d.q4_0, d.tileQ4_0
	case Q4_K:
		return d.q4K, d.tileQ4K
	case Q4_1:
		return d.q4_1, d.tileQ4_1
	case Q5_0:
		return d.q5_0, d.tileQ5_0
	case Q5_1:
		return d.q5_1, d.tileQ5_1
	case Q5_K:
		return d.q5K, d.tileQ5K
	}
	return d.q6K, d.tileQ6K
}

// ggmlPanelRows is how many rows a prefill call runs for every token
// before moving on: their blocks (a few KiB a row) stay in L1/L2 across
// the tokens, so each weight streams from memory once per call.
const ggmlPanelRows = 16

// ggmlRows computes rows [r0, r1) of a block-format matmul for all T
// tokens from the prepared activations a: tiles of ggmlTileRows rows
// where there is a tile kernel, then panels of rows token by token.
func ggmlRows(impl Impl, out []float32, a *ggmlActs, m *Matrix, T, r0, r1 int) {
	rows, tile := ggmlDotsFor(impl).forFormat(m.Format)
	if T > 1 && tile != nil {
		r0 = ggmlTiles(rows, tile, out, a, m, T, r0, r1)
	}
	rb := m.rowBytes()
	panel := ggmlPanelRows
	if T == 1 {
		panel = r1 - r0
	}
	for r := r0; r < r1; r += panel {
		n := min(panel, r1-r)
		w := m.Blocks[r*rb : (r+n)*rb]
		for t := 0; t < T; t++ {
			rows(w, rb, &a.toks[t], out[t*m.Rows+r:t*m.Rows+r+n])
		}
	}
}
