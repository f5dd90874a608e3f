package model

import (
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/stride-lm/stride/tensor/testfixture"
)

// chiSquare returns the statistic and degrees of freedom of counts
// against probabilities q over n draws, pooling cells expected below 5,
// and fails if a token of probability 0 was drawn.
func chiSquare(t *testing.T, counts []int, q []float64, n int) (float64, int) {
	t.Helper()
	var stat, poolE float64
	pooled, cells := 0, 0
	for i, c := range counts {
		e := q[i] * float64(n)
		if q[i] == 0 {
			if c != 0 {
				t.Fatalf("token %d has target probability 0 but was drawn %d times", i, c)
			}
			continue
		}
		if e < 5 {
			poolE += e
			pooled += c
			continue
		}
		stat += (float64(c) - e) * (float64(c) - e) / e
		cells++
	}
	if poolE > 0 {
		stat += (float64(pooled) - poolE) * (float64(pooled) - poolE) / poolE
		cells++
	}
	return stat, cells - 1
}

// TestVerifyDrawsFromTarget: whatever the draft (the most probable token,
// a middling one, one outside the top-p nucleus), the token Verify
// returns is distributed as Sample's target distribution (chi-square at
// p = 0.001 over 40000 seeded draws, deterministic), it accepts the draft
// exactly when it returns it, and at temperature 0 it is argmax.
func TestVerifyDrawsFromTarget(t *testing.T) {
	logits := []float32{1.2, -0.3, 2.0, 0.4, -1.5, 0.9, 0.0, 1.7}
	const n = 40000
	for _, tc := range []struct{ temp, topp float64 }{{1, 0}, {0.7, 0}, {1, 0.9}, {1, 0.5}, {0.8, 0.95}} {
		q := testfixture.TopPDist(logits, tc.temp, tc.topp)
		for _, draft := range []int{2, 5, 4} {
			s := NewSampler(len(logits), float32(tc.temp), float32(tc.topp), 12345+uint64(draft))
			counts := make([]int, len(logits))
			acc := 0
			buf := make([]float32, len(logits))
			for i := 0; i < n; i++ {
				copy(buf, logits)
				tok, ok := s.Verify(buf, draft)
				if ok != (tok == draft) {
					t.Fatalf("Verify returned %d with accepted=%v for draft %d", tok, ok, draft)
				}
				if ok {
					acc++
				}
				counts[tok]++
			}
			stat, df := chiSquare(t, counts, q, n)
			crit := distuv.ChiSquared{K: float64(df)}.Quantile(0.999)
			t.Logf("T=%g topp=%g draft %d: q(draft)=%.4f accepted %.4f, chi2 %.1f (df %d, critical %.1f)",
				tc.temp, tc.topp, draft, q[draft], float64(acc)/n, stat, df, crit)
			if stat > crit {
				t.Errorf("T=%g topp=%g draft %d: chi-square %.1f > %.1f: counts %v, target %v", tc.temp, tc.topp, draft, stat, crit, counts, q)
			}
		}
	}
	g := NewSampler(len(logits), 0, 0.9, 1)
	for _, d := range []int{2, 3} {
		tok, ok := g.Verify(append([]float32(nil), logits...), d)
		if tok != 2 || ok != (d == 2) {
			t.Fatalf("greedy Verify(draft %d) = %d, %v; want 2, %v", d, tok, ok, d == 2)
		}
	}
}

// TestVerifyAppliesFilters: with logit filters set, Verify's target is
// Sample's filtered distribution (the float64 reference refFilter, then
// softmax and top-p): a removed draft is never accepted, no removed
// token is drawn (chi-square at p = 0.001 as above), and at temperature
// 0 the repeat penalty, fed the tokens Verify returns, moves the argmax
// exactly as it moves Sample's.
func TestVerifyAppliesFilters(t *testing.T) {
	logits := []float32{1.2, -0.3, 2.0, 0.4, -1.5, 0.9, 0.0, 1.7}
	l64 := make([]float64, len(logits))
	for i, v := range logits {
		l64[i] = float64(v)
	}
	const n = 40000
	for _, f := range []Filters{{TopK: 3}, {MinP: 0.3}} {
		ref := refFilter(l64, f, nil)
		r32 := make([]float32, len(ref))
		for i, v := range ref {
			r32[i] = float32(v)
		}
		for _, tc := range []struct{ temp, topp float64 }{{1, 0}, {0.8, 0.9}} {
			q := testfixture.TopPDist(r32, tc.temp, tc.topp)
			for _, draft := range []int{2, 5, 4} {
				s := NewSampler(len(logits), float32(tc.temp), float32(tc.topp), 99+uint64(draft))
				s.SetFilters(f)
				counts := make([]int, len(logits))
				buf := make([]float32, len(logits))
				for i := 0; i < n; i++ {
					copy(buf, logits)
					tok, ok := s.Verify(buf, draft)
					if ok != (tok == draft) {
						t.Fatalf("%+v: Verify returned %d with accepted=%v for draft %d", f, tok, ok, draft)
					}
					counts[tok]++
				}
				stat, df := chiSquare(t, counts, q, n)
				if crit := (distuv.ChiSquared{K: float64(df)}).Quantile(0.999); stat > crit {
					t.Errorf("%+v T=%g topp=%g draft %d: chi-square %.1f > %.1f: counts %v, target %v",
						f, tc.temp, tc.topp, draft, stat, crit, counts, q)
				}
			}
		}
	}

	pen := Filters{RepeatPenalty: 1.5, RepeatLastN: -1}
	g := NewSampler(len(logits), 0, 0, 1)
	g.SetFilters(pen)
	g.Accept(2)
	history := []int{2}
	for step, draft := range []int{2, 2, 7} {
		want := argmax64(refFilter(l64, pen, history))
		tok, ok := g.Verify(append([]float32(nil), logits...), draft)
		if tok != want || ok != (draft == want) {
			t.Fatalf("step %d: greedy Verify(draft %d) with history %v = %d, %v; want %d, %v",
				step, draft, history, tok, ok, want, draft == want)
		}
		history = append(history, tok)
	}
}

// argmax64 is the first index of the largest value.
func argmax64(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// TestVerifyAllocatesNothing: Verify, like Sample, runs without
// allocating, with and without top-p.
func TestVerifyAllocatesNothing(t *testing.T) {
	logits := make([]float32, 512)
	for i := range logits {
		logits[i] = float32(i%17) / 5
	}
	for _, topp := range []float32{0, 0.9} {
		s := NewSampler(512, 1, topp, 7)
		buf := make([]float32, 512)
		if a := testing.AllocsPerRun(50, func() { copy(buf, logits); s.Verify(buf, 3) }); a != 0 {
			t.Fatalf("topp %v: Verify allocates %v times", topp, a)
		}
	}
}

// TestVerifyIsSample: Verify draws the token Sample would, coin for coin,
// so a run that verifies drafts at some positions and samples at others
// returns the tokens of a run that only samples, with the same seed,
// whatever the drafts (right, wrong, or outside the nucleus), with and
// without top-p and filters.
func TestVerifyIsSample(t *testing.T) {
	logits := []float32{1.2, -0.3, 2.0, 0.4, -1.5, 0.9, 0.0, 1.7}
	for _, tc := range []struct {
		temp, topp float32
		f          Filters
	}{{1, 0, Filters{}}, {0.8, 0.9, Filters{}}, {1, 0.9, Filters{TopK: 3, RepeatPenalty: 1.3, RepeatLastN: 4}}, {0, 0, Filters{}}} {
		plain, spec := NewSampler(len(logits), tc.temp, tc.topp, 77), NewSampler(len(logits), tc.temp, tc.topp, 77)
		plain.SetFilters(tc.f)
		spec.SetFilters(tc.f)
		accepted, rejected := 0, 0
		for i := 0; i < 2000; i++ {
			a := append([]float32(nil), logits...)
			want := plain.Sample(a)
			b := append([]float32(nil), logits...)
			var got int
			if i%3 == 0 {
				got = spec.Sample(b)
			} else {
				draft := (i * 5) % len(logits)
				var ok bool
				got, ok = spec.Verify(b, draft)
				if ok != (got == draft) {
					t.Fatalf("Verify returned %d, accepted=%v for draft %d", got, ok, draft)
				}
				if ok {
					accepted++
				} else {
					rejected++
				}
			}
			if got != want {
				t.Fatalf("T=%v topp=%v %+v: step %d: %d, plain sampling %d", tc.temp, tc.topp, tc.f, i, got, want)
			}
		}
		if tc.temp > 0 && (accepted == 0 || rejected == 0) {
			t.Fatalf("T=%v: %d accepted, %d rejected: both must occur", tc.temp, accepted, rejected)
		}
	}
}
