// cache.cu — the paged KV cache's two copies: reshape_and_cache writes the
// new tokens' K and V into their slots (both paths), gather_kv copies a
// sequence's context back out into contiguous [R, KVH, D] (naive path only).
//
// Thread mapping (mirrored by cuda/cache.go, slabPlan):
//   block b handles one row (a token, or a gathered position):
//     index = idx[b]           every thread loads it: one broadcast request
//                              per warp
//     if index < 0: return     padding token
//     for i = threadIdx.x; i < units; i += blockDim.x:
//       e = i·vec; head = e / D; d = e % D
//       load K, load V, store K, store V   (vec elements each)
//   units = KVH·D/vec, blockDim = min(units rounded up to 32, 256).
// key and value are read through key_stride (dim 0), key_head_stride
// (dim 1) and key_elem_stride (dim 2): views of a fused QKV output are read
// in place, never made contiguous first. vec > 1 only when every row and
// in-row offset is 16-byte aligned and the element strides are 1.
#include "common.cuh"

template <typename T>
__global__ void reshape_and_cache(const T* __restrict__ key, const T* __restrict__ value, T* __restrict__ k_cache,
                                  T* __restrict__ v_cache, const int32_t* __restrict__ slot_mapping,
                                  const StrideCacheArgs a) {
	const int64_t token = blockIdx.x;
	const int64_t slot = slot_mapping[token];
	if (slot < 0) return;
	const int64_t row = a.kv_heads * a.head_dim; // kv_token_stride of the cache
	for (int64_t i = threadIdx.x; i < a.units; i += blockDim.x) {
		const int64_t e = i * a.vec;
		const int64_t head = e / a.head_dim, d = e % a.head_dim;
		const int64_t ks = a.key_offset + token * a.key_stride + head * a.key_head_stride + d * a.key_elem_stride;
		const int64_t vs = a.value_offset + token * a.value_stride + head * a.value_head_stride + d * a.value_elem_stride;
		const int64_t kd = a.k_cache_offset + slot * row + e;
		const int64_t vd = a.v_cache_offset + slot * row + e;
		if (a.vec == 1) {
			const T k = key[ks];
			const T v = value[vs];
			k_cache[kd] = k;
			v_cache[vd] = v;
		} else {
			const uint4 k = ld16(key + ks);
			const uint4 v = ld16(value + vs);
			st16(k_cache + kd, k);
			st16(v_cache + vd, v);
		}
	}
}

template <typename T>
__global__ void gather_kv(const T* __restrict__ k_cache, const T* __restrict__ v_cache, T* __restrict__ k_out,
                          T* __restrict__ v_out, const int32_t* __restrict__ row_slots, const StrideCacheArgs a) {
	const int64_t r = blockIdx.x;
	const int64_t slot = row_slots[r];
	if (slot < 0) return;
	const int64_t row = a.kv_heads * a.head_dim;
	for (int64_t i = threadIdx.x; i < a.units; i += blockDim.x) {
		const int64_t e = i * a.vec;
		const int64_t ks = a.k_cache_offset + slot * row + e;
		const int64_t vs = a.v_cache_offset + slot * row + e;
		const int64_t kd = a.k_out_offset + r * row + e;
		const int64_t vd = a.v_out_offset + r * row + e;
		if (a.vec == 1) {
			const T k = k_cache[ks];
			const T v = v_cache[vs];
			k_out[kd] = k;
			v_out[vd] = v;
		} else {
			const uint4 k = ld16(k_cache + ks);
			const uint4 v = ld16(v_cache + vs);
			st16(k_out + kd, k);
			st16(v_out + vd, v);
		}
	}
}

extern "C" int stride_launch_reshape_and_cache(int dtype, const void* key, const void* value, void* k_cache,
                                               void* v_cache, const int32_t* slot_mapping, const StrideCacheArgs* a,
                                               const StrideLaunch* l) {
	if (empty_grid(l)) return 0;
	STRIDE_DISPATCH(dtype, reshape_and_cache<T><<<grid_of(l), block_of(l), (size_t)l->smem>>>(
	                           static_cast<const T*>(key), static_cast<const T*>(value), static_cast<T*>(k_cache),
	                           static_cast<T*>(v_cache), slot_mapping, *a))
	return (int)cudaGetLastError();
}

extern "C" int stride_launch_gather_kv(int dtype, const void* k_cache, const void* v_cache, void* k_out, void* v_out,
                                       const int32_t* row_slots, const StrideCacheArgs* a, const StrideLaunch* l) {
	if (empty_grid(l)) return 0;
	STRIDE_DISPATCH(dtype, gather_kv<T><<<grid_of(l), block_of(l), (size_t)l->smem>>>(
	                           static_cast<const T*>(k_cache), static_cast<const T*>(v_cache), static_cast<T*>(k_out),
	                           static_cast<T*>(v_out), row_slots, *a))
	return (int)cudaGetLastError();
}
