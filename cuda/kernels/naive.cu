// naive.cu — the textbook attention's matmuls and softmax, so the naive path
// runs on the GPU too and its extra HBM traffic can be measured: the scores
// matrix [H, Tq, L] is written, read and written by the softmax, read again.
//
// Thread mapping (mirrored by cuda/naive.go):
//   naive_scores / naive_av: 32×8 threads own a 32×32 output tile; thread
//   (tx, ty) loads element tx of rows ty, ty+8, ty+16, ty+24 of each operand
//   tile (a warp = one ty reads 32 consecutive elements of one row) and
//   accumulates 4 outputs; each output row is stored 32 elements at a time.
//   naive_softmax: one 256-thread block per row of L, thread-strided, two
//   passes (online max/sum, then normalize in place).
#include "common.cuh"

#define TILE 32
#define TY 8

template <typename T>
__global__ void __launch_bounds__(TILE * TY)
    naive_scores(const T* __restrict__ q, const T* __restrict__ k, T* __restrict__ scores, const StrideNaiveArgs a) {
	__shared__ float Qs[TILE][TILE + 1];
	__shared__ float Ks[TILE][TILE + 1];
	const int h = blockIdx.z, i0 = blockIdx.y * TILE, j0 = blockIdx.x * TILE;
	const int tx = threadIdx.x, ty = threadIdx.y;
	float acc[4] = {0.f, 0.f, 0.f, 0.f};
	for (int d0 = 0; d0 < a.d; d0 += TILE) {
		const int d = d0 + tx;
#pragma unroll
		for (int kk = 0; kk < 4; ++kk) {
			const int r = ty + TY * kk;
			const int i = i0 + r, j = j0 + r;
			float x = 0.f, y = 0.f;
			if (i < a.tq && d < a.d) x = to_float(q[a.q_offset + i * a.q_stride + h * a.q_head_stride + d]);
			if (j < a.l && d < a.d) y = to_float(k[a.k_offset + j * a.k_stride + h * a.k_head_stride + d]);
			Qs[r][tx] = x;
			Ks[r][tx] = y;
		}
		__syncthreads();
		for (int dd = 0; dd < TILE; ++dd) {
			const float kv = Ks[tx][dd];
#pragma unroll
			for (int kk = 0; kk < 4; ++kk) acc[kk] += Qs[ty + TY * kk][dd] * kv;
		}
		__syncthreads();
	}
#pragma unroll
	for (int kk = 0; kk < 4; ++kk) {
		const int i = i0 + ty + TY * kk, j = j0 + tx;
		if (i < a.tq && j < a.l) {
			const int qpos = a.l - a.tq + i; // causal: key j visible iff j ≤ qpos
			const float s = j <= qpos ? acc[kk] * a.scale : -CUDART_INF_F;
			scores[a.s_offset + ((int64_t)h * a.tq + i) * a.l + j] = from_float<T>(s);
		}
	}
}

template <typename T>
__global__ void __launch_bounds__(256) naive_softmax(T* __restrict__ x, const StrideNaiveArgs a) {
	__shared__ float red[32];
	T* p = x + a.s_offset + (int64_t)blockIdx.x * a.l;
	float m = -CUDART_INF_F, s = 0.f;
	for (int j = threadIdx.x; j < a.l; j += blockDim.x) {
		const float v = to_float(p[j]);
		if (v > m) {
			s = s * exp_diff(m, v) + 1.f;
			m = v;
		} else {
			s += exp_diff(v, m);
		}
	}
	const float M = block_max(m, red);
	const float S = block_sum(s * exp_diff(m, M), red);
	for (int j = threadIdx.x; j < a.l; j += blockDim.x) {
		p[j] = from_float<T>(M == -CUDART_INF_F ? 0.f : exp_diff(to_float(p[j]), M) / S);
	}
}

template <typename T>
__global__ void __launch_bounds__(TILE * TY)
    naive_av(const T* __restrict__ probs, const T* __restrict__ v, T* __restrict__ out, const StrideNaiveArgs a) {
	__shared__ float Ps[TILE][TILE + 1];
	__shared__ float Vs[TILE][TILE + 1];
	const int h = blockIdx.z, i0 = blockIdx.y * TILE, d0 = blockIdx.x * TILE;
	const int tx = threadIdx.x, ty = threadIdx.y;
	float acc[4] = {0.f, 0.f, 0.f, 0.f};
	for (int j0 = 0; j0 < a.l; j0 += TILE) {
#pragma unroll
		for (int kk = 0; kk < 4; ++kk) {
			const int r = ty + TY * kk;
			const int i = i0 + r, j = j0 + r;
			float x = 0.f, y = 0.f;
			if (i < a.tq && j0 + tx < a.l) x = to_float(probs[a.s_offset + ((int64_t)h * a.tq + i) * a.l + j0 + tx]);
			if (j < a.l && d0 + tx < a.d) y = to_float(v[a.k_offset + j * a.k_stride + h * a.k_head_stride + d0 + tx]);
			Ps[r][tx] = x;
			Vs[r][tx] = y;
		}
		__syncthreads();
		for (int jj = 0; jj < TILE; ++jj) {
			const float vv = Vs[jj][tx];
#pragma unroll
			for (int kk = 0; kk < 4; ++kk) acc[kk] += Ps[ty + TY * kk][jj] * vv;
		}
		__syncthreads();
	}
#pragma unroll
	for (int kk = 0; kk < 4; ++kk) {
		const int i = i0 + ty + TY * kk, d = d0 + tx;
		if (i < a.tq && d < a.d) out[a.o_offset + ((int64_t)h * a.tq + i) * a.d + d] = from_float<T>(acc[kk]);
	}
}

extern "C" int stride_launch_naive_scores(int dtype, const void* q, const void* k, void* scores,
                                          const StrideNaiveArgs* a, const StrideLaunch* l) {
	if (empty_grid(l)) return 0;
	STRIDE_DISPATCH(dtype, naive_scores<T><<<grid_of(l), block_of(l), (size_t)l->smem>>>(
	                           static_cast<const T*>(q), static_cast<const T*>(k), static_cast<T*>(scores), *a))
	return (int)cudaGetLastError();
}

extern "C" int stride_launch_naive_softmax(int dtype, void* scores, const StrideNaiveArgs* a, const StrideLaunch* l) {
	if (empty_grid(l)) return 0;
	STRIDE_DISPATCH(dtype, naive_softmax<T><<<grid_of(l), block_of(l), (size_t)l->smem>>>(static_cast<T*>(scores), *a))
	return (int)cudaGetLastError();
}

extern "C" int stride_launch_naive_av(int dtype, const void* probs, const void* v, void* out,
                                      const StrideNaiveArgs* a, const StrideLaunch* l) {
	if (empty_grid(l)) return 0;
	STRIDE_DISPATCH(dtype, naive_av<T><<<grid_of(l), block_of(l), (size_t)l->smem>>>(
	                           static_cast<const T*>(probs), static_cast<const T*>(v), static_cast<T*>(out), *a))
	return (int)cudaGetLastError();
}
