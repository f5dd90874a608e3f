//go:build !cuda

package cuda

import (
	"unsafe"

	"github.com/stride-lm/stride/tensor"
)

// This file is the runtime of a build without the cuda tag: every entry
// point answers ErrNoCUDA, so the API is the same in both builds and a
// caller learns exactly how to get a GPU build.

// Built reports whether this binary was built with the cuda tag.
const Built = false

// Available reports whether kernels can run: in this build, never.
func Available() error { return ErrNoCUDA }

func rtDeviceCount() (int, error)                      { return 0, ErrNoCUDA }
func rtSetDevice(int) error                            { return ErrNoCUDA }
func rtProps(int) (DeviceInfo, error)                  { return DeviceInfo{}, ErrNoCUDA }
func rtMalloc(int64) (uintptr, error)                  { return 0, ErrNoCUDA }
func rtFree(uintptr) error                             { return ErrNoCUDA }
func rtHtoD(uintptr, unsafe.Pointer, int64) error      { return ErrNoCUDA }
func rtDtoH(unsafe.Pointer, uintptr, int64) error      { return ErrNoCUDA }
func rtMemset(uintptr, int64) error                    { return ErrNoCUDA }
func rtSync() error                                    { return ErrNoCUDA }
func rtEventCreate() (uintptr, error)                  { return 0, ErrNoCUDA }
func rtEventRecord(uintptr) error                      { return ErrNoCUDA }
func rtEventElapsed(uintptr, uintptr) (float32, error) { return 0, ErrNoCUDA }
func rtEventDestroy(uintptr) error                     { return ErrNoCUDA }
func launchCopy(int, tensor.DType, uintptr, uintptr, *copyArgs, *launchDims) error {
	return ErrNoCUDA
}
func launchReshapeAndCache(tensor.DType, [4]uintptr, uintptr, *cacheArgs, *launchDims) error {
	return ErrNoCUDA
}
func launchGatherKV(tensor.DType, [4]uintptr, uintptr, *cacheArgs, *launchDims) error {
	return ErrNoCUDA
}
func launchPagedDecode(tensor.DType, [4]uintptr, *DeviceSeqs, [3]uintptr, *attnArgs, *launchDims) error {
	return ErrNoCUDA
}
func launchDecodeMerge(tensor.DType, uintptr, *DeviceSeqs, [3]uintptr, *attnArgs, *launchDims) error {
	return ErrNoCUDA
}
func launchFlashPrefill(tensor.DType, [4]uintptr, *DeviceSeqs, *attnArgs, *launchDims) error {
	return ErrNoCUDA
}
func launchNaive(string, tensor.DType, [3]uintptr, *naiveArgs, *launchDims) error { return ErrNoCUDA }
