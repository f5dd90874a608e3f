package loadgen

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// The gaps of a seeded run have the mean 1/rate and the coefficient of
// variation 1/√burstiness the gamma process promises, for Poisson, bursty
// and regular shapes (20,000 gaps: the sampling error of the mean is
// about CV/√n < 1%, so 3% bounds hold for any seed but a rare one, and
// this seed is fixed).
func TestArrivalsGammaMoments(t *testing.T) {
	const n = 20001
	for _, c := range []struct{ rate, burst float64 }{{4, 1}, {10, 0.25}, {2, 4}, {100, 0.5}} {
		at := Arrivals(n, c.rate, c.burst, rand.New(rand.NewPCG(1, 2)))
		if at[0] != 0 {
			t.Errorf("first request at %v, want 0", at[0])
		}
		gaps := make([]float64, n-1)
		for i := 1; i < n; i++ {
			gaps[i-1] = (at[i] - at[i-1]).Seconds()
			if gaps[i-1] < 0 {
				t.Fatal("arrivals go back in time")
			}
		}
		mean, sd := Mean(gaps), Std(gaps)
		if want := 1 / c.rate; math.Abs(mean-want)/want > 0.03 {
			t.Errorf("rate %v burstiness %v: mean gap %v, want %v", c.rate, c.burst, mean, want)
		}
		if want := 1 / math.Sqrt(c.burst); math.Abs(sd/mean-want)/want > 0.05 {
			t.Errorf("rate %v burstiness %v: CV %v, want %v", c.rate, c.burst, sd/mean, want)
		}
	}
}

// An infinite rate sends everything at once; a seed repeats its times.
func TestArrivalsInfAndSeeded(t *testing.T) {
	for _, d := range Arrivals(5, math.Inf(1), 1, rand.New(rand.NewPCG(1, 1))) {
		if d != 0 {
			t.Fatalf("inf rate: %v", d)
		}
	}
	a := Arrivals(50, 3, 1, rand.New(rand.NewPCG(7, 0)))
	b := Arrivals(50, 3, 1, rand.New(rand.NewPCG(7, 0)))
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("the same seed gave other times")
		}
	}
	if a[49] < time.Second {
		t.Errorf("50 requests at 3/s end at %v", a[49])
	}
}

// Gamma's sample mean and variance for shapes below and above 1 against
// shape·scale and shape·scale².
func TestGammaMoments(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ shape, scale float64 }{{0.3, 2}, {1, 1}, {5, 0.1}} {
		xs := make([]float64, 40000)
		for i := range xs {
			xs[i] = Gamma(rng, c.shape, c.scale)
		}
		m, sd := Mean(xs), Std(xs)
		if want := c.shape * c.scale; math.Abs(m-want)/want > 0.03 {
			t.Errorf("shape %v: mean %v, want %v", c.shape, m, want)
		}
		if want := c.shape * c.scale * c.scale; math.Abs(sd*sd-want)/want > 0.08 {
			t.Errorf("shape %v: variance %v, want %v", c.shape, sd*sd, want)
		}
	}
}
