package attention

import (
	"fmt"
	"math"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// A prefill that resumes at a multiple of PrefillAlignment (the first h
// positions already cached, as after a prefix hit) computes its rows bit
// for bit as the prefill of the whole prompt does, on both paths, for
// MHA, GQA and MQA heads, F32 and 16-bit caches, a prompt ending in a
// short tile and one ending in a tile of a few tokens. This is what lets the
// scheduler promise that a prefix hit changes no logit.
func TestPrefillResumedAtAlignmentIsBitIdentical(t *testing.T) {
	for _, hc := range []struct{ H, KVH, D int }{{4, 4, 8}, {4, 2, 16}, {8, 1, 8}} {
		for _, dt := range []tensor.DType{tensor.F32, tensor.BF16} {
			for _, mk := range []func() Path{func() Path { return NewFused(Options{}) }, func() Path { return NewNaive(Options{}) }} {
				p := mk()
				align := p.(interface{ PrefillAlignment(h, kvh int) int }).PrefillAlignment(hc.H, hc.KVH)
				for _, L := range []int{2*align + 1, 3*align + 2} {
					name := fmt.Sprintf("%s/H%d-KVH%d/%v/L%d", p.Name(), hc.H, hc.KVH, dt, L)
					t.Run(name, func(t *testing.T) {
						whole := prefillRows(t, mk(), hc.H, hc.KVH, hc.D, dt, L, 0)
						resumed := prefillRows(t, mk(), hc.H, hc.KVH, hc.D, dt, L, align)
						whole = whole[align*hc.H*hc.D:]
						for i := range resumed {
							if math.Float32bits(resumed[i]) != math.Float32bits(whole[i]) {
								t.Fatalf("row %d col %d: resumed at %d gives %v, whole prompt %v",
									align+i/(hc.H*hc.D), i%(hc.H*hc.D), align, resumed[i], whole[i])
							}
						}
					})
				}
			}
		}
	}
}

// prefillRows computes attention for an L-token prompt whose first h
// positions are written to the cache by an earlier step, and returns the
// outputs of rows h … L−1 of the final step.
func prefillRows(t *testing.T, p Path, H, KVH, D int, dt tensor.DType, L, h int) []float32 {
	t.Helper()
	const bs = 4
	q := tensor.Must(tensor.Randn(nil, tensor.F32, 1, L, H, D))
	k := tensor.Must(tensor.Randn(nil, tensor.F32, 2, L, KVH, D))
	v := tensor.Must(tensor.Randn(nil, tensor.F32, 3, L, KVH, D))
	nb := (L + bs - 1) / bs
	kc := tensor.Must(tensor.Zeros(nil, dt, nb, bs, KVH, D))
	vc := tensor.Must(tensor.Zeros(nil, dt, nb, bs, KVH, D))
	step := func(from, to int) *tensor.Tensor {
		b, _, err := NewLinearBatch([]int{to - from}, []int{to}, bs)
		if err != nil {
			t.Fatal(err)
		}
		rows := func(x *tensor.Tensor) *tensor.Tensor { return tensor.Must(x.Narrow(0, from, to-from)) }
		out, err := p.Attend(rows(q), rows(k), rows(v), kc, vc, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if h > 0 {
		step(0, h)
	}
	out, err := step(h, L).Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), out...)
}
