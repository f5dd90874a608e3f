package model

import (
	"math"
)

// Filters are the logit filters llama.cpp users expect (its --top-k,
// --min-p, --repeat-penalty and --repeat-last-n). They run on the raw
// logits, in llama.cpp's order: repeat penalty, then top-k, then min-p.
// run.c's own chain follows unchanged (temperature, softmax, top-p,
// sample), so a filtered-out token keeps probability 0 through it.
//
// The zero value, and any value whose every filter is off, leaves the
// sampler exactly run.c's: Sample then never reads the filters.
type Filters struct {
	// TopK keeps the K largest logits (ties go to the lower token id);
	// 0, a negative value or K >= vocab is off.
	TopK int
	// MinP keeps the tokens whose probability at temperature 1 is at
	// least MinP times the most probable one's: in logit terms,
	// logit >= max + ln(MinP), as llama.cpp computes it. 0 is off.
	MinP float32
	// RepeatPenalty divides the positive logits and multiplies the
	// negative ones of every distinct token among the last RepeatLastN
	// tokens of the sequence (CTRL's penalty, as llama.cpp applies it:
	// once per token, however often it occurred). 1 (or 0) is off.
	RepeatPenalty float32
	// RepeatLastN is how many recent tokens the penalty looks at; -1
	// means the whole sequence, 0 none (the penalty is then off).
	RepeatLastN int
}

// active reports whether any filter changes logits.
func (f Filters) active(vocab int) bool {
	return (f.TopK > 0 && f.TopK < vocab) || f.MinP > 0 || f.penalizes()
}

func (f Filters) penalizes() bool {
	return f.RepeatPenalty != 1 && f.RepeatPenalty != 0 && f.RepeatLastN != 0
}

// filterState is what the filters keep between calls: the sequence's
// recent tokens (for the penalty) and scratch space, so Sample still
// does not allocate once the history buffer has grown.
type filterState struct {
	f       Filters
	history []int     // the sequence's tokens, oldest first (trimmed to RepeatLastN)
	marked  []bool    // per token: already penalized in this call
	scratch []float32 // top-k's selection buffer
}

// SetFilters turns the logit filters on (or off, with the zero value).
// Call it before the first Sample.
func (s *Sampler) SetFilters(f Filters) {
	if !f.active(s.vocab) {
		s.filt = nil
		return
	}
	s.filt = &filterState{f: f}
	if f.penalizes() {
		s.filt.marked = make([]bool, s.vocab)
	}
	if f.TopK > 0 && f.TopK < s.vocab {
		s.filt.scratch = make([]float32, s.vocab)
	}
}

// Accept records tokens the sequence already holds (its prompt), so the
// repeat penalty sees them as llama.cpp's does; Sample records the
// tokens it returns itself. Without a penalty it does nothing.
func (s *Sampler) Accept(tokens ...int) {
	if s.filt == nil || !s.filt.f.penalizes() {
		return
	}
	s.filt.history = append(s.filt.history, tokens...)
	s.filt.trim()
}

// trim keeps the history bounded: at most twice RepeatLastN entries,
// cut back to RepeatLastN, so appends are amortized O(1).
func (fs *filterState) trim() {
	n := fs.f.RepeatLastN
	if n > 0 && len(fs.history) > 2*n {
		k := copy(fs.history, fs.history[len(fs.history)-n:])
		fs.history = fs.history[:k]
	}
}

// apply runs the filters over logits in place; removed tokens get -Inf.
func (fs *filterState) apply(logits []float32) {
	if fs.f.penalizes() {
		fs.penalize(logits)
	}
	if k := fs.f.TopK; k > 0 && k < len(logits) {
		fs.topK(logits, k)
	}
	if fs.f.MinP > 0 {
		minP(logits, fs.f.MinP)
	}
}

// penalize applies the repeat penalty to each distinct recent token.
func (fs *filterState) penalize(logits []float32) {
	recent := fs.history
	if n := fs.f.RepeatLastN; n > 0 && len(recent) > n {
		recent = recent[len(recent)-n:]
	}
	p := fs.f.RepeatPenalty
	for _, t := range recent {
		if t < 0 || t >= len(logits) || fs.marked[t] {
			continue
		}
		fs.marked[t] = true
		if logits[t] <= 0 {
			logits[t] *= p
		} else {
			logits[t] /= p
		}
	}
	for _, t := range recent {
		if t >= 0 && t < len(fs.marked) {
			fs.marked[t] = false
		}
	}
}

// topK keeps the k largest logits: it finds the k-th largest value by
// selection (O(n)), keeps everything above it, and of the values equal
// to it the lowest ids until k are kept.
func (fs *filterState) topK(logits []float32, k int) {
	buf := fs.scratch[:len(logits)]
	copy(buf, logits)
	kth := selectKth(buf, k-1) // k-th largest
	above := 0
	for _, v := range logits {
		if v > kth {
			above++
		}
	}
	ties := k - above // how many values equal to kth survive
	for i, v := range logits {
		switch {
		case v > kth:
		case v == kth && ties > 0:
			ties--
		default:
			logits[i] = float32(math.Inf(-1))
		}
	}
}

// selectKth partially orders buf descending and returns its k-th largest
// value (0-based), Hoare's quickselect with a middle pivot. NaN logits
// are not expected (the forward pass never makes them).
func selectKth(buf []float32, k int) float32 {
	lo, hi := 0, len(buf)-1
	for lo < hi {
		pivot := buf[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for buf[i] > pivot {
				i++
			}
			for buf[j] < pivot {
				j--
			}
			if i <= j {
				buf[i], buf[j] = buf[j], buf[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return buf[k]
		}
	}
	return buf[k]
}

// minP removes the tokens whose logit is below max + ln(p), in float32
// as llama.cpp computes it; the maximum always survives.
func minP(logits []float32, p float32) {
	maxV := logits[0]
	for _, v := range logits[1:] {
		if v > maxV {
			maxV = v
		}
	}
	cut := maxV + float32(math.Log(float64(p)))
	for i, v := range logits {
		if v < cut {
			logits[i] = float32(math.Inf(-1))
		}
	}
}

// record adds the sampled token to the penalty's history.
func (fs *filterState) record(tok int) {
	if fs.f.penalizes() {
		fs.history = append(fs.history, tok)
		fs.trim()
	}
}

// survivor returns tok, or, when run.c's rounding fallback landed on a
// token the filters removed (probability 0), the last token that
// survived: a filtered token must never be sampled.
func survivor(p []float32, tok int) int {
	if p[tok] > 0 {
		return tok
	}
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] > 0 {
			return i
		}
	}
	return tok
}
