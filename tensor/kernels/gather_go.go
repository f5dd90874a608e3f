package kernels

import "math"

// Portable tile kernels for paged attention: the pure-Go twins of DotRows
// and AxpyRows (gather.go), for the cases where a call per key or a SIMD
// kernel loses. They read key and value rows at element offsets rows[j]
// of a base buffer, exactly like DotRows and AxpyRows, but run the same
// Go code whatever CurrentImpl is: attention picks them once per plan for
// small heads and for CPUs (or settings) without SIMD. At head_dim 8 a
// Dot or Axpy call per key costs more than its eight multiply-adds, so
// these keep the query (or accumulator) values in registers while the
// keys stream past.
//
// Offsets are not validated beyond Go's own bounds checks: a row that does
// not fit in base panics like any out-of-range slice expression. Their
// callers (the attention kernel) have validated the block tables already,
// and a check per call would cost as much as the arithmetic at D = 8.

// DotRowsTile sets s[r·sStride + j] = q[r·D : r·D+D] · base[rows[j] : rows[j]+D]
// for every query row r < len(q)/D and key j < len(rows): the scores of a
// tile of query rows against a tile of key rows. Two query rows × four
// keys at a time share every load (eight accumulators, six loads per
// eight multiply-adds); leftovers fall back to 2×1, 1×4 and 1×1, the 1×1
// dot products summed like the portable matmul's (dotF32).
func DotRowsTile(s []float32, sStride int, q []float32, D int, base []float32, rows []int) {
	if D <= 0 {
		return
	}
	nq := len(q) / D
	nk := len(rows)
	r := 0
	for ; r+2 <= nq; r += 2 {
		q0 := q[r*D : r*D+D]
		q1 := q[(r+1)*D : (r+1)*D+D]
		s0 := s[r*sStride : r*sStride+nk]
		s1 := s[(r+1)*sStride : (r+1)*sStride+nk]
		j := 0
		for ; j+4 <= nk; j += 4 {
			k0, k1, k2, k3 := fourRows(base, rows, j, D)
			q1, k0, k1, k2, k3 := q1[:len(q0)], k0[:len(q0)], k1[:len(q0)], k2[:len(q0)], k3[:len(q0)]
			var a00, a01, a02, a03, a10, a11, a12, a13 float32
			for d, x := range q0 {
				y := q1[d]
				c0, c1, c2, c3 := k0[d], k1[d], k2[d], k3[d]
				a00 += x * c0
				a01 += x * c1
				a02 += x * c2
				a03 += x * c3
				a10 += y * c0
				a11 += y * c1
				a12 += y * c2
				a13 += y * c3
			}
			s0[j], s0[j+1], s0[j+2], s0[j+3] = a00, a01, a02, a03
			s1[j], s1[j+1], s1[j+2], s1[j+3] = a10, a11, a12, a13
		}
		for ; j < nk; j++ {
			k0 := base[rows[j] : rows[j]+D]
			s0[j] = dotF32(q0, k0)
			s1[j] = dotF32(q1, k0)
		}
	}
	if r < nq {
		q0 := q[r*D : r*D+D]
		s0 := s[r*sStride : r*sStride+nk]
		j := 0
		for ; j+4 <= nk; j += 4 {
			k0, k1, k2, k3 := fourRows(base, rows, j, D)
			k0, k1, k2, k3 = k0[:len(q0)], k1[:len(q0)], k2[:len(q0)], k3[:len(q0)]
			var a0, a1, a2, a3 float32
			for d, x := range q0 {
				a0 += x * k0[d]
				a1 += x * k1[d]
				a2 += x * k2[d]
				a3 += x * k3[d]
			}
			s0[j], s0[j+1], s0[j+2], s0[j+3] = a0, a1, a2, a3
		}
		for ; j < nk; j++ {
			s0[j] = dotF32(q0, base[rows[j]:rows[j]+D])
		}
	}
}

// AxpyRowsTile adds Σ_j p[r·pStride + j] · base[rows[j] : rows[j]+D] to
// acc[r·D : r·D+D] for every row r < len(acc)/D: the P·V product of a
// tile of weights with a tile of value rows. Two rows × four value rows at
// a time, skipping groups whose weights are all zero (masked keys).
func AxpyRowsTile(acc []float32, D int, p []float32, pStride int, base []float32, rows []int) {
	if D <= 0 {
		return
	}
	nq := len(acc) / D
	nk := len(rows)
	r := 0
	for ; r+2 <= nq; r += 2 {
		a0 := acc[r*D : r*D+D]
		a1 := acc[(r+1)*D : (r+1)*D+D]
		p0 := p[r*pStride : r*pStride+nk]
		p1 := p[(r+1)*pStride : (r+1)*pStride+nk]
		j := 0
		for ; j+4 <= nk; j += 4 {
			w00, w01, w02, w03 := p0[j], p0[j+1], p0[j+2], p0[j+3]
			w10, w11, w12, w13 := p1[j], p1[j+1], p1[j+2], p1[j+3]
			if w00 == 0 && w01 == 0 && w02 == 0 && w03 == 0 && w10 == 0 && w11 == 0 && w12 == 0 && w13 == 0 {
				continue
			}
			v0, v1, v2, v3 := fourRows(base, rows, j, D)
			a1 := a1[:len(a0)]
			v0, v1, v2, v3 = v0[:len(a0)], v1[:len(a0)], v2[:len(a0)], v3[:len(a0)]
			for d := range a0 {
				x0, x1, x2, x3 := v0[d], v1[d], v2[d], v3[d]
				a0[d] += w00*x0 + w01*x1 + w02*x2 + w03*x3
				a1[d] += w10*x0 + w11*x1 + w12*x2 + w13*x3
			}
		}
		for ; j < nk; j++ {
			w0, w1 := p0[j], p1[j]
			if w0 == 0 && w1 == 0 {
				continue
			}
			v0 := base[rows[j] : rows[j]+D]
			a1 := a1[:len(a0)]
			v0 = v0[:len(a0)]
			for d := range a0 {
				a0[d] += w0 * v0[d]
				a1[d] += w1 * v0[d]
			}
		}
	}
	if r < nq {
		a0 := acc[r*D : r*D+D]
		p0 := p[r*pStride : r*pStride+nk]
		j := 0
		for ; j+4 <= nk; j += 4 {
			w0, w1, w2, w3 := p0[j], p0[j+1], p0[j+2], p0[j+3]
			if w0 == 0 && w1 == 0 && w2 == 0 && w3 == 0 {
				continue
			}
			v0, v1, v2, v3 := fourRows(base, rows, j, D)
			v0, v1, v2, v3 = v0[:len(a0)], v1[:len(a0)], v2[:len(a0)], v3[:len(a0)]
			for d := range a0 {
				a0[d] += w0*v0[d] + w1*v1[d] + w2*v2[d] + w3*v3[d]
			}
		}
		for ; j < nk; j++ {
			if w := p0[j]; w != 0 {
				v0 := base[rows[j] : rows[j]+D]
				v0 = v0[:len(a0)]
				for d := range a0 {
					a0[d] += w * v0[d]
				}
			}
		}
	}
}

// fourRows returns the D-element rows of base at offsets rows[j..j+3]: the
// four key (or value) rows one step of the tile kernels reads. It inlines,
// so the kernels compile to the same code as with the slices written out.
func fourRows(base []float32, rows []int, j, D int) (r0, r1, r2, r3 []float32) {
	return base[rows[j] : rows[j]+D], base[rows[j+1] : rows[j+1]+D], base[rows[j+2] : rows[j+2]+D], base[rows[j+3] : rows[j+3]+D]
}

// DotRows8 sets s[j] = q · base[rows[j] : rows[j]+D] for D = len(q) a
// multiple of 8, and returns the largest score (NaNs skipped): DotRows
// and RowMax in one pass. Eight query elements at a time stay in
// registers and each key's eight products are summed as a tree, with no
// inner loop.
func DotRows8(s, q, base []float32, rows []int) float32 {
	D := len(q)
	s = s[:len(rows)]
	mx := float32(math.Inf(-1))
	qc := (*[8]float32)(q[0:8])
	q0, q1, q2, q3, q4, q5, q6, q7 := qc[0], qc[1], qc[2], qc[3], qc[4], qc[5], qc[6], qc[7]
	if D == 8 {
		for j, o := range rows {
			k := (*[8]float32)(base[o : o+8])
			x := ((q0*k[0] + q1*k[1]) + (q2*k[2] + q3*k[3])) + ((q4*k[4] + q5*k[5]) + (q6*k[6] + q7*k[7]))
			s[j] = x
			if x > mx {
				mx = x
			}
		}
		return mx
	}
	for j, o := range rows {
		k := (*[8]float32)(base[o : o+8])
		s[j] = ((q0*k[0] + q1*k[1]) + (q2*k[2] + q3*k[3])) + ((q4*k[4] + q5*k[5]) + (q6*k[6] + q7*k[7]))
	}
	for c := 8; c < D; c += 8 {
		qc := (*[8]float32)(q[c : c+8])
		q0, q1, q2, q3, q4, q5, q6, q7 := qc[0], qc[1], qc[2], qc[3], qc[4], qc[5], qc[6], qc[7]
		for j, o := range rows {
			k := (*[8]float32)(base[o+c : o+c+8])
			s[j] += ((q0*k[0] + q1*k[1]) + (q2*k[2] + q3*k[3])) + ((q4*k[4] + q5*k[5]) + (q6*k[6] + q7*k[7]))
		}
	}
	for _, x := range s {
		if x > mx {
			mx = x
		}
	}
	return mx
}

// AxpyRows8 adds Σ_j p[j] · base[rows[j] : rows[j]+D] to acc, for D =
// len(acc) a multiple of 8: AxpyRows with eight accumulators in registers
// across all value rows. Weight-0 keys are not skipped: a test per key
// costs more than the keys it would skip, and 0·v adds exactly 0.
func AxpyRows8(acc, p, base []float32, rows []int) {
	D := len(acc)
	p = p[:len(rows)]
	for c := 0; c < D; c += 8 {
		ac := (*[8]float32)(acc[c : c+8])
		a0, a1, a2, a3, a4, a5, a6, a7 := ac[0], ac[1], ac[2], ac[3], ac[4], ac[5], ac[6], ac[7]
		for j, o := range rows {
			w := p[j]
			v := (*[8]float32)(base[o+c : o+c+8])
			a0 += w * v[0]
			a1 += w * v[1]
			a2 += w * v[2]
			a3 += w * v[3]
			a4 += w * v[4]
			a5 += w * v[5]
			a6 += w * v[6]
			a7 += w * v[7]
		}
		ac[0], ac[1], ac[2], ac[3], ac[4], ac[5], ac[6], ac[7] = a0, a1, a2, a3, a4, a5, a6, a7
	}
}

// RowMax returns the largest element of s, skipping NaNs (−Inf when s
// holds none other). It compares the floats as integers: flipping the
// magnitude bits of negative floats, k ^= (k >> 31) & 0x7fffffff, maps
// float order onto int32 order (−Inf < … < −0 < +0 < … < +Inf < +NaN,
// with −NaNs below −Inf), and the integer max compiles to a conditional
// move, four of them in flight. A float compare is a branch, mispredicted
// each time the running max of random scores rises (~ln n times per
// row), which cost more than the scan itself. A +NaN would win, so then
// the scan is redone with float compares, which skip it. −0 and +0 may
// come out either way; both give the same exponentials. On AVX-512 it is
// VMAXPS over 16 lanes, which skips NaNs by itself (rowmax_amd64.s).
func RowMax(s []float32) float32 {
	if len(s) >= 16 && CurrentImpl() == ImplAVX512 {
		return rowMaxAVX512(&s[0], len(s))
	}
	const negInf = -0x7f800001 // (0xff800000 as int32) ^ 0x7fffffff: −Inf mapped
	m0, m1, m2, m3 := int32(negInf), int32(negInf), int32(negInf), int32(negInf)
	i := 0
	for ; i+4 <= len(s); i += 4 { // four running maxima: four independent cmov chains
		c := (*[4]float32)(s[i : i+4])
		k0, k1 := int32(math.Float32bits(c[0])), int32(math.Float32bits(c[1]))
		k2, k3 := int32(math.Float32bits(c[2])), int32(math.Float32bits(c[3]))
		k0 ^= (k0 >> 31) & 0x7fffffff
		k1 ^= (k1 >> 31) & 0x7fffffff
		k2 ^= (k2 >> 31) & 0x7fffffff
		k3 ^= (k3 >> 31) & 0x7fffffff
		m0, m1, m2, m3 = max(m0, k0), max(m1, k1), max(m2, k2), max(m3, k3)
	}
	for ; i < len(s); i++ {
		k := int32(math.Float32bits(s[i]))
		m0 = max(m0, k^((k>>31)&0x7fffffff))
	}
	mk := max(m0, m1, m2, m3)
	mk ^= (mk >> 31) & 0x7fffffff
	mx := math.Float32frombits(uint32(mk))
	if mx == mx {
		return mx
	}
	mx = float32(math.Inf(-1))
	for _, x := range s {
		if x > mx {
			mx = x
		}
	}
	return mx
}
