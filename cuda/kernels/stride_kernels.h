/*
 * stride_kernels.h — the C ABI between Stride's Go binding (cuda/backend_cuda.go,
 * cgo) and its CUDA kernels (the .cu files beside this header).
 *
 * Every tensor is passed as the device pointer of its storage's element 0
 * plus an element offset, exactly as the traffic model addresses it
 * (cuda/operand.go): element (i0, …) lives at base + (offset + Σ ik·stride_k).
 * Strides are in elements and named like vLLM's (q_stride, kv_block_stride,
 * kv_head_stride). Launch geometry is computed by the Go plans and passed in
 * StrideLaunch, so the grid the model counts is the grid that runs.
 *
 * Every function returns a cudaError_t as int (0 = success).
 */
#ifndef STRIDE_KERNELS_H
#define STRIDE_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* dtype codes: the values of tensor.DType. */
enum { STRIDE_F32 = 0, STRIDE_F16 = 1, STRIDE_BF16 = 2 };

/* copy kernel selector */
enum { STRIDE_COPY = 0, STRIDE_REPEAT_INTERLEAVE = 1, STRIDE_TRANSPOSE_CONTIGUOUS = 2 };

typedef struct {
	int64_t grid[3];
	int32_t block[3];
	int64_t smem; /* dynamic shared memory, bytes */
} StrideLaunch;

/* strided_copy / repeat_interleave / transpose_contiguous (copy.cu) */
typedef struct {
	int64_t size[4];   /* src shape, merged, padded at the front with 1 */
	int64_t stride[4]; /* src strides, elements */
	int64_t src_offset;
	int64_t dst_offset;
	int64_t units; /* numel / vec */
	int32_t vec;   /* elements per thread: 1, or 16 / sizeof(T) */
} StrideCopyArgs;

/* reshape_and_cache and gather_kv (cache.cu) */
typedef struct {
	int64_t num_rows; /* tokens (reshape_and_cache) or gathered rows */
	int64_t kv_heads;
	int64_t head_dim;
	int64_t units; /* kv_heads * head_dim / vec */
	/* reshape_and_cache sources: key/value [T, KVH, D] through strides */
	int64_t key_offset, key_stride, key_head_stride, key_elem_stride;
	int64_t value_offset, value_stride, value_head_stride, value_elem_stride;
	/* caches [num_blocks, block_size, KVH, D] contiguous */
	int64_t k_cache_offset, v_cache_offset;
	/* gather_kv outputs [R, KVH, D] contiguous */
	int64_t k_out_offset, v_out_offset;
	int32_t vec;
} StrideCacheArgs;

/* paged decode, split-KV merge and fused prefill (decode.cu, prefill.cu) */
typedef struct {
	int32_t num_seqs, num_heads, num_kv_heads, head_dim, block_size, max_blocks;
	int64_t q_offset, q_stride, q_head_stride;
	int64_t k_offset, v_offset;
	int64_t kv_block_stride, kv_token_stride, kv_head_stride;
	int64_t out_offset, out_stride;
	int32_t partition;      /* decode: positions per block, 0 = whole context */
	int32_t num_splits;     /* decode: gridDim.z */
	int32_t smem_positions; /* decode: logits slots in shared memory */
	int32_t qvec, kvvec;    /* prefill: elements per Q / KV tile load */
	float scale;            /* 1 / sqrt(head_dim) */
} StrideAttnArgs;

/* naive_scores, naive_softmax, naive_av (naive.cu) */
typedef struct {
	int32_t heads, tq, l, d;
	int64_t q_offset, q_stride, q_head_stride;
	int64_t k_offset, k_stride, k_head_stride; /* naive_av: v */
	int64_t s_offset;                          /* scores / probs [H, Tq, L] */
	int64_t o_offset;                          /* naive_av out [H, Tq, D] */
	float scale;
} StrideNaiveArgs;

/* runtime (runtime.cu) */
int stride_device_count(int* n);
int stride_set_device(int ordinal);
int stride_device_props(int ordinal, char* name, int name_len, int* major, int* minor,
                        int64_t* total_mem, int* sm_count, int64_t* max_smem_optin);
int stride_malloc(void** p, size_t n);
int stride_free(void* p);
int stride_memcpy_htod(void* dst, const void* src, size_t n);
int stride_memcpy_dtoh(void* dst, const void* src, size_t n);
int stride_memset(void* p, int value, size_t n);
int stride_synchronize(void);
const char* stride_error_string(int err);
int stride_event_create(void** ev);
int stride_event_record(void* ev);
int stride_event_elapsed_ms(void* start, void* stop, float* ms);
int stride_event_destroy(void* ev);

/* kernels */
int stride_launch_copy(int kind, int dtype, void* dst, const void* src, const StrideCopyArgs* a, const StrideLaunch* l);
int stride_launch_reshape_and_cache(int dtype, const void* key, const void* value, void* k_cache, void* v_cache,
                                    const int32_t* slot_mapping, const StrideCacheArgs* a, const StrideLaunch* l);
int stride_launch_gather_kv(int dtype, const void* k_cache, const void* v_cache, void* k_out, void* v_out,
                            const int32_t* row_slots, const StrideCacheArgs* a, const StrideLaunch* l);
int stride_launch_paged_decode(int dtype, const void* q, const void* k_cache, const void* v_cache, void* out,
                               const int32_t* context_lens, const int32_t* query_start, const int32_t* block_tables,
                               float* tmp_out, float* max_logits, float* exp_sums, const StrideAttnArgs* a,
                               const StrideLaunch* l);
int stride_launch_decode_merge(int dtype, void* out, const int32_t* context_lens, const int32_t* query_start,
                               const float* tmp_out, const float* max_logits, const float* exp_sums,
                               const StrideAttnArgs* a, const StrideLaunch* l);
int stride_launch_flash_prefill(int dtype, const void* q, const void* k_cache, const void* v_cache, void* out,
                                const int32_t* query_start, const int32_t* query_lens, const int32_t* context_lens,
                                const int32_t* block_tables, const StrideAttnArgs* a, const StrideLaunch* l);
int stride_launch_naive_scores(int dtype, const void* q, const void* k, void* scores, const StrideNaiveArgs* a,
                               const StrideLaunch* l);
int stride_launch_naive_softmax(int dtype, void* scores, const StrideNaiveArgs* a, const StrideLaunch* l);
int stride_launch_naive_av(int dtype, const void* probs, const void* v, void* out, const StrideNaiveArgs* a,
                           const StrideLaunch* l);

#ifdef __cplusplus
}
#endif

#endif
