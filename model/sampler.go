package model

import (
	"cmp"
	"math"
	"slices"
)

// Sampler picks the next token from a vector of logits exactly as llama2.c's
// run.c does: greedy argmax at temperature 0, otherwise a softmax of
// logits/temperature sampled with one xorshift64* coin per token, either
// over the whole vocabulary or over the top-p nucleus. A Sampler holds the
// RNG state, so it is not safe for concurrent use: give each sequence its own.
type Sampler struct {
	vocab       int
	temperature float32
	topp        float32
	state       uint64       // xorshift64* state; 0 stays 0 forever, as in run.c
	cand        []probIdx    // preallocated top-p candidates, so Sample never allocates
	filt        *filterState // the logit filters (sampler_filters.go); nil = run.c's chain only
}

// probIdx is run.c's ProbIndex: a probability and the token it belongs to.
type probIdx struct {
	prob  float32
	index int
}

// NewSampler returns a sampler for a vocabulary of vocab tokens.
//
// temperature 0 means greedy decoding. topp in (0, 1) enables nucleus
// sampling; topp <= 0 or >= 1 samples from the full distribution. seed is
// the initial RNG state, exactly run.c's rng_seed: the same seed gives the
// same tokens as `run -s seed`. A seed of 0 is a fixed point of xorshift (the
// coin is then always 0); run.c replaces seeds <= 0 by time(NULL), so callers
// wanting run.c's default should pick a seed themselves.
func NewSampler(vocab int, temperature, topp float32, seed uint64) *Sampler {
	return &Sampler{vocab: vocab, temperature: temperature, topp: topp, state: seed,
		cand: make([]probIdx, max(vocab, 0))}
}

// randomU32 is run.c's random_u32: xorshift64* (shifts 12, 25, 27 and the
// multiplier 0x2545F4914F6CDD1D), keeping the high 32 bits of the product.
func (s *Sampler) randomU32() uint32 {
	s.state ^= s.state >> 12
	s.state ^= s.state << 25
	s.state ^= s.state >> 27
	return uint32((s.state * 0x2545F4914F6CDD1D) >> 32)
}

// randomF32 is run.c's random_f32: the top 24 bits of a draw over 2^24,
// a float32 in [0, 1) with every value exactly representable.
func (s *Sampler) randomF32() float32 {
	return float32(s.randomU32()>>8) / 16777216.0
}

// Sample returns the next token for logits (length vocab). Like run.c it
// works in place: at temperature > 0 logits is overwritten with the
// probabilities softmax(logits/temperature). It does not allocate (with a
// repeat penalty, SetFilters' history grows amortized, like an append).
// An empty logits vector yields 0.
func (s *Sampler) Sample(logits []float32) int {
	n := min(len(logits), s.vocab)
	if n <= 0 {
		return 0
	}
	logits = logits[:n]
	if s.filt == nil {
		return s.sample(logits)
	}
	s.filt.apply(logits)
	tok := s.sample(logits)
	if s.temperature != 0 {
		tok = survivor(logits, tok)
	}
	s.filt.record(tok)
	return tok
}

// sample is run.c's chain: argmax at temperature 0, else temperature,
// softmax, and a multinomial or top-p draw.
func (s *Sampler) sample(logits []float32) int {
	if s.temperature == 0 {
		return argmax(logits)
	}
	s.probs(logits)
	coin := s.randomF32()
	if s.topp <= 0 || s.topp >= 1 {
		return sampleMult(logits, coin)
	}
	return s.sampleTopP(logits, coin)
}

// argmax returns the index of the largest value, the first one on ties
// (run.c compares with >).
func argmax(p []float32) int {
	best, bestV := 0, p[0]
	for i := 1; i < len(p); i++ {
		if p[i] > bestV {
			best, bestV = i, p[i]
		}
	}
	return best
}

// softmax is run.c's softmax in float32: subtract the max for stability,
// exponentiate, sum left to right, divide.
func softmax(x []float32) {
	maxV := x[0]
	for _, v := range x[1:] {
		if v > maxV {
			maxV = v
		}
	}
	var sum float32
	for i, v := range x {
		e := float32(math.Exp(float64(v - maxV)))
		x[i] = e
		sum += e
	}
	for i := range x {
		x[i] /= sum
	}
}

// sampleMult is run.c's sample_mult: the first index whose running
// cumulative probability exceeds coin (the last index if rounding leaves
// the total below coin).
func sampleMult(p []float32, coin float32) int {
	var cdf float32
	for i, v := range p {
		cdf += v
		if coin < cdf {
			return i
		}
	}
	return len(p) - 1
}

// sampleTopP is run.c's sample_topp. Tokens with p < (1-topp)/(n-1) cannot
// be in the nucleus (the n-1 others would then sum to more than topp), so
// they are dropped before sorting; the survivors are sorted by probability,
// descending, and cut just after the cumulative sum first exceeds topp; the
// coin is scaled to that truncated mass.
//
// run.c sorts with qsort, which is not stable, so among equal probabilities
// its order is unspecified; this sort is stable (equal probabilities keep
// ascending token order). The two can differ only when a tie straddles the
// sampled point. When no token passes the cutoff (a near-uniform
// distribution and a topp below 1/n, where run.c reads out of bounds) the
// most probable token is returned.
func (s *Sampler) sampleTopP(p []float32, coin float32) int {
	cand, mass := s.nucleus(p)
	r := coin * mass
	var cdf float32
	for _, c := range cand {
		cdf += c.prob
		if r < cdf {
			return c.index
		}
	}
	return cand[len(cand)-1].index
}

// Verify checks one speculative draft token against the target logits of
// its position and returns the token to append and whether it is the
// draft. It samples the position's token exactly as Sample does, with the
// same coin, and accepts the draft when the two agree.
//
// For a draft whose own probability is 1 (an n-gram draft) this is vLLM's
// rejection sampler in distribution: the draft d is accepted with
// probability q(d), and on rejection the token is distributed as q with d
// removed and renormalised, where q is Sample's target (softmax of
// logits/temperature, cut to the top-p nucleus when top-p is on, after
// the filters of SetFilters). The two-coin form (accept on u < q(d), then
// draw again from the rest) has the same distribution but spends a coin
// more on each rejection; sampling and comparing spends one coin per token
// kept, as plain decoding does, so a speculative run's sampled tokens are
// those of the same seed without speculation, whatever was drafted. At
// temperature 0 both are the argmax. Like Sample it overwrites logits with
// probabilities at temperature > 0 and does not allocate.
func (s *Sampler) Verify(logits []float32, draft int) (token int, accepted bool) {
	token = s.Sample(logits)
	return token, token == draft
}

// probs turns logits into run.c's probabilities in place:
// p = softmax(logits/temperature), in float32.
func (s *Sampler) probs(logits []float32) {
	for i := range logits {
		logits[i] /= s.temperature
	}
	softmax(logits)
}

// nucleus returns the top-p nucleus of probabilities p, the candidates
// sampleTopP draws from: the tokens that pass the
// cutoff, stable-sorted by descending probability, cut just after the
// cumulative sum first exceeds topp; and its mass. When no token passes
// the cutoff the nucleus is the most probable token alone. It reuses
// s.cand, so it does not allocate.
func (s *Sampler) nucleus(p []float32) ([]probIdx, float32) {
	n := len(p)
	if n == 1 {
		s.cand = append(s.cand[:0], probIdx{p[0], 0})
		return s.cand, p[0]
	}
	cutoff := (1 - s.topp) / float32(n-1)
	cand := s.cand[:0]
	for i, v := range p {
		if v >= cutoff {
			cand = append(cand, probIdx{v, i})
		}
	}
	if len(cand) == 0 {
		a := argmax(p)
		cand = append(cand, probIdx{p[a], a})
		return cand, p[a]
	}
	slices.SortStableFunc(cand, func(a, b probIdx) int { return cmp.Compare(b.prob, a.prob) })
	var cum float32
	last := len(cand) - 1
	for i, c := range cand {
		cum += c.prob
		if cum > s.topp {
			last = i
			break
		}
	}
	return cand[:last+1], cum
}
