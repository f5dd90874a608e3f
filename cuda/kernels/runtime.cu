// runtime.cu — thin C wrappers over the CUDA runtime for the Go binding, so
// cgo never includes a CUDA header: device selection and properties,
// allocation, copies, synchronization and event timing.
#include <string.h>

#include "common.cuh"

extern "C" int stride_device_count(int* n) { return (int)cudaGetDeviceCount(n); }

extern "C" int stride_set_device(int ordinal) { return (int)cudaSetDevice(ordinal); }

extern "C" int stride_device_props(int ordinal, char* name, int name_len, int* major, int* minor, int64_t* total_mem,
                                   int* sm_count, int64_t* max_smem_optin) {
	cudaDeviceProp p;
	const cudaError_t e = cudaGetDeviceProperties(&p, ordinal);
	if (e != cudaSuccess) return (int)e;
	if (name_len > 0) {
		strncpy(name, p.name, (size_t)name_len - 1);
		name[name_len - 1] = 0;
	}
	*major = p.major;
	*minor = p.minor;
	*total_mem = (int64_t)p.totalGlobalMem;
	*sm_count = p.multiProcessorCount;
	*max_smem_optin = (int64_t)p.sharedMemPerBlockOptin;
	return 0;
}

extern "C" int stride_malloc(void** p, size_t n) { return (int)cudaMalloc(p, n); }
extern "C" int stride_free(void* p) { return (int)cudaFree(p); }
extern "C" int stride_memcpy_htod(void* dst, const void* src, size_t n) {
	return (int)cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice);
}
extern "C" int stride_memcpy_dtoh(void* dst, const void* src, size_t n) {
	return (int)cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost);
}
extern "C" int stride_memset(void* p, int value, size_t n) { return (int)cudaMemset(p, value, n); }
extern "C" int stride_synchronize(void) { return (int)cudaDeviceSynchronize(); }
extern "C" const char* stride_error_string(int err) { return cudaGetErrorString((cudaError_t)err); }

extern "C" int stride_event_create(void** ev) {
	cudaEvent_t e;
	const cudaError_t r = cudaEventCreate(&e);
	*ev = (void*)e;
	return (int)r;
}
extern "C" int stride_event_record(void* ev) { return (int)cudaEventRecord((cudaEvent_t)ev, 0); }
extern "C" int stride_event_elapsed_ms(void* start, void* stop, float* ms) {
	const cudaError_t e = cudaEventSynchronize((cudaEvent_t)stop);
	if (e != cudaSuccess) return (int)e;
	return (int)cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)stop);
}
extern "C" int stride_event_destroy(void* ev) { return (int)cudaEventDestroy((cudaEvent_t)ev); }
