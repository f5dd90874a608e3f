package model

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"testing"
)

// refFilter states the filters in float64, from their definitions
// (llama.cpp's penalties, top_k and min_p samplers), independently of
// the float32 code: the penalty over the distinct tokens of the last n
// of history, top-k by a full sort (ties to the lower id), min-p as
// exp(l - max) >= p.
func refFilter(logits []float64, f Filters, history []int) []float64 {
	out := append([]float64(nil), logits...)
	if f.RepeatPenalty != 1 && f.RepeatPenalty != 0 && f.RepeatLastN != 0 {
		recent := history
		if f.RepeatLastN > 0 && len(recent) > f.RepeatLastN {
			recent = recent[len(recent)-f.RepeatLastN:]
		}
		seen := map[int]bool{}
		for _, t := range recent {
			if seen[t] {
				continue
			}
			seen[t] = true
			if out[t] <= 0 {
				out[t] *= float64(f.RepeatPenalty)
			} else {
				out[t] /= float64(f.RepeatPenalty)
			}
		}
	}
	if f.TopK > 0 && f.TopK < len(out) {
		idx := make([]int, len(out))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return out[idx[a]] > out[idx[b]] })
		for _, i := range idx[f.TopK:] {
			out[i] = math.Inf(-1)
		}
	}
	if f.MinP > 0 {
		mx := math.Inf(-1)
		for _, v := range out {
			mx = math.Max(mx, v)
		}
		for i, v := range out {
			if math.Exp(v-mx) < float64(f.MinP) {
				out[i] = math.Inf(-1)
			}
		}
	}
	return out
}

// filtered returns the ids a filtered vector keeps.
func kept(l []float32) []int {
	var ids []int
	for i, v := range l {
		if !math.IsInf(float64(v), -1) {
			ids = append(ids, i)
		}
	}
	return ids
}

func TestFiltersHandComputed(t *testing.T) {
	ninf := float32(math.Inf(-1))
	for _, tc := range []struct {
		name    string
		f       Filters
		history []int
		logits  []float32
		want    []float32
	}{
		{"topk keeps the two largest", Filters{TopK: 2}, nil,
			[]float32{1, 3, 2, 0.5}, []float32{ninf, 3, 2, ninf}},
		{"topk ties go to the lower id", Filters{TopK: 2}, nil,
			[]float32{5, 5, 5, 1}, []float32{5, 5, ninf, ninf}},
		{"topk tie at the boundary", Filters{TopK: 3}, nil,
			[]float32{1, 3, 2, 3, 2}, []float32{ninf, 3, 2, 3, ninf}},
		{"topk 1 is the argmax", Filters{TopK: 1}, nil,
			[]float32{-1, -0.5, -2}, []float32{ninf, -0.5, ninf}},
		// p relative to the max: 1, 0.2, 0.05; min-p 0.1 keeps the first two.
		{"minp", Filters{MinP: 0.1}, nil,
			[]float32{2, 2 + float32(math.Log(0.2)), 2 + float32(math.Log(0.05))},
			[]float32{2, 2 + float32(math.Log(0.2)), ninf}},
		// Positive logits are divided, negative ones multiplied, once per
		// distinct token however often it repeats.
		{"penalty", Filters{RepeatPenalty: 2, RepeatLastN: 64}, []int{0, 0, 1, 0},
			[]float32{4, -1, 3}, []float32{2, -2, 3}},
		{"penalty window", Filters{RepeatPenalty: 2, RepeatLastN: 1}, []int{1, 0},
			[]float32{4, -1, 3}, []float32{2, -1, 3}},
		{"penalty whole history", Filters{RepeatPenalty: 4, RepeatLastN: -1}, []int{2, 1, 0, 0},
			[]float32{4, -1, 3}, []float32{1, -4, 0.75}},
		// Order: the penalty first, then top-k sees the penalized logits.
		{"penalty then topk", Filters{RepeatPenalty: 4, RepeatLastN: 8, TopK: 1}, []int{0},
			[]float32{4, -1, 3}, []float32{ninf, ninf, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSampler(len(tc.logits), 0, 0, 1)
			s.SetFilters(tc.f)
			s.Accept(tc.history...)
			l := append([]float32(nil), tc.logits...)
			s.filt.apply(l)
			for i := range l {
				if l[i] != tc.want[i] {
					t.Fatalf("filtered %v, want %v", l, tc.want)
				}
			}
		})
	}
}

func TestFiltersOffLeaveRunCChain(t *testing.T) {
	for _, f := range []Filters{{}, {TopK: 50}, {TopK: -3}, {RepeatPenalty: 1, RepeatLastN: 64}, {RepeatPenalty: 1.3}} {
		s := NewSampler(50, 1, 0.9, 3)
		s.SetFilters(f)
		if s.filt != nil {
			t.Errorf("%+v: filters active, want run.c's chain untouched", f)
		}
	}
}

func TestGreedyRepeatPenaltyAvoidsRepeat(t *testing.T) {
	// Token 0 is always the largest logit; with a penalty of 3 over the
	// last 2 tokens, greedy decoding alternates as the penalty says.
	s := NewSampler(3, 0, 0, 1)
	s.SetFilters(Filters{RepeatPenalty: 3, RepeatLastN: 2})
	var got []int
	for i := 0; i < 6; i++ {
		got = append(got, s.Sample([]float32{6, 4, 1}))
	}
	// Window [] → 0; [0]: 6/3=2 < 4 → 1; [0 1]: 2 > 4/3 → 0; [1 0]: the
	// same → 0; [0 0]: only 0 penalized, 2 < 4 → 1; [0 1] → 0.
	want := []int{0, 1, 0, 0, 1, 0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("greedy with penalty: %v, want %v", got, want)
	}
}

func TestFiltersMatchFloat64Reference(t *testing.T) {
	const vocab, steps = 50, 2000
	rnd := rand.New(rand.NewPCG(7, 8))
	for _, cfg := range []struct {
		temp, topp float64
		f          Filters
	}{
		{1, 0, Filters{TopK: 10}},
		{0.8, 0.9, Filters{TopK: 20, MinP: 0.05}},
		{1.2, 0, Filters{MinP: 0.1}},
		{0.7, 0.95, Filters{RepeatPenalty: 1.3, RepeatLastN: 16}},
		{1, 0.9, Filters{RepeatPenalty: 1.1, RepeatLastN: -1, TopK: 40, MinP: 0.02}},
	} {
		t.Run(fmt.Sprintf("T%g_p%g_%+v", cfg.temp, cfg.topp, cfg.f), func(t *testing.T) {
			const seed = 99
			s := NewSampler(vocab, float32(cfg.temp), float32(cfg.topp), seed)
			s.SetFilters(cfg.f)
			prompt := []int{1, 5, 5, 7}
			s.Accept(prompt...)
			history := append([]int(nil), prompt...)
			ref := &bigRNG{new(big.Int).SetUint64(seed)}
			logits := make([]float32, vocab)
			l64 := make([]float64, vocab)
			skipped := 0
			for step := 0; step < steps; step++ {
				for i := range logits {
					logits[i] = float32(rnd.NormFloat64() * 3)
					l64[i] = float64(logits[i])
				}
				// The filtered set, before run.c's chain: exactly the reference's,
				// except where min-p's boundary is too close to call in float32.
				probe := append([]float32(nil), logits...)
				s.filt.apply(probe)
				wantL := refFilter(l64, cfg.f, history)
				if !nearMinPBoundary(wantL, l64, cfg.f, history) {
					for i := range probe {
						if math.IsInf(float64(probe[i]), -1) != math.IsInf(wantL[i], -1) {
							t.Fatalf("step %d: kept %v, reference keeps %v", step, kept(probe), keptF64(wantL))
						}
						if !math.IsInf(wantL[i], -1) && math.Abs(float64(probe[i])-wantL[i]) > 1e-6*math.Max(1, math.Abs(wantL[i])) {
							t.Fatalf("step %d: logit %d = %v, reference %v", step, i, probe[i], wantL[i])
						}
					}
				}
				got := s.Sample(logits)
				want, margin := refSample(wantL, cfg.temp, cfg.topp, ref)
				history = append(history, got)
				if math.IsInf(wantL[got], -1) {
					t.Fatalf("step %d: sampled %d, which the filters removed", step, got)
				}
				if margin < 1e-5 || nearMinPBoundary(wantL, l64, cfg.f, history[:len(history)-1]) {
					skipped++ // both keep the sampler's token as history
					continue
				}
				if got != want {
					t.Fatalf("step %d: sampled %d, float64 reference %d (margin %g)", step, got, want, margin)
				}
			}
			if skipped > steps/50 {
				t.Fatalf("%d of %d draws too close to call", skipped, steps)
			}
		})
	}
}

// nearMinPBoundary reports whether some token's relative probability is
// within float32 rounding of the min-p threshold.
func nearMinPBoundary(_ []float64, l64 []float64, f Filters, history []int) bool {
	if f.MinP <= 0 {
		return false
	}
	pre := refFilter(l64, Filters{RepeatPenalty: f.RepeatPenalty, RepeatLastN: f.RepeatLastN, TopK: f.TopK}, history)
	mx := math.Inf(-1)
	for _, v := range pre {
		mx = math.Max(mx, v)
	}
	cut := math.Log(float64(f.MinP))
	for _, v := range pre {
		if !math.IsInf(v, -1) && math.Abs((v-mx)-cut) < 1e-5 {
			return true
		}
	}
	return false
}

func keptF64(l []float64) []int {
	var ids []int
	for i, v := range l {
		if !math.IsInf(v, -1) {
			ids = append(ids, i)
		}
	}
	return ids
}

func TestSelectKth(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 500; trial++ {
		n := 1 + rnd.IntN(40)
		buf := make([]float32, n)
		for i := range buf {
			buf[i] = float32(rnd.IntN(8)) // many ties
		}
		sorted := append([]float32(nil), buf...)
		sort.Slice(sorted, func(a, b int) bool { return sorted[a] > sorted[b] })
		k := rnd.IntN(n)
		if got := selectKth(buf, k); got != sorted[k] {
			t.Fatalf("selectKth(%v, %d) = %v, want %v", sorted, k, got, sorted[k])
		}
	}
}
