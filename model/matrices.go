package model

import (
	"fmt"

	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

type layerMatrices struct {
	wqkv, wq, wk, wv, wo, w1, w2, w3 *kernels.Matrix
}

// matrices are the model's weights in the form the matmul kernels
// consume. They alias the weight tensors' storage: nothing is copied, so
// weights loaded from a memory-mapped file stay in the page cache.
type matrices struct {
	pool              *kernels.Pool
	ownPool           bool
	layers            []layerMatrices
	attnNorm, ffnNorm [][]float32
	bqkv              [][]float32 // per layer, nil unless Config.QKVBias
	unfused           bool        // some layer has wq, wk, wv but no wqkv
	finalNorm         []float32
	emb               *kernels.Matrix
	classifier        *kernels.Matrix
	quantized         map[*tensor.Tensor]*kernels.Matrix
}

// newMatrices wraps m's weights as kernel matrices on pool (or on a new
// pool of threads, which the matrices then own).
func newMatrices(m *Model, pool *kernels.Pool, threads int) (*matrices, error) {
	if err := checkLayers(m); err != nil {
		return nil, err
	}
	ms := &matrices{pool: pool}
	if pool == nil {
		ms.pool, ms.ownPool = kernels.NewPool(threads), true
	}
	r := &weightReader{quantized: m.Quantized}
	c, w := &m.Config, &m.Weights
	for l := range w.Layers {
		if err := ms.addLayer(r, c, &w.Layers[l], l); err != nil {
			ms.close()
			return nil, err
		}
	}
	ms.finalNorm = r.vec("final_norm", w.FinalNorm, c.Dim)
	ms.emb = r.mat("token_embedding", w.TokenEmbedding, c.VocabSize, c.Dim)
	ms.classifier = r.mat("classifier", w.Classifier, c.VocabSize, c.Dim)
	if r.err != nil {
		ms.close()
		return nil, r.err
	}
	return ms, nil
}

// checkLayers reports weights that do not match m's config: a layer
// count other than n_layers, or q/k/v biases the config declares and a
// layer lacks (running without them would silently compute another
// model).
func checkLayers(m *Model) error {
	c, w := &m.Config, &m.Weights
	if len(w.Layers) != c.NLayers {
		return fmt.Errorf("model: %d layers of weights for n_layers=%d", len(w.Layers), c.NLayers)
	}
	for l := range w.Layers {
		if c.QKVBias && w.Layers[l].BQKV == nil {
			return fmt.Errorf("model: config has q/k/v biases but layer %d has none", l)
		}
	}
	return nil
}

// weightReader wraps weight tensors as matrices and vectors, keeping the
// first error: after one, every read returns nil, so a sequence of reads
// is checked once at its end.
type weightReader struct {
	quantized map[*tensor.Tensor]*kernels.Matrix
	err       error
}

// mat is weight t as a rows×cols matrix: its quantized form when it has
// one, else its storage.
func (r *weightReader) mat(name string, t *tensor.Tensor, rows, cols int) *kernels.Matrix {
	if r.err != nil {
		return nil
	}
	if q, ok := r.quantized[t]; ok {
		if q.Rows != rows || q.Cols != cols {
			r.err = fmt.Errorf("model: quantized weight %s is (%d, %d), want (%d, %d)", name, q.Rows, q.Cols, rows, cols)
		}
		return q
	}
	mm, err := asMatrix(name, t, rows, cols)
	r.err = err
	return mm
}

// vec is weight t as a vector of n float32.
func (r *weightReader) vec(name string, t *tensor.Tensor, n int) []float32 {
	if r.err != nil {
		return nil
	}
	v, err := asVector(name, t, n)
	r.err = err
	return v
}

// addLayer appends layer l's matrices, norms and q/k/v bias (lw) to ms.
// An error of its matrices names the layer; one of its vectors surfaces
// at the next read that checks (the next layer's, or newMatrices' end).
func (ms *matrices) addLayer(r *weightReader, c *Config, lw *Layer, l int) error {
	hs := c.HeadDim()
	qDim, kvDim := c.NHeads*hs, c.KVDim()
	lm := layerMatrices{
		wo: r.mat("wo", lw.WO, c.Dim, qDim),
		w1: r.mat("w1", lw.W1, c.HiddenDim, c.Dim),
		w2: r.mat("w2", lw.W2, c.Dim, c.HiddenDim),
		w3: r.mat("w3", lw.W3, c.HiddenDim, c.Dim),
	}
	if lw.WQKV == nil {
		// q, k, v kept apart (different storage types): the fused
		// projection runs them as three matmuls (see Forward.Run).
		lm.wq = r.mat("wq", lw.WQ, qDim, c.Dim)
		lm.wk = r.mat("wk", lw.WK, kvDim, c.Dim)
		lm.wv = r.mat("wv", lw.WV, kvDim, c.Dim)
		ms.unfused = true
	} else {
		lm.wqkv = r.mat("wqkv", lw.WQKV, c.QKVRows(), c.Dim)
	}
	if r.err != nil {
		return fmt.Errorf("layer %d: %w", l, r.err)
	}
	if lm.wqkv != nil {
		// wq, wk, wv are row blocks of WQKV: windows of the same data.
		lm.wq = rowBlock(lm.wqkv, 0, qDim)
		lm.wk = rowBlock(lm.wqkv, qDim, kvDim)
		lm.wv = rowBlock(lm.wqkv, qDim+kvDim, kvDim)
	}
	ms.layers = append(ms.layers, lm)
	ms.attnNorm = append(ms.attnNorm, r.vec("attn_norm", lw.AttnNorm, c.Dim))
	ms.ffnNorm = append(ms.ffnNorm, r.vec("ffn_norm", lw.FFNNorm, c.Dim))
	if lw.BQKV != nil {
		if ms.bqkv == nil {
			ms.bqkv = make([][]float32, l, c.NLayers) // layers before l have none
		}
		ms.bqkv = append(ms.bqkv, r.vec("bqkv", lw.BQKV, c.QKVRows()))
	} else if ms.bqkv != nil {
		ms.bqkv = append(ms.bqkv, nil)
	}
	return nil
}

func (ms *matrices) close() {
	if ms.ownPool {
		ms.pool.Close()
	}
}

// asMatrix wraps a contiguous 2-D weight tensor's storage as a kernel
// matrix, without copying.
func asMatrix(name string, t *tensor.Tensor, rows, cols int) (*kernels.Matrix, error) {
	if t == nil {
		return nil, fmt.Errorf("model: weight %s is missing", name)
	}
	sh := t.Shape()
	if len(sh) != 2 || sh[0] != rows || sh[1] != cols || !t.IsContiguous() || t.IsMeta() {
		return nil, fmt.Errorf("model: weight %s is %v (contiguous=%v), want contiguous (%d, %d)", name, sh, t.IsContiguous(), rows, cols)
	}
	n, off := rows*cols, t.Offset()
	switch t.DType() {
	case tensor.F32:
		return kernels.NewF32(rows, cols, t.Storage().Float32s()[off:off+n])
	case tensor.F16:
		return kernels.NewF16(rows, cols, t.Storage().Uint16s()[off:off+n])
	case tensor.BF16:
		return kernels.NewBF16(rows, cols, t.Storage().Uint16s()[off:off+n])
	}
	return nil, fmt.Errorf("model: weight %s has unsupported dtype %v", name, t.DType())
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

// rowBlock returns rows [start, start+n) of m as a matrix over the same
// data: row i of a row-major (rows, cols) matrix starts at i·cols, and for
// Q8_0 its scales start at i·cols/group_size.
func rowBlock(m *kernels.Matrix, start, n int) *kernels.Matrix {
	b := *m
	b.Rows = n
	lo, hi := start*m.Cols, (start+n)*m.Cols
	switch m.Format {
	case kernels.F32:
		b.F32 = m.F32[lo:hi]
	case kernels.F16, kernels.BF16:
		b.U16 = m.U16[lo:hi]
	case kernels.Q8_0:
		b.Q = m.Q[lo:hi]
		b.Scales = m.Scales[lo/m.GroupSize : hi/m.GroupSize]
	default:
		// ggml blocks: whole rows of blocks, RowBytes each.
		if m.Blocks != nil {
			rb := len(m.Blocks) / m.Rows
			b.Blocks = m.Blocks[start*rb : (start+n)*rb]
		}
	}
	return &b
}

// embedding writes the embedding row of token into dst.
func (ms *matrices) embedding(dst []float32, token int) error {
	if token < 0 || token >= ms.emb.Rows {
		return fmt.Errorf("model: token %d outside the vocabulary (size %d)", token, ms.emb.Rows)
	}
	return ms.emb.Row(token, dst)
}

// matmul computes out[t, i] = Σ_j m[i, j]·x[t, j] for T rows of x
// (x @ mᵀ, llama2.c's (out, in) weight convention) on the worker pool.
func (ms *matrices) matmul(out, x []float32, m *kernels.Matrix, T int) error {
	return kernels.MatMul(ms.pool, out, x, m, T)
}
