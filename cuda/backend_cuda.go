//go:build cuda

package cuda

// This file is the CUDA runtime of a -tags cuda build: cgo calls into
// cuda/kernels (compiled by scripts/cuda-build.sh into
// cuda/build/libstridecuda.a) and the static CUDA runtime. cgo sees only
// stride_kernels.h, plain C, so building needs no CUDA headers; linking
// needs libcudart_static (CGO_LDFLAGS=-L<cuda>/lib64 when it is not in a
// default path; the build script sets it).

/*
#cgo CFLAGS: -I${SRCDIR}/kernels
#cgo LDFLAGS: -L${SRCDIR}/build -lstridecuda -lcudart_static -lstdc++ -ldl -lpthread -lrt -lm
#include <stdint.h>
#include <stdlib.h>
#include "stride_kernels.h"

// Device addresses travel through Go as uintptr; these casts keep
// unsafe.Pointer conversions of non-Go memory out of Go code.
static inline void* stride_ptr(uintptr_t p) { return (void*)p; }
static inline const int32_t* stride_iptr(uintptr_t p) { return (const int32_t*)p; }
static inline float* stride_fptr(uintptr_t p) { return (float*)p; }
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/stride-lm/stride/tensor"
)

// Built reports whether this binary was built with the cuda tag.
const Built = true

// CUDA error codes that mean "no usable GPU here".
const (
	cudaErrorInsufficientDriver = 35
	cudaErrorNoDevice           = 100
)

// Available reports whether kernels can run: the CUDA runtime must find a
// driver and at least one GPU.
func Available() error {
	n, err := rtDeviceCount()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNoDevice
	}
	return nil
}

func check(op string, code C.int) error {
	if code == 0 {
		return nil
	}
	return &Error{Op: op, Code: int(code), Msg: C.GoString(C.stride_error_string(code))}
}

func ptr(p uintptr) unsafe.Pointer { return C.stride_ptr(C.uintptr_t(p)) }

func rtDeviceCount() (int, error) {
	var n C.int
	if err := check("cudaGetDeviceCount", C.stride_device_count(&n)); err != nil {
		var e *Error
		if errors.As(err, &e) && (e.Code == cudaErrorNoDevice || e.Code == cudaErrorInsufficientDriver) {
			return 0, fmt.Errorf("%w: %v", ErrNoDevice, err)
		}
		return 0, err
	}
	return int(n), nil
}

func rtSetDevice(i int) error { return check("cudaSetDevice", C.stride_set_device(C.int(i))) }

func rtProps(i int) (DeviceInfo, error) {
	var name [256]C.char
	var major, minor, sms C.int
	var mem, smem C.int64_t
	if err := check("cudaGetDeviceProperties", C.stride_device_props(C.int(i), &name[0], C.int(len(name)), &major, &minor, &mem, &sms, &smem)); err != nil {
		return DeviceInfo{}, err
	}
	return DeviceInfo{Name: C.GoString(&name[0]), Major: int(major), Minor: int(minor), TotalMem: int64(mem), SMs: int(sms), MaxSharedOptin: int64(smem)}, nil
}

func rtMalloc(n int64) (uintptr, error) {
	var p unsafe.Pointer
	if err := check("cudaMalloc", C.stride_malloc(&p, C.size_t(n))); err != nil {
		return 0, err
	}
	return uintptr(p), nil
}

func rtFree(p uintptr) error { return check("cudaFree", C.stride_free(ptr(p))) }

func rtHtoD(dst uintptr, src unsafe.Pointer, n int64) error {
	return check("cudaMemcpy HtoD", C.stride_memcpy_htod(ptr(dst), src, C.size_t(n)))
}

func rtDtoH(dst unsafe.Pointer, src uintptr, n int64) error {
	return check("cudaMemcpy DtoH", C.stride_memcpy_dtoh(dst, ptr(src), C.size_t(n)))
}

func rtMemset(p uintptr, n int64) error {
	return check("cudaMemset", C.stride_memset(ptr(p), 0, C.size_t(n)))
}

func rtSync() error { return check("cudaDeviceSynchronize", C.stride_synchronize()) }

func rtEventCreate() (uintptr, error) {
	var e unsafe.Pointer
	if err := check("cudaEventCreate", C.stride_event_create(&e)); err != nil {
		return 0, err
	}
	return uintptr(e), nil
}

func rtEventRecord(e uintptr) error { return check("cudaEventRecord", C.stride_event_record(ptr(e))) }

func rtEventElapsed(a, b uintptr) (float32, error) {
	var ms C.float
	if err := check("cudaEventElapsedTime", C.stride_event_elapsed_ms(ptr(a), ptr(b), &ms)); err != nil {
		return 0, err
	}
	return float32(ms), nil
}

func rtEventDestroy(e uintptr) error {
	return check("cudaEventDestroy", C.stride_event_destroy(ptr(e)))
}

func cLaunch(l *launchDims) C.StrideLaunch {
	var c C.StrideLaunch
	for i := 0; i < 3; i++ {
		c.grid[i] = C.int64_t(l.grid[i])
		c.block[i] = C.int32_t(l.block[i])
	}
	c.smem = C.int64_t(l.smem)
	return c
}

func launchCopy(kind int, dt tensor.DType, dst, src uintptr, a *copyArgs, l *launchDims) error {
	var c C.StrideCopyArgs
	for i := 0; i < 4; i++ {
		c.size[i] = C.int64_t(a.size[i])
		c.stride[i] = C.int64_t(a.stride[i])
	}
	c.src_offset, c.dst_offset, c.units, c.vec = C.int64_t(a.srcOffset), C.int64_t(a.dstOffset), C.int64_t(a.units), C.int32_t(a.vec)
	cl := cLaunch(l)
	return check("launch copy", C.stride_launch_copy(C.int(kind), C.int(dt), ptr(dst), ptr(src), &c, &cl))
}

func cCache(a *cacheArgs) C.StrideCacheArgs {
	var c C.StrideCacheArgs
	c.num_rows, c.kv_heads, c.head_dim, c.units = C.int64_t(a.numRows), C.int64_t(a.kvHeads), C.int64_t(a.headDim), C.int64_t(a.units)
	c.key_offset, c.key_stride, c.key_head_stride, c.key_elem_stride = C.int64_t(a.keyOffset), C.int64_t(a.keyStride), C.int64_t(a.keyHeadStride), C.int64_t(a.keyElemStride)
	c.value_offset, c.value_stride, c.value_head_stride, c.value_elem_stride = C.int64_t(a.valueOffset), C.int64_t(a.valueStride), C.int64_t(a.valueHeadStride), C.int64_t(a.valueElemStride)
	c.k_cache_offset, c.v_cache_offset = C.int64_t(a.kCacheOffset), C.int64_t(a.vCacheOffset)
	c.k_out_offset, c.v_out_offset = C.int64_t(a.kOutOffset), C.int64_t(a.vOutOffset)
	c.vec = C.int32_t(a.vec)
	return c
}

func launchReshapeAndCache(dt tensor.DType, p [4]uintptr, slots uintptr, a *cacheArgs, l *launchDims) error {
	c, cl := cCache(a), cLaunch(l)
	return check("launch reshape_and_cache", C.stride_launch_reshape_and_cache(C.int(dt), ptr(p[0]), ptr(p[1]), ptr(p[2]), ptr(p[3]),
		C.stride_iptr(C.uintptr_t(slots)), &c, &cl))
}

func launchGatherKV(dt tensor.DType, p [4]uintptr, rows uintptr, a *cacheArgs, l *launchDims) error {
	c, cl := cCache(a), cLaunch(l)
	return check("launch gather_kv", C.stride_launch_gather_kv(C.int(dt), ptr(p[0]), ptr(p[1]), ptr(p[2]), ptr(p[3]),
		C.stride_iptr(C.uintptr_t(rows)), &c, &cl))
}

func cAttn(a *attnArgs) C.StrideAttnArgs {
	var c C.StrideAttnArgs
	c.num_seqs, c.num_heads, c.num_kv_heads, c.head_dim = C.int32_t(a.numSeqs), C.int32_t(a.numHeads), C.int32_t(a.numKVHeads), C.int32_t(a.headDim)
	c.block_size, c.max_blocks = C.int32_t(a.blockSize), C.int32_t(a.maxBlocks)
	c.q_offset, c.q_stride, c.q_head_stride = C.int64_t(a.qOffset), C.int64_t(a.qStride), C.int64_t(a.qHeadStride)
	c.k_offset, c.v_offset = C.int64_t(a.kOffset), C.int64_t(a.vOffset)
	c.kv_block_stride, c.kv_token_stride, c.kv_head_stride = C.int64_t(a.kvBlockStride), C.int64_t(a.kvTokenStride), C.int64_t(a.kvHeadStride)
	c.out_offset, c.out_stride = C.int64_t(a.outOffset), C.int64_t(a.outStride)
	c.partition, c.num_splits, c.smem_positions = C.int32_t(a.partition), C.int32_t(a.numSplits), C.int32_t(a.smemPositions)
	c.qvec, c.kvvec = C.int32_t(a.qvec), C.int32_t(a.kvvec)
	c.scale = C.float(a.scale)
	return c
}

func iptr(v *DeviceInts) *C.int32_t { return C.stride_iptr(C.uintptr_t(v.buf.ptr)) }

func launchPagedDecode(dt tensor.DType, p [4]uintptr, s *DeviceSeqs, sc [3]uintptr, a *attnArgs, l *launchDims) error {
	c, cl := cAttn(a), cLaunch(l)
	return check("launch paged_attention_decode", C.stride_launch_paged_decode(C.int(dt), ptr(p[0]), ptr(p[1]), ptr(p[2]), ptr(p[3]),
		iptr(s.contextLens), iptr(s.queryStart), iptr(s.blockTable),
		C.stride_fptr(C.uintptr_t(sc[0])), C.stride_fptr(C.uintptr_t(sc[1])), C.stride_fptr(C.uintptr_t(sc[2])), &c, &cl))
}

func launchDecodeMerge(dt tensor.DType, out uintptr, s *DeviceSeqs, sc [3]uintptr, a *attnArgs, l *launchDims) error {
	c, cl := cAttn(a), cLaunch(l)
	return check("launch paged_attention_merge", C.stride_launch_decode_merge(C.int(dt), ptr(out), iptr(s.contextLens), iptr(s.queryStart),
		C.stride_fptr(C.uintptr_t(sc[0])), C.stride_fptr(C.uintptr_t(sc[1])), C.stride_fptr(C.uintptr_t(sc[2])), &c, &cl))
}

func launchFlashPrefill(dt tensor.DType, p [4]uintptr, s *DeviceSeqs, a *attnArgs, l *launchDims) error {
	c, cl := cAttn(a), cLaunch(l)
	return check("launch flash_attention_prefill", C.stride_launch_flash_prefill(C.int(dt), ptr(p[0]), ptr(p[1]), ptr(p[2]), ptr(p[3]),
		iptr(s.queryStart), iptr(s.queryLen), iptr(s.contextLens), iptr(s.blockTable), &c, &cl))
}

func launchNaive(kernel string, dt tensor.DType, p [3]uintptr, a *naiveArgs, l *launchDims) error {
	var c C.StrideNaiveArgs
	c.heads, c.tq, c.l, c.d = C.int32_t(a.heads), C.int32_t(a.tq), C.int32_t(a.l), C.int32_t(a.d)
	c.q_offset, c.q_stride, c.q_head_stride = C.int64_t(a.qOffset), C.int64_t(a.qStride), C.int64_t(a.qHeadStride)
	c.k_offset, c.k_stride, c.k_head_stride = C.int64_t(a.kOffset), C.int64_t(a.kStride), C.int64_t(a.kHeadStride)
	c.s_offset, c.o_offset = C.int64_t(a.sOffset), C.int64_t(a.oOffset)
	c.scale = C.float(a.scale)
	cl := cLaunch(l)
	var code C.int
	switch kernel {
	case KernelNaiveScores:
		code = C.stride_launch_naive_scores(C.int(dt), ptr(p[0]), ptr(p[1]), ptr(p[2]), &c, &cl)
	case KernelNaiveSoftmax:
		code = C.stride_launch_naive_softmax(C.int(dt), ptr(p[0]), &c, &cl)
	case KernelNaiveAV:
		code = C.stride_launch_naive_av(C.int(dt), ptr(p[0]), ptr(p[1]), ptr(p[2]), &c, &cl)
	default:
		return fmt.Errorf("cuda: unknown naive kernel %q", kernel)
	}
	return check("launch "+kernel, code)
}
