package model

import (
	"errors"
	"math"
)

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
// logits, and perplexity, agree with
// llama.cpp's on the same file.
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
	StorageQ4_1 StorageType = "Q4_1" // ggml: blocks of 32 4-bit values with an fp16 scale and offset
	StorageQ5_0 StorageType = "Q5_0" // ggml: blocks of 32 5-bit values with one fp16 scale
	StorageQ5_1 StorageType = "Q5_1" // ggml: blocks of 32 5-bit values with an fp16 scale and offset
	StorageQ4_K StorageType = "Q4_K" // ggml: super-blocks of 256, 6-bit sub-block scales and mins
	StorageQ5_K StorageType = "Q5_K" // ggml: Q4_K's super-blocks with 5-bit values
	StorageQ6_K StorageType = "Q6_K" // ggml: super-blocks of 256, 6-bit values, 8-bit sub-block scales

	// StorageLlama2cQ8 is llama2.c's version-2 (runq.c) quantization, not
	// a ggml type: all rows·cols int8 values of the matrix, then one
	// little-endian float32 scale per RawTensor.GroupSize consecutive
	// values (weight k is q[k]·s[k/GroupSize]). GroupSize divides the row
	// length, so no group straddles two rows. kernels.Q8_0 runs it as is.
	StorageLlama2cQ8 StorageType = "llama2c_Q8"
)

// Bytes returns how many bytes a tensor of type t with n elements
// occupies (groupSize is RawTensor.GroupSize), or false when t is not a
// type FromSource knows the size of or n does not fill whole blocks. The
// ggml block types are sized here so that a format can validate its
// offsets before their kernels exist.
func (t StorageType) Bytes(n int64, groupSize int) (int64, bool) {
	if n < 0 || n > math.MaxInt64/8 {
		return 0, false
	}
	block := func(elems, bytes int64) (int64, bool) {
		if n%elems != 0 {
			return 0, false
		}
		return n / elems * bytes, true
	}
	switch t {
	case StorageF32:
		return 4 * n, true
	case StorageF16, StorageBF16:
		return 2 * n, true
	case StorageQ8_0:
		return block(32, 2+32) // fp16 d, 32 int8
	case StorageQ4_0:
		return block(32, 2+16) // fp16 d, 32 nibbles
	case StorageQ4_1:
		return block(32, 2+2+16) // fp16 d, m, 32 nibbles
	case StorageQ5_0:
		return block(32, 2+4+16) // fp16 d, 32 high bits, 32 nibbles
	case StorageQ5_1:
		return block(32, 2+2+4+16) // fp16 d, m, 32 high bits, 32 nibbles
	case StorageQ4_K:
		return block(256, 2+2+12+128) // fp16 d, dmin, 12 bytes of 6-bit scales/mins, 256 nibbles
	case StorageQ5_K:
		return block(256, 2+2+12+32+128) // Q4_K's, plus 256 high bits
	case StorageQ6_K:
		return block(256, 128+64+16+2) // ql, qh, int8 scales, fp16 d
	case StorageLlama2cQ8:
		if groupSize <= 0 || n%int64(groupSize) != 0 {
			return 0, false
		}
		return n + 4*(n/int64(groupSize)), true
	}
	return 0, false
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
