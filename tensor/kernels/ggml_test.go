package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

var ggmlTypes = []GGMLType{TypeQ8_0, TypeQ4_0, TypeQ4_K, TypeQ6_K, TypeQ4_1, TypeQ5_0, TypeQ5_1, TypeQ5_K}

// ggmlSIMDTypes are the block types with amd64 assembly row and tile
// kernels (see ggmlRowSIMDTypes; the others run the generic Go kernel
// under every Impl).
var ggmlSIMDTypes = []GGMLType{TypeQ8_0, TypeQ4_0, TypeQ4_K, TypeQ6_K, TypeQ5_0, TypeQ5_K}

// ggmlRowSIMDTypes have amd64 assembly row kernels and tile kernels (8,
// 4, 3 and 2 tokens with AVX-512 VNNI, 2 with AVX2), in a file of their own.
var ggmlRowSIMDTypes = []GGMLType{TypeQ4_1, TypeQ5_1}

// randGGML returns rows·RowBytes(cols) random bytes of a block type: every
// bit pattern of the quants and sub-block scales is valid, so only the
// fp16 super-scales are set to plausible positive values.
func randGGML(t testing.TB, rng *rand.Rand, typ GGMLType, rows, cols int) []byte {
	t.Helper()
	rb, err := typ.RowBytes(cols)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, rows*rb)
	for i := 0; i < len(b); i += 8 {
		v := rng.Uint64()
		for k := i; k < min(i+8, len(b)); k++ {
			b[k] = byte(v >> (8 * (k - i)))
		}
	}
	scale := func(p []byte) {
		binary.LittleEndian.PutUint16(p, F16FromFloat32(float32(0.001+0.05*rng.Float64())))
	}
	bs := typ.BlockBytes()
	for o := 0; o < len(b); o += bs {
		switch typ {
		case TypeQ8_0, TypeQ4_0, TypeQ5_0:
			scale(b[o:])
		case TypeQ4_K, TypeQ5_K, TypeQ4_1, TypeQ5_1:
			scale(b[o:])
			scale(b[o+2:])
			if typ == TypeQ4_1 || typ == TypeQ5_1 {
				b[o+3] |= byte(rng.Uint32()) & 0x80 // m may be negative
			}
		case TypeQ6_K:
			scale(b[o+208:])
		}
	}
	return b
}

// ggmlExact64 is weight (i, j) as the integer dot products define it, in
// float64 with no rounding: d·q for Q8_0, d·(q−8) for Q4_0, d·(q−16)
// for Q5_0, d·sc·q and dmin·m apart for Q4_K and Q5_K (w = pos − neg),
// d·sc·(q−32) for Q6_K; d·q for Q4_1 and Q5_1, whose offset m is
// ggmlOffset64's (the dot product takes it times the activations' sum).
// It indexes the blocks directly, independently of the kernels' loops.
func ggmlExact64(m *Matrix, i, j int) (pos, neg float64) {
	row := m.Blocks[i*m.rowBytes():]
	f := func(p []byte) float64 { return float64(F16ToFloat32(binary.LittleEndian.Uint16(p))) }
	switch m.Format {
	case GGMLQ8_0:
		blk := row[j/32*34:]
		return f(blk) * float64(int8(blk[2+j%32])), 0
	case Q4_0:
		blk := row[j/32*18:]
		k := j % 32
		q := blk[2+k%16] & 0x0f
		if k >= 16 {
			q = blk[2+k%16] >> 4
		}
		return f(blk) * float64(int(q)-8), 0
	case Q4_K:
		blk := row[j/256*144:]
		k := j % 256
		sc, mn := q4KScales(blk[4:16])
		sub := k / 32
		b := blk[16+32*(sub/2)+k%32]
		q := b & 0x0f
		if sub%2 == 1 {
			q = b >> 4
		}
		return f(blk) * float64(sc[sub]) * float64(q), f(blk[2:]) * float64(mn[sub])
	case Q6_K:
		blk := row[j/256*210:]
		k := j % 256
		return f(blk[208:]) * float64(int8(blk[192+k/16])) * float64(q6KValue(blk[0:128], blk[128:192], k)), 0
	case Q4_1, Q5_0, Q5_1:
		bb := map[Format]int{Q4_1: 20, Q5_0: 22, Q5_1: 24}[m.Format]
		blk := row[j/32*bb:]
		k := j % 32
		qs := blk[bb-16:]
		q := int(qs[k%16] & 0x0f)
		if k >= 16 {
			q = int(qs[k%16] >> 4)
		}
		if m.Format != Q4_1 {
			qh := binary.LittleEndian.Uint32(blk[bb-20:])
			q |= int(qh>>k&1) << 4
		}
		if m.Format == Q5_0 {
			q -= 16
		}
		return f(blk) * float64(q), 0
	case Q5_K:
		blk := row[j/256*176:]
		k := j % 256
		sc, mn := q4KScales(blk[4:16])
		sub, l := k/32, k%32
		b := blk[48+32*(sub/2)+l]
		q := int(b & 0x0f)
		if sub%2 == 1 {
			q = int(b >> 4)
		}
		q |= int(blk[16+l]>>sub&1) << 4
		return f(blk) * float64(sc[sub]) * float64(q), f(blk[2:]) * float64(mn[sub])
	}
	panic("format")
}

// ggmlOffset64 is the offset m of block b of row i of a Q4_1 or Q5_1
// matrix (0 for the other formats): w = d·q + m.
func ggmlOffset64(m *Matrix, i, b int) float64 {
	bb := map[Format]int{Q4_1: 20, Q5_1: 24}[m.Format]
	if bb == 0 {
		return 0
	}
	return float64(F16ToFloat32(binary.LittleEndian.Uint16(m.Blocks[i*m.rowBytes()+b*bb+2:])))
}

// refGGMLMatMul is the float64 oracle of a ggml matmul: x quantized by the
// kind's quantizer (tested on its own), widened exactly, times the exact
// weights. mag bounds the float32 rounding.
func refGGMLMatMul(m *Matrix, x []float32, T int) (ref, mag []float64) {
	ref = make([]float64, T*m.Rows)
	mag = make([]float64, T*m.Rows)
	cols := m.Cols
	xv := make([]float64, cols)
	q := make([]int8, cols)
	var xs []float32 // Q8_1 block sums
	for t := 0; t < T; t++ {
		xt := x[t*cols : (t+1)*cols]
		switch actKindFor(m) {
		case actQ8_0:
			d := make([]float32, cols/32)
			quantizeQ8_0Blocks(q, d, xt)
			for j := range xv {
				xv[j] = float64(q[j]) * float64(d[j/32])
			}
		case actQ8_K:
			d := make([]float32, cols/256)
			quantizeQ8_KBlocks(q, d, make([]int16, cols/16), xt)
			for j := range xv {
				xv[j] = float64(q[j]) * float64(d[j/256])
			}
		case actQ8_1:
			d := make([]float32, cols/32)
			xs = make([]float32, cols/32)
			quantizeQ8_1Blocks(q, d, xs, xt)
			for j := range xv {
				xv[j] = float64(q[j]) * float64(d[j/32])
			}
		}
		for i := 0; i < m.Rows; i++ {
			var s, a float64
			for j := 0; j < cols; j++ {
				pos, neg := ggmlExact64(m, i, j)
				s += (pos - neg) * xv[j]
				a += (math.Abs(pos) + math.Abs(neg)) * math.Abs(xv[j])
			}
			for b, sx := range xs { // Q4_1, Q5_1: m times the block's d·Σq
				off := ggmlOffset64(m, i, b)
				s += off * float64(sx)
				a += math.Abs(off * float64(sx))
			}
			ref[t*m.Rows+i], mag[t*m.Rows+i] = s, a
		}
	}
	return ref, mag
}

func newRandGGML(t testing.TB, rng *rand.Rand, typ GGMLType, rows, cols int) *Matrix {
	t.Helper()
	m, err := NewGGMLMatrix(typ, rows, cols, randGGML(t, rng, typ, rows, cols))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGGMLMatMulMatchesFloat64: every implementation's MatMul of every
// block type agrees with the float64 oracle to float32 rounding, for decode
// (T = 1) and prefill, on shapes with one and several blocks per row.
func TestGGMLMatMulMatchesFloat64(t *testing.T) {
	withImpl(t, func(t *testing.T, impl Impl) {
		rng := rand.New(rand.NewPCG(1, 2))
		pool := NewPool(3)
		defer pool.Close()
		for _, typ := range ggmlTypes {
			for _, sh := range [][3]int{{1, 256, 1}, {37, 512, 1}, {19, 768, 5}, {8, 1024, 2}} {
				rows, cols, T := sh[0], sh[1], sh[2]
				m := newRandGGML(t, rng, typ, rows, cols)
				x := make([]float32, T*cols)
				randF32(rng, x)
				out := make([]float32, T*rows)
				if err := MatMul(pool, out, x, m, T); err != nil {
					t.Fatal(err)
				}
				ref, mag := refGGMLMatMul(m, x, T)
				for k := range out {
					if d := math.Abs(float64(out[k]) - ref[k]); d > tol(cols, mag[k]) {
						t.Fatalf("%v (%d, %d) T=%d out[%d] = %g, float64 %g (|diff| %g > %g)", typ, rows, cols, T, k, out[k], ref[k], d, tol(cols, mag[k]))
					}
				}
			}
		}
	})
}

// TestGGMLMatMulDeterministic: the bits of every output are the same for
// any thread count and any T (token t of a batch equals its own matvec).
func TestGGMLMatMulDeterministic(t *testing.T) {
	withImpl(t, func(t *testing.T, impl Impl) {
		rng := rand.New(rand.NewPCG(3, 4))
		for _, typ := range append(ggmlTypes, TypeF16, TypeBF16) {
			rows, cols, T := 300, 512, 17 // T ≥ 16: the activations are converted on two threads too
			var m *Matrix
			if typ == TypeF16 || typ == TypeBF16 {
				raw := make([]byte, rows*cols*2)
				for i := 0; i < rows*cols; i++ {
					v := float32(rng.NormFloat64())
					h := F16FromFloat32(v)
					if typ == TypeBF16 {
						h = BF16FromFloat32(v)
					}
					binary.LittleEndian.PutUint16(raw[2*i:], h)
				}
				var err error
				if m, err = NewGGMLMatrix(typ, rows, cols, raw); err != nil {
					t.Fatal(err)
				}
			} else {
				m = newRandGGML(t, rng, typ, rows, cols)
			}
			x := make([]float32, T*cols)
			randF32(rng, x)
			var first []float32
			for _, threads := range []int{1, 2, 3} {
				pool := NewPool(threads)
				out := make([]float32, T*rows)
				if err := MatMul(pool, out, x, m, T); err != nil {
					t.Fatal(err)
				}
				pool.Close()
				if first == nil {
					first = out
					continue
				}
				for k := range out {
					if math.Float32bits(out[k]) != math.Float32bits(first[k]) {
						t.Fatalf("%v threads=%d out[%d] = %g, threads=1 gave %g", typ, threads, k, out[k], first[k])
					}
				}
			}
			for tok := 0; tok < T; tok++ {
				one := make([]float32, rows)
				if err := MatMul(nil, one, x[tok*cols:(tok+1)*cols], m, 1); err != nil {
					t.Fatal(err)
				}
				for i := range one {
					if math.Float32bits(one[i]) != math.Float32bits(first[tok*rows+i]) {
						t.Fatalf("%v token %d row %d: matvec %g, batch %g", typ, tok, i, one[i], first[tok*rows+i])
					}
				}
			}
		}
	})
}

// TestGGMLHalfActivations: ggml rounds activations to F16 (BF16) before an
// F16 (BF16) weight's dot product, so MatMul of a GGML half matrix equals
// the float64 dot product of the rounded values, and differs from the
// float32-activation result of the same bits without GGML.
func TestGGMLHalfActivations(t *testing.T) {
	withImpl(t, func(t *testing.T, impl Impl) {
		rng := rand.New(rand.NewPCG(5, 6))
		rows, cols := 16, 172 // stories260K's F16 ffn_down is 64×172
		for _, typ := range []GGMLType{TypeF16, TypeBF16} {
			raw := make([]byte, rows*cols*2)
			w64 := make([]float64, rows*cols)
			for i := range w64 {
				v := float32(rng.NormFloat64())
				var h uint16
				if typ == TypeF16 {
					h = F16FromFloat32(v)
					w64[i] = float64(F16ToFloat32(h))
				} else {
					h = BF16FromFloat32(v)
					w64[i] = float64(BF16ToFloat32(h))
				}
				binary.LittleEndian.PutUint16(raw[2*i:], h)
			}
			m, err := NewGGMLMatrix(typ, rows, cols, raw)
			if err != nil {
				t.Fatal(err)
			}
			x := make([]float32, cols)
			randF32(rng, x)
			out := make([]float32, rows)
			if err := MatMul(nil, out, x, m, 1); err != nil {
				t.Fatal(err)
			}
			plain := *m
			plain.GGML = false
			outPlain := make([]float32, rows)
			if err := MatMul(nil, outPlain, x, &plain, 1); err != nil {
				t.Fatal(err)
			}
			differ := false
			for i := 0; i < rows; i++ {
				var s, a float64
				for j, v := range x {
					xr := float64(F16ToFloat32(F16FromFloat32(v)))
					if typ == TypeBF16 {
						xr = float64(BF16ToFloat32(BF16FromFloat32(v)))
					}
					s += w64[i*cols+j] * xr
					a += math.Abs(w64[i*cols+j] * xr)
				}
				if d := math.Abs(float64(out[i]) - s); d > tol(cols, a) {
					t.Fatalf("%v row %d: %g, float64 of rounded activations %g", typ, i, out[i], s)
				}
				differ = differ || out[i] != outPlain[i]
			}
			if !differ {
				t.Errorf("%v: rounding the activations changed no output", typ)
			}
		}
	})
}

// TestQuantizeQ8_K checks the Q8_K activation quantizer's defining
// properties (gguf-py has no Q8_K): the largest |x| maps to ∓127 with d =
// 1/(−127/max), every q = round-half-even(x·(−127/max)) clamped to 127,
// bsums are the sums of 16, and a zero block is all zero.
func TestQuantizeQ8_K(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	x := make([]float32, 1024)
	randF32(rng, x)
	for j := 256; j < 512; j++ {
		x[j] = 0 // block 1: zeros
	}
	x[600] = -40 // block 2: a negative max
	x[800], x[801] = 3, -3
	for j := 768; j < 1024; j++ {
		if j != 800 && j != 801 {
			x[j] = float32(j%7) * 0.25
		}
	}
	q := make([]int8, len(x))
	d := make([]float32, 4)
	bs := make([]int16, 64)
	quantizeQ8_KBlocks(q, d, bs, x)
	for b := 0; b < 4; b++ {
		xx, qq := x[b*256:(b+1)*256], q[b*256:(b+1)*256]
		var mx float32
		for _, v := range xx {
			if abs32(v) > abs32(mx) {
				mx = v
			}
		}
		if mx == 0 {
			if d[b] != 0 {
				t.Errorf("zero block %d: d = %g", b, d[b])
			}
			for _, v := range qq {
				if v != 0 {
					t.Fatalf("zero block %d: q = %d", b, v)
				}
			}
		} else {
			iscale := -127 / mx
			if want := 1 / iscale; d[b] != want {
				t.Errorf("block %d: d = %g, want 1/(−127/%g) = %g", b, d[b], mx, want)
			}
			for j, v := range xx {
				want := int8(min(127, math.RoundToEven(float64(iscale*v))))
				if qq[j] != want {
					t.Fatalf("block %d value %d (x=%g): q = %d, want %d", b, j, v, qq[j], want)
				}
				// d·q reconstructs x to half a step.
				if e := math.Abs(float64(d[b])*float64(qq[j]) - float64(v)); e > math.Abs(float64(d[b]))*0.5001 {
					t.Fatalf("block %d value %d: |d·q − x| = %g > d/2", b, j, e)
				}
			}
		}
		for k := 0; k < 16; k++ {
			var s int
			for _, v := range qq[16*k : 16*k+16] {
				s += int(v)
			}
			if int(bs[b*16+k]) != s {
				t.Errorf("block %d bsum %d = %d, want %d", b, k, bs[b*16+k], s)
			}
		}
	}
	// The max element always maps to −127 (iscale = −127/max), whatever
	// its sign; of two equal magnitudes the first is the max, and the
	// other maps to +127.
	if q[600] != -127 || q[800] != -127 || q[801] != 127 {
		t.Errorf("max elements quantized to %d, %d, %d; want −127, −127, 127", q[600], q[800], q[801])
	}
}

func TestQuantizeQ8_0Blocks(t *testing.T) {
	x := make([]float32, 96)
	for j := range x[:32] {
		x[j] = float32(j) - 14.5 // amax 16.5 at j = 31
	}
	x[40] = float32(math.Inf(1))
	q := make([]int8, 96)
	d := make([]float32, 3)
	quantizeQ8_0Blocks(q, d, x)
	amax := float32(16.5)
	if q[31] != 127 || q[0] != -112 || d[0] != F16ToFloat32(F16FromFloat32(amax/127)) {
		t.Errorf("block 0: q[31] = %d, d = %g", q[31], d[0])
	}
	if !math.IsNaN(float64(d[1])) || q[40] != 0 {
		t.Errorf("block with +Inf: d = %g, q = %d; want NaN and 0", d[1], q[40])
	}
	if d[2] != 0 || q[64] != 0 {
		t.Errorf("zero block: d = %g, q = %d", d[2], q[64])
	}
}

func TestNewGGMLMatrixErrors(t *testing.T) {
	for _, c := range []struct {
		typ        GGMLType
		rows, cols int
		n          int
		want       string
	}{
		{TypeQ4_K, 2, 256, 287, "needs 288 bytes, data has 287"},
		{TypeQ4_K, 2, 256, 289, "needs 288 bytes, data has 289"},
		{TypeQ4_K, 2, 128, 144, "not a positive multiple of its block size 256"},
		{TypeQ8_0, 0, 32, 0, "must be positive"},
		{TypeQ8_0, -1, 32, 34, "must be positive"},
		{GGMLType(11), 1, 256, 110, "Q3_K is not supported"},
		{GGMLType(99), 1, 32, 20, "GGMLType(99) is not supported"},
		{TypeF16, 3, 5, 29, "needs 30 bytes"},
	} {
		_, err := NewGGMLMatrix(c.typ, c.rows, c.cols, make([]byte, c.n))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewGGMLMatrix(%v, %d, %d, %d bytes) = %v, want error containing %q", c.typ, c.rows, c.cols, c.n, err, c.want)
		}
	}
	if _, err := parseGGMLType("q3_k"); err == nil {
		t.Error("parseGGMLType(q3_k) accepted an unsupported type")
	}
	for _, typ := range SupportedGGMLTypes {
		if got, err := parseGGMLType(strings.ToLower(typ.String())); err != nil || got != typ {
			t.Errorf("parseGGMLType(%q) = %v, %v", typ.String(), got, err)
		}
	}
	// A Matrix whose Blocks were cut short fails Validate, so MatMul
	// returns an error instead of reading past them.
	m := newRandGGML(t, rand.New(rand.NewPCG(1, 1)), TypeQ6_K, 4, 512)
	m.Blocks = m.Blocks[:len(m.Blocks)-1]
	if err := MatMul(nil, make([]float32, 4), make([]float32, 512), m, 1); err == nil {
		t.Error("MatMul accepted a Q6_K matrix with truncated blocks")
	}
}

// TestGGMLZeroCopy: the matrix reads the caller's bytes in place, F16 and
// F32 included, and Bytes is the file's size.
func TestGGMLZeroCopy(t *testing.T) {
	raw := make([]byte, 4*64*2)
	m, err := NewGGMLMatrix(TypeF16, 4, 64, raw)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint16(raw[2*(64+3):], F16FromFloat32(1.5))
	row := make([]float32, 64)
	if err := m.Row(1, row); err != nil || row[3] != 1.5 || m.Bytes() != int64(len(raw)) {
		t.Errorf("F16 view: row[3] = %g (err %v), Bytes %d", row[3], err, m.Bytes())
	}
	q := randGGML(t, rand.New(rand.NewPCG(2, 2)), TypeQ4_K, 3, 512)
	mq, err := NewGGMLMatrix(TypeQ4_K, 3, 512, q)
	if err != nil {
		t.Fatal(err)
	}
	if &mq.Blocks[0] != &q[0] || mq.Bytes() != int64(len(q)) {
		t.Error("Q4_K matrix does not alias its data")
	}
}

// TestGGMLRowBlock: a row block of any format dequantizes to the same
// rows as the whole matrix.
func TestGGMLRowBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, typ := range ggmlTypes {
		m := newRandGGML(t, rng, typ, 10, 512)
		b, err := m.RowBlock(3, 4)
		if err != nil {
			t.Fatal(err)
		}
		whole, _ := m.Float32s()
		part, _ := b.Float32s()
		for k, v := range part {
			if math.Float32bits(v) != math.Float32bits(whole[3*512+k]) {
				t.Fatalf("%v row block value %d = %g, whole matrix %g", typ, k, v, whole[3*512+k])
			}
		}
		if _, err := m.RowBlock(8, 3); err == nil {
			t.Errorf("%v: RowBlock(8, 3) of 10 rows accepted", typ)
		}
	}
}

// TestF16RoundMatchesF16FromFloat32: the activation rounding's fast path
// agrees with the general conversion on every float32 exponent and on the
// boundaries of the fast range.
func TestF16RoundMatchesF16FromFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	check := func(b uint32) {
		v := math.Float32frombits(b)
		if got, want := f16RoundF32(v), F16ToFloat32(F16FromFloat32(v)); math.Float32bits(got) != math.Float32bits(want) && !math.IsNaN(float64(v)) {
			t.Fatalf("f16RoundF32(%g = %#08x) = %g, via F16FromFloat32 %g", v, b, got, want)
		}
	}
	for _, b := range []uint32{0x38800000, 0x387fffff, 0x477ff000, 0x477fefff, 0x477fe000, 0x3f800fff, 0x3f801000, 0x3f803000} {
		check(b)
		check(b | 0x80000000)
	}
	for i := 0; i < 1<<20; i++ {
		check(rng.Uint32())
	}
}

// abs32 is |v| by clearing the sign bit (the references' max |x|).
func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// TestBlockFormatsFollowTraits: the Format→type map derived from the traits
// table sends every block type's Format back to that type, and no plain or
// llama2.c format claims to hold ggml blocks.
func TestBlockFormatsFollowTraits(t *testing.T) {
	for _, typ := range SupportedGGMLTypes {
		f := ggmlTraits[typ].format
		got, ok := f.ggmlBlocks()
		if block := typ.BlockSize() > 1; ok != block || (block && got != typ) {
			t.Errorf("%v: format %v ggmlBlocks = %v, %v", typ, f, got, ok)
		}
	}
	for _, f := range []Format{F32, F16, BF16, Q8_0} {
		if typ, ok := f.ggmlBlocks(); ok {
			t.Errorf("format %v claims ggml blocks of %v", f, typ)
		}
	}
}
