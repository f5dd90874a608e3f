package loadgen

import (
	"math"
	"math/rand/v2"
	"time"
)

// Gamma draws one sample of the gamma distribution of the given shape
// and scale (mean shape·scale, variance shape·scale²) with Marsaglia and
// Tsang's method; shape < 1 uses the boost Gamma(shape+1)·U^(1/shape).
// shape and scale must be > 0.
func Gamma(rng *rand.Rand, shape, scale float64) float64 {
	if shape < 1 {
		u := rng.Float64()
		for u == 0 {
			u = rng.Float64()
		}
		return Gamma(rng, shape+1, scale) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v * scale
		}
	}
}

// Arrivals returns the send times of n requests, as offsets from the
// start of the run, drawn as vLLM draws them: the gaps between requests
// are gamma distributed with shape burstiness and mean 1/rate seconds,
// so burstiness 1 is a Poisson process, a smaller one burstier and a
// larger one more regular (the gaps' coefficient of variation is
// 1/√burstiness). The first request is sent at 0, as in vLLM, and an
// infinite rate sends every request at 0. rate and burstiness must be > 0.
func Arrivals(n int, rate, burstiness float64, rng *rand.Rand) []time.Duration {
	out := make([]time.Duration, n)
	if math.IsInf(rate, 1) {
		return out
	}
	theta := 1 / (rate * burstiness)
	var t float64
	for i := 1; i < n; i++ {
		t += Gamma(rng, burstiness, theta)
		out[i] = time.Duration(t * float64(time.Second))
	}
	return out
}
