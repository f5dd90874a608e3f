package gguf

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/x448/float16"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
)

// Vocab is the tokenizer a written GGUF embeds (tokenizer.ggml.model
// "llama": SentencePiece tokens with their scores and token types).
// llama.cpp refuses a model file without a vocabulary.
type Vocab struct {
	Tokens []string
	Scores []float32
	Types  []int32 // llama_token_type: 1 normal, 2 unknown, 3 control, 6 byte
	// UNK, BOS and EOS are the special ids (llama2.c: 0, 1, 2).
	UNK, BOS, EOS int
}

// The llama_token_type values Vocab.Types uses.
const (
	TokenNormal  int32 = 1
	TokenUnknown int32 = 2
	TokenControl int32 = 3
	TokenByte    int32 = 6
)

// VocabFromLlama2c converts a llama2.c tokenizer (pieces with scores, ids
// 0, 1, 2 = <unk>, <s>, </s>) to a GGUF vocabulary as llama.cpp's
// llama-convert-llama2c-to-ggml does: the three special ids get their
// SentencePiece names and types, "<0xNN>" pieces are byte tokens, an
// empty piece is a control token, and spaces become "▁" (U+2581).
func VocabFromLlama2c(pieces []string, scores []float32) (*Vocab, error) {
	if len(pieces) != len(scores) || len(pieces) < 3 {
		return nil, fmt.Errorf("gguf: a llama2.c vocabulary needs at least 3 pieces with one score each (got %d pieces, %d scores)", len(pieces), len(scores))
	}
	v := &Vocab{Tokens: make([]string, len(pieces)), Scores: append([]float32(nil), scores...),
		Types: make([]int32, len(pieces)), UNK: 0, BOS: 1, EOS: 2}
	for id, p := range pieces {
		typ := TokenNormal
		switch {
		case id == 0:
			p, typ = "<unk>", TokenUnknown
		case id == 1:
			p, typ = "<s>", TokenControl
		case id == 2:
			p, typ = "</s>", TokenControl
		case p == "":
			typ = TokenControl
		case isBytePiece(p):
			typ = TokenByte
		}
		v.Tokens[id] = strings.ReplaceAll(p, " ", "▁")
		v.Types[id] = typ
	}
	return v, nil
}

// isBytePiece reports whether p is "<0xNN>" with two hex digits.
func isBytePiece(p string) bool {
	if len(p) != 6 || p[:3] != "<0x" || p[5] != '>' {
		return false
	}
	hex := func(c byte) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'F' || c >= 'a' && c <= 'f' }
	return hex(p[3]) && hex(p[4])
}

// ExportOptions choose what WriteModel writes.
type ExportOptions struct {
	// Type is the storage type of the weight matrices: kernels.TypeF32,
	// TypeF16, or one of the 32-weight block types TypeQ8_0, TypeQ4_1,
	// TypeQ5_0 and TypeQ5_1 (ggml's reference quantizers, QuantizeBlocks).
	// A quantized matrix whose row length is not a multiple of 32 falls
	// back to F16, as llama-quantize does; vectors (norms, biases,
	// rope_freqs) are always F32.
	Type kernels.GGMLType
	// Name is general.name ("llama" when empty, as llama.cpp's llama2.c
	// converter writes).
	Name string
	// Vocab, when not nil, is embedded as the file's tokenizer.
	Vocab *Vocab
	// TokenizerKV, when Vocab is nil, are tokenizer.* keys copied as they
	// are (from a GGUF being re-exported: its whole tokenizer, merges and
	// pre-tokenizer included).
	TokenizerKV []KV
}

// fileType is general.file_type (llama_ftype) of a file whose matrices
// are all of one type: the types WriteModel and QuantizePure write.
var fileType = map[kernels.GGMLType]uint32{kernels.TypeF32: 0, kernels.TypeF16: 1, kernels.TypeQ4_1: 3, kernels.TypeQ8_0: 7, kernels.TypeQ5_0: 8, kernels.TypeQ5_1: 9}

// ExportType is the export type named name (ggml's spelling in any letter
// case: "f32", "f16", "q8_0", "q4_1", "q5_0", "q5_1"), or false when
// WriteModel cannot write it.
func ExportType(name string) (kernels.GGMLType, bool) {
	for t := range fileType {
		if strings.EqualFold(name, t.String()) {
			return t, true
		}
	}
	return 0, false
}

// WriteModel writes m as a GGUF (version 3) that llama.cpp loads:
// architecture llama (or qwen2 for a NEOX model with q/k/v biases), the
// hyperparameters under {arch}.*, the vocabulary, then the tensors under
// llama.cpp's names in the order of llama.cpp's llama2.c converter:
// token_embd, output_norm, output, and per block attn_q, attn_k, attn_v,
// attn_output, attn_norm, ffn_gate, ffn_down, ffn_up, ffn_norm.
//
// As that converter does, it writes output.weight even when the
// classifier is tied to the embedding, and leaves out the keys whose
// llama.cpp defaults hold (rope.freq_base 10000, general.file_type of an
// F32 file): stories260K.bin with tok512.bin exported as F32 is the
// converter's stories260K-f32.gguf byte for byte.
func WriteModel(w io.Writer, m *model.Model, opts ExportOptions) error {
	c := m.Config
	ft, ok := fileType[opts.Type]
	if !ok {
		return fmt.Errorf("gguf: export: type %s is not F32, F16, Q8_0, Q4_1, Q5_0 or Q5_1", opts.Type)
	}
	arch, err := exportArch(c)
	if err != nil {
		return err
	}
	kvs, err := exportMetadata(c, arch, ft, opts)
	if err != nil {
		return err
	}
	ts, err := exportTensors(m, opts.Type)
	if err != nil {
		return err
	}
	return Write(w, kvs, ts)
}

// exportArch is the GGUF architecture that holds c: llama for NORM RoPE
// without q/k/v biases, qwen2 for NEOX RoPE with them; the other two
// combinations have none here.
func exportArch(c model.Config) (string, error) {
	if c.RopeStyle == model.RopeNeox {
		if !c.QKVBias {
			return "", fmt.Errorf("gguf: export: a NEOX-RoPE model without q/k/v biases has no GGUF architecture here (llama is NORM, qwen2 has biases)")
		}
		return "qwen2", nil
	}
	if c.QKVBias {
		return "", fmt.Errorf("gguf: export: a NORM-RoPE model with q/k/v biases has no GGUF architecture here")
	}
	return "llama", nil
}

// kvList collects metadata in the order it will be written.
type kvList []KV

func (l *kvList) add(k string, v any) { *l = append(*l, KV{Key: k, Value: MustValue(v)}) }

// exportMetadata is the file's metadata, in the order llama.cpp's llama2.c
// converter writes it: the vocabulary, general.architecture and name, the
// special token ids, the hyperparameters, and the file type.
func exportMetadata(c model.Config, arch string, ft uint32, opts ExportOptions) ([]KV, error) {
	name := opts.Name
	if name == "" {
		name = "llama"
	}
	kvs, err := vocabKVs(c.VocabSize, opts)
	if err != nil {
		return nil, err
	}
	kvs.add("general.architecture", arch)
	kvs.add("general.name", name)
	if v := opts.Vocab; v != nil {
		kvs.add("tokenizer.ggml.unknown_token_id", uint32(v.UNK))
		kvs.add("tokenizer.ggml.bos_token_id", uint32(v.BOS))
		kvs.add("tokenizer.ggml.eos_token_id", uint32(v.EOS))
		kvs.add("tokenizer.ggml.seperator_token_id", uint32(math.MaxUint32)) // llama.cpp's spelling
		kvs.add("tokenizer.ggml.padding_token_id", uint32(math.MaxUint32))
	}
	hyperparamKVs(&kvs, c, arch)
	if opts.Type != kernels.TypeF32 {
		kvs.add("general.file_type", ft)
	}
	if opts.Type == kernels.TypeQ8_0 {
		kvs.add("general.quantization_version", uint32(2))
	}
	return kvs, nil
}

// vocabKVs are the tokenizer arrays of opts.Vocab, which must have one
// entry per token of the model, or else the tokenizer.* keys of
// opts.TokenizerKV as they are.
func vocabKVs(vocabSize int, opts ExportOptions) (kvList, error) {
	var kvs kvList
	v := opts.Vocab
	if v == nil {
		for _, kv := range opts.TokenizerKV {
			if strings.HasPrefix(kv.Key, "tokenizer.") {
				kvs = append(kvs, kv)
			}
		}
		return kvs, nil
	}
	if len(v.Tokens) != vocabSize || len(v.Scores) != vocabSize || len(v.Types) != vocabSize {
		return nil, fmt.Errorf("gguf: export: the vocabulary has %d tokens, the model %d", len(v.Tokens), vocabSize)
	}
	kvs.add("tokenizer.ggml.tokens", v.Tokens)
	kvs.add("tokenizer.ggml.scores", v.Scores)
	kvs.add("tokenizer.ggml.token_type", v.Types)
	kvs.add("tokenizer.ggml.model", "llama")
	return kvs, nil
}

// hyperparamKVs adds c's shape under {arch}.*, leaving out rope.freq_base
// at llama.cpp's default of 10000 and the scaling of an unscaled RoPE.
func hyperparamKVs(kvs *kvList, c model.Config, arch string) {
	kvs.add(arch+".context_length", uint32(c.SeqLen))
	kvs.add(arch+".embedding_length", uint32(c.Dim))
	kvs.add(arch+".feed_forward_length", uint32(c.HiddenDim))
	kvs.add(arch+".attention.head_count", uint32(c.NHeads))
	kvs.add(arch+".attention.head_count_kv", uint32(c.NKVHeads))
	kvs.add(arch+".block_count", uint32(c.NLayers))
	kvs.add(arch+".rope.dimension_count", uint32(c.RopeDims()))
	kvs.add(arch+".attention.layer_norm_rms_epsilon", float32(c.NormEps))
	if c.RopeTheta != 10000 {
		kvs.add(arch+".rope.freq_base", float32(c.RopeTheta))
	}
	if c.RopeScale > 0 && c.RopeScale != 1 {
		kvs.add(arch+".rope.scaling.type", "linear")
		kvs.add(arch+".rope.scaling.factor", float32(c.RopeScale))
	}
}

// tensorExport encodes m's weights in file order, keeping the first error
// (later calls do nothing once one failed).
type tensorExport struct {
	m   *model.Model
	typ kernels.GGMLType
	ts  []WriterTensor
	err error
}

// mat adds rows [r0, r0+rows) of the matrix t, encoded as e.typ.
func (e *tensorExport) mat(gname string, t *tensor.Tensor, r0, rows int) {
	if e.err != nil {
		return
	}
	wt, err := encodeMatrix(e.m, gname, t, r0, rows, e.typ)
	if err != nil {
		e.err = fmt.Errorf("gguf: export %s: %w", gname, err)
		return
	}
	e.ts = append(e.ts, wt)
}

// vec adds elements [lo, lo+n) of the vector t, always as F32.
func (e *tensorExport) vec(gname string, t *tensor.Tensor, lo, n int) {
	if e.err != nil {
		return
	}
	f, err := t.Float32s()
	if err != nil {
		e.err = fmt.Errorf("gguf: export %s: %w", gname, err)
		return
	}
	e.ts = append(e.ts, WriterTensor{Name: gname, Type: kernels.TypeF32, Shape: []int{n}, Data: f32Bytes(f[lo : lo+n])})
}

// exportTensors encodes m's weights under llama.cpp's names, in the order
// of its llama2.c converter: the globals, then block by block.
func exportTensors(m *model.Model, typ kernels.GGMLType) ([]WriterTensor, error) {
	c := m.Config
	e := &tensorExport{m: m, typ: typ}
	W := &m.Weights
	e.mat(model.TensorTokenEmbd, W.TokenEmbedding, 0, c.VocabSize)
	e.vec(model.TensorOutputNorm, W.FinalNorm, 0, c.Dim)
	e.mat(model.TensorOutput, W.Classifier, 0, c.VocabSize)
	if W.RopeFreqs != nil {
		e.vec(model.TensorRopeFreqs, W.RopeFreqs, 0, c.RopeDims()/2)
	}
	for l := range W.Layers {
		e.layer(l, &W.Layers[l])
	}
	return e.ts, e.err
}

// layer adds block l's tensors: attention (q, k, v with their biases,
// output, norm), then feed-forward (gate, down, up, norm).
func (e *tensorExport) layer(l int, L *model.Layer) {
	c := e.m.Config
	qDim, kvDim := c.NHeads*c.HeadDim(), c.KVDim()
	at := func(f string) string { return fmt.Sprintf(f, l) }
	for part, n := range []string{model.TensorAttnQ, model.TensorAttnK, model.TensorAttnV} {
		t, r0, rows := L.QKVPart(c, part)
		e.mat(at(n), t, r0, rows)
	}
	if L.BQKV != nil {
		e.vec(at(model.TensorAttnQBias), L.BQKV, 0, qDim)
		e.vec(at(model.TensorAttnKBias), L.BQKV, qDim, kvDim)
		e.vec(at(model.TensorAttnVBias), L.BQKV, qDim+kvDim, kvDim)
	}
	e.mat(at(model.TensorAttnOutput), L.WO, 0, c.Dim)
	e.vec(at(model.TensorAttnNorm), L.AttnNorm, 0, c.Dim)
	e.mat(at(model.TensorFFNGate), L.W1, 0, c.HiddenDim)
	e.mat(at(model.TensorFFNDown), L.W2, 0, c.Dim)
	e.mat(at(model.TensorFFNUp), L.W3, 0, c.HiddenDim)
	e.vec(at(model.TensorFFNNorm), L.FFNNorm, 0, c.Dim)
}

// encodeMatrix encodes rows [r0, r0+rows) of the weight t (dequantized
// through its kernel form when m keeps it quantized) as typ.
func encodeMatrix(m *model.Model, name string, t *tensor.Tensor, r0, rows int, typ kernels.GGMLType) (WriterTensor, error) {
	if t == nil {
		return WriterTensor{}, fmt.Errorf("missing")
	}
	sh := t.Shape()
	if len(sh) != 2 || r0+rows > sh[0] {
		return WriterTensor{}, fmt.Errorf("shape %v", sh)
	}
	cols := sh[1]
	if cols%typ.BlockSize() != 0 {
		typ = kernels.TypeF16 // llama-quantize's fallback for rows that are not whole blocks
	}
	row := make([]float32, cols)
	var all []float32
	if q := m.Quantized[t]; q == nil {
		var err error
		if all, err = t.Float32s(); err != nil {
			return WriterTensor{}, err
		}
	}
	get := func(i int) ([]float32, error) {
		if all != nil {
			return all[(r0+i)*cols : (r0+i+1)*cols], nil
		}
		return row, m.Quantized[t].Row(r0+i, row)
	}
	rowBytes, err := typ.RowBytes(cols)
	if err != nil {
		return WriterTensor{}, err
	}
	out := make([]byte, 0, rows*rowBytes)
	for i := 0; i < rows; i++ {
		r, err := get(i)
		if err != nil {
			return WriterTensor{}, err
		}
		switch typ {
		case kernels.TypeF32:
			out = append(out, f32Bytes(r)...)
		case kernels.TypeF16:
			for _, v := range r {
				out = binary.LittleEndian.AppendUint16(out, float16.Fromfloat32(v).Bits())
			}
		default:
			if out, err = QuantizeBlocks(out, typ, r); err != nil {
				return WriterTensor{}, err
			}
		}
	}
	return WriterTensor{Name: name, Type: typ, Shape: []int{rows, cols}, Data: out}, nil
}

// QuantizeQ8_0 appends x (a multiple of 32 values) as ggml Q8_0 blocks,
// computed as ggml's quantize_row_q8_0_ref, which llama-quantize uses:
// per 32 values, d = max|x|/127 and q = round(x·(1/d)) in float32, with
// d stored as fp16 (rounded to nearest even).
func QuantizeQ8_0(dst []byte, x []float32) []byte {
	for b := 0; b+32 <= len(x); b += 32 {
		blk := x[b : b+32]
		var amax float32
		for _, v := range blk {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		dst = binary.LittleEndian.AppendUint16(dst, float16.Fromfloat32(d).Bits())
		for _, v := range blk {
			dst = append(dst, byte(int8(math.Round(float64(v*id)))))
		}
	}
	return dst
}

func f32Bytes(f []float32) []byte {
	out := make([]byte, 4*len(f))
	for i, v := range f {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}
