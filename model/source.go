package model

import "errors"

// This file is the contract between package model and the checkpoint
// formats. A format package (model/llama2c, model/gguf, model/hf) parses
// its files and implements Source; package model turns any Source into a
// runnable Model (FromSource). Formats import model; model imports no
// format, so a new format lands in a new package without touching the
// forward pass.

// Source is an opened checkpoint of any format: the architecture it
// declares and its tensors by name.
//
// A Source whose tensors view a memory mapping also implements
// MappedSource, so that FromSource can report mapped vs copied bytes.
type Source interface {
	// Name is how errors refer to the checkpoint (usually its path).
	Name() string
	// Config is the architecture the file declares.
	Config() Config
	// Tensor returns the named tensor, or an error naming it when the file
	// has none; that error wraps ErrTensorNotFound, which is how FromSource
	// tells an absent optional tensor (output.weight: tied; biases,
	// rope_freqs) from a damaged file. Names follow llama.cpp's GGUF scheme
	// whatever the format (see the Tensor* constants): formats with other
	// names map them. Tensor only slices (or, for a source that reads
	// instead of mapping, reads) the named tensor: its cost is that
	// tensor's, so FromSource may ask for tensors in any order.
	Tensor(name string) (RawTensor, error)
	// Close releases the file (unmaps it). The Data of every tensor the
	// Source returned is invalid afterwards.
	Close() error
}

// MappedSource is a Source whose tensors' Data are views of a memory
// mapping of MappedBytes bytes (the whole file, usually). FromSource then
// counts the bytes it copies out of the mapping (Model.MappedBytes).
type MappedSource interface {
	Source
	MappedBytes() int64
}

// GGMLSource is a Source whose file was written for ggml (a GGUF file).
// FromSource then builds every matrix it does not convert as a ggml
// matrix (kernels.NewGGMLMatrix), whose matmuls round the activations as
// ggml does (F16 for F16 weights, Q8_0 blocks for Q8_0, Q4_0 and Q5_0,
// Q8_1 blocks for Q4_1 and Q5_1, Q8_K blocks for the K-quants), so that
// logits, and perplexity, agree with llama.cpp's on the same file.
type GGMLSource interface {
	Source
	// GGML reports whether the tensors are to be computed as ggml does.
	GGML() bool
}

// ErrTensorNotFound is wrapped by Source.Tensor's error when the file has
// no tensor of that name.
var ErrTensorNotFound = errors.New("no such tensor")

// RawTensor is one stored tensor, as the file holds it.
type RawTensor struct {
	Name string
	// Type is the storage type, as the file stores it (F32, F16, BF16 or a
	// block-quantized type such as ggml's Q8_0).
	Type StorageType
	// Shape is in PyTorch order, outermost first: a weight matrix is
	// [out, in], one row per output feature. (GGUF lists ne innermost
	// first; its reader reverses it.)
	Shape []int
	// Data is the tensor's bytes, little-endian, usually a zero-copy view
	// of the mapped file (valid until the Source is closed); a Source that
	// reads instead of mapping returns new memory, which FromSource may
	// keep as a weight's storage. Its length must be exactly what Type and
	// Shape imply (StorageType.Bytes).
	Data []byte
	// GroupSize is the number of values per float32 scale of a
	// StorageLlama2cQ8 tensor; 0 for every other type (ggml's block
	// types have fixed block sizes).
	GroupSize int
}

// Canonical tensor names (llama.cpp's GGUF names). Per-layer names take
// the block index: fmt.Sprintf(TensorAttnQ, l).
const (
	TensorTokenEmbd  = "token_embd.weight"
	TensorOutputNorm = "output_norm.weight"
	TensorOutput     = "output.weight" // absent: tied to token_embd
	TensorRopeFreqs  = "rope_freqs.weight"
	TensorAttnNorm   = "blk.%d.attn_norm.weight"
	TensorAttnQ      = "blk.%d.attn_q.weight"
	TensorAttnK      = "blk.%d.attn_k.weight"
	TensorAttnV      = "blk.%d.attn_v.weight"
	TensorAttnQBias  = "blk.%d.attn_q.bias" // Qwen2
	TensorAttnKBias  = "blk.%d.attn_k.bias"
	TensorAttnVBias  = "blk.%d.attn_v.bias"
	TensorAttnOutput = "blk.%d.attn_output.weight"
	TensorFFNNorm    = "blk.%d.ffn_norm.weight"
	TensorFFNGate    = "blk.%d.ffn_gate.weight"
	TensorFFNUp      = "blk.%d.ffn_up.weight"
	TensorFFNDown    = "blk.%d.ffn_down.weight"
)
