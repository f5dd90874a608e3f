// Package tensor is Stride's strided tensor core: a flat Storage plus
// metadata (shape, strides in elements, storage offset), with PyTorch's
// layout semantics.
//
// # Storage and metadata
//
// A Tensor never owns its elements. It is a window onto a Storage, a single
// flat buffer of F32, F16 or BF16 elements. The element at index
// (i0, i1, …, in-1) lives at
//
//	offset + i0·stride0 + i1·stride1 + … + in-1·striden-1
//
// A freshly allocated tensor is row-major contiguous: strides are the
// right-to-left running product of the shape, so [2,3,4] has strides
// [12,4,1]. Every view op (View, Transpose, Permute, Slice, Narrow, Select,
// Expand, Squeeze, Unsqueeze, Unfold, AsStrided) only rewrites the metadata:
// it costs O(ndim), shares the storage and copies 0 bytes.
//
// # Contiguity
//
// IsContiguous follows PyTorch exactly: a tensor is contiguous when walking
// its dims right to left, each dim of size > 1 has stride equal to the
// product of the sizes to its right; size-1 dims are ignored, and a tensor
// with 0 or 1 elements is always contiguous. Contiguous returns the same
// tensor when that holds and a copy otherwise, and the copy is recorded in
// the tensor's Ledger.
//
// # Accounting
//
// Every allocation and every copy is counted by a Ledger (bytes allocated,
// bytes copied, copy ops, live and peak bytes). A test can assert that a
// block of code copied 0 bytes; the CLI prints the counters side by side.
//
// # Meta tensors
//
// A meta tensor has metadata and no data, so the layout of a
// [2,32,4096,4096] scores tensor can be computed and traced without
// allocating 4 GiB. Reading or writing elements of a meta tensor is an error.
package tensor
