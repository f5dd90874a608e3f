package model

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"unsafe"

	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
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
	// FormatV2 is llama2.c export.py's "version 2" (what runq.c reads): the
	// version-1 header with version 2 and an int32 group size after the
	// shared-classifier byte, then the float32 norms, then every weight
	// matrix as Q8_0: its int8 values followed by its float32 group scales.
	// See checkpoint_v2.go.
	FormatV2
)

// String names the format.
func (f Format) String() string {
	switch f {
	case FormatLegacy:
		return "llama2.c legacy"
	case FormatV1:
		return "llama2.c version 1"
	case FormatV2:
		return "llama2.c version 2"
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
	//
	// A version-2 (Q8_0) file keeps its int8 weights (Model.Quantized) when
	// WeightDType is F32, the default; F16 or BF16 dequantize every weight
	// (q·scale in float32, as the kernels compute it) and round it once.
	WeightDType tensor.DType
	// NoMmap makes Load read the file into Go memory instead of mapping
	// it. By default (false) Load maps the checkpoint (where the platform
	// has mmap and the host is little-endian) and the float32 weight
	// tensors are views of the mapping; see Load.
	NoMmap bool
	// Ledger receives the allocations of the weights (may be nil). With a
	// mapped file only the memory the loader allocates is counted (the
	// fused WQKV, converted dtypes), and the bytes it copies out of the
	// mapping are recorded as copies.
	Ledger *tensor.Ledger
}

// Header is the validated header of a checkpoint: its format, the model
// configuration it declares and the exact size in bytes the file must have.
type Header struct {
	Format Format
	Config Config
	Size   int64
	// GroupSize is the Q8_0 group size of a version-2 file (0 otherwise).
	GroupSize int
}

// Load reads a llama2.c checkpoint (legacy, version 1 or version 2) from
// path. Errors read "checkpoint <path>: <problem>".
//
// Unless opts.NoMmap is set, the file is memory-mapped (private,
// copy-on-write: the file is never modified, and a caller that writes a
// weight gets its own copy of that page instead of a crash) and the
// weights are zero-copy views of the mapping: a float32 tensor's storage
// is the file's bytes reinterpreted as []float32, and a Q8_0 matrix's int8
// values and scales are slices of it. That needs the file's little-endian
// floats to be the host's, so a big-endian host reads instead; the
// offsets are 4-byte aligned by construction (headers of 28 and 256
// bytes, float32 blocks), and a block that is not (a Q8_0 scale block
// after an int8 block of odd length) is copied. Nothing is read at load
// but the header and the fused WQKV: the kernel pages the weights in on
// first use, from the page cache, shared with every other process that
// maps the same file.
//
// The one copy is the QKV fusion: the file stores all layers' wq, then all
// wk, then all wv, but Layer.WQKV must be one contiguous
// ((n_heads+2·n_kv_heads)·head_dim, dim) block, so each layer's three
// matrices are copied into a new WQKV (n_layers·QKVRows·dim·4 bytes for
// float32; Model.MappedBytes reports it). F16/BF16 weights are converted,
// hence copied, too. The mapping lives as long as the Model: Model.Close
// releases it.
//
// When mapping is unavailable or fails, Load falls back to Read.
//
// As with any mapping, the file must not be truncated or rewritten in
// place while the model is in use: a page beyond a shrunken file faults
// (SIGBUS). Replace checkpoints by writing a new file and renaming it, as
// infer export does; the mapping keeps the old file alive.
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
	size := st.Size()
	if opts.NoMmap || !mmapSupported || !hostLittleEndian {
		return Read(f, size, path, opts)
	}
	if opts.WeightDType > tensor.BF16 {
		return nil, fmt.Errorf("checkpoint %s: unknown weight dtype %d", path, opts.WeightDType)
	}
	// Validate the header before mapping anything.
	h, err := ReadHeader(f, size, path)
	if err != nil {
		return nil, err
	}
	data, err := mapFile(f, size)
	if err != nil {
		return Read(f, size, path, opts) // no mmap here: read instead
	}
	mp := &mapping{data: data}
	m, err := buildModel(h, &source{data: data, mp: mp}, path, opts)
	if err != nil {
		unmapFile(data)
		return nil, err
	}
	m.mapping = mp
	return m, nil
}

// hostLittleEndian reports whether the host stores numbers as the
// checkpoint files do; only then can a mapped float32 be used in place.
var hostLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// mapping is a memory-mapped checkpoint that a Model's weights view.
type mapping struct {
	data   []byte // the whole file, as mapFile returned it
	copied int64  // bytes the loader copied out of it into new memory
}

// MappedBytes reports where m's weights live: mapped is the size of the
// memory-mapped checkpoint they view (0 when they were read into Go
// memory, synthesized, or m was closed) and copied is how many bytes the
// loader still had to copy out of the mapping (the QKV fusion, dtype
// conversions).
func (m *Model) MappedBytes() (mapped, copied int64) {
	if m == nil || m.mapping == nil {
		return 0, 0
	}
	return int64(len(m.mapping.data)), m.mapping.copied
}

// Close releases the memory-mapped checkpoint behind m's weights, if
// any, and drops m's weights, so later use fails with an error instead of
// touching unmapped memory. Engines and Forwards built over m, and any
// weight tensor taken from it, must not be used after Close. A model that
// was read or synthesized has nothing to release: Close leaves it as it
// is. Close is idempotent but not safe for concurrent use.
func (m *Model) Close() error {
	if m == nil || m.mapping == nil {
		return nil
	}
	data := m.mapping.data
	m.mapping = nil
	m.Weights = Weights{}
	m.Quantized = nil
	if err := unmapFile(data); err != nil {
		return fmt.Errorf("model: unmap checkpoint: %w", err)
	}
	return nil
}

// Read reads a checkpoint (legacy, version 1 or version 2) of size bytes
// from r into Go memory; name is used in errors.
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
	return buildModel(h, &source{r: r}, name, opts)
}

// source is where the loader takes a checkpoint's bytes from: a memory
// mapping of the whole file (weights become views of it) or an
// io.ReaderAt (weights are read into new memory).
type source struct {
	data []byte      // the mapped file, or nil
	mp   *mapping    // accounting of the mapping (with data)
	r    io.ReaderAt // when data is nil
	buf  []byte      // conversion scratch
}

// reader returns an io.ReaderAt over the source.
func (s *source) reader() io.ReaderAt {
	if s.r == nil {
		s.r = bytes.NewReader(s.data)
	}
	return s.r
}

// scratch returns the conversion buffer, allocated on first use.
func (s *source) scratch() []byte {
	if s.buf == nil {
		s.buf = make([]byte, readChunk)
	}
	return s.buf
}

// f32View returns the n float32s at byte off of a mapped file as a slice
// of the mapping itself, or nil when that is not possible: not mapped,
// or off not 4-byte aligned (the mapping starts on a page boundary, so
// alignment is the offset's). Load maps only on little-endian hosts, where
// the file's bytes are already the host's float32s.
func (s *source) f32View(off, n int64) []float32 {
	if s.data == nil || off%4 != 0 || off < 0 || n < 0 || off+4*n > int64(len(s.data)) {
		return nil
	}
	if n == 0 {
		return []float32{}
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&s.data[off])), n)
}

// copied records n bytes copied out of a mapping into new memory.
func (s *source) copied(led *tensor.Ledger, n int64) {
	if s.mp != nil {
		s.mp.copied += n
		led.RecordCopy(n)
	}
}

// tensor returns the tensor of dtype dt and shape whose float32s start at
// byte off: a view of the mapping when the file is mapped and dt is F32,
// otherwise a new tensor filled by reading and converting.
func (s *source) tensor(led *tensor.Ledger, off int64, dt tensor.DType, shape ...int) (*tensor.Tensor, error) {
	n := int64(1)
	for _, d := range shape {
		n *= int64(d)
	}
	if dt == tensor.F32 {
		if v := s.f32View(off, n); v != nil {
			return tensor.WrapFloat32(led, v, shape...)
		}
	}
	t, err := tensor.Empty(led, dt, shape...)
	if err != nil {
		return nil, err
	}
	if err := s.fill(led, off, n, t.Storage(), 0); err != nil {
		return nil, err
	}
	return t, nil
}

// fill reads n float32s at byte off into st from element dstOff on,
// converting to st's dtype.
func (s *source) fill(led *tensor.Ledger, off, n int64, st *tensor.Storage, dstOff int) error {
	if v := s.f32View(off, n); v != nil && st.DType() == tensor.F32 && int64(dstOff)+n <= int64(st.Len()) {
		copy(st.Float32s()[dstOff:], v)
	} else if err := readFloats(s.reader(), off, n, st, dstOff, s.scratch()); err != nil {
		return err
	}
	s.copied(led, n*int64(st.DType().Size()))
	return nil
}

// buildModel makes the model of a validated header from its source.
func buildModel(h Header, src *source, name string, opts LoadOptions) (*Model, error) {
	if h.Format == FormatV2 {
		return buildV2(h, src, name, opts)
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("checkpoint %s: %s", name, fmt.Sprintf(format, a...))
	}
	cfg := h.Config
	cfg.WeightDType = opts.WeightDType
	if err := cfg.Validate(); err != nil {
		return nil, fail("%v", err)
	}
	blocks, _, err := fileLayout(h.Format, cfg)
	if err != nil {
		return nil, fail("%v", err)
	}
	led, dt := opts.Ledger, cfg.WeightDType
	hs := cfg.HeadDim()
	qRows, kvRows := int64(cfg.NHeads*hs), int64(cfg.NKVHeads*hs)
	m := &Model{Config: cfg}
	w := &m.Weights
	w.Layers = make([]Layer, cfg.NLayers)
	for _, b := range blocks {
		for l := 0; l < b.count(cfg); l++ {
			off := b.off + int64(l)*b.elems*4
			var (
				dst   **tensor.Tensor
				tdt   = dt
				shape []int
				at    int64 = -1 // row offset (in elements) into WQKV
			)
			switch b.kind {
			case kindEmbedding:
				dst, shape = &w.TokenEmbedding, []int{cfg.VocabSize, cfg.Dim}
			case kindAttnNorm:
				dst, tdt, shape = &w.Layers[l].AttnNorm, tensor.F32, []int{cfg.Dim}
			case kindWQ:
				at = 0
			case kindWK:
				at = qRows * int64(cfg.Dim)
			case kindWV:
				at = (qRows + kvRows) * int64(cfg.Dim)
			case kindWO:
				dst, shape = &w.Layers[l].WO, []int{cfg.Dim, cfg.NHeads * hs}
			case kindFFNNorm:
				dst, tdt, shape = &w.Layers[l].FFNNorm, tensor.F32, []int{cfg.Dim}
			case kindW1:
				dst, shape = &w.Layers[l].W1, []int{cfg.HiddenDim, cfg.Dim}
			case kindW2:
				dst, shape = &w.Layers[l].W2, []int{cfg.Dim, cfg.HiddenDim}
			case kindW3:
				dst, shape = &w.Layers[l].W3, []int{cfg.HiddenDim, cfg.Dim}
			case kindFinalNorm:
				dst, tdt, shape = &w.FinalNorm, tensor.F32, []int{cfg.Dim}
			case kindClassifier:
				dst, shape = &w.Classifier, []int{cfg.VocabSize, cfg.Dim}
			case kindRope:
				continue // run.c skips the tables and computes RoPE itself
			}
			var err error
			if at >= 0 {
				// wq, wk, wv rows go into this layer's fused WQKV: the
				// file keeps them apart, so this is a copy even when mapped.
				L := &w.Layers[l]
				if L.WQKV == nil {
					if L.WQKV, err = tensor.Empty(led, dt, cfg.QKVRows(), cfg.Dim); err != nil {
						return nil, fail("%v", err)
					}
				}
				err = src.fill(led, off, b.elems, L.WQKV.Storage(), int(at))
			} else {
				*dst, err = src.tensor(led, off, tdt, shape...)
			}
			if err != nil {
				return nil, fail("truncated or unreadable %s at byte %d: %v", b.label(l), off, err)
			}
		}
	}
	if cfg.SharedClassifier {
		w.Classifier = w.TokenEmbedding
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
		if size < v1HeaderSize {
			return fail("file is %d bytes, too short for a version-1/2 header (%d)", size, v1HeaderSize)
		}
		// magic(4) version(4) seven int32 (28) shared(1) [group_size(4)] padding
		padFrom := 8 + legacyHeaderSize + 1
		switch v := int32(le.Uint32(hdr[4:])); v {
		case 1:
			h.Format = FormatV1
		case 2:
			h.Format = FormatV2
			h.GroupSize = int(int32(le.Uint32(hdr[padFrom:])))
			padFrom += 4
		default:
			return fail("unsupported export version %d (supported: 1, float32; 2, Q8_0)", v)
		}
		ints = hdr[8 : 8+legacyHeaderSize]
		sharedByte = hdr[8+legacyHeaderSize]
		if sharedByte > 1 {
			return fail("%s header: shared_classifier byte is %d, want 0 or 1", h.Format, sharedByte)
		}
		for i := padFrom; i < v1HeaderSize; i++ {
			if hdr[i] != 0 {
				return fail("%s header: padding byte %d is %#x, want 0", h.Format, i, hdr[i])
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
	var want int64
	var err error
	if h.Format == FormatV2 {
		if err := checkGroupSize(cfg, h.GroupSize); err != nil {
			return fail("invalid %s header: %v", h.Format, err)
		}
		var lay v2File
		lay, err = v2Layout(cfg, h.GroupSize)
		want = lay.size
	} else {
		_, want, err = fileLayout(h.Format, cfg)
	}
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
		extra := ""
		if h.Format == FormatV2 {
			extra = fmt.Sprintf(", group size %d", h.GroupSize)
		}
		return fail("file is %d bytes but its %s header (%s%s) requires exactly %d bytes (%s)%s",
			size, h.Format, describe(cfg), extra, want, humanBytes(want), hint)
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
func allocWeights(led *tensor.Ledger, c Config) (*Model, error) {
	dt := c.WeightDType
	var firstErr error
	mk := func(dt tensor.DType, shape ...int) *tensor.Tensor {
		if firstErr != nil {
			return nil
		}
		t, err := tensor.Empty(led, dt, shape...)
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

// checkWeights verifies that every tensor of m is present, has data (or a
// Q8_0 form in m.Quantized) and has the shape m.Config implies (1-D norms,
// 2-D (out, in) matrices).
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
		got := t.Shape()
		ok := len(got) == len(shape)
		for i := 0; ok && i < len(shape); i++ {
			ok = got[i] == shape[i]
		}
		if !ok {
			return fmt.Errorf("%s has shape %s, want %s", name, tensor.FormatInts(got), tensor.FormatInts(shape))
		}
		if q, found := m.Quantized[t]; found {
			if err := q.Validate(); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if len(shape) != 2 || q.Rows != shape[0] || q.Cols != shape[1] {
				return fmt.Errorf("%s is quantized as (%d, %d), want %s", name, q.Rows, q.Cols, tensor.FormatInts(shape))
			}
			return nil
		}
		if t.IsMeta() {
			return fmt.Errorf("%s is a meta tensor (no data)", name)
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
//
// Q8_0 weights (Model.Quantized, e.g. from a version-2 file) are
// dequantized: each weight is written as q·scale computed in float32,
// exactly the value the kernels use, so the legacy file runs the same
// model (and is 4/(1+4/group) times larger).
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
	fw := &floatWriter{w: bw, quant: m.Quantized}
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
