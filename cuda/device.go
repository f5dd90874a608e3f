package cuda

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/stride-lm/stride/tensor"
)

// This file is the device: buffers, device tensors and uploads. The
// launchers live next to their kernels' plans (copy.go, cache.go,
// decode.go, prefill.go, naive.go). The API is the same in every build:
// arguments are checked and the launch arguments computed in Go, by the
// same plans the traffic simulation uses (so the grid the simulation
// counts is the grid that runs); the runtime calls behind it (rt*,
// launch*) come from backend_cuda.go in a -tags cuda build and answer
// ErrNoCUDA otherwise.

// DeviceInfo describes a GPU.
type DeviceInfo struct {
	Name           string
	Major, Minor   int   // compute capability: 8.0 is A100, 9.0 H100/H200
	TotalMem       int64 // bytes
	SMs            int
	MaxSharedOptin int64 // bytes of shared memory a block may opt into
}

// Device is an opened GPU. Its methods launch one kernel each on the
// default stream and return without waiting (Synchronize waits); launch
// errors are reported at once, execution errors by the next
// synchronizing call.
type Device struct {
	Info    DeviceInfo
	ordinal int
	rt      runtime
	record  bool
	timing  bool
	log     []Launch
}

// runtime is what a Device runs on: the GPU, or nothing (a simulated device).
type runtime interface {
	malloc(n int64) (uintptr, error)
	free(p uintptr) error
	htod(dst uintptr, src unsafe.Pointer, n int64) error
	dtoh(dst unsafe.Pointer, src uintptr, n int64) error
	memset(p uintptr, n int64) error
	sync() error
	eventCreate() (uintptr, error)
	eventRecord(e uintptr) error
	eventElapsed(a, b uintptr) (float32, error)
	eventDestroy(e uintptr) error
	// launch runs a kernel launch (a call into the C launcher).
	launch(f func() error) error
}

// gpuRuntime is the CUDA runtime (ErrNoCUDA without the cuda tag).
type gpuRuntime struct{}

func (gpuRuntime) malloc(n int64) (uintptr, error)                     { return rtMalloc(n) }
func (gpuRuntime) free(p uintptr) error                                { return rtFree(p) }
func (gpuRuntime) htod(dst uintptr, src unsafe.Pointer, n int64) error { return rtHtoD(dst, src, n) }
func (gpuRuntime) dtoh(dst unsafe.Pointer, src uintptr, n int64) error { return rtDtoH(dst, src, n) }
func (gpuRuntime) memset(p uintptr, n int64) error                     { return rtMemset(p, n) }
func (gpuRuntime) sync() error                                         { return rtSync() }
func (gpuRuntime) eventCreate() (uintptr, error)                       { return rtEventCreate() }
func (gpuRuntime) eventRecord(e uintptr) error                         { return rtEventRecord(e) }
func (gpuRuntime) eventElapsed(a, b uintptr) (float32, error)          { return rtEventElapsed(a, b) }
func (gpuRuntime) eventDestroy(e uintptr) error                        { return rtEventDestroy(e) }
func (gpuRuntime) launch(f func() error) error                         { return f() }

// Open selects GPU ordinal. In a build without the cuda tag it returns
// ErrNoCUDA; with the tag and no GPU, ErrNoDevice.
func Open(ordinal int) (*Device, error) {
	n, err := rtDeviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, ErrNoDevice
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cuda: device %d does not exist (%d devices)", ordinal, n)
	}
	if err := rtSetDevice(ordinal); err != nil {
		return nil, err
	}
	info, err := rtProps(ordinal)
	if err != nil {
		return nil, err
	}
	return &Device{Info: info, ordinal: ordinal, rt: gpuRuntime{}}, nil
}

func (d *Device) ok() error {
	if d == nil || d.rt == nil {
		if err := Available(); err != nil {
			return err
		}
		return fmt.Errorf("cuda: device not opened (use Open)")
	}
	return nil
}

// Synchronize waits for every launched kernel and reports its errors.
func (d *Device) Synchronize() error {
	if err := d.ok(); err != nil {
		return err
	}
	return d.rt.sync()
}

// Record turns on (or off) the modelling of every launch: each kernel
// method then also appends the traffic simulation's Launch for exactly the
// arguments and device addresses it launched with (see Launches).
func (d *Device) Record(on bool) {
	if d != nil {
		d.record = on
		d.log = nil
	}
}

// Measure turns on (or off) Record and the timing of every launch: each
// kernel is bracketed by CUDA events and waited for, and its elapsed time
// is stored in its recorded Launch (Measured). Launches no longer overlap
// while it is on.
func (d *Device) Measure(on bool) {
	if d != nil {
		d.Record(on)
		d.timing = on
	}
}

// timed runs one launch, timing it when Measure is on.
func (d *Device) timed(launch func() error) error {
	if !d.timing {
		return d.rt.launch(launch)
	}
	ms, err := d.Time(func() error { return d.rt.launch(launch) })
	if err != nil {
		return err
	}
	if n := len(d.log); n > 0 {
		d.log[n-1].Measured = ms
	}
	return nil
}

// Launches returns the simulated launches recorded since Record(true).
func (d *Device) Launches() []Launch {
	if d == nil {
		return nil
	}
	return append([]Launch(nil), d.log...)
}

func (d *Device) note(l Launch, err error) error {
	if err != nil {
		return err
	}
	d.log = append(d.log, l)
	return nil
}

// Time runs f between two CUDA events and returns the elapsed device
// milliseconds.
func (d *Device) Time(f func() error) (float64, error) {
	if err := d.ok(); err != nil {
		return 0, err
	}
	start, err := d.rt.eventCreate()
	if err != nil {
		return 0, err
	}
	defer d.rt.eventDestroy(start)
	stop, err := d.rt.eventCreate()
	if err != nil {
		return 0, err
	}
	defer d.rt.eventDestroy(stop)
	if err := d.rt.eventRecord(start); err != nil {
		return 0, err
	}
	if err := f(); err != nil {
		return 0, err
	}
	if err := d.rt.eventRecord(stop); err != nil {
		return 0, err
	}
	ms, err := d.rt.eventElapsed(start, stop)
	return float64(ms), err
}

// Buffer is a block of device memory.
type Buffer struct {
	ptr   uintptr
	bytes int64
	rt    runtime
}

// Ptr returns the device address.
func (b *Buffer) Ptr() uintptr { return b.ptr }

// Bytes returns the size.
func (b *Buffer) Bytes() int64 { return b.bytes }

// Alloc allocates n bytes (at least 1) of device memory, zeroed.
func (d *Device) Alloc(n int64) (*Buffer, error) {
	if err := d.ok(); err != nil {
		return nil, err
	}
	n = max(n, 1)
	p, err := d.rt.malloc(n)
	if err != nil {
		return nil, err
	}
	if err := d.rt.memset(p, n); err != nil {
		d.rt.free(p)
		return nil, err
	}
	return &Buffer{ptr: p, bytes: n, rt: d.rt}, nil
}

// Free releases the buffer; freeing twice is a no-op.
func (b *Buffer) Free() error {
	if b == nil || b.ptr == 0 || b.rt == nil {
		return nil
	}
	err := b.rt.free(b.ptr)
	b.ptr = 0
	return err
}

// DeviceTensor is a tensor on the device: a buffer holding a whole
// storage, and a layout (shape, strides, offset, dtype) over it. Views
// share the buffer.
type DeviceTensor struct {
	buf    *Buffer
	layout *tensor.Tensor
}

// Layout returns the tensor's layout as a meta tensor.
func (x *DeviceTensor) Layout() *tensor.Tensor { return x.layout }

// Buffer returns the device buffer.
func (x *DeviceTensor) Buffer() *Buffer { return x.buf }

// Operand returns the tensor as the traffic simulation addresses it.
func (x *DeviceTensor) Operand() Operand {
	if x == nil {
		return Operand{}
	}
	return Operand{Layout: x.layout, Base: uint64(x.buf.ptr)}
}

// View returns a tensor sharing x's buffer with the layout f makes of x's
// (any tensor view op: Narrow, View, Transpose, …).
func (x *DeviceTensor) View(f func(*tensor.Tensor) (*tensor.Tensor, error)) (*DeviceTensor, error) {
	l, err := f(x.layout)
	if err != nil {
		return nil, err
	}
	return &DeviceTensor{buf: x.buf, layout: l}, nil
}

// Free releases the buffer (and so every view of it).
func (x *DeviceTensor) Free() error { return x.buf.Free() }

// Empty allocates a zeroed contiguous tensor.
func (d *Device) Empty(dt tensor.DType, shape ...int) (*DeviceTensor, error) {
	l, err := tensor.Meta(dt, shape...)
	if err != nil {
		return nil, err
	}
	b, err := d.Alloc(int64(l.Nbytes()))
	if err != nil {
		return nil, err
	}
	return &DeviceTensor{buf: b, layout: l}, nil
}

// hostBytes returns the raw bytes of a host storage.
func hostBytes(st *tensor.Storage) (unsafe.Pointer, int64, error) {
	if st.IsMeta() {
		return nil, 0, fmt.Errorf("cuda: upload: %w", tensor.ErrMeta)
	}
	if f := st.Float32s(); f != nil {
		if len(f) == 0 {
			return nil, 0, nil
		}
		return unsafe.Pointer(&f[0]), int64(len(f)) * 4, nil
	}
	h := st.Uint16s()
	if len(h) == 0 {
		return nil, 0, nil
	}
	return unsafe.Pointer(&h[0]), int64(len(h)) * 2, nil
}

// Upload copies t's whole storage to the device and returns t's layout
// over it, so a view (a slice of a fused QKV buffer) stays a view with
// the same strides and offset.
func (d *Device) Upload(t *tensor.Tensor) (*DeviceTensor, error) {
	if err := d.ok(); err != nil {
		return nil, err
	}
	src, n, err := hostBytes(t.Storage())
	if err != nil {
		return nil, err
	}
	b, err := d.Alloc(n)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		if err := d.rt.htod(b.ptr, src, n); err != nil {
			b.Free()
			return nil, err
		}
	}
	l, err := tensor.MetaStrided(t.DType(), t.Shape(), t.Strides(), t.Offset())
	if err != nil {
		b.Free()
		return nil, err
	}
	return &DeviceTensor{buf: b, layout: l}, nil
}

// Download copies x's buffer back and returns a host tensor (in ctx) with
// x's layout over it. It synchronizes first.
func (x *DeviceTensor) Download(ctx *tensor.Ledger) (*tensor.Tensor, error) {
	rt := x.buf.rt
	if rt == nil {
		return nil, ErrNoCUDA
	}
	if err := rt.sync(); err != nil {
		return nil, err
	}
	dt := x.layout.DType()
	n := int(x.buf.bytes / int64(dt.Size()))
	var host *tensor.Tensor
	var err error
	if dt == tensor.F32 {
		data := make([]float32, n)
		if n > 0 {
			if err := rt.dtoh(unsafe.Pointer(&data[0]), x.buf.ptr, int64(n)*4); err != nil {
				return nil, err
			}
		}
		host, err = tensor.WrapFloat32(ctx, data, n)
	} else {
		data := make([]uint16, n)
		if n > 0 {
			if err := rt.dtoh(unsafe.Pointer(&data[0]), x.buf.ptr, int64(n)*2); err != nil {
				return nil, err
			}
		}
		host, err = tensor.WrapUint16(ctx, dt, data, n)
	}
	if err != nil {
		return nil, err
	}
	return host.AsStrided(x.layout.Shape(), x.layout.Strides(), x.layout.Offset())
}

// DeviceInts is an int32 array on the device with its host copy (the
// kernels' metadata: slot mappings, block tables, lengths).
type DeviceInts struct {
	buf  *Buffer
	Vals []int32
}

// Addr returns the device address.
func (v *DeviceInts) Addr() uint64 { return uint64(v.buf.ptr) }

// Free releases the array.
func (v *DeviceInts) Free() error { return v.buf.Free() }

// UploadInts copies v to the device.
func (d *Device) UploadInts(v []int32) (*DeviceInts, error) {
	b, err := d.Alloc(int64(len(v)) * 4)
	if err != nil {
		return nil, err
	}
	if len(v) > 0 {
		if err := d.rt.htod(b.ptr, unsafe.Pointer(&v[0]), int64(len(v))*4); err != nil {
			b.Free()
			return nil, err
		}
	}
	return &DeviceInts{buf: b, Vals: append([]int32(nil), v...)}, nil
}

// DeviceSeqs is a Seqs uploaded as the kernels' int32 arrays.
type DeviceSeqs struct {
	Seqs                                                 *Seqs
	slots, queryStart, queryLen, contextLens, blockTable *DeviceInts
}

// Addrs returns the device addresses of the arrays.
func (s *DeviceSeqs) Addrs() SeqAddrs {
	return SeqAddrs{SlotMapping: s.slots.Addr(), QueryStart: s.queryStart.Addr(), QueryLen: s.queryLen.Addr(),
		ContextLens: s.contextLens.Addr(), BlockTables: s.blockTable.Addr()}
}

// Free releases the arrays.
func (s *DeviceSeqs) Free() {
	for _, v := range []*DeviceInts{s.slots, s.queryStart, s.queryLen, s.contextLens, s.blockTable} {
		if v != nil {
			v.Free()
		}
	}
}

func toInt32s(v []int) ([]int32, error) {
	out := make([]int32, len(v))
	for i, x := range v {
		if x < math.MinInt32 || x > math.MaxInt32 {
			return nil, fmt.Errorf("cuda: %d does not fit the kernels' int32 metadata", x)
		}
		out[i] = int32(x)
	}
	return out, nil
}

// UploadSeqs copies a step's metadata to the device. It is checked
// against the tensors when a kernel uses it.
func (d *Device) UploadSeqs(s *Seqs) (*DeviceSeqs, error) {
	if err := d.ok(); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("cuda: nil seqs")
	}
	ds := &DeviceSeqs{Seqs: s}
	var err error
	up := func(v []int32) *DeviceInts {
		if err != nil {
			return nil
		}
		var x *DeviceInts
		x, err = d.UploadInts(v)
		return x
	}
	conv := func(v []int) []int32 {
		if err != nil {
			return nil
		}
		var x []int32
		x, err = toInt32s(v)
		return x
	}
	ds.slots = up(s.SlotMapping)
	ds.queryStart = up(conv(s.QueryStart))
	ds.queryLen = up(conv(s.QueryLen))
	ds.contextLens = up(conv(s.ContextLen))
	ds.blockTable = up(s.flatTables())
	if err != nil {
		ds.Free()
		return nil, err
	}
	return ds, nil
}
