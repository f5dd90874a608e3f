// decode.cu — paged attention for one decode token per sequence, GQA-native,
// with a split-KV variant whose partial results are merged by log-sum-exp.
//
// Thread mapping (mirrored by cuda/decode.go, decodePlan), 128 threads:
//   grid (H, B, num_splits); kv_head = head / (H / KVH): the g query heads
//   of a KV head read the same K/V rows, nothing is repeated.
//   ctx = context_lens[seq]                      all warps (broadcast)
//   positions [start, end) = split·P … (P = partition, or ctx unsplit)
//   row = query_start[seq]                       all warps (broadcast)
//   q_s[d] = q[row, head, d]                     thread per element
//   logits: warp w takes positions start+w, start+w+4, …; for each, one
//     broadcast block_tables load, then K row elements lane, lane+32, …
//     (32 consecutive elements per request), warp-sum → logits[p] in smem
//   softmax over logits in shared memory
//   output: thread per element d; for each position one broadcast
//     block_tables load and one V element (a warp reads 32 consecutive)
//   unsplit: out[row, head·D + d]; split: tmp_out[seq, head, split, d]
//     (fp32) plus max_logits and exp_sums by thread 0.
#include "common.cuh"

#define DECODE_THREADS 128
#define DECODE_WARPS (DECODE_THREADS / 32)

template <typename T>
__global__ void __launch_bounds__(DECODE_THREADS)
    paged_attention_decode(const T* __restrict__ q, const T* __restrict__ k_cache, const T* __restrict__ v_cache,
                           T* __restrict__ out, const int32_t* __restrict__ context_lens,
                           const int32_t* __restrict__ query_start, const int32_t* __restrict__ block_tables,
                           float* __restrict__ tmp_out, float* __restrict__ max_logits, float* __restrict__ exp_sums,
                           const StrideAttnArgs a) {
	const int head = blockIdx.x, seq = blockIdx.y, split = blockIdx.z;
	const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
	const int ctx = context_lens[seq];
	const int part = a.partition > 0 ? a.partition : ctx;
	const int start = split * part;
	if (start >= ctx) return;
	const int end = min(start + part, ctx);
	const int n = end - start;
	const int kv_head = head / (a.num_heads / a.num_kv_heads);
	const int64_t row = query_start[seq];
	const int D = a.head_dim;

	extern __shared__ float smem[];
	float* q_s = smem;                         // [D]
	float* logits = q_s + D;                   // [smem_positions]
	float* red = logits + a.smem_positions;    // [32]

	const T* qp = q + a.q_offset + row * a.q_stride + (int64_t)head * a.q_head_stride;
	for (int d = tid; d < D; d += DECODE_THREADS) q_s[d] = to_float(qp[d]);
	__syncthreads();

	const int32_t* bt = block_tables + (int64_t)seq * a.max_blocks;
	const int64_t kv_head_off = (int64_t)kv_head * a.kv_head_stride;
	for (int p = start + warp; p < end; p += DECODE_WARPS) {
		const int64_t blk = bt[p / a.block_size];
		const T* kp = k_cache + a.k_offset + blk * a.kv_block_stride + (int64_t)(p % a.block_size) * a.kv_token_stride +
		              kv_head_off;
		float acc = 0.f;
		for (int d = lane; d < D; d += 32) acc += q_s[d] * to_float(kp[d]);
		acc = warp_sum(acc);
		if (lane == 0) logits[p - start] = acc * a.scale;
	}
	__syncthreads();

	float m = -CUDART_INF_F;
	for (int i = tid; i < n; i += DECODE_THREADS) m = fmaxf(m, logits[i]);
	m = block_max(m, red);
	float s = 0.f;
	for (int i = tid; i < n; i += DECODE_THREADS) {
		const float e = __expf(logits[i] - m);
		logits[i] = e;
		s += e;
	}
	s = block_sum(s, red); // ends with __syncthreads: logits[] is final
	const float inv = 1.f / s;

	for (int d = tid; d < D; d += DECODE_THREADS) {
		float acc = 0.f;
		for (int p = start; p < end; ++p) {
			const int64_t blk = bt[p / a.block_size];
			const T* vp = v_cache + a.v_offset + blk * a.kv_block_stride +
			              (int64_t)(p % a.block_size) * a.kv_token_stride + kv_head_off;
			acc += logits[p - start] * to_float(vp[d]);
		}
		if (a.num_splits == 1) {
			out[a.out_offset + row * a.out_stride + (int64_t)head * D + d] = from_float<T>(acc * inv);
		} else {
			tmp_out[(((int64_t)seq * a.num_heads + head) * a.num_splits + split) * D + d] = acc * inv;
		}
	}
	if (a.num_splits > 1 && tid == 0) {
		const int64_t i = ((int64_t)seq * a.num_heads + head) * a.num_splits + split;
		max_logits[i] = m;
		exp_sums[i] = s;
	}
}

// Merges the splits of one (head, sequence): with m_s, l_s and o_s the max
// logit, exp-sum and normalized output of split s, and M = max m_s,
//   out = Σ_s l_s·e^(m_s−M)·o_s / Σ_s l_s·e^(m_s−M).
// Thread 0 computes the weights (single-lane loads of max_logits and
// exp_sums), then thread d sums tmp_out[·, d] (warp reads 32 consecutive).
template <typename T>
__global__ void __launch_bounds__(DECODE_THREADS)
    paged_attention_merge(T* __restrict__ out, const int32_t* __restrict__ context_lens,
                          const int32_t* __restrict__ query_start, const float* __restrict__ tmp_out,
                          const float* __restrict__ max_logits, const float* __restrict__ exp_sums,
                          const StrideAttnArgs a) {
	const int head = blockIdx.x, seq = blockIdx.y;
	const int ctx = context_lens[seq];
	const int64_t row = query_start[seq];
	const int n = (ctx + a.partition - 1) / a.partition;
	const int D = a.head_dim;
	extern __shared__ float w_s[]; // [num_splits + 1]
	const int64_t base = ((int64_t)seq * a.num_heads + head) * a.num_splits;
	if (threadIdx.x == 0) {
		float M = -CUDART_INF_F;
		for (int s = 0; s < n; ++s) M = fmaxf(M, max_logits[base + s]);
		float tot = 0.f;
		for (int s = 0; s < n; ++s) {
			const float w = exp_sums[base + s] * exp_diff(max_logits[base + s], M);
			w_s[s] = w;
			tot += w;
		}
		w_s[a.num_splits] = 1.f / tot;
	}
	__syncthreads();
	const float inv = w_s[a.num_splits];
	for (int d = threadIdx.x; d < D; d += DECODE_THREADS) {
		float acc = 0.f;
		for (int s = 0; s < n; ++s) acc += w_s[s] * tmp_out[(base + s) * D + d];
		out[a.out_offset + row * a.out_stride + (int64_t)head * D + d] = from_float<T>(acc * inv);
	}
}

extern "C" int stride_launch_paged_decode(int dtype, const void* q, const void* k_cache, const void* v_cache,
                                          void* out, const int32_t* context_lens, const int32_t* query_start,
                                          const int32_t* block_tables, float* tmp_out, float* max_logits,
                                          float* exp_sums, const StrideAttnArgs* a, const StrideLaunch* l) {
	if (empty_grid(l)) return 0;
	STRIDE_DISPATCH(dtype, paged_attention_decode<T><<<grid_of(l), block_of(l), (size_t)l->smem>>>(
	                           static_cast<const T*>(q), static_cast<const T*>(k_cache),
	                           static_cast<const T*>(v_cache), static_cast<T*>(out), context_lens, query_start,
	                           block_tables, tmp_out, max_logits, exp_sums, *a))
	return (int)cudaGetLastError();
}

extern "C" int stride_launch_decode_merge(int dtype, void* out, const int32_t* context_lens,
                                          const int32_t* query_start, const float* tmp_out, const float* max_logits,
                                          const float* exp_sums, const StrideAttnArgs* a, const StrideLaunch* l) {
	if (empty_grid(l)) return 0;
	STRIDE_DISPATCH(dtype, paged_attention_merge<T><<<grid_of(l), block_of(l), (size_t)l->smem>>>(
	                           static_cast<T*>(out), context_lens, query_start, tmp_out, max_logits, exp_sums, *a))
	return (int)cudaGetLastError();
}
