package cuda

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/stride-lm/stride/tensor"
)

// This file is the device API. It is the same in every build: arguments
// are checked and the launch arguments computed here, in Go, by the same
// plans the traffic model uses (so the grid the model counts is the grid
// that runs); the runtime calls behind it (rt*, launch*) come from
// backend_cuda.go in a -tags cuda build and answer ErrNoCUDA otherwise.

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

// runtime is what a Device runs on: the GPU, or nothing (a model device).
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

// ErrModelDevice is returned when data is read back from a model device,
// which has addresses but no memory.
var ErrModelDevice = errors.New("cuda: a model device runs nothing and holds no data")

// modelRuntime gives buffers model addresses and runs nothing.
type modelRuntime struct{ as *AddressSpace }

func (r modelRuntime) malloc(n int64) (uintptr, error)              { return uintptr(r.as.Alloc(n)), nil }
func (modelRuntime) free(uintptr) error                             { return nil }
func (modelRuntime) htod(uintptr, unsafe.Pointer, int64) error      { return nil }
func (modelRuntime) dtoh(unsafe.Pointer, uintptr, int64) error      { return ErrModelDevice }
func (modelRuntime) memset(uintptr, int64) error                    { return nil }
func (modelRuntime) sync() error                                    { return nil }
func (modelRuntime) eventCreate() (uintptr, error)                  { return 0, nil }
func (modelRuntime) eventRecord(uintptr) error                      { return nil }
func (modelRuntime) eventElapsed(uintptr, uintptr) (float32, error) { return 0, nil }
func (modelRuntime) eventDestroy(uintptr) error                     { return nil }
func (modelRuntime) launch(func() error) error                      { return nil }

// NewModelDevice returns a Device that runs nothing: buffers get model
// addresses (256-byte aligned, like cudaMalloc's), every kernel method
// checks its arguments and plans its launch exactly as on a GPU, and the
// launch is only modelled (Record is on; see Launches). It works in every
// build, so the API and the model of any sequence of kernel calls can be
// exercised on a machine without a GPU. Download fails with
// ErrModelDevice.
func NewModelDevice() *Device {
	d := &Device{Info: DeviceInfo{Name: "model (no GPU)", MaxSharedOptin: 227 * 1024}, rt: modelRuntime{NewAddressSpace()}}
	d.Record(true)
	return d
}

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
		return fmt.Errorf("cuda: device not opened (use Open or NewModelDevice)")
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
// method then also appends the traffic model's Launch for exactly the
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

// Launches returns the modelled launches recorded since Record(true).
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

// Operand returns the tensor as the traffic model addresses it.
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

// launchDims is StrideLaunch: grid, block, dynamic shared memory.
type launchDims struct {
	grid  [3]int64
	block [3]int32
	smem  int64
}

// maxGrid are CUDA's grid limits: 2^31−1 blocks along x, 65535 along y, z.
var maxGrid = [3]int64{1<<31 - 1, 65535, 65535}

// dimsOf returns the launch geometry of l, or an error if it exceeds the
// grid limits (a batch of more than 65535 sequences, say).
func dimsOf(l Launch, smem int64) (*launchDims, error) {
	for i, g := range l.Grid {
		if g > maxGrid[i] {
			return nil, fmt.Errorf("cuda: %s: grid %v exceeds the limit %v", l.Kernel, l.Grid, maxGrid)
		}
	}
	return &launchDims{grid: l.Grid, block: [3]int32{int32(l.Block[0]), int32(l.Block[1]), int32(l.Block[2])}, smem: smem}, nil
}

// copyArgs mirrors StrideCopyArgs.
type copyArgs struct {
	size, stride                [4]int64
	srcOffset, dstOffset, units int64
	vec                         int32
}

// Copy kinds (STRIDE_COPY, …).
const (
	copyKindPlain     = 0
	copyKindRepeat    = 1
	copyKindTranspose = 2
)

func (d *Device) runCopy(kind int, p copyPlan, dst, src *DeviceTensor) error {
	if d.record {
		if err := d.note(p.model(dst.Operand(), src.Operand(), Aggregate)); err != nil {
			return err
		}
	}
	a := copyArgs{size: p.size, stride: p.stride, srcOffset: p.srcOffset, dstOffset: p.dstOffset, units: p.units, vec: int32(p.vec)}
	l, err := dimsOf(p.launch(), 0)
	if err != nil {
		return err
	}
	return d.timed(func() error { return launchCopy(kind, p.dtype, dst.buf.ptr, src.buf.ptr, &a, l) })
}

// StridedCopy writes src (any strides) into the contiguous dst of the same
// shape and dtype with the strided_copy kernel.
func (d *Device) StridedCopy(dst, src *DeviceTensor) error {
	if err := d.ok(); err != nil {
		return err
	}
	p, err := planCopy(KernelStridedCopy, dst.Operand(), src.Operand())
	if err != nil {
		return err
	}
	return d.runCopy(copyKindPlain, p, dst, src)
}

// Contiguous returns src itself when it is contiguous, else a new
// contiguous copy: PyTorch's x.contiguous() on the GPU.
func (d *Device) Contiguous(src *DeviceTensor) (*DeviceTensor, error) {
	if err := d.ok(); err != nil {
		return nil, err
	}
	if src.layout.IsContiguous() {
		return src, nil
	}
	dst, err := d.Empty(src.layout.DType(), src.layout.Shape()...)
	if err != nil {
		return nil, err
	}
	return dst, d.StridedCopy(dst, src)
}

// RepeatInterleave writes src [L, KVH, D] into dst [L, KVH·groups, D],
// every KV head repeated groups times (the naive path's GQA expansion).
func (d *Device) RepeatInterleave(dst, src *DeviceTensor, groups int) error {
	if err := d.ok(); err != nil {
		return err
	}
	do, so, err := repeatViews(dst.Operand(), src.Operand(), groups)
	if err != nil {
		return err
	}
	p, err := planCopy(KernelRepeatInterleave, do, so)
	if err != nil {
		return err
	}
	return d.runCopy(copyKindRepeat, p, &DeviceTensor{dst.buf, do.Layout}, &DeviceTensor{src.buf, so.Layout})
}

// TransposeContiguous writes src [H, T, D] into the contiguous dst
// [T, H, D] (the naive path's out.transpose(1, 2).contiguous()).
func (d *Device) TransposeContiguous(dst, src *DeviceTensor) error {
	if err := d.ok(); err != nil {
		return err
	}
	do, so, err := transposeViews(dst.Operand(), src.Operand())
	if err != nil {
		return err
	}
	p, err := planCopy(KernelTransposeContiguous, do, so)
	if err != nil {
		return err
	}
	return d.runCopy(copyKindTranspose, p, dst, &DeviceTensor{src.buf, so.Layout})
}

// cacheArgs mirrors StrideCacheArgs.
type cacheArgs struct {
	numRows, kvHeads, headDim, units                           int64
	keyOffset, keyStride, keyHeadStride, keyElemStride         int64
	valueOffset, valueStride, valueHeadStride, valueElemStride int64
	kCacheOffset, vCacheOffset, kOutOffset, vOutOffset         int64
	vec                                                        int32
}

// ReshapeAndCache writes key and value ([T, KVH, D], any strides) into the
// paged caches at s's slot mapping.
func (d *Device) ReshapeAndCache(key, value, kCache, vCache *DeviceTensor, s *DeviceSeqs) error {
	if err := d.ok(); err != nil {
		return err
	}
	if s == nil {
		return fmt.Errorf("cuda: reshape_and_cache: nil seqs")
	}
	p, err := planReshapeAndCache(key.Operand(), value.Operand(), kCache.Operand(), vCache.Operand(), s.Seqs.SlotMapping, s.slots.Addr())
	if err != nil {
		return err
	}
	if d.record {
		if err := d.note(p.model(Aggregate)); err != nil {
			return err
		}
	}
	ks, vs := key.layout.Strides(), value.layout.Strides()
	a := cacheArgs{numRows: p.blocks, kvHeads: p.kvh, headDim: p.d, units: p.units, vec: int32(p.vec),
		keyOffset: int64(key.layout.Offset()), keyStride: int64(ks[0]), keyHeadStride: int64(ks[1]), keyElemStride: int64(ks[2]),
		valueOffset: int64(value.layout.Offset()), valueStride: int64(vs[0]), valueHeadStride: int64(vs[1]), valueElemStride: int64(vs[2]),
		kCacheOffset: int64(kCache.layout.Offset()), vCacheOffset: int64(vCache.layout.Offset())}
	ptrs := [4]uintptr{key.buf.ptr, value.buf.ptr, kCache.buf.ptr, vCache.buf.ptr}
	l, err := dimsOf(p.launch(), 0)
	if err != nil {
		return err
	}
	return d.timed(func() error { return launchReshapeAndCache(p.dt, ptrs, s.slots.buf.ptr, &a, l) })
}

// GatherKV copies cache slots rowSlots into the contiguous kOut, vOut
// [R, KVH, D].
func (d *Device) GatherKV(kOut, vOut, kCache, vCache *DeviceTensor, rowSlots *DeviceInts) error {
	if err := d.ok(); err != nil {
		return err
	}
	p, err := planGatherKV(kOut.Operand(), vOut.Operand(), kCache.Operand(), vCache.Operand(), rowSlots.Vals, rowSlots.Addr())
	if err != nil {
		return err
	}
	if d.record {
		if err := d.note(p.model(Aggregate)); err != nil {
			return err
		}
	}
	a := cacheArgs{numRows: p.blocks, kvHeads: p.kvh, headDim: p.d, units: p.units, vec: int32(p.vec),
		kCacheOffset: int64(kCache.layout.Offset()), vCacheOffset: int64(vCache.layout.Offset()),
		kOutOffset: int64(kOut.layout.Offset()), vOutOffset: int64(vOut.layout.Offset())}
	ptrs := [4]uintptr{kCache.buf.ptr, vCache.buf.ptr, kOut.buf.ptr, vOut.buf.ptr}
	l, err := dimsOf(p.launch(), 0)
	if err != nil {
		return err
	}
	return d.timed(func() error { return launchGatherKV(p.dt, ptrs, rowSlots.buf.ptr, &a, l) })
}

// attnArgs mirrors StrideAttnArgs.
type attnArgs struct {
	numSeqs, numHeads, numKVHeads, headDim, blockSize, maxBlocks int32
	qOffset, qStride, qHeadStride                                int64
	kOffset, vOffset                                             int64
	kvBlockStride, kvTokenStride, kvHeadStride                   int64
	outOffset, outStride                                         int64
	partition, numSplits, smemPositions, qvec, kvvec             int32
	scale                                                        float32
}

// attention returns the operands of an attention launch and checks that
// every size fits the kernels' int32 arguments.
func attention(q, kCache, vCache, out *DeviceTensor, s *DeviceSeqs) (*AttentionOperands, error) {
	if s == nil {
		return nil, fmt.Errorf("cuda: attention: nil seqs")
	}
	return &AttentionOperands{Q: q.Operand(), KCache: kCache.Operand(), VCache: vCache.Operand(), Out: out.Operand(), Seqs: s.Seqs, Meta: s.Addrs()}, nil
}

func newAttnArgs(a *AttentionOperands, d *attnDims) (*attnArgs, error) {
	for _, v := range []int64{d.T, d.H, d.KVH, d.D, d.bs, d.maxBlocks, int64(a.Seqs.NumSeqs())} {
		if v > math.MaxInt32 {
			return nil, fmt.Errorf("cuda: attention size %d does not fit int32", v)
		}
	}
	return &attnArgs{
		numSeqs: int32(a.Seqs.NumSeqs()), numHeads: int32(d.H), numKVHeads: int32(d.KVH), headDim: int32(d.D),
		blockSize: int32(d.bs), maxBlocks: int32(d.maxBlocks),
		qOffset: a.Q.offset(), qStride: d.qStride, qHeadStride: d.qHeadStride,
		kOffset: a.KCache.offset(), vOffset: a.VCache.offset(),
		kvBlockStride: d.kvBlockStride, kvTokenStride: d.kvTokenStride, kvHeadStride: d.kvHeadStride,
		outOffset: a.Out.offset(), outStride: d.outStride,
		scale: float32(1 / math.Sqrt(float64(d.D))),
	}, nil
}

// PagedDecode runs one decode step (QueryLen 1 for every sequence) of
// paged attention from the caches into out [T, H·D]. partition > 0 runs the
// split-KV variant with partition positions per block and merges the
// partial results with paged_attention_merge.
func (d *Device) PagedDecode(q, kCache, vCache, out *DeviceTensor, s *DeviceSeqs, partition int) error {
	if err := d.ok(); err != nil {
		return err
	}
	a, err := attention(q, kCache, vCache, out, s)
	if err != nil {
		return err
	}
	var scratch [3]*Buffer
	defer func() {
		for _, b := range scratch {
			b.Free()
		}
	}()
	var sc DecodeScratch
	if partition > 0 {
		n := int64(DecodeSplits(s.Seqs, partition))
		B, H := int64(s.Seqs.NumSeqs()), int64(q.layout.Shape()[1])
		D := int64(q.layout.Shape()[2])
		for i, size := range []int64{B * H * n * D * 4, B * H * n * 4, B * H * n * 4} {
			if scratch[i], err = d.Alloc(size); err != nil {
				return err
			}
		}
		sc = DecodeScratch{TmpOut: uint64(scratch[0].ptr), MaxLogits: uint64(scratch[1].ptr), ExpSums: uint64(scratch[2].ptr)}
	}
	p, err := planDecode(a, partition, sc)
	if err != nil {
		return err
	}
	args, err := newAttnArgs(a, &p.d)
	if err != nil {
		return err
	}
	maxCtx := 0
	for _, c := range s.Seqs.ContextLen {
		maxCtx = max(maxCtx, c)
	}
	args.partition, args.numSplits = int32(p.partition), int32(p.splits)
	args.smemPositions = int32(maxCtx)
	if p.partition > 0 {
		args.smemPositions = int32(p.partition)
	}
	if d.record {
		if err := d.note(p.model(Aggregate)); err != nil {
			return err
		}
	}
	smem := int64(p.d.D+int64(args.smemPositions)+32) * 4
	ptrs := [4]uintptr{q.buf.ptr, kCache.buf.ptr, vCache.buf.ptr, out.buf.ptr}
	var sp [3]uintptr
	if partition > 0 {
		sp = [3]uintptr{scratch[0].ptr, scratch[1].ptr, scratch[2].ptr}
	}
	dl, err := dimsOf(p.launch(), smem)
	if err != nil {
		return err
	}
	if err := d.timed(func() error { return launchPagedDecode(p.d.dt, ptrs, s, sp, args, dl) }); err != nil {
		return err
	}
	if partition == 0 {
		return nil
	}
	if d.record {
		if err := d.note(ModelDecodeMerge(a, partition, sc, Aggregate)); err != nil {
			return err
		}
	}
	ml, err := dimsOf(Launch{Kernel: KernelDecodeMerge, Grid: [3]int64{p.d.H, int64(s.Seqs.NumSeqs()), 1}, Block: [3]int{decodeThreads, 1, 1}}, (p.splits+1)*4)
	if err != nil {
		return err
	}
	if err := d.timed(func() error { return launchDecodeMerge(p.d.dt, out.buf.ptr, s, sp, args, ml) }); err != nil {
		return err
	}
	// the scratch is freed by the deferred Free: wait for the kernels
	return d.rt.sync()
}

// PrefillSharedBytes is the dynamic shared memory flash_attention_prefill
// needs for head_dim D: the Q tile, the padded K tile, the V tile (fp32)
// and 32 row offsets.
func PrefillSharedBytes(D int) int64 {
	return int64(PrefillBlockQ*D+PrefillBlockKV*(D+1)+PrefillBlockKV*D)*4 + PrefillBlockKV*8
}

// FusedPrefill runs flash_attention_prefill: causal attention of the new
// tokens over the cached positions, straight into out [T, H·D].
func (d *Device) FusedPrefill(q, kCache, vCache, out *DeviceTensor, s *DeviceSeqs) error {
	if err := d.ok(); err != nil {
		return err
	}
	a, err := attention(q, kCache, vCache, out, s)
	if err != nil {
		return err
	}
	p, err := planPrefill(a)
	if err != nil {
		return err
	}
	smem := PrefillSharedBytes(int(p.d.D))
	if smem > d.Info.MaxSharedOptin {
		return fmt.Errorf("cuda: %s needs %d bytes of shared memory for head_dim %d; %s allows %d",
			KernelFusedPrefill, smem, p.d.D, d.Info.Name, d.Info.MaxSharedOptin)
	}
	args, err := newAttnArgs(a, &p.d)
	if err != nil {
		return err
	}
	args.qvec, args.kvvec = int32(p.qv), int32(p.kv)
	if d.record {
		if err := d.note(p.model(Aggregate)); err != nil {
			return err
		}
	}
	ptrs := [4]uintptr{q.buf.ptr, kCache.buf.ptr, vCache.buf.ptr, out.buf.ptr}
	l, err := dimsOf(p.launch(), smem)
	if err != nil {
		return err
	}
	return d.timed(func() error { return launchFlashPrefill(p.d.dt, ptrs, s, args, l) })
}

// naiveArgs mirrors StrideNaiveArgs.
type naiveArgs struct {
	heads, tq, l, d               int32
	qOffset, qStride, qHeadStride int64
	kOffset, kStride, kHeadStride int64
	sOffset, oOffset              int64
	scale                         float32
}

func (d *Device) runNaive(p *naivePlan, ptrs [3]uintptr, a *naiveArgs) error {
	for _, v := range []int64{p.H, p.Tq, p.L, p.D} {
		if v > math.MaxInt32 {
			return fmt.Errorf("cuda: %s: size %d does not fit int32", p.kernel, v)
		}
	}
	a.heads, a.tq, a.l, a.d = int32(p.H), int32(p.Tq), int32(p.L), int32(p.D)
	if d.record {
		if err := d.note(p.model(Aggregate)); err != nil {
			return err
		}
	}
	l, err := dimsOf(p.launch(), 0)
	if err != nil {
		return err
	}
	return d.timed(func() error { return launchNaive(p.kernel, p.o.dtype(), ptrs, a, l) })
}

// NaiveScores writes scores [H, Tq, L] = q [Tq, H, D] · k [L, H, D]ᵀ / √D,
// causally masked with −inf.
func (d *Device) NaiveScores(scores, q, k *DeviceTensor) error {
	if err := d.ok(); err != nil {
		return err
	}
	p, err := planNaiveScores(scores.Operand(), q.Operand(), k.Operand())
	if err != nil {
		return err
	}
	qs, ks := q.layout.Strides(), k.layout.Strides()
	a := &naiveArgs{qOffset: int64(q.layout.Offset()), qStride: int64(qs[0]), qHeadStride: int64(qs[1]),
		kOffset: int64(k.layout.Offset()), kStride: int64(ks[0]), kHeadStride: int64(ks[1]),
		sOffset: int64(scores.layout.Offset()), scale: float32(1 / math.Sqrt(float64(p.D)))}
	return d.runNaive(p, [3]uintptr{q.buf.ptr, k.buf.ptr, scores.buf.ptr}, a)
}

// NaiveSoftmax normalizes every row of scores [H, Tq, L] in place.
func (d *Device) NaiveSoftmax(scores *DeviceTensor) error {
	if err := d.ok(); err != nil {
		return err
	}
	p, err := planNaiveSoftmax(scores.Operand())
	if err != nil {
		return err
	}
	a := &naiveArgs{sOffset: int64(scores.layout.Offset())}
	return d.runNaive(p, [3]uintptr{scores.buf.ptr, 0, scores.buf.ptr}, a)
}

// NaiveAV writes out [H, Tq, D] = probs [H, Tq, L] · v [L, H, D].
func (d *Device) NaiveAV(out, probs, v *DeviceTensor) error {
	if err := d.ok(); err != nil {
		return err
	}
	p, err := planNaiveAV(out.Operand(), probs.Operand(), v.Operand())
	if err != nil {
		return err
	}
	vs := v.layout.Strides()
	a := &naiveArgs{kOffset: int64(v.layout.Offset()), kStride: int64(vs[0]), kHeadStride: int64(vs[1]),
		sOffset: int64(probs.layout.Offset()), oOffset: int64(out.layout.Offset())}
	return d.runNaive(p, [3]uintptr{probs.buf.ptr, v.buf.ptr, out.buf.ptr}, a)
}
