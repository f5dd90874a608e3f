// common.cuh — element types, conversions and reductions shared by the
// kernels. Every kernel computes in float and stores in its tensor dtype.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math_constants.h>
#include <stdint.h>

#include "stride_kernels.h"

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// One 16-byte access (LDG.128 / STG.128). The caller guarantees the address
// is 16-byte aligned: the host only selects vec > 1 when every address the
// kernel will form is (cuda/copy.go planCopy, cache.go slabVec, prefill.go).
__device__ __forceinline__ uint4 ld16(const void* p) { return *reinterpret_cast<const uint4*>(p); }
__device__ __forceinline__ void st16(void* p, uint4 v) { *reinterpret_cast<uint4*>(p) = v; }

// unpack converts the 16 bytes of one vector access to floats with register
// bit operations (no local-memory round trip).
__device__ __forceinline__ void unpack(float* dst, uint4 r, const float*) {
	dst[0] = __uint_as_float(r.x);
	dst[1] = __uint_as_float(r.y);
	dst[2] = __uint_as_float(r.z);
	dst[3] = __uint_as_float(r.w);
}
__device__ __forceinline__ void unpack(float* dst, uint4 r, const __half*) {
	const unsigned w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
	for (int i = 0; i < 4; ++i) {
		dst[2 * i] = __half2float(__ushort_as_half((unsigned short)(w[i] & 0xffffu)));
		dst[2 * i + 1] = __half2float(__ushort_as_half((unsigned short)(w[i] >> 16)));
	}
}
__device__ __forceinline__ void unpack(float* dst, uint4 r, const __nv_bfloat16*) {
	const unsigned w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
	for (int i = 0; i < 4; ++i) { // bf16 is the top half of an fp32
		dst[2 * i] = __uint_as_float(w[i] << 16);
		dst[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
	}
}

// Loads vec elements at src (vec = 1, or 16/sizeof(T) with src 16-byte
// aligned) into dst as floats.
template <typename T>
__device__ __forceinline__ void load_to_float(float* dst, const T* src, int vec) {
	if (vec == 1) {
		dst[0] = to_float(src[0]);
		return;
	}
	unpack(dst, ld16(src), src);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

// Block-wide reductions over blockDim.x threads (a multiple of 32) through
// red[32] in shared memory. Every thread gets the result.
__device__ __forceinline__ float block_max(float v, float* red) {
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
	v = warp_max(v);
	__syncthreads();
	if (lane == 0) red[warp] = v;
	__syncthreads();
	v = lane < nw ? red[lane] : -CUDART_INF_F;
	return warp_max(v);
}

__device__ __forceinline__ float block_sum(float v, float* red) {
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
	v = warp_sum(v);
	__syncthreads();
	if (lane == 0) red[warp] = v;
	__syncthreads();
	v = lane < nw ? red[lane] : 0.f;
	return warp_sum(v);
}

// exp(a - b) with exp(-inf - x) = 0 and no NaN from -inf - (-inf).
__device__ __forceinline__ float exp_diff(float a, float b) {
	return a == -CUDART_INF_F ? 0.f : __expf(a - b);
}

inline dim3 grid_of(const StrideLaunch* l) {
	return dim3((unsigned)l->grid[0], (unsigned)l->grid[1], (unsigned)l->grid[2]);
}
inline dim3 block_of(const StrideLaunch* l) { return dim3(l->block[0], l->block[1], l->block[2]); }

// STRIDE_DISPATCH runs the statement with T bound to the element type of
// dtype, or returns cudaErrorInvalidValue.
#define STRIDE_DISPATCH(dtype, ...)                          \
	switch (dtype) {                                         \
	case STRIDE_F32: {                                       \
		using T = float;                                     \
		__VA_ARGS__;                                         \
	} break;                                                 \
	case STRIDE_F16: {                                       \
		using T = __half;                                    \
		__VA_ARGS__;                                         \
	} break;                                                 \
	case STRIDE_BF16: {                                      \
		using T = __nv_bfloat16;                             \
		__VA_ARGS__;                                         \
	} break;                                                 \
	default:                                                 \
		return (int)cudaErrorInvalidValue;                   \
	}

// A launch with an empty grid is a no-op, as it is for the model.
inline bool empty_grid(const StrideLaunch* l) { return l->grid[0] == 0 || l->grid[1] == 0 || l->grid[2] == 0; }
