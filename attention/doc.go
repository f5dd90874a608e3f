// Package attention holds Stride's two interchangeable attention paths
// behind one interface: the naive copying path written the textbook
// PyTorch way, and the fused path that reads Q, K and V through their
// strides and the paged KV cache through block tables, with an
// online-softmax kernel that writes its output straight into [T, H·D].
package attention
