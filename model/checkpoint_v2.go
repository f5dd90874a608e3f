package model

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"unsafe"

	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// llama2.c's export version 2 (export.py version2_export, read by runq.c):
//
//	header, 256 bytes: uint32 magic "ak42", int32 version = 2, seven int32
//	  (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len),
//	  uint8 shared_classifier, int32 group_size (at byte 37: unaligned, as
//	  struct.pack writes it), zero padding
//	float32 norms: all rms_att (n_layers, dim), all rms_ffn, rms_final (dim)
//	Q8_0 matrices, each as int8 q[rows·cols] then float32 s[rows·cols/gs]:
//	  token embedding, wq of every layer, then wk, wv, wo, w1, w2, w3 of
//	  every layer, then the classifier when it is not shared
//
// Weight k of a matrix (flat row-major index) is q[k]·s[k/gs], with
// s = max|w|/127 over its group and q = round(w/s): symmetric, so
// |w − q·s| ≤ s/2. The group size must divide every matrix width (dim and
// hidden_dim) so that no group straddles two rows: the Q8_0 kernels scale
// whole groups of one row, and a layer's fused WQKV is then just the rows
// (and scales) of wq, wk and wv one after the other.

// defaultGroupSize is export.py's default Q8_0 group size.
const defaultGroupSize = 64

// Q8GroupSize returns the Q8_0 group size to use for c: want (64 when
// want ≤ 0) halved until it divides dim and hidden_dim, which is
// export.py's backoff extended to hidden_dim (export.py checks only dim,
// which would let w2's groups straddle rows when hidden_dim is not a
// multiple). It is at least 1. stories260K (dim 64, hidden_dim 172) gets 4.
func Q8GroupSize(c Config, want int) int {
	if want <= 0 {
		want = defaultGroupSize
	}
	for want > 1 && (c.Dim%want != 0 || c.HiddenDim%want != 0) {
		want /= 2
	}
	return want
}

// checkGroupSize reports whether gs can quantize every matrix of c.
func checkGroupSize(c Config, gs int) error {
	if gs <= 0 || gs > maxDim {
		return fmt.Errorf("group size %d must be in [1, %d]", gs, maxDim)
	}
	for _, w := range []struct {
		name string
		v    int
	}{{"dim", c.Dim}, {"hidden_dim", c.HiddenDim}} {
		if w.v%gs != 0 {
			return fmt.Errorf("group size %d does not divide %s %d: groups would straddle matrix rows (try %d)",
				gs, w.name, w.v, Q8GroupSize(c, gs))
		}
	}
	return nil
}

// qblock is one kind of Q8_0 matrix in a version-2 file: for per-layer
// kinds, layer l's int8 values start at off + l·stride and its scales
// follow them.
type qblock struct {
	kind       blockKind
	rows, cols int
	gs         int
	off        int64 // byte offset of layer 0's int8 values
	stride     int64 // bytes per layer: rows·cols + 4·rows·cols/gs
}

func (b qblock) perLayer() bool { return block{kind: b.kind}.perLayer() }

func (b qblock) count(c Config) int { return block{kind: b.kind}.count(c) }

func (b qblock) label(l int) string { return block{kind: b.kind}.label(l) }

// n is the number of weights of one matrix of the block.
func (b qblock) n() int64 { return int64(b.rows) * int64(b.cols) }

// qOff and sOff are the byte offsets of layer l's values and scales.
func (b qblock) qOff(l int) int64 { return b.off + int64(l)*b.stride }
func (b qblock) sOff(l int) int64 { return b.qOff(l) + b.n() }

// v2File is the layout of a version-2 checkpoint.
type v2File struct {
	norms []block  // float32: all rms_att, all rms_ffn, rms_final
	mats  []qblock // Q8_0, in file order
	size  int64
}

// v2Layout computes the layout of a version-2 file of config c and group
// size gs (already checked by checkGroupSize). Like fileLayout it is O(1)
// in the number of layers and overflow-checked in int64, so a lying header
// is rejected before anything is allocated.
func v2Layout(c Config, gs int) (v2File, error) {
	var f v2File
	d, h := c.Dim, c.HiddenDim
	q, kv := c.NHeads*c.HeadDim(), c.KVDim()
	pos := int64(v1HeaderSize)
	add := func(n int64, count int) bool {
		t, ok := mul64(n, int64(count))
		if !ok || pos > math.MaxInt64-t {
			return false
		}
		pos += t
		return true
	}
	for _, k := range []blockKind{kindAttnNorm, kindFFNNorm, kindFinalNorm} {
		b := block{kind: k, elems: int64(d), off: pos}
		if !add(4*b.elems, b.count(c)) {
			return f, errOverflow
		}
		f.norms = append(f.norms, b)
	}
	shapes := []struct {
		kind       blockKind
		rows, cols int
	}{{kindEmbedding, c.VocabSize, d}, {kindWQ, q, d}, {kindWK, kv, d}, {kindWV, kv, d}, {kindWO, d, q},
		{kindW1, h, d}, {kindW2, d, h}, {kindW3, h, d}}
	if !c.SharedClassifier {
		shapes = append(shapes, struct {
			kind       blockKind
			rows, cols int
		}{kindClassifier, c.VocabSize, d})
	}
	for _, s := range shapes {
		b := qblock{kind: s.kind, rows: s.rows, cols: s.cols, gs: gs, off: pos}
		n := b.n() // ≤ 2^40: Validate bounds every field by 2^20
		b.stride = n + 4*(n/int64(gs))
		if !add(b.stride, b.count(c)) {
			return f, errOverflow
		}
		f.mats = append(f.mats, b)
	}
	f.size = pos
	return f, nil
}

// int8s returns the n int8 values at byte off: a view of a mapped file,
// else a new slice read from the source.
func (s *source) int8s(led *tensor.Ledger, off, n int64) ([]int8, error) {
	if s.data != nil && n > 0 && off >= 0 && off+n <= int64(len(s.data)) {
		return unsafe.Slice((*int8)(unsafe.Pointer(&s.data[off])), n), nil
	}
	q := make([]int8, n)
	led.RecordAlloc(n)
	return q, s.readInt8s(led, q, off)
}

// float32s returns the n float32s at byte off: a view of a mapped file
// when aligned, else a new slice read (or copied) from the source.
func (s *source) float32s(led *tensor.Ledger, off, n int64) ([]float32, error) {
	if v := s.f32View(off, n); v != nil {
		return v, nil
	}
	v := make([]float32, n)
	led.RecordAlloc(4 * n)
	return v, s.readFloat32s(led, v, off)
}

// readInt8s fills dst with the int8 values at byte off.
func (s *source) readInt8s(led *tensor.Ledger, dst []int8, off int64) error {
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), len(dst))
	if err := readFull(s.reader(), b, off); err != nil {
		return err
	}
	s.copied(led, int64(len(dst)))
	return nil
}

// readFloat32s fills dst with the little-endian float32s at byte off.
func (s *source) readFloat32s(led *tensor.Ledger, dst []float32, off int64) error {
	if v := s.f32View(off, int64(len(dst))); v != nil {
		copy(dst, v)
	} else {
		buf := s.scratch()
		for i := 0; i < len(dst); {
			chunk := min(len(dst)-i, len(buf)/4)
			b := buf[:4*chunk]
			if err := readFull(s.reader(), b, off+4*int64(i)); err != nil {
				return err
			}
			for j := range chunk {
				dst[i+j] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*j:]))
			}
			i += chunk
		}
	}
	s.copied(led, 4*int64(len(dst)))
	return nil
}

// buildV2 makes the model of a validated version-2 header. Every weight
// matrix is a meta tensor of the right shape whose Q8_0 form is in
// m.Quantized (the forward pass reads the int8 values and scales; a meta
// tensor holds no data, so nothing float32 is allocated). With a mapped
// file the values and scales are views of the mapping, except each
// layer's fused WQKV, which concatenates the rows (and, groups being
// whole rows, the scales) of its wq, wk and wv.
func buildV2(h Header, src *source, name string, opts LoadOptions) (*Model, error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("checkpoint %s: %s", name, fmt.Sprintf(format, a...))
	}
	cfg, gs, led := h.Config, h.GroupSize, opts.Ledger
	if err := checkGroupSize(cfg, gs); err != nil {
		return nil, fail("%v", err)
	}
	lay, err := v2Layout(cfg, gs)
	if err != nil {
		return nil, fail("%v", err)
	}
	m := &Model{Config: cfg, Quantized: map[*tensor.Tensor]*kernels.Matrix{}}
	w := &m.Weights
	w.Layers = make([]Layer, cfg.NLayers)
	for _, b := range lay.norms {
		for l := 0; l < b.count(cfg); l++ {
			off := b.off + int64(l)*b.elems*4
			t, err := src.tensor(led, off, tensor.F32, cfg.Dim)
			if err != nil {
				return nil, fail("truncated or unreadable %s at byte %d: %v", b.label(l), off, err)
			}
			switch b.kind {
			case kindAttnNorm:
				w.Layers[l].AttnNorm = t
			case kindFFNNorm:
				w.Layers[l].FFNNorm = t
			case kindFinalNorm:
				w.FinalNorm = t
			}
		}
	}
	// The fused WQKV of each layer: rows of wq, then wk, then wv. A group
	// never crosses a row, so row r's scales start at r·dim/gs.
	qkvN := int64(cfg.QKVRows()) * int64(cfg.Dim)
	fusedQ := make([][]int8, cfg.NLayers)
	fusedS := make([][]float32, cfg.NLayers)
	rowAt := map[blockKind]int64{kindWQ: 0, kindWK: int64(cfg.NHeads * cfg.HeadDim()),
		kindWV: int64(cfg.NHeads*cfg.HeadDim() + cfg.KVDim())}
	for _, b := range lay.mats {
		for l := 0; l < b.count(cfg); l++ {
			qOff, sOff, n := b.qOff(l), b.sOff(l), b.n()
			if row, fused := rowAt[b.kind]; fused {
				if fusedQ[l] == nil {
					fusedQ[l], fusedS[l] = make([]int8, qkvN), make([]float32, qkvN/int64(gs))
					led.RecordAlloc(qkvN + 4*qkvN/int64(gs))
				}
				at := row * int64(cfg.Dim)
				err := src.readInt8s(led, fusedQ[l][at:at+n], qOff)
				if err == nil {
					err = src.readFloat32s(led, fusedS[l][at/int64(gs):(at+n)/int64(gs)], sOff)
				}
				if err != nil {
					return nil, fail("truncated or unreadable %s at byte %d: %v", b.label(l), qOff, err)
				}
				continue
			}
			q, err := src.int8s(led, qOff, n)
			var s []float32
			if err == nil {
				s, err = src.float32s(led, sOff, n/int64(gs))
			}
			if err != nil {
				return nil, fail("truncated or unreadable %s at byte %d: %v", b.label(l), qOff, err)
			}
			t, err := quantized(m, b.rows, b.cols, q, s, gs)
			if err != nil {
				return nil, fail("%s: %v", b.label(l), err)
			}
			switch b.kind {
			case kindEmbedding:
				w.TokenEmbedding = t
			case kindWO:
				w.Layers[l].WO = t
			case kindW1:
				w.Layers[l].W1 = t
			case kindW2:
				w.Layers[l].W2 = t
			case kindW3:
				w.Layers[l].W3 = t
			case kindClassifier:
				w.Classifier = t
			}
		}
	}
	for l := range w.Layers {
		if w.Layers[l].WQKV, err = quantized(m, cfg.QKVRows(), cfg.Dim, fusedQ[l], fusedS[l], gs); err != nil {
			return nil, fail("layer %d wqkv: %v", l, err)
		}
	}
	if cfg.SharedClassifier {
		w.Classifier = w.TokenEmbedding
	}
	if opts.WeightDType != tensor.F32 {
		if err := dequantizeAll(m, opts.WeightDType, led); err != nil {
			return nil, fail("%v", err)
		}
	}
	return m, nil
}

// quantized returns a meta placeholder of shape (rows, cols) whose Q8_0
// form (q, s) it records in m.Quantized.
func quantized(m *Model, rows, cols int, q []int8, s []float32, gs int) (*tensor.Tensor, error) {
	mat, err := kernels.NewQ8_0(rows, cols, q, s, gs)
	if err != nil {
		return nil, err
	}
	t, err := tensor.Meta(tensor.F32, rows, cols)
	if err != nil {
		return nil, err
	}
	m.Quantized[t] = mat
	return t, nil
}

// dequantizeAll replaces every Q8_0 weight of m by a real tensor of dtype
// dt holding q·scale (computed in float32, as the kernels do), rounded
// once to dt, and clears m.Quantized.
func dequantizeAll(m *Model, dt tensor.DType, led *tensor.Ledger) error {
	done := map[*tensor.Tensor]*tensor.Tensor{}
	deq := func(p **tensor.Tensor) error {
		old := *p
		if t, ok := done[old]; ok {
			*p = t
			return nil
		}
		q := m.Quantized[old]
		if q == nil {
			return nil
		}
		t, err := tensor.Empty(led, dt, q.Rows, q.Cols)
		if err != nil {
			return err
		}
		row := make([]float32, q.Cols)
		st := t.Storage()
		for i := 0; i < q.Rows; i++ {
			if err := q.Row(i, row); err != nil {
				return err
			}
			for j, v := range row {
				st.Store(i*q.Cols+j, v)
			}
		}
		done[old], *p = t, t
		return nil
	}
	w := &m.Weights
	ptrs := []**tensor.Tensor{&w.TokenEmbedding, &w.Classifier}
	for l := range w.Layers {
		L := &w.Layers[l]
		ptrs = append(ptrs, &L.WQKV, &L.WO, &L.W1, &L.W2, &L.W3)
	}
	for _, p := range ptrs {
		if err := deq(p); err != nil {
			return err
		}
	}
	m.Quantized = nil
	m.Config.WeightDType = dt
	return nil
}

// WriteV2 writes m as a llama2.c version-2 (Q8_0) checkpoint, the format
// runq.c reads (see the layout above): the norms stay float32, every
// weight matrix is quantized in groups of groupSize weights with
// scale = max|w|/127 and q = round(w/scale), half to even. groupSize 0
// picks Q8GroupSize(m.Config, 64); any other value must divide dim and
// hidden_dim.
//
// The fused WQKV of each layer is split back into wq, wk and wv (groups
// lie within rows, so this splits its rows and scales). Weights m already
// holds as Q8_0 with the same group size are written as they are, so
// load → write reproduces a version-2 file byte for byte; other weights
// (float32, F16/BF16 widened exactly, or Q8_0 of another group size,
// dequantized) are quantized here.
func WriteV2(w io.Writer, m *Model, groupSize int) error {
	fail := func(err error) error { return fmt.Errorf("write version-2 checkpoint: %w", err) }
	if err := checkWeights(m); err != nil {
		return fail(err)
	}
	c := m.Config
	gs := groupSize
	if gs == 0 {
		gs = Q8GroupSize(c, defaultGroupSize)
	}
	if err := checkGroupSize(c, gs); err != nil {
		return fail(err)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var hdr [v1HeaderSize]byte
	le := binary.LittleEndian
	le.PutUint32(hdr[0:], v1Magic)
	le.PutUint32(hdr[4:], 2)
	for i, v := range []int{c.Dim, c.HiddenDim, c.NLayers, c.NHeads, c.NKVHeads, c.VocabSize, c.SeqLen} {
		le.PutUint32(hdr[8+4*i:], uint32(int32(v)))
	}
	if c.SharedClassifier {
		hdr[8+legacyHeaderSize] = 1
	}
	le.PutUint32(hdr[8+legacyHeaderSize+1:], uint32(int32(gs)))
	if _, err := bw.Write(hdr[:]); err != nil {
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
	lay, err := v2Layout(c, gs)
	if err != nil {
		return fail(err)
	}
	hs := c.HeadDim()
	q, kv := c.NHeads*hs, c.NKVHeads*hs
	for _, b := range lay.mats {
		for l := 0; l < b.count(c); l++ {
			var t *tensor.Tensor
			r0 := 0
			switch b.kind {
			case kindEmbedding:
				t = m.Weights.TokenEmbedding
			case kindWQ:
				t = L[l].WQKV
			case kindWK:
				t, r0 = L[l].WQKV, q
			case kindWV:
				t, r0 = L[l].WQKV, q+kv
			case kindWO:
				t = L[l].WO
			case kindW1:
				t = L[l].W1
			case kindW2:
				t = L[l].W2
			case kindW3:
				t = L[l].W3
			case kindClassifier:
				t = m.Weights.Classifier
			}
			qm, err := q8Rows(m, t, r0, r0+b.rows, gs)
			if err != nil {
				return fail(fmt.Errorf("%s: %w", b.label(l), err))
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

// q8Rows returns rows [r0, r1) of the 2-D weight t as Q8_0 with group size
// gs: a window of m's own Q8_0 form when it has that group size, else
// quantized from the rows' float32 values.
func q8Rows(m *Model, t *tensor.Tensor, r0, r1, gs int) (*kernels.Matrix, error) {
	cols := t.Shape()[1]
	rows := r1 - r0
	q := m.Quantized[t]
	if q != nil && q.GroupSize == gs {
		return rowBlock(q, r0, rows), nil
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
