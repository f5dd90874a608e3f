package cuda

import (
	"errors"
	"unsafe"
)

// The simulated device of the tests: the Device API and the traffic
// simulation of any sequence of kernel calls, exercised on a machine
// without a GPU.

// ErrSimDevice is returned when data is read back from a simulated device,
// which has addresses but no memory.
var ErrSimDevice = errors.New("cuda: a simulated device runs nothing and holds no data")

// simRuntime gives buffers simulated addresses and runs nothing.
type simRuntime struct{ as *AddressSpace }

func (r simRuntime) malloc(n int64) (uintptr, error)              { return uintptr(r.as.Alloc(n)), nil }
func (simRuntime) free(uintptr) error                             { return nil }
func (simRuntime) htod(uintptr, unsafe.Pointer, int64) error      { return nil }
func (simRuntime) dtoh(unsafe.Pointer, uintptr, int64) error      { return ErrSimDevice }
func (simRuntime) memset(uintptr, int64) error                    { return nil }
func (simRuntime) sync() error                                    { return nil }
func (simRuntime) eventCreate() (uintptr, error)                  { return 0, nil }
func (simRuntime) eventRecord(uintptr) error                      { return nil }
func (simRuntime) eventElapsed(uintptr, uintptr) (float32, error) { return 0, nil }
func (simRuntime) eventDestroy(uintptr) error                     { return nil }
func (simRuntime) launch(func() error) error                      { return nil }

// NewSimDevice returns a Device that runs nothing: buffers get simulated
// addresses (256-byte aligned, like cudaMalloc's), every kernel method
// checks its arguments and plans its launch exactly as on a GPU, and the
// launch is only simulated (Record is on; see Launches). It works in every
// build, so the API and the simulation of any sequence of kernel calls can be
// exercised on a machine without a GPU. Download fails with
// ErrSimDevice.
func NewSimDevice() *Device {
	d := &Device{Info: DeviceInfo{Name: "simulation (no GPU)", MaxSharedOptin: 227 * 1024}, rt: simRuntime{NewAddressSpace()}}
	d.Record(true)
	return d
}
