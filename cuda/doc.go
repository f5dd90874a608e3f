// Package cuda holds Stride's CUDA kernels and a warp-level model of their
// global-memory traffic that runs on machines without a GPU.
package cuda
