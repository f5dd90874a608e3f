// Package safetensors reads and writes the safetensors container, the
// file format of Hugging Face checkpoints (model.safetensors and its
// shards). A file is
//
//	u64 little-endian N           the header length
//	N bytes of JSON               {"name": {"dtype": "F32", "shape": [out, in],
//	                                        "data_offsets": [begin, end]}, ...,
//	                               "__metadata__": {"key": "value"}}
//	the byte buffer               every tensor's bytes, row-major, little-endian
//
// with data_offsets relative to the start of the byte buffer. The header
// may be padded with trailing spaces (writers align the buffer to 8
// bytes). Shapes are in PyTorch order, outermost first.
//
// Every number in the header is checked before anything is allocated: N
// against MaxHeaderSize and the file size, each tensor's extent against
// its dtype and shape, and the extents against each other: like the
// reference implementation, the tensors must tile the byte buffer
// exactly, without holes or overlaps, so a header can neither point
// outside the file nor make two tensors alias.
//
// Open maps the file (package mapfile), so a tensor's Data is a zero-copy
// view of the page cache.
package safetensors
