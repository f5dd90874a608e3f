package cuda

import (
	"math"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// The seed notes (§5.2) count one warp load: contiguous fp32 threads read
// addr, addr+4, …, addr+124: one 128-byte transaction, 100% of the bus
// used; with stride 1024 fp32 (4 KiB apart) the warp needs 32 separate
// 32-byte sectors, 1024 bytes for 128 useful: 12.5%.
func TestSeedWarpLoads(t *testing.T) {
	const base = 1 << 30 // 256-byte aligned, like cudaMalloc
	cases := []struct {
		name                  string
		w                     Warp
		sectors, lines, bytes int64
		efficiency            float64
	}{
		{"fp32 contiguous", Strided(base, 32, 4, 4), 4, 1, 128, 1},
		{"fp32 stride 1024", Strided(base, 32, 1024*4, 4), 32, 32, 128, 0.125},
		{"fp16 contiguous", Strided(base, 32, 2, 2), 2, 1, 64, 1},
		{"bf16 contiguous", Strided(base, 32, 2, 2), 2, 1, 64, 1},
		{"fp16 stride 1024", Strided(base, 32, 1024*2, 2), 32, 32, 64, 64.0 / 1024},
		// a view starting one element in (storage offset 1): the 128
		// bytes straddle 5 sectors and 2 lines.
		{"fp32 contiguous, offset 1", Strided(base+4, 32, 4, 4), 5, 2, 128, 128.0 / 160},
		{"fp16 contiguous, offset 1", Strided(base+2, 32, 2, 2), 3, 1, 64, 64.0 / 96},
		// a[::4] (seed experiment 5): 16-byte spacing, 2 useful floats per sector.
		{"fp32 a[::4]", Strided(base, 32, 16, 4), 16, 4, 128, 0.25},
		{"fp32 16-byte vectors", Strided(base, 32, 16, 16), 16, 4, 512, 1},
		{"broadcast (all lanes one word)", Strided(base, 32, 0, 4), 1, 1, 4, 4.0 / 32},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			s, l, b := c.w.Count()
			if s != c.sectors || l != c.lines || b != c.bytes {
				t.Fatalf("sectors/lines/bytes = %d/%d/%d, want %d/%d/%d", s, l, b, c.sectors, c.lines, c.bytes)
			}
			cnt := NewCounter(false)
			cnt.Load(&c.w, 1)
			if got := cnt.Loads.Efficiency(); math.Abs(got-c.efficiency) > 1e-12 {
				t.Fatalf("efficiency %v, want %v", got, c.efficiency)
			}
			if cnt.Loads.Requests != 1 {
				t.Fatalf("requests %d, want 1", cnt.Loads.Requests)
			}
		})
	}
}

// Count must not depend on lane order: a permuted warp costs the same.
func TestWarpCountPermutation(t *testing.T) {
	w := Strided(1<<30+4, 32, 12, 4)
	s0, l0, b0 := w.Count()
	p := w
	for i := 0; i < 32; i++ {
		p.Addr[i] = w.Addr[(i*7+3)%32]
	}
	s1, l1, b1 := p.Count()
	if s0 != s1 || l0 != l1 || b0 != b1 {
		t.Fatalf("permuted warp: %d/%d/%d vs %d/%d/%d", s1, l1, b1, s0, l0, b0)
	}
	// brute force: distinct sectors of the lanes
	seen := map[uint64]bool{}
	for i := 0; i < 32; i++ {
		seen[w.Addr[i]/32] = true
	}
	if int64(len(seen)) != s0 {
		t.Fatalf("sectors %d, brute force %d", s0, len(seen))
	}
	var empty Warp
	if s, _, _ := empty.Count(); s != 0 {
		t.Fatal("a warp with no active lane must cost nothing")
	}
}

// Seed experiment 5 at full size: a = randn(64M) fp32, strided_a = a[::4],
// then a kernel reads strided_a. Every load instruction touches 16 sectors
// for 128 useful bytes (25%), and the distinct sectors read are ALL of a:
// reading a quarter of the elements still streams the whole 256 MB.
func TestSeedExperiment5(t *testing.T) {
	as := NewAddressSpace()
	a := tensor.Must(tensor.Meta(tensor.F32, 64*1024*1024))
	strided := tensor.Must(a.Slice(0, 0, a.Numel(), 4))
	out := tensor.Must(tensor.Meta(tensor.F32, strided.Numel()))
	l, err := SimulateStridedCopy(as.Operand(out), as.Operand(strided), Aggregate)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(strided.Numel())
	if l.Loads.Requests != n/32 || l.Loads.Sectors != 16*n/32 {
		t.Fatalf("loads %v, want %d requests of 16 sectors", l.Loads, n/32)
	}
	if l.Loads.Efficiency() != 0.25 {
		t.Fatalf("load efficiency %v, want 0.25", l.Loads.Efficiency())
	}
	if l.Loads.HBMBytes() != int64(a.Nbytes()) {
		t.Fatalf("distinct bytes read %d, want all of a = %d", l.Loads.HBMBytes(), a.Nbytes())
	}
	if l.Stores.Sectors != n/32*4 || l.Stores.Efficiency() != 1 || l.Stores.HBMBytes() != 4*n {
		t.Fatalf("stores %v, want 4 sectors per request, 100%%", l.Stores)
	}
	if l.Vectorized {
		t.Fatal("a stride-4 source must not take the 16-byte path")
	}
	// the contiguous copy of a: fully coalesced, 16-byte vectors.
	full := tensor.Must(tensor.Meta(tensor.F32, a.Numel()))
	lc, err := SimulateStridedCopy(as.Operand(full), as.Operand(a), Aggregate)
	if err != nil {
		t.Fatal(err)
	}
	if !lc.Vectorized || lc.Loads.Efficiency() != 1 || lc.Loads.SectorsPerRequest() != 16 {
		t.Fatalf("contiguous copy: %v", lc)
	}
}
