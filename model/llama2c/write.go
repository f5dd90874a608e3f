package llama2c

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"unsafe"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// WriteLegacy writes m in llama2.c's legacy checkpoint format, the one
// run.c reads: the fused WQKV of each layer is split back into wq, wk and
// wv (each written for all layers in turn), half-precision weights are
// widened to float32 (exactly), vocab_size is written negative when the
// classifier is not shared, and the classifier then follows the RoPE tables.
//
// The two RoPE tables (freq_cis_real, freq_cis_imag: seq_len × head_dim/2
// each) are computed as llama2.c's legacy export computed them, in float32
// the way PyTorch does: freq_i = 1 / θ^(2i/head_dim) and cos, sin of
// pos·freq_i, with θ = Config.RopeTheta. run.c and this package's reader
// skip them.
//
// Q8_0 weights (Model.Quantized, e.g. from a version-2 file) are
// dequantized: each weight is written as q·scale computed in float32,
// exactly the value the kernels use, so the legacy file runs the same
// model (and is 4/(1+4/group) times larger).
func WriteLegacy(w io.Writer, m *model.Model) error {
	fail := func(err error) error { return fmt.Errorf("write legacy checkpoint: %w", err) }
	if err := checkWritable(m); err != nil {
		return fail(err)
	}
	c := m.Config
	bw := bufio.NewWriterSize(w, 1<<20)
	vocab := int32(c.VocabSize)
	if !c.SharedClassifier {
		vocab = -vocab
	}
	hdr := []int32{int32(c.Dim), int32(c.HiddenDim), int32(c.NLayers), int32(c.NHeads), int32(c.NKVHeads),
		vocab, int32(c.SeqLen)}
	if err := binary.Write(bw, binary.LittleEndian, hdr); err != nil {
		return fail(err)
	}
	fw := &floatWriter{w: bw, quant: m.Quantized}
	L := m.Weights.Layers
	fw.rows(m.Weights.TokenEmbedding, 0, c.VocabSize)
	for l := range L {
		fw.rows(L[l].AttnNorm, 0, 1)
	}
	for part := range 3 {
		for l := range L {
			t, r0, n := L[l].QKVPart(c, part)
			fw.rows(t, r0, r0+n)
		}
	}
	for l := range L {
		fw.rows(L[l].WO, 0, c.Dim)
	}
	for l := range L {
		fw.rows(L[l].FFNNorm, 0, 1)
	}
	for l := range L {
		fw.rows(L[l].W1, 0, c.HiddenDim)
	}
	for l := range L {
		fw.rows(L[l].W2, 0, c.Dim)
	}
	for l := range L {
		fw.rows(L[l].W3, 0, c.HiddenDim)
	}
	fw.rows(m.Weights.FinalNorm, 0, 1)
	cos, sin := legacyRopeTables(c)
	fw.floats(cos)
	fw.floats(sin)
	if !c.SharedClassifier {
		fw.rows(m.Weights.Classifier, 0, c.VocabSize)
	}
	if fw.err != nil {
		return fail(fw.err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	return nil
}

// checkWritable is Model.Validate plus what llama2.c's formats cannot
// hold: biases and RoPE frequency factors.
func checkWritable(m *model.Model) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if m.Weights.RopeFreqs != nil {
		return fmt.Errorf("the model has RoPE frequency factors, which llama2.c files cannot hold")
	}
	for l, L := range m.Weights.Layers {
		if L.BQKV != nil {
			return fmt.Errorf("layer %d has q/k/v biases, which llama2.c files cannot hold", l)
		}
	}
	return nil
}

// legacyRopeTables returns freq_cis_real and freq_cis_imag as llama2.c's
// legacy export wrote them (model.freqs_cos/sin[:seq_len], computed by
// precompute_freqs_cis in float32): freq = 1/θ^(float32(2i)/hs),
// angle = float32(pos)·freq, then cos and sin, each step rounded to float32.
func legacyRopeTables(c model.Config) (cos, sin []float32) {
	hs := c.HeadDim()
	half := hs / 2
	freqs := make([]float32, half)
	for i := range freqs {
		e := float32(2*i) / float32(hs)
		p := float32(math.Pow(c.RopeTheta, float64(e)))
		freqs[i] = float32(1) / p
	}
	cos = make([]float32, c.SeqLen*half)
	sin = make([]float32, c.SeqLen*half)
	for pos := 0; pos < c.SeqLen; pos++ {
		for i, f := range freqs {
			a := float32(pos) * f
			cos[pos*half+i] = float32(math.Cos(float64(a)))
			sin[pos*half+i] = float32(math.Sin(float64(a)))
		}
	}
	return cos, sin
}

// WriteV2 writes m as a llama2.c version-2 (Q8_0) checkpoint, the format
// runq.c reads (see fileLayout): the norms stay float32, every weight
// matrix is quantized in groups of groupSize weights with
// scale = max|w|/127 and q = round(w/scale), half to even. groupSize 0
// picks model.Q8GroupSize(m.Config, 64); any other value must divide dim
// and hidden_dim.
//
// The fused WQKV of each layer is split back into wq, wk and wv (groups
// lie within rows, so this splits its rows and scales). Weights m already
// holds as Q8_0 with the same group size are written as they are, so
// load → write reproduces a version-2 file byte for byte; other weights
// (float32, F16/BF16 widened exactly, or Q8_0 of another group size,
// dequantized) are quantized here.
func WriteV2(w io.Writer, m *model.Model, groupSize int) error {
	fail := func(err error) error { return fmt.Errorf("write version-2 checkpoint: %w", err) }
	if err := checkWritable(m); err != nil {
		return fail(err)
	}
	c := m.Config
	gs := groupSize
	if gs == 0 {
		gs = model.Q8GroupSize(c, 0)
	}
	if err := checkGroupSize(c, gs); err != nil {
		return fail(err)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := bw.Write(v2HeaderOf(c, gs)); err != nil {
		return fail(err)
	}
	fw := &floatWriter{w: bw}
	L := m.Weights.Layers
	for l := range L {
		fw.rows(L[l].AttnNorm, 0, 1)
	}
	for l := range L {
		fw.rows(L[l].FFNNorm, 0, 1)
	}
	fw.rows(m.Weights.FinalNorm, 0, 1)
	if fw.err != nil {
		return fail(fw.err)
	}
	order := []kind{kindEmbedding, kindWQ, kindWK, kindWV, kindWO, kindW1, kindW2, kindW3}
	if !c.SharedClassifier {
		order = append(order, kindClassifier)
	}
	for _, k := range order {
		count := 1
		if kinds[k].perLayer {
			count = c.NLayers
		}
		for l := range count {
			t, r0, rows := v2Rows(m, k, l)
			qm, err := q8Rows(m, t, r0, r0+rows, gs)
			if err != nil {
				return fail(fmt.Errorf("%s: %w", k.label(l), err))
			}
			n := qm.Rows * qm.Cols
			vals := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(qm.Q))), n)
			if _, err := bw.Write(vals); err != nil {
				return fail(err)
			}
			fw.floats(qm.Scales[:n/gs])
			if fw.err != nil {
				return fail(fw.err)
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	return nil
}

// v2Header is the 256-byte version-2 header of c with group size gs.
func v2HeaderOf(c model.Config, gs int) []byte {
	hdr := make([]byte, v1HeaderSize)
	le := binary.LittleEndian
	le.PutUint32(hdr[0:], v1Magic)
	le.PutUint32(hdr[4:], 2)
	for i, v := range []int{c.Dim, c.HiddenDim, c.NLayers, c.NHeads, c.NKVHeads, c.VocabSize, c.SeqLen} {
		le.PutUint32(hdr[8+4*i:], uint32(int32(v)))
	}
	if c.SharedClassifier {
		hdr[8+legacyHeaderSize] = 1
	}
	le.PutUint32(hdr[v2GroupSizeAt:], uint32(int32(gs)))
	return hdr
}

// v2Rows is where matrix k of layer l is in m: rows [r0, r0+rows) of a
// weight tensor (wq, wk and wv are row blocks of the fused WQKV).
func v2Rows(m *model.Model, k kind, l int) (t *tensor.Tensor, r0, rows int) {
	c := m.Config
	w := m.Weights
	switch k {
	case kindEmbedding:
		return w.TokenEmbedding, 0, c.VocabSize
	case kindWQ:
		return w.Layers[l].QKVPart(c, 0)
	case kindWK:
		return w.Layers[l].QKVPart(c, 1)
	case kindWV:
		return w.Layers[l].QKVPart(c, 2)
	case kindWO:
		return w.Layers[l].WO, 0, c.Dim
	case kindW1:
		return w.Layers[l].W1, 0, c.HiddenDim
	case kindW2:
		return w.Layers[l].W2, 0, c.Dim
	case kindW3:
		return w.Layers[l].W3, 0, c.HiddenDim
	}
	return w.Classifier, 0, c.VocabSize
}

// q8Rows returns rows [r0, r1) of the 2-D weight t as Q8_0 with group size
// gs: a window of m's own Q8_0 form when it has that group size, else
// quantized from the rows' float32 values.
func q8Rows(m *model.Model, t *tensor.Tensor, r0, r1, gs int) (*kernels.Matrix, error) {
	cols := t.Shape()[1]
	rows := r1 - r0
	q := m.Quantized[t]
	if q != nil && q.Format == kernels.Q8_0 && q.GroupSize == gs {
		// Row i's values start at i·cols and its scales at i·cols/gs.
		w := *q
		w.Rows = rows
		w.Q = q.Q[r0*cols : r1*cols]
		w.Scales = q.Scales[r0*cols/gs : r1*cols/gs]
		return &w, nil
	}
	vals := make([]float32, rows*cols)
	if q != nil {
		for i := 0; i < rows; i++ {
			if err := q.Row(r0+i, vals[i*cols:(i+1)*cols]); err != nil {
				return nil, err
			}
		}
	} else {
		part, err := t.Narrow(0, r0, rows)
		if err != nil {
			return nil, err
		}
		if vals, err = part.Float32s(); err != nil {
			return nil, err
		}
	}
	return kernels.QuantizeQ8_0(rows, cols, vals, gs)
}

// floatWriter writes float32s little-endian through a small buffer and
// keeps the first error, like bufio.Writer. Tensors found in quant are
// written dequantized.
type floatWriter struct {
	w     io.Writer
	quant map[*tensor.Tensor]*kernels.Matrix
	buf   [4096]byte
	n     int
	row   []float32 // dequantization scratch
	err   error
}

func (fw *floatWriter) put(v float32) {
	binary.LittleEndian.PutUint32(fw.buf[fw.n:], math.Float32bits(v))
	fw.n += 4
	if fw.n == len(fw.buf) {
		fw.flush()
	}
}

func (fw *floatWriter) flush() {
	if fw.err == nil && fw.n > 0 {
		_, fw.err = fw.w.Write(fw.buf[:fw.n])
	}
	fw.n = 0
}

func (fw *floatWriter) floats(v []float32) {
	for _, x := range v {
		fw.put(x)
	}
	fw.flush()
}

// rows writes rows [r0, r1) of a 2-D tensor (or the whole of a 1-D tensor
// when r0, r1 = 0, 1), reading element (i, j) at
// offset + i·stride0 + j·stride1, so any strided layout is written in
// logical row-major order. A quantized tensor is written as its
// dequantized rows.
func (fw *floatWriter) rows(t *tensor.Tensor, r0, r1 int) {
	if q := fw.quant[t]; q != nil {
		if cap(fw.row) < q.Cols {
			fw.row = make([]float32, q.Cols)
		}
		row := fw.row[:q.Cols]
		for i := r0; i < r1 && fw.err == nil; i++ {
			if fw.err = q.Row(i, row); fw.err == nil {
				for _, x := range row {
					fw.put(x)
				}
			}
		}
		fw.flush()
		return
	}
	st := t.Storage()
	off, shape, strides := t.Offset(), t.Shape(), t.Strides()
	cols, s0, s1 := shape[0], 0, strides[0]
	if len(shape) == 2 {
		cols, s0, s1 = shape[1], strides[0], strides[1]
	}
	for i := r0; i < r1; i++ {
		base := off + i*s0
		if f := st.Float32s(); f != nil && s1 == 1 {
			for _, x := range f[base : base+cols] {
				fw.put(x)
			}
			continue
		}
		for j := 0; j < cols; j++ {
			fw.put(st.Load(base + j*s1))
		}
	}
	fw.flush()
}
