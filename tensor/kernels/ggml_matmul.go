package kernels

// The matmul of the ggml block formats: MatMul prepares the activations
// (ggml_act.go) once per call, then each thread computes its rows, every
// output one row-by-token dot product in its Impl's kernel. An output
// depends only on its row, its token and the Impl, so the result is
// bit-identical for any thread count, row partition and T.

// ggmlDots is one Impl's set of row dot products.
type ggmlDots struct {
	q8_0 func(w []byte, xq []int8, xd []float32) float32
	q4_0 func(w []byte, xq []int8, xd []float32) float32
	q4K  func(w []byte, xq []int8, xd []float32, bsums []int16) float32
	q6K  func(w []byte, xq []int8, xd []float32, bsums []int16) float32
}

var genericGGMLDots = ggmlDots{
	q8_0: dotQ8_0Q8_0,
	q4_0: dotQ4_0Q8_0,
	q4K:  dotQ4KQ8K,
	q6K:  func(w []byte, xq []int8, xd []float32, _ []int16) float32 { return dotQ6KQ8K(w, xq, xd) },
}

// simdGGMLDots[impl] holds the assembly kernels where they exist (set by
// the amd64 init); a nil entry falls back to the generic one.
var simdGGMLDots [3]ggmlDots

// ggmlDotsFor is the dot-product set MatMul uses under impl, each kernel
// the SIMD one when there is one and the generic one otherwise.
func ggmlDotsFor(impl Impl) ggmlDots {
	d := genericGGMLDots
	if impl == ImplGeneric || int(impl) >= len(simdGGMLDots) {
		return d
	}
	s := simdGGMLDots[impl]
	if s.q8_0 != nil {
		d.q8_0 = s.q8_0
	}
	if s.q4_0 != nil {
		d.q4_0 = s.q4_0
	}
	if s.q4K != nil {
		d.q4K = s.q4K
	}
	if s.q6K != nil {
		d.q6K = s.q6K
	}
	return d
}

// ggmlRows computes rows [r0, r1) of a block-format matmul for all T
// tokens from the prepared activations a. Each weight row is read once and
// reused for every token while it is in L1.
func ggmlRows(impl Impl, out []float32, a *ggmlActs, m *Matrix, T, r0, r1 int) {
	dots := ggmlDotsFor(impl)
	rb, cols := m.rowBytes(), m.Cols
	for i := r0; i < r1; i++ {
		w := m.Blocks[i*rb : (i+1)*rb]
		for t := 0; t < T; t++ {
			xq := a.q[t*cols : (t+1)*cols]
			var s float32
			switch m.Format {
			case GGMLQ8_0:
				s = dots.q8_0(w, xq, a.d[t*cols/32:(t+1)*cols/32])
			case Q4_0:
				s = dots.q4_0(w, xq, a.d[t*cols/32:(t+1)*cols/32])
			case Q4_K:
				s = dots.q4K(w, xq, a.d[t*cols/256:(t+1)*cols/256], a.bsums[t*cols/16:(t+1)*cols/16])
			case Q6_K:
				s = dots.q6K(w, xq, a.d[t*cols/256:(t+1)*cols/256], a.bsums[t*cols/16:(t+1)*cols/16])
			}
			out[t*m.Rows+i] = s
		}
	}
}
