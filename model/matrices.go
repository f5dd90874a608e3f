package model

import (
	"fmt"

	"github.com/stride-lm/stride/tensor"
)

// matrix is a weight matrix (rows, cols) viewed as a flat row-major slice
// for the matmul kernels: F32 data, or the 16-bit patterns of F16/BF16.
type matrix struct {
	rows, cols int
	dt         tensor.DType
	f32        []float32
	u16        []uint16
}

type layerMatrices struct {
	wqkv, wq, wk, wv, wo, w1, w2, w3 *matrix
}

// matrices are the model's weights in the form the kernels consume. They
// alias the weight tensors' storage: nothing is copied.
type matrices struct {
	layers            []layerMatrices
	attnNorm, ffnNorm [][]float32
	finalNorm         []float32
	emb               *matrix
	classifier        *matrix
}

func newMatrices(m *Model, threads int) (*matrices, error) {
	c := m.Config
	w := &m.Weights
	if len(w.Layers) != c.NLayers {
		return nil, fmt.Errorf("model: %d layers of weights for n_layers=%d", len(w.Layers), c.NLayers)
	}
	ms := &matrices{}
	var err error
	mat := func(name string, t *tensor.Tensor, rows, cols int) *matrix {
		if err != nil {
			return nil
		}
		var mm *matrix
		mm, err = asMatrix(name, t, rows, cols)
		return mm
	}
	vec := func(name string, t *tensor.Tensor, n int) []float32 {
		if err != nil {
			return nil
		}
		var v []float32
		v, err = asVector(name, t, n)
		return v
	}
	hs := c.HeadDim()
	qDim, kvDim := c.NHeads*hs, c.KVDim()
	for l := range w.Layers {
		lw := &w.Layers[l]
		lm := layerMatrices{
			wqkv: mat("wqkv", lw.WQKV, c.QKVRows(), c.Dim),
			wo:   mat("wo", lw.WO, c.Dim, qDim),
			w1:   mat("w1", lw.W1, c.HiddenDim, c.Dim),
			w2:   mat("w2", lw.W2, c.Dim, c.HiddenDim),
			w3:   mat("w3", lw.W3, c.HiddenDim, c.Dim),
		}
		if err != nil {
			return nil, fmt.Errorf("layer %d: %w", l, err)
		}
		// wq, wk, wv are row blocks of WQKV: contiguous sub-slices.
		lm.wq = lm.wqkv.rowBlock(0, qDim)
		lm.wk = lm.wqkv.rowBlock(qDim, kvDim)
		lm.wv = lm.wqkv.rowBlock(qDim+kvDim, kvDim)
		ms.layers = append(ms.layers, lm)
		ms.attnNorm = append(ms.attnNorm, vec("attn_norm", lw.AttnNorm, c.Dim))
		ms.ffnNorm = append(ms.ffnNorm, vec("ffn_norm", lw.FFNNorm, c.Dim))
	}
	ms.finalNorm = vec("final_norm", w.FinalNorm, c.Dim)
	ms.emb = mat("token_embedding", w.TokenEmbedding, c.VocabSize, c.Dim)
	ms.classifier = mat("classifier", w.Classifier, c.VocabSize, c.Dim)
	if err != nil {
		return nil, err
	}
	return ms, nil
}

func (ms *matrices) close() {}

func asMatrix(name string, t *tensor.Tensor, rows, cols int) (*matrix, error) {
	if t == nil {
		return nil, fmt.Errorf("model: weight %s is missing", name)
	}
	sh := t.Shape()
	if len(sh) != 2 || sh[0] != rows || sh[1] != cols || !t.IsContiguous() || t.IsMeta() {
		return nil, fmt.Errorf("model: weight %s is %v (contiguous=%v), want contiguous (%d, %d)", name, sh, t.IsContiguous(), rows, cols)
	}
	n, off := rows*cols, t.Offset()
	m := &matrix{rows: rows, cols: cols, dt: t.DType()}
	if t.DType() == tensor.F32 {
		m.f32 = t.Storage().Float32s()[off : off+n]
	} else {
		m.u16 = t.Storage().Uint16s()[off : off+n]
	}
	return m, nil
}

func asVector(name string, t *tensor.Tensor, n int) ([]float32, error) {
	if t == nil {
		return nil, fmt.Errorf("model: weight %s is missing", name)
	}
	if t.Numel() != n || t.Dim() != 1 {
		return nil, fmt.Errorf("model: weight %s is %v, want (%d)", name, t.Shape(), n)
	}
	if t.DType() == tensor.F32 && t.IsContiguous() && !t.IsMeta() {
		return t.Storage().Float32s()[t.Offset() : t.Offset()+n], nil
	}
	return t.Float32s()
}

// rowBlock returns rows [start, start+n) as a matrix sharing the data.
func (m *matrix) rowBlock(start, n int) *matrix {
	b := &matrix{rows: n, cols: m.cols, dt: m.dt}
	lo, hi := start*m.cols, (start+n)*m.cols
	if m.f32 != nil {
		b.f32 = m.f32[lo:hi]
	} else {
		b.u16 = m.u16[lo:hi]
	}
	return b
}

// row writes row r of m into dst as float32.
func (m *matrix) row(dst []float32, r int) {
	lo := r * m.cols
	if m.f32 != nil {
		copy(dst, m.f32[lo:lo+m.cols])
		return
	}
	for j := range dst[:m.cols] {
		if m.dt == tensor.BF16 {
			dst[j] = tensor.BF16Float(m.u16[lo+j])
		} else {
			dst[j] = tensor.F16Float(m.u16[lo+j])
		}
	}
}

// embedding writes the embedding row of token into dst.
func (ms *matrices) embedding(dst []float32, token int) error {
	if token < 0 || token >= ms.emb.rows {
		return fmt.Errorf("model: token %d outside the vocabulary (size %d)", token, ms.emb.rows)
	}
	ms.emb.row(dst, token)
	return nil
}

// matmul computes out[t, i] = Σ_j m[i, j]·x[t, j] for T rows of x
// (x @ mᵀ, llama2.c's (out, in) weight convention).
func (ms *matrices) matmul(out, x []float32, m *matrix, T int) error {
	if len(x) < T*m.cols || len(out) < T*m.rows {
		return fmt.Errorf("model: matmul of %d rows: x has %d of %d, out %d of %d elements", T, len(x), T*m.cols, len(out), T*m.rows)
	}
	row := make([]float32, m.cols)
	for i := 0; i < m.rows; i++ {
		m.row(row, i)
		for t := 0; t < T; t++ {
			xr := x[t*m.cols : (t+1)*m.cols]
			var s float32
			for j, w := range row {
				s += w * xr[j]
			}
			out[t*m.rows+i] = s
		}
	}
	return nil
}
