// Package gguf reads and writes GGUF files, the checkpoint format of
// llama.cpp (and of ollama and LM Studio, which use its loader).
//
// A GGUF file is, in order:
//
//	magic "GGUF"          4 bytes
//	version               uint32 (2 or 3 here; 1 used 32-bit counts and is not read)
//	tensor count          uint64
//	metadata count        uint64
//	metadata              key (string), value type (uint32), value; repeated
//	tensor infos          name (string), n_dims (uint32), ne[n_dims] (uint64),
//	                      ggml type (uint32), offset (uint64); repeated
//	padding               to general.alignment (default 32)
//	tensor data           each tensor at data start + offset, offsets aligned
//
// Strings are a uint64 byte length followed by the bytes (UTF-8, no NUL).
// Arrays are an element type (uint32), a uint64 count and the elements.
// Everything is little-endian. ne lists a tensor's extents innermost
// first, the reverse of PyTorch's order: a weight matrix with ne = [in, out]
// is a PyTorch [out, in] matrix, and TensorInfo.Shape holds that order.
//
// Open maps the file and validates every count, length and offset against
// the file size before it allocates anything, so a corrupt or hostile file
// is an error, never a huge allocation or a panic. Tensor data is a
// zero-copy view of the mapping, valid until Close.
//
// Metadata is read with typed accessors (String, Uint, Int, Float, Bool,
// Strings, Float32s, Int32s, ...), which name the key and the stored type
// when the two disagree.
package gguf
