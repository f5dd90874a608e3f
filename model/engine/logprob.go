package engine

import (
	"math"
	"slices"
)

// logprobOf returns token tok's log-probability under row, the raw
// logits the sampler is given, with the top most likely tokens: the
// log-softmax accumulated in float64, so the figures do not depend on the
// summation order's float32 rounding.
func logprobOf(row []float32, tok, top int) TokenLogprob {
	hi := float64(row[0])
	for _, x := range row {
		hi = max(hi, float64(x))
	}
	var sum float64
	for _, x := range row {
		sum += math.Exp(float64(x) - hi)
	}
	lse := hi + math.Log(sum)
	lp := TokenLogprob{Token: tok, Logprob: float32(float64(row[tok]) - lse)}
	if top == 0 {
		return lp
	}
	lp.Top = make([]TopLogprob, 0, top+1)
	for id, x := range row {
		// Keep the top best seen so far, sorted: an insertion into a
		// list of at most MaxTopLogprobs+1 entries.
		if len(lp.Top) == top && x <= lp.Top[top-1].Logprob {
			continue
		}
		at, _ := slices.BinarySearchFunc(lp.Top, x, func(t TopLogprob, v float32) int {
			if t.Logprob >= v { // ties keep the lower id first
				return -1
			}
			return 1
		})
		lp.Top = slices.Insert(lp.Top, at, TopLogprob{Token: id, Logprob: x})
		if len(lp.Top) > top {
			lp.Top = lp.Top[:top]
		}
	}
	for i := range lp.Top {
		lp.Top[i].Logprob = float32(float64(lp.Top[i].Logprob) - lse)
	}
	return lp
}
