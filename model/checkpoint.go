package model

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/stride-lm/stride/tensor"
)

// Format is the on-disk layout of a llama2.c checkpoint.
type Format int

const (
	// FormatLegacy is the format run.c reads: a 28-byte header of seven
	// little-endian int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
	// vocab_size, seq_len), then float32 tensors grouped by kind across
	// layers, two unused RoPE tables, and the classifier only when
	// vocab_size is negative.
	FormatLegacy Format = iota
	// FormatV1 is llama2.c export.py's "version 1": a 256-byte header
	// (magic, version, the same seven int32, a shared-classifier byte, zero
	// padding), then float32 tensors with the norms first and no RoPE tables.
	FormatV1
)

// String names the format.
func (f Format) String() string {
	switch f {
	case FormatLegacy:
		return "llama2.c legacy"
	case FormatV1:
		return "llama2.c version 1"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

const (
	// v1Magic is "ak42" read as a little-endian uint32. A legacy file
	// starts with dim instead, and dim = 0x616b3432 is far beyond maxDim,
	// so the two formats cannot be confused.
	v1Magic          = 0x616b3432
	v1HeaderSize     = 256
	legacyHeaderSize = 7 * 4
	// readChunk is how many bytes Read converts at a time: the only
	// scratch memory the loader needs besides the weights themselves.
	readChunk = 1 << 18
)

// LoadOptions tunes Load and Read.
type LoadOptions struct {
	// WeightDType is the storage dtype of the weight matrices (token
	// embedding, WQKV, WO, W1, W2, W3, classifier). The files hold float32;
	// F16 and BF16 round each value once, at load, to halve the bytes the
	// matmuls stream. The RMSNorm gains always stay float32: they are
	// Dim floats each and their precision matters more than their size.
	WeightDType tensor.DType
	// Ctx receives the allocations of the weights (may be nil).
	Ctx *tensor.Context
}

// Header is the validated header of a checkpoint: its format, the model
// configuration it declares and the exact size in bytes the file must have.
type Header struct {
	Format Format
	Config Config
	Size   int64
}

// Load reads a llama2.c checkpoint (legacy or version 1) from path.
// Errors read "checkpoint <path>: <problem>".
func Load(path string, opts LoadOptions) (*Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("checkpoint %s: not a regular file", path)
	}
	return Read(f, st.Size(), path, opts)
}

// Read reads a checkpoint of size bytes from r; name is used in errors.
//
// The header is validated before anything is allocated: the configuration
// must pass Config.Validate and the byte size it implies (computed in int64
// with overflow checks) must equal size exactly, and r must really hold
// size bytes. A header claiming terabytes of weights is therefore rejected
// in O(1) memory, whatever it says.
//
// The query, key and value matrices of each layer are read straight into
// the rows of that layer's fused WQKV tensor (wq rows, then wk, then wv).
func Read(r io.ReaderAt, size int64, name string, opts LoadOptions) (*Model, error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("checkpoint %s: %s", name, fmt.Sprintf(format, a...))
	}
	if opts.WeightDType > tensor.BF16 {
		return nil, fail("unknown weight dtype %d", opts.WeightDType)
	}
	h, err := ReadHeader(r, size, name)
	if err != nil {
		return nil, err
	}
	// A ReaderAt may be shorter than the size its caller claims; find out
	// before allocating for that size.
	var last [1]byte
	if n, err := r.ReadAt(last[:], size-1); n != 1 {
		return nil, fail("truncated: cannot read byte %d of the %d the header requires (%v)", size-1, size, err)
	}
	cfg := h.Config
	cfg.WeightDType = opts.WeightDType
	m, err := allocWeights(opts.Ctx, cfg)
	if err != nil {
		return nil, fail("%v", err)
	}
	blocks, _, err := fileLayout(h.Format, cfg)
	if err != nil {
		return nil, fail("%v", err)
	}
	buf := make([]byte, readChunk)
	hs := int64(cfg.HeadDim())
	qRows, kvRows := int64(cfg.NHeads)*hs, int64(cfg.NKVHeads)*hs
	for _, b := range blocks {
		for l := 0; l < b.count(cfg); l++ {
			var dst *tensor.Tensor
			var at int64
			switch b.kind {
			case kindEmbedding:
				dst = m.Weights.TokenEmbedding
			case kindAttnNorm:
				dst = m.Weights.Layers[l].AttnNorm
			case kindWQ:
				dst = m.Weights.Layers[l].WQKV
			case kindWK:
				dst, at = m.Weights.Layers[l].WQKV, qRows*int64(cfg.Dim)
			case kindWV:
				dst, at = m.Weights.Layers[l].WQKV, (qRows+kvRows)*int64(cfg.Dim)
			case kindWO:
				dst = m.Weights.Layers[l].WO
			case kindFFNNorm:
				dst = m.Weights.Layers[l].FFNNorm
			case kindW1:
				dst = m.Weights.Layers[l].W1
			case kindW2:
				dst = m.Weights.Layers[l].W2
			case kindW3:
				dst = m.Weights.Layers[l].W3
			case kindFinalNorm:
				dst = m.Weights.FinalNorm
			case kindClassifier:
				dst = m.Weights.Classifier
			case kindRope:
				continue // run.c skips the tables and computes RoPE itself
			}
			off := b.off + int64(l)*b.elems*4
			if err := readFloats(r, off, b.elems, dst.Storage(), int(at), buf); err != nil {
				return nil, fail("truncated or unreadable %s at byte %d: %v", b.label(l), off, err)
			}
		}
	}
	return m, nil
}

// ReadHeader reads and validates the header of a checkpoint of size bytes,
// without reading or allocating any weights. The returned Config has
// llama2.c's RopeTheta (10000) and NormEps (1e-5) and F32 dtypes.
func ReadHeader(r io.ReaderAt, size int64, name string) (Header, error) {
	fail := func(format string, a ...any) (Header, error) {
		return Header{}, fmt.Errorf("checkpoint %s: %s", name, fmt.Sprintf(format, a...))
	}
	if size < legacyHeaderSize {
		return fail("file is %d bytes, too short for a header (at least %d)", size, legacyHeaderSize)
	}
	var hdr [v1HeaderSize]byte
	n := min(int64(len(hdr)), size)
	if got, err := r.ReadAt(hdr[:n], 0); int64(got) != n {
		return fail("cannot read the header: %v", err)
	}
	le := binary.LittleEndian
	h := Header{Format: FormatLegacy}
	ints := hdr[0:legacyHeaderSize]
	var sharedByte byte = 1
	if le.Uint32(hdr[0:]) == v1Magic {
		h.Format = FormatV1
		if size < v1HeaderSize {
			return fail("file is %d bytes, too short for a version-1 header (%d)", size, v1HeaderSize)
		}
		if v := int32(le.Uint32(hdr[4:])); v != 1 {
			return fail("unsupported export version %d (only version 1, float32, is supported)", v)
		}
		ints = hdr[8 : 8+legacyHeaderSize]
		sharedByte = hdr[8+legacyHeaderSize]
		if sharedByte > 1 {
			return fail("version-1 header: shared_classifier byte is %d, want 0 or 1", sharedByte)
		}
		for i := 8 + legacyHeaderSize + 1; i < v1HeaderSize; i++ {
			if hdr[i] != 0 {
				return fail("version-1 header: padding byte %d is %#x, want 0", i, hdr[i])
			}
		}
	}
	var v [7]int64
	for i := range v {
		v[i] = int64(int32(le.Uint32(ints[4*i:])))
	}
	shared := sharedByte == 1
	vocab := v[5]
	if h.Format == FormatLegacy {
		// llama2.c's legacy export negates vocab_size to say that an
		// unshared classifier follows the RoPE tables.
		shared = vocab > 0
		if vocab < 0 {
			vocab = -vocab // int64, so -MinInt32 does not overflow
		}
	}
	cfg := Config{
		Dim: int(v[0]), HiddenDim: int(v[1]), NLayers: int(v[2]),
		NHeads: int(v[3]), NKVHeads: int(v[4]), VocabSize: int(vocab), SeqLen: int(v[6]),
		RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: shared,
	}
	if err := cfg.Validate(); err != nil {
		return fail("invalid %s header: %v", h.Format, err)
	}
	_, want, err := fileLayout(h.Format, cfg)
	if err != nil {
		return fail("invalid %s header: %v", h.Format, err)
	}
	if want != size {
		hint := ""
		if h.Format == FormatLegacy {
			other := cfg
			other.SharedClassifier = !shared
			if _, alt, err := fileLayout(h.Format, other); err == nil && alt == size {
				hint = fmt.Sprintf(" (the size fits the %s-classifier variant, but the sign of vocab_size says %s)",
					sharedWord(!shared), sharedWord(shared))
			}
		}
		return fail("file is %d bytes but its %s header (%s) requires exactly %d bytes (%s)%s",
			size, h.Format, describe(cfg), want, humanBytes(want), hint)
	}
	h.Config = cfg
	h.Size = want
	return h, nil
}

func sharedWord(shared bool) string {
	if shared {
		return "shared"
	}
	return "unshared"
}

func describe(c Config) string {
	return fmt.Sprintf("dim %d, hidden_dim %d, n_layers %d, n_heads %d, n_kv_heads %d, vocab_size %d, seq_len %d, %s classifier",
		c.Dim, c.HiddenDim, c.NLayers, c.NHeads, c.NKVHeads, c.VocabSize, c.SeqLen, sharedWord(c.SharedClassifier))
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, u := float64(n), 0
	for f >= unit && u < 6 {
		f /= unit
		u++
	}
	return fmt.Sprintf("%.1f %ciB", f, "KMGTPE"[u-1])
}

// blockKind names one group of float32s in a checkpoint file.
type blockKind int

const (
	kindEmbedding blockKind = iota
	kindAttnNorm
	kindWQ
	kindWK
	kindWV
	kindWO
	kindFFNNorm
	kindW1
	kindW2
	kindW3
	kindFinalNorm
	kindRope // both legacy RoPE tables (cos then sin)
	kindClassifier
)

var kindNames = [...]string{"token embedding", "rms_att weight", "wq", "wk", "wv", "wo", "rms_ffn weight",
	"w1", "w2", "w3", "rms_final weight", "RoPE tables", "classifier"}

// block is a run of float32s in the file: elems floats per layer for
// per-layer kinds (stored layer after layer), or elems floats once.
type block struct {
	kind  blockKind
	elems int64 // floats per layer, or in total for global kinds
	off   int64 // byte offset of the block in the file
}

func (b block) perLayer() bool {
	switch b.kind {
	case kindAttnNorm, kindWQ, kindWK, kindWV, kindWO, kindFFNNorm, kindW1, kindW2, kindW3:
		return true
	}
	return false
}

func (b block) count(c Config) int {
	if b.perLayer() {
		return c.NLayers
	}
	return 1
}

func (b block) label(layer int) string {
	if b.perLayer() {
		return fmt.Sprintf("%s (layer %d)", kindNames[b.kind], layer)
	}
	return kindNames[b.kind]
}

var errOverflow = errors.New("the sizes it declares overflow a 64-bit byte count")

// mul64 multiplies non-negative sizes, reporting overflow.
func mul64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	if a > math.MaxInt64/b {
		return 0, false
	}
	return a * b, true
}

// fileLayout lists the blocks of a checkpoint of config c in file order,
// with their byte offsets, and the total file size. All arithmetic is
// int64 with overflow checks: Validate bounds every field by 2^20, so a
// single matrix is at most 2^40 floats, but a sum over layers of several
// of them could still wrap.
func fileLayout(f Format, c Config) ([]block, int64, error) {
	d, h, v := int64(c.Dim), int64(c.HiddenDim), int64(c.VocabSize)
	hs := int64(c.HeadDim())
	q, kv := int64(c.NHeads)*hs, int64(c.NKVHeads)*hs
	el := map[blockKind]int64{
		kindEmbedding: v * d, kindAttnNorm: d, kindWQ: q * d, kindWK: kv * d, kindWV: kv * d,
		kindWO: d * q, kindFFNNorm: d, kindW1: h * d, kindW2: d * h, kindW3: h * d,
		kindFinalNorm: d, kindRope: int64(c.SeqLen) * hs, kindClassifier: v * d,
	}
	var order []blockKind
	var pos int64
	switch f {
	case FormatLegacy:
		pos = legacyHeaderSize
		order = []blockKind{kindEmbedding, kindAttnNorm, kindWQ, kindWK, kindWV, kindWO, kindFFNNorm,
			kindW1, kindW2, kindW3, kindFinalNorm, kindRope}
	case FormatV1:
		pos = v1HeaderSize
		order = []blockKind{kindAttnNorm, kindFFNNorm, kindFinalNorm, kindEmbedding, kindWQ, kindWK, kindWV,
			kindWO, kindW1, kindW2, kindW3}
	default:
		return nil, 0, fmt.Errorf("unknown format %d", f)
	}
	if !c.SharedClassifier {
		order = append(order, kindClassifier)
	}
	blocks := make([]block, 0, len(order))
	for _, k := range order {
		b := block{kind: k, elems: el[k], off: pos}
		n, ok := mul64(b.elems, int64(b.count(c)))
		if ok {
			n, ok = mul64(n, 4)
		}
		if !ok || pos > math.MaxInt64-n {
			return nil, 0, errOverflow
		}
		pos += n
		blocks = append(blocks, b)
	}
	return blocks, pos, nil
}

// allocWeights allocates every tensor of a model with config c: matrices in
// c.WeightDType, norms in F32. The classifier is the embedding itself when
// shared.
func allocWeights(ctx *tensor.Context, c Config) (*Model, error) {
	dt := c.WeightDType
	var firstErr error
	mk := func(dt tensor.DType, shape ...int) *tensor.Tensor {
		if firstErr != nil {
			return nil
		}
		t, err := tensor.Empty(ctx, dt, shape...)
		if err != nil {
			firstErr = err
		}
		return t
	}
	hs := c.HeadDim()
	m := &Model{Config: c}
	w := &m.Weights
	w.TokenEmbedding = mk(dt, c.VocabSize, c.Dim)
	w.Layers = make([]Layer, c.NLayers)
	for l := range w.Layers {
		w.Layers[l] = Layer{
			AttnNorm: mk(tensor.F32, c.Dim),
			WQKV:     mk(dt, c.QKVRows(), c.Dim),
			WO:       mk(dt, c.Dim, c.NHeads*hs),
			FFNNorm:  mk(tensor.F32, c.Dim),
			W1:       mk(dt, c.HiddenDim, c.Dim),
			W2:       mk(dt, c.Dim, c.HiddenDim),
			W3:       mk(dt, c.HiddenDim, c.Dim),
		}
	}
	w.FinalNorm = mk(tensor.F32, c.Dim)
	if c.SharedClassifier {
		w.Classifier = w.TokenEmbedding
	} else {
		w.Classifier = mk(dt, c.VocabSize, c.Dim)
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return m, nil
}

// readFull reads len(b) bytes at off, turning a short read into
// io.ErrUnexpectedEOF.
func readFull(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// readFloats reads n little-endian float32s at byte offset off into st
// starting at element dstOff, converting to st's dtype, through buf.
func readFloats(r io.ReaderAt, off, n int64, st *tensor.Storage, dstOff int, buf []byte) error {
	if int64(dstOff)+n > int64(st.Len()) {
		return fmt.Errorf("internal: %d floats do not fit at element %d of a %d-element storage", n, dstOff, st.Len())
	}
	le := binary.LittleEndian
	for n > 0 {
		chunk := min(n, int64(len(buf)/4))
		b := buf[:chunk*4]
		if err := readFull(r, b, off); err != nil {
			return err
		}
		switch st.DType() {
		case tensor.F32:
			dst := st.Float32s()[dstOff : dstOff+int(chunk)]
			for i := range dst {
				dst[i] = math.Float32frombits(le.Uint32(b[4*i:]))
			}
		case tensor.F16:
			dst := st.Uint16s()[dstOff : dstOff+int(chunk)]
			for i := range dst {
				dst[i] = tensor.F16Bits(math.Float32frombits(le.Uint32(b[4*i:])))
			}
		case tensor.BF16:
			dst := st.Uint16s()[dstOff : dstOff+int(chunk)]
			for i := range dst {
				dst[i] = tensor.BF16Bits(math.Float32frombits(le.Uint32(b[4*i:])))
			}
		}
		off += chunk * 4
		dstOff += int(chunk)
		n -= chunk
	}
	return nil
}

// checkWeights verifies that every tensor of m is present, has data and has
// the shape m.Config implies (1-D norms, 2-D (out, in) matrices).
func checkWeights(m *Model) error {
	if m == nil {
		return errors.New("nil model")
	}
	c := m.Config
	if err := c.Validate(); err != nil {
		return err
	}
	w := m.Weights
	check := func(t *tensor.Tensor, name string, shape ...int) error {
		if t == nil {
			return fmt.Errorf("%s is missing", name)
		}
		if t.IsMeta() {
			return fmt.Errorf("%s is a meta tensor (no data)", name)
		}
		got := t.Shape()
		ok := len(got) == len(shape)
		for i := 0; ok && i < len(shape); i++ {
			ok = got[i] == shape[i]
		}
		if !ok {
			return fmt.Errorf("%s has shape %s, want %s", name, tensor.FormatInts(got), tensor.FormatInts(shape))
		}
		return nil
	}
	if len(w.Layers) != c.NLayers {
		return fmt.Errorf("model has %d layers, config says %d", len(w.Layers), c.NLayers)
	}
	errs := []error{
		check(w.TokenEmbedding, "token embedding", c.VocabSize, c.Dim),
		check(w.FinalNorm, "final norm", c.Dim),
		check(w.Classifier, "classifier", c.VocabSize, c.Dim),
	}
	for l, L := range w.Layers {
		p := fmt.Sprintf("layer %d ", l)
		errs = append(errs,
			check(L.AttnNorm, p+"attention norm", c.Dim),
			check(L.WQKV, p+"WQKV", c.QKVRows(), c.Dim),
			check(L.WO, p+"WO", c.Dim, c.NHeads*c.HeadDim()),
			check(L.FFNNorm, p+"FFN norm", c.Dim),
			check(L.W1, p+"W1", c.HiddenDim, c.Dim),
			check(L.W2, p+"W2", c.Dim, c.HiddenDim),
			check(L.W3, p+"W3", c.HiddenDim, c.Dim))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// WriteLegacy writes m in llama2.c's legacy checkpoint format, the one
// run.c reads: the fused WQKV of each layer is split back into wq, wk and
// wv (each written for all layers in turn), half-precision weights are
// widened to float32 (exactly), vocab_size is written negative when the
// classifier is not shared, and the classifier then follows the RoPE tables.
//
// The two RoPE tables (freq_cis_real, freq_cis_imag: seq_len × head_dim/2
// each) are computed as llama2.c's legacy export computed them, in float32
// the way PyTorch does: freq_i = 1 / θ^(2i/head_dim) and cos, sin of
// pos·freq_i, with θ = Config.RopeTheta. run.c and Read skip them.
func WriteLegacy(w io.Writer, m *Model) error {
	fail := func(err error) error { return fmt.Errorf("write legacy checkpoint: %w", err) }
	if err := checkWeights(m); err != nil {
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
	fw := &floatWriter{w: bw}
	L := m.Weights.Layers
	hs := c.HeadDim()
	q, kv := c.NHeads*hs, c.NKVHeads*hs
	fw.rows(m.Weights.TokenEmbedding, 0, c.VocabSize)
	for l := range L {
		fw.rows(L[l].AttnNorm, 0, 1)
	}
	for l := range L {
		fw.rows(L[l].WQKV, 0, q)
	}
	for l := range L {
		fw.rows(L[l].WQKV, q, q+kv)
	}
	for l := range L {
		fw.rows(L[l].WQKV, q+kv, q+2*kv)
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

// legacyRopeTables returns freq_cis_real and freq_cis_imag as llama2.c's
// legacy export wrote them (model.freqs_cos/sin[:seq_len], computed by
// precompute_freqs_cis in float32): freq = 1/θ^(float32(2i)/hs),
// angle = float32(pos)·freq, then cos and sin, each step rounded to float32.
func legacyRopeTables(c Config) (cos, sin []float32) {
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

// floatWriter writes float32s little-endian through a small buffer and
// keeps the first error, like bufio.Writer.
type floatWriter struct {
	w   io.Writer
	buf [4096]byte
	n   int
	err error
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
// logical row-major order.
func (fw *floatWriter) rows(t *tensor.Tensor, r0, r1 int) {
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
