package kernels

import (
	"fmt"
	"sync/atomic"
)

// Impl names a kernel implementation. All implementations compute the same
// sums; they differ only in summation order (vector lanes are folded at the
// end) and, for Q8_0, in where the scales are applied, so their results
// agree to rounding, not bit for bit.
// Within one Impl the result for each output is bit-identical whatever the
// thread count, row partition or batch size T.
type Impl uint8

const (
	// ImplGeneric is portable Go: four scalar partial sums per dot product.
	ImplGeneric Impl = iota
	// ImplAVX2 is amd64 assembly with 8-lane AVX2 + FMA (+ F16C for F16).
	ImplAVX2
	// ImplAVX512 is amd64 assembly with 16-lane AVX-512 (F, BW, VL).
	ImplAVX512
)

// String returns "generic", "avx2" or "avx512".
func (i Impl) String() string {
	switch i {
	case ImplGeneric:
		return "generic"
	case ImplAVX2:
		return "avx2"
	case ImplAVX512:
		return "avx512"
	}
	return fmt.Sprintf("Impl(%d)", uint8(i))
}

// geometry is the register blocking of one SIMD implementation: W float32
// lanes per vector; the matvec kernel computes mvRows rows of one token;
// the batched kernel computes mmRows rows × mmTok tokens, reading each
// weight vector once for mmTok tokens.
type geometry struct {
	W, mvRows, mmRows, mmTok int
}

// available[i] reports whether Impl i runs on this CPU; set once by detect.
var available = detect()

// current holds the Impl used by MatMul, Dot, Axpy, Scale and
// the bandwidth probe. It starts at Best().
var current atomic.Uint32

func init() { current.Store(uint32(Best())) }

// Available lists the implementations this CPU can run, generic first.
func Available() []Impl {
	var out []Impl
	for i, ok := range available {
		if ok {
			out = append(out, Impl(i))
		}
	}
	return out
}

// Best is the fastest implementation this CPU supports.
func Best() Impl {
	for i := len(available) - 1; i > 0; i-- {
		if available[i] {
			return Impl(i)
		}
	}
	return ImplGeneric
}

// CurrentImpl is the implementation the kernels use now.
func CurrentImpl() Impl { return Impl(current.Load()) }

// SetImpl selects the implementation for all later kernel calls (it is a
// process-wide switch, meant for tests and benchmarks). It returns an error,
// and changes nothing, if the CPU lacks the instructions.
func SetImpl(i Impl) error {
	if int(i) >= len(available) || !available[i] {
		return fmt.Errorf("kernels: implementation %v is not available on this CPU (available: %v)", i, Available())
	}
	current.Store(uint32(i))
	return nil
}

// SetSIMD turns the assembly kernels on (Best()) or off (ImplGeneric).
func SetSIMD(on bool) {
	if on {
		current.Store(uint32(Best()))
	} else {
		current.Store(uint32(ImplGeneric))
	}
}

// SIMDEnabled reports whether the current implementation is an assembly one.
func SIMDEnabled() bool { return CurrentImpl() != ImplGeneric }

// implFor is the implementation that will run matrix m under impl. Q8_0
// runs AVX-512 VNNI integer kernels when the CPU has them and the group
// size suits them (vnniGroupOK); otherwise the float32 assembly needs whole
// vectors per group (GroupSize % W == 0), so AVX-512 falls back to AVX2
// for 8-aligned groups and to generic otherwise (see routeQ8).
func implFor(impl Impl, m *Matrix) Impl {
	if impl == ImplGeneric || m.Format != Q8_0 {
		return impl
	}
	if useVNNIFor(impl, m) {
		return impl
	}
	for ; impl > ImplGeneric; impl-- {
		if available[impl] && m.GroupSize%vecWidth(impl) == 0 {
			return impl
		}
	}
	return ImplGeneric
}

// vecWidth is the number of float32 lanes per vector of a SIMD Impl.
func vecWidth(impl Impl) int { return simdGeometry[impl][F32].W }
