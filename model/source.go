package model

// This file is the contract between package model and the checkpoint
// formats. A format package (model/llama2c, model/gguf, model/hf) parses
// its files and implements Source; package model turns any Source into a
// runnable Model (FromSource). Formats import model; model imports no
// format, so a new format lands in a new package without touching the
// forward pass.

// Source is an opened checkpoint of any format: the architecture it
// declares and its tensors by name.
type Source interface {
	// Name is how errors refer to the checkpoint (usually its path).
	Name() string
	// Config is the architecture the file declares.
	Config() Config
	// Tensor returns the named tensor, or an error naming it when the file
	// has none. Names follow llama.cpp's GGUF scheme whatever the format
	// (see the Tensor* constants): formats with other names map them.
	Tensor(name string) (RawTensor, error)
	// Close releases the file (unmaps it). The Data of every tensor the
	// Source returned is invalid afterwards.
	Close() error
}

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
	// of the mapped file.
	Data []byte
}

// StorageType names how a tensor's elements are stored. The values are
// ggml's type names, so an error or a bench row reads like llama.cpp's.
type StorageType string

// The storage types formats may hand to FromSource.
const (
	StorageF32  StorageType = "F32"
	StorageF16  StorageType = "F16"
	StorageBF16 StorageType = "BF16"
	StorageQ8_0 StorageType = "Q8_0" // ggml: blocks of 32 int8 with one fp16 scale
	StorageQ4_0 StorageType = "Q4_0" // ggml: blocks of 32 4-bit values with one fp16 scale
	StorageQ4_K StorageType = "Q4_K" // ggml: super-blocks of 256, 6-bit sub-block scales and mins
	StorageQ6_K StorageType = "Q6_K" // ggml: super-blocks of 256, 6-bit values, 8-bit sub-block scales
)

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
