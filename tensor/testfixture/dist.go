package testfixture

import (
	"math"
	"sort"
)

// TopPDist is the float64 reference of the distribution run.c's sampler
// draws from, written from its definition for the distribution tests of
// the sampler and of speculative decoding: p = softmax(logits/temperature);
// with topp in (0, 1), the most probable tokens up to and including the
// one where the cumulative probability first exceeds topp, renormalised
// (ties keep ascending token order), every other token 0.
func TopPDist(logits []float32, temperature, topp float64) []float64 {
	n := len(logits)
	p := make([]float64, n)
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = math.Max(mx, float64(v)/temperature)
	}
	var sum float64
	for i, v := range logits {
		p[i] = math.Exp(float64(v)/temperature - mx)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	if topp <= 0 || topp >= 1 {
		return p
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return p[idx[a]] > p[idx[b]] })
	q := make([]float64, n)
	var cum float64
	for _, i := range idx {
		q[i] = p[i]
		cum += p[i]
		if cum > topp {
			break
		}
	}
	for i := range q {
		q[i] /= cum
	}
	return q
}
