// prefill.cu — fused causal attention for prefill (FlashAttention-style
// tiles, online softmax), GQA-native, varlen, reading K and V from the paged
// cache through the block tables and writing straight into out [T, H·D].
//
// Thread mapping (mirrored by cuda/prefill.go, prefillPlan), 128 threads:
//   grid (max_q_tiles, H, B); block (qt, head, seq) owns query rows
//   i0 = qt·16 … of its sequence, kv_head = head / (H/KVH).
//   qlen = query_lens[seq] (all warps, broadcast); blocks past the sequence
//   return; then query_start and context_lens (broadcasts).
//   Q tile: u = tid, tid+128, … < 16·Du: row u/Du, unit u%Du (qvec elements)
//   for each 32-position KV tile below kv_end (causal bound of the tile):
//     warp 0, lane c: block_tables[seq, (j0+c)/bs] → row_off[c]
//     u = tid, … < 32·Dk: K and V units (kvvec elements) of row u/Dk
//     warp w scores its 4 query rows against the 32 keys (lane = key),
//     online softmax, O rows in registers (lane d, d+32, …)
//   out[qs+i0+r, head·D + d] = O[r][d] / l[r]   (lane per element)
// Nothing of size [S, S] exists anywhere, in HBM or on chip.
#include "common.cuh"

#define BR 16
#define BC 32
#define PREFILL_THREADS 128
#define ROWS_PER_WARP (BR / (PREFILL_THREADS / 32))
#define MAX_DC 8 // head_dim ≤ 256: 8 output elements per lane per row

template <typename T>
__global__ void __launch_bounds__(PREFILL_THREADS)
    flash_attention_prefill(const T* __restrict__ q, const T* __restrict__ k_cache, const T* __restrict__ v_cache,
                            T* __restrict__ out, const int32_t* __restrict__ query_start,
                            const int32_t* __restrict__ query_lens, const int32_t* __restrict__ context_lens,
                            const int32_t* __restrict__ block_tables, const StrideAttnArgs a) {
	const int qt = blockIdx.x, head = blockIdx.y, seq = blockIdx.z;
	const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
	const int qlen = query_lens[seq];
	const int i0 = qt * BR;
	if (i0 >= qlen) return;
	const int64_t qs = query_start[seq];
	const int ctx = context_lens[seq];
	const int rows = min(BR, qlen - i0);
	const int kv_end = ctx - qlen + i0 + rows; // keys 0 … position of the tile's last query
	const int kv_head = head / (a.num_heads / a.num_kv_heads);
	const int D = a.head_dim, DP = D + 1;

	extern __shared__ float smem[];
	float* Qs = smem;              // [BR][D]
	float* Ks = Qs + BR * D;       // [BC][D+1]: odd row pitch, lane c reads row c conflict-free
	float* Vs = Ks + BC * DP;      // [BC][D]
	int64_t* row_off = reinterpret_cast<int64_t*>(Vs + BC * D); // [BC]; 80·D+32 floats before it: 8-byte aligned

	const int qv = a.qvec, du = D / qv;
	for (int u = tid; u < BR * du; u += PREFILL_THREADS) {
		const int r = u / du, c = (u % du) * qv;
		if (r < rows) {
			load_to_float(Qs + r * D + c,
			              q + a.q_offset + (qs + i0 + r) * a.q_stride + (int64_t)head * a.q_head_stride + c, qv);
		}
	}

	float m_i[ROWS_PER_WARP], l_i[ROWS_PER_WARP], acc[ROWS_PER_WARP][MAX_DC];
#pragma unroll
	for (int rr = 0; rr < ROWS_PER_WARP; ++rr) {
		m_i[rr] = -CUDART_INF_F;
		l_i[rr] = 0.f;
#pragma unroll
		for (int dc = 0; dc < MAX_DC; ++dc) acc[rr][dc] = 0.f;
	}

	const int kvv = a.kvvec, dk = D / kvv;
	const int64_t kv_head_off = (int64_t)kv_head * a.kv_head_stride;
	for (int j0 = 0; j0 < kv_end; j0 += BC) {
		if (tid < BC) {
			const int p = j0 + tid;
			if (p < kv_end) {
				const int64_t blk = block_tables[(int64_t)seq * a.max_blocks + p / a.block_size];
				row_off[tid] = blk * a.kv_block_stride + (int64_t)(p % a.block_size) * a.kv_token_stride + kv_head_off;
			}
		}
		__syncthreads();
		for (int u = tid; u < BC * dk; u += PREFILL_THREADS) {
			const int c = u / dk, d = (u % dk) * kvv;
			if (j0 + c < kv_end) {
				load_to_float(Ks + c * DP + d, k_cache + a.k_offset + row_off[c] + d, kvv);
				load_to_float(Vs + c * D + d, v_cache + a.v_offset + row_off[c] + d, kvv);
			} else {
				// rows past kv_end get weight 0, but 0 × (stale or never
				// written shared memory, possibly NaN) is not 0: clear them
				for (int i = 0; i < kvv; ++i) {
					Ks[c * DP + d + i] = 0.f;
					Vs[c * D + d + i] = 0.f;
				}
			}
		}
		__syncthreads();
#pragma unroll
		for (int rr = 0; rr < ROWS_PER_WARP; ++rr) {
			const int r = warp * ROWS_PER_WARP + rr;
			if (r < rows) { // warp-uniform
				const int qpos = ctx - qlen + i0 + r;
				const int p = j0 + lane;
				float s = -CUDART_INF_F;
				if (p < kv_end && p <= qpos) {
					float dot = 0.f;
					for (int d = 0; d < D; ++d) dot += Qs[r * D + d] * Ks[lane * DP + d];
					s = dot * a.scale;
				}
				const float m_new = fmaxf(m_i[rr], warp_max(s));
				// m_new is finite: key 0 ≤ qpos is in the first tile
				const float pe = exp_diff(s, m_new);
				const float alpha = exp_diff(m_i[rr], m_new);
				l_i[rr] = l_i[rr] * alpha + warp_sum(pe);
				m_i[rr] = m_new;
#pragma unroll
				for (int dc = 0; dc < MAX_DC; ++dc) acc[rr][dc] *= alpha;
				for (int c = 0; c < BC; ++c) {
					const float pc = __shfl_sync(0xffffffffu, pe, c);
#pragma unroll
					for (int dc = 0; dc < MAX_DC; ++dc) {
						const int d = lane + 32 * dc;
						if (d < D) acc[rr][dc] += pc * Vs[c * D + d];
					}
				}
			}
		}
		__syncthreads();
	}

#pragma unroll
	for (int rr = 0; rr < ROWS_PER_WARP; ++rr) {
		const int r = warp * ROWS_PER_WARP + rr;
		if (r < rows) {
			const float inv = 1.f / l_i[rr];
			T* dst = out + a.out_offset + (qs + i0 + r) * a.out_stride + (int64_t)head * D;
#pragma unroll
			for (int dc = 0; dc < MAX_DC; ++dc) {
				const int d = lane + 32 * dc;
				if (d < D) dst[d] = from_float<T>(acc[rr][dc] * inv);
			}
		}
	}
}

extern "C" int stride_launch_flash_prefill(int dtype, const void* q, const void* k_cache, const void* v_cache,
                                           void* out, const int32_t* query_start, const int32_t* query_lens,
                                           const int32_t* context_lens, const int32_t* block_tables,
                                           const StrideAttnArgs* a, const StrideLaunch* l) {
	if (empty_grid(l)) return 0;
	STRIDE_DISPATCH(dtype, {
		if (l->smem > 48 * 1024) {
			const cudaError_t e = cudaFuncSetAttribute(flash_attention_prefill<T>,
			                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)l->smem);
			if (e != cudaSuccess) return (int)e;
		}
		flash_attention_prefill<T><<<grid_of(l), block_of(l), (size_t)l->smem>>>(
		    static_cast<const T*>(q), static_cast<const T*>(k_cache), static_cast<const T*>(v_cache),
		    static_cast<T*>(out), query_start, query_lens, context_lens, block_tables, *a);
	})
	return (int)cudaGetLastError();
}
