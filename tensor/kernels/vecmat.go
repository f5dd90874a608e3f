package kernels

import "fmt"

// VecMat sets dst[j] = Σ_d a[d]·x[d·stride + j] for every j < len(dst):
// the row vector a times the matrix x of len(a) rows, stride elements
// apart. It is the product the fused attention kernel's narrow-head
// prefill tiles form from a staged Kᵀ (x [D, ns], a one query row): the
// scores of one query against a tile of keys.
//
// The sum runs over d in order, each term added with the same operation
// as Axpy's, so the result is bit for bit what clearing dst and calling
// Axpy(a[d], x[d·stride:], dst) for d = 0, 1, … computes; it just reads
// each dst element once instead of len(a) times and makes one call
// instead of len(a). It returns an error, writing nothing, if x is too
// short or stride < len(dst).
func VecMat(dst, a, x []float32, stride int) error {
	D, w := len(a), len(dst)
	if w == 0 {
		return nil
	}
	if stride < w || D > 0 && (D-1)*stride+w > len(x) {
		return fmt.Errorf("kernels: VecMat: %d rows of %d (stride %d) do not fit in %d values", D, w, stride, len(x))
	}
	if D == 0 {
		clear(dst)
		return nil
	}
	m := 0
	if CurrentImpl() == ImplAVX512 {
		m = w &^ 15
		if m > 0 {
			vecMatAVX512(&dst[0], &a[0], D, &x[0], stride, m)
		}
	}
	// The remainder, and everything off AVX-512: the Axpy calls
	// themselves (AVX2's Axpy splits the columns into 8-lane FMAs and a
	// scalar tail, which this reproduces by being it).
	rest := dst[m:]
	clear(rest)
	for d, ad := range a {
		Axpy(ad, x[d*stride+m:d*stride+w], rest)
	}
	return nil
}
