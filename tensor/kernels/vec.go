package kernels

// Vector helpers for the attention kernels (q·k scores, Σ p·v). They use the
// current Impl like MatMul; lengths that differ are not an error: the
// operations run over the common prefix min(len(a), len(b)), the way a
// head-sized window of a longer row is usually passed.

// Dot returns Σ a[i]·b[i] over i < min(len(a), len(b)), in float32.
func Dot(a, b []float32) float32 {
	n := min(len(a), len(b))
	impl := CurrentImpl()
	if impl == ImplGeneric {
		return dotF32(a[:n], b[:n])
	}
	W := vecWidth(impl)
	m := n &^ (W - 1)
	var s float32
	if m > 0 {
		s = dotSIMD(impl, &a[0], &b[0], m)
	}
	for i := m; i < n; i++ {
		s += a[i] * b[i]
	}
	return s
}

// Axpy computes y[i] += a·x[i] for i < min(len(x), len(y)).
func Axpy(a float32, x, y []float32) {
	n := min(len(x), len(y))
	impl := CurrentImpl()
	m := 0
	if impl != ImplGeneric {
		m = n &^ (vecWidth(impl) - 1)
		if m > 0 {
			axpySIMD(impl, a, &x[0], &y[0], m)
		}
	}
	x, y = x[m:n], y[m:n]
	for i := range y {
		y[i] += a * x[i]
	}
}

// sum returns Σ a[i]; the SIMD path reads 4 vectors per iteration with four
// independent accumulators, which is what a streaming-bandwidth probe needs.
func sum(impl Impl, a []float32) float32 {
	if impl == ImplGeneric {
		return sumGeneric(a)
	}
	m := len(a) &^ (4*vecWidth(impl) - 1)
	var s float32
	if m > 0 {
		s = sumSIMD(impl, &a[0], m)
	}
	return s + sumGeneric(a[m:])
}
