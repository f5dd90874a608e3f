package model

import (
	"math"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// refModel is a float64 copy of a model's weights, de-fused into run.c's
// separate wq/wk/wv, for the reference forward pass below.
type refModel struct {
	c                 Config
	emb, cls          [][]float64
	attnNorm, ffnNorm [][]float64
	finalNorm         []float64
	wq, wk, wv, wo    [][][]float64
	w1, w2, w3        [][][]float64
	bq, bk, bv        [][]float64 // per layer, nil without Config.QKVBias
	ropeFreqs         []float32
}

func refMatrix(t *testing.T, w *tensor.Tensor, rows, cols, rowStart int) [][]float64 {
	t.Helper()
	data, err := w.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]float64, rows)
	for i := range out {
		out[i] = make([]float64, cols)
		for j := range out[i] {
			out[i][j] = float64(data[(rowStart+i)*cols+j])
		}
	}
	return out
}

func refVector(t *testing.T, w *tensor.Tensor) []float64 {
	t.Helper()
	data, err := w.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float64, len(data))
	for i, v := range data {
		out[i] = float64(v)
	}
	return out
}

func newRefModel(t *testing.T, m *Model) *refModel {
	c := m.Config
	hs := c.HeadDim()
	r := &refModel{c: c}
	r.emb = refMatrix(t, m.Weights.TokenEmbedding, c.VocabSize, c.Dim, 0)
	r.cls = refMatrix(t, m.Weights.Classifier, c.VocabSize, c.Dim, 0)
	r.finalNorm = refVector(t, m.Weights.FinalNorm)
	for _, l := range m.Weights.Layers {
		r.attnNorm = append(r.attnNorm, refVector(t, l.AttnNorm))
		r.ffnNorm = append(r.ffnNorm, refVector(t, l.FFNNorm))
		r.wq = append(r.wq, refMatrix(t, l.WQKV, c.NHeads*hs, c.Dim, 0))
		r.wk = append(r.wk, refMatrix(t, l.WQKV, c.KVDim(), c.Dim, c.NHeads*hs))
		r.wv = append(r.wv, refMatrix(t, l.WQKV, c.KVDim(), c.Dim, c.NHeads*hs+c.KVDim()))
		r.wo = append(r.wo, refMatrix(t, l.WO, c.Dim, c.NHeads*hs, 0))
		r.w1 = append(r.w1, refMatrix(t, l.W1, c.HiddenDim, c.Dim, 0))
		r.w2 = append(r.w2, refMatrix(t, l.W2, c.Dim, c.HiddenDim, 0))
		r.w3 = append(r.w3, refMatrix(t, l.W3, c.HiddenDim, c.Dim, 0))
		if c.QKVBias {
			b := refVector(t, l.BQKV)
			r.bq = append(r.bq, b[:c.NHeads*hs])
			r.bk = append(r.bk, b[c.NHeads*hs:c.NHeads*hs+c.KVDim()])
			r.bv = append(r.bv, b[c.NHeads*hs+c.KVDim():])
		}
	}
	if rf := m.Weights.RopeFreqs; rf != nil {
		var err error
		if r.ropeFreqs, err = rf.Float32s(); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func refMatvec(w [][]float64, x []float64) []float64 {
	out := make([]float64, len(w))
	for i, row := range w {
		var s float64
		for j, v := range row {
			s += v * x[j]
		}
		out[i] = s
	}
	return out
}

func refRMSNorm(x, w []float64, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = w[i] * v * inv
	}
	return out
}

// refForward runs run.c's forward pass in float64 over a whole token
// sequence (one position at a time, dense KV cache) and returns the logits
// at every position. It is the oracle for Forward.Run.
func (r *refModel) forward(tokens []int) [][]float64 {
	c := r.c
	hs := c.HeadDim()
	group := c.NHeads / c.NKVHeads
	kc := make([][][]float64, c.NLayers) // [layer][pos][kvDim]
	vc := make([][][]float64, c.NLayers)
	var all [][]float64
	for pos, tok := range tokens {
		x := append([]float64(nil), r.emb[tok]...)
		for l := 0; l < c.NLayers; l++ {
			xb := refRMSNorm(x, r.attnNorm[l], c.NormEps)
			q := refMatvec(r.wq[l], xb)
			k := refMatvec(r.wk[l], xb)
			v := refMatvec(r.wv[l], xb)
			if c.QKVBias {
				for i := range q {
					q[i] += r.bq[l][i]
				}
				for i := range k {
					k[i] += r.bk[l][i]
					v[i] += r.bv[l][i]
				}
			}
			// RoPE per head (ropeRef in rope_test.go: the style's pairs,
			// the first RopeDims dimensions, the frequency factors).
			scale := 1.0
			if c.RopeScale > 0 {
				scale = 1 / c.RopeScale
			}
			for h := 0; h < c.NHeads; h++ {
				copy(q[h*hs:], ropeRef(q[h*hs:(h+1)*hs], pos, c.RopeStyle, c.RopeDims(), c.RopeTheta, scale, r.ropeFreqs))
			}
			for h := 0; h < c.NKVHeads; h++ {
				copy(k[h*hs:], ropeRef(k[h*hs:(h+1)*hs], pos, c.RopeStyle, c.RopeDims(), c.RopeTheta, scale, r.ropeFreqs))
			}
			kc[l] = append(kc[l], k)
			vc[l] = append(vc[l], v)
			att := make([]float64, c.NHeads*hs)
			for h := 0; h < c.NHeads; h++ {
				kvh := h / group
				qh := q[h*hs : (h+1)*hs]
				scores := make([]float64, pos+1)
				mx := math.Inf(-1)
				for p := 0; p <= pos; p++ {
					var s float64
					for d := 0; d < hs; d++ {
						s += qh[d] * kc[l][p][kvh*hs+d]
					}
					scores[p] = s / math.Sqrt(float64(hs))
					mx = math.Max(mx, scores[p])
				}
				var sum float64
				for p := range scores {
					scores[p] = math.Exp(scores[p] - mx)
					sum += scores[p]
				}
				for p := range scores {
					for d := 0; d < hs; d++ {
						att[h*hs+d] += scores[p] / sum * vc[l][p][kvh*hs+d]
					}
				}
			}
			o := refMatvec(r.wo[l], att)
			for i := range x {
				x[i] += o[i]
			}
			xb = refRMSNorm(x, r.ffnNorm[l], c.NormEps)
			h1 := refMatvec(r.w1[l], xb)
			h3 := refMatvec(r.w3[l], xb)
			for i := range h1 {
				h1[i] = h1[i] / (1 + math.Exp(-h1[i])) * h3[i]
			}
			o = refMatvec(r.w2[l], h1)
			for i := range x {
				x[i] += o[i]
			}
		}
		all = append(all, refMatvec(r.cls, refRMSNorm(x, r.finalNorm, c.NormEps)))
	}
	return all
}
