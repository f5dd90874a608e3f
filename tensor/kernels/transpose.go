package kernels

import "fmt"

// TransposeRows8 writes eight columns of gathered rows transposed:
// dst[x·n + j] = src[rows[j] + x] for x < 8 and j < len(rows). It is how
// the fused attention kernel stages a tile of K (or V) rows, which the
// block table scatters over the cache, as the columns of Kᵀ (x is the
// head dimension, j the key): a wider head calls it once per eight
// dimensions with src advanced by those columns. The AVX2 kernel
// transposes 8 × 8 blocks in registers (eight loads, 24 shuffles, eight
// stores) where the portable loop moves one float at a time; both copy
// the values bit for bit. It returns an error, writing nothing, if a row
// does not fit in src or n is too small for the rows.
func TransposeRows8(dst []float32, n int, src []float32, rows []int) error {
	m := len(rows)
	if m == 0 {
		return nil
	}
	if n < m || 7*n+m > len(dst) {
		return fmt.Errorf("kernels: TransposeRows8: %d columns of stride %d do not fit in %d values", m, n, len(dst))
	}
	if err := checkRows("TransposeRows8", m, 8, len(src), rows); err != nil {
		return err
	}
	j := 0
	if CurrentImpl() != ImplGeneric && m >= 8 {
		j = m &^ 7
		transpose8AVX2(&dst[0], n, &src[0], &rows[0], j/8)
	}
	d0, d1 := dst[0:m], dst[n:n+m]
	d2, d3 := dst[2*n:2*n+m], dst[3*n:3*n+m]
	d4, d5 := dst[4*n:4*n+m], dst[5*n:5*n+m]
	d6, d7 := dst[6*n:6*n+m], dst[7*n:7*n+m]
	for ; j < m; j++ {
		o := rows[j]
		r := (*[8]float32)(src[o : o+8])
		d0[j], d1[j], d2[j], d3[j] = r[0], r[1], r[2], r[3]
		d4[j], d5[j], d6[j], d7[j] = r[4], r[5], r[6], r[7]
	}
	return nil
}
