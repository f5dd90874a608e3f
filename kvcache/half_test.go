package kvcache

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// TestF16BitsMatchesTensor compares the branch-free conversion with the
// tensor package's (x448/float16, verified on all 2^32 inputs by its
// author) on every exponent × a spread of mantissas, the rounding edge
// patterns, and a million random bit patterns.
func TestF16BitsMatchesTensor(t *testing.T) {
	try := func(u uint32) {
		f := math.Float32frombits(u)
		if got, want := f16Bits(f), tensor.F16Bits(f); got != want {
			t.Fatalf("f16Bits(%#08x = %g) = %#04x, want %#04x", u, f, got, want)
		}
	}
	edges := []uint32{0, 1, 0xfff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x2fff, 0x3000, 0x3001, 0x7fe000, 0x7fefff, 0x7ff000, 0x7fffff}
	for sign := uint32(0); sign < 2; sign++ {
		for exp := uint32(0); exp < 256; exp++ {
			for _, m := range edges {
				try(sign<<31 | exp<<23 | m)
			}
			for m := uint32(0); m < 1<<23; m += 4099 {
				try(sign<<31 | exp<<23 | m)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	n := 1 << 20
	if testing.Short() {
		n = 1 << 16
	}
	for range n {
		try(r.Uint32())
	}
}

// BenchmarkF16Convert compares the per-element converter with the
// branch-free row converter on random activations.
func BenchmarkF16Convert(b *testing.B) {
	src := make([]float32, 1<<16)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range src {
		src[i] = float32(r.NormFloat64())
	}
	dst := make([]uint16, len(src))
	b.Run("tensor.F16Bits", func(b *testing.B) {
		b.SetBytes(int64(len(src) * 2))
		for b.Loop() {
			for i, f := range src {
				dst[i] = tensor.F16Bits(f)
			}
		}
	})
	b.Run("f16Row", func(b *testing.B) {
		b.SetBytes(int64(len(src) * 2))
		for b.Loop() {
			f16Row(dst, src, 0, 1)
		}
	})
}

// f16Bits converts one float32 with f16Row (for tests).
func f16Bits(f float32) uint16 {
	var out [1]uint16
	f16Row(out[:], []float32{f}, 0, 1)
	return out[0]
}
