package tensor

import (
	"strings"
	"sync"
	"testing"
)

// Accounting: what each op allocates and copies, as recorded by Ledger.

func TestViewsCopyZeroBytes(t *testing.T) {
	led := NewLedger()
	x := coreArange(t, led, 4, 6, 8)
	start := led.Stats()
	if start.Allocations != 1 || start.BytesAllocated != 4*6*8*4 || start.BytesCopied != 0 {
		t.Fatalf("arange accounting %v", start)
	}
	views := map[string]func() (*Tensor, error){
		"view":       func() (*Tensor, error) { return x.View(24, 8) },
		"reshape":    func() (*Tensor, error) { return x.Reshape(-1) },
		"flatten":    func() (*Tensor, error) { return x.Flatten() },
		"transpose":  func() (*Tensor, error) { return x.Transpose(0, 2) },
		"permute":    func() (*Tensor, error) { return x.Permute(2, 0, 1) },
		"slice":      func() (*Tensor, error) { return x.Slice(2, 1, 7, 3) },
		"narrow":     func() (*Tensor, error) { return x.Narrow(1, 2, 3) },
		"select":     func() (*Tensor, error) { return x.Select(0, 3) },
		"expand":     func() (*Tensor, error) { return coreMust(t)(x.Unsqueeze(0)).Expand(1000, 4, 6, 8) },
		"expand_as":  func() (*Tensor, error) { return coreMust(t)(x.Slice(0, 0, 1, 1)).ExpandAs(x) },
		"squeeze":    func() (*Tensor, error) { return coreMust(t)(x.Unsqueeze(1)).Squeeze(1) },
		"unsqueeze":  func() (*Tensor, error) { return x.Unsqueeze(-1) },
		"unfold":     func() (*Tensor, error) { return x.Unfold(2, 4, 1) },
		"as_strided": func() (*Tensor, error) { return x.AsStrided([]int{8, 8}, []int{1, 8}, 3) },
		"contiguous": func() (*Tensor, error) { return x.Contiguous() },
		"to same":    func() (*Tensor, error) { return x.To(F32) },
		"t of 2-D":   func() (*Tensor, error) { return coreMust(t)(x.Select(0, 0)).T() },
	}
	for name, op := range views {
		before := led.Stats()
		y, err := op()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := led.Stats().Sub(before); d.Allocations != 0 || d.BytesAllocated != 0 || d.BytesCopied != 0 || d.CopyOps != 0 {
			t.Errorf("%s allocated or copied: %v", name, d)
		}
		if !SharesStorage(x, y) {
			t.Errorf("%s does not share storage", name)
		}
	}
}

func TestContiguousOfTransposeCopiesOnce(t *testing.T) {
	led := NewLedger()
	x := coreMust(t)(Randn(led, F32, 3, 64, 128))
	xt := coreMust(t)(x.T())
	before := led.Stats()
	c := coreMust(t)(xt.Contiguous())
	d := led.Stats().Sub(before)
	if d.BytesCopied != 32768 || d.CopyOps != 1 || d.Allocations != 1 || d.BytesAllocated != 32768 {
		t.Errorf("contiguous of a transposed (64,128) F32: %v, want one 32768-byte copy", d)
	}
	coreLayout(t, "contiguous", c, []int{128, 64}, []int{64, 1}, 0, true)
	for _, ij := range [][2]int{{0, 0}, {127, 63}, {5, 17}, {100, 1}} {
		a, _ := c.At(ij[0], ij[1])
		b, _ := x.At(ij[1], ij[0])
		if a != b {
			t.Errorf("c[%d,%d] = %v, want x[%d,%d] = %v", ij[0], ij[1], a, ij[1], ij[0], b)
		}
	}
	// Contiguous of the result is the result itself: same pointer, nothing counted.
	before = led.Stats()
	if again := coreMust(t)(c.Contiguous()); again != c {
		t.Error("Contiguous of a contiguous tensor returned a different *Tensor")
	}
	if d := led.Stats().Sub(before); d != (Stats{LiveBytes: d.LiveBytes, PeakLiveBytes: d.PeakLiveBytes}) {
		t.Errorf("Contiguous of a contiguous tensor counted %v", d)
	}
	// A contiguous slice (whole rows) is contiguous too: no copy.
	rows := coreMust(t)(x.Narrow(0, 10, 5))
	if r := coreMust(t)(rows.Contiguous()); r != rows {
		t.Error("Contiguous of a row slice copied")
	}
}

func TestCloneAndToAccounting(t *testing.T) {
	led := NewLedger()
	x := coreMust(t)(Randn(led, F32, 4, 64, 128))
	before := led.Stats()
	c := coreMust(t)(x.Clone())
	if d := led.Stats().Sub(before); d.BytesCopied != 32768 || d.CopyOps != 1 || d.Allocations != 1 {
		t.Errorf("clone of contiguous (64,128): %v", d)
	}
	if SharesStorage(c, x) {
		t.Error("clone shares storage")
	}
	before = led.Stats()
	b := coreMust(t)(coreMust(t)(x.T()).To(BF16))
	if d := led.Stats().Sub(before); d.BytesCopied != 16384 || d.BytesAllocated != 16384 || d.CopyOps != 1 {
		t.Errorf("to(bf16) of (128,64): %v, want 16384 bytes", d)
	}
	coreLayout(t, "to(bf16)", b, []int{128, 64}, []int{64, 1}, 0, true)
	if b.DType() != BF16 || b.Storage().Uint16s() == nil || b.Storage().Float32s() != nil {
		t.Errorf("to(bf16) storage: %v", b)
	}
	// Meta: a contiguous copy of a meta tensor is another meta tensor, and costs nothing.
	m := coreMust(t)(coreMust(t)(Meta(F32, 2, 32, 4096, 128)).Transpose(1, 2))
	before = led.Stats()
	mc := coreMust(t)(m.Contiguous())
	mt := coreMust(t)(m.To(F16))
	coreLayout(t, "meta contiguous", mc, []int{2, 4096, 32, 128}, []int{16777216, 4096, 128, 1}, 0, true)
	if !mc.IsMeta() || !mt.IsMeta() || mt.DType() != F16 || SharesStorage(mc, m) {
		t.Errorf("meta copies: %v %v", mc, mt)
	}
	if d := led.Stats().Sub(before); d.Allocations != 0 || d.BytesCopied != 0 {
		t.Errorf("meta copies counted %v", d)
	}
}

func TestPeakLiveBytesWithRelease(t *testing.T) {
	led := NewLedger()
	a := coreMust(t)(Zeros(led, F32, 100)) // 400 B
	b := coreMust(t)(Zeros(led, F16, 100)) // 200 B
	s := led.Stats()
	if s.LiveBytes != 600 || s.PeakLiveBytes != 600 {
		t.Fatalf("after a,b: %v", s)
	}
	a.Release()
	a.Release() // idempotent
	coreMust(t)(a.View(10, 10)).Release()
	s = led.Stats()
	if s.LiveBytes != 200 || s.PeakLiveBytes != 600 {
		t.Fatalf("after releasing a (three times): %v", s)
	}
	c := coreMust(t)(Zeros(led, F32, 50)) // 200 B: live 400, peak stays 600
	if s = led.Stats(); s.LiveBytes != 400 || s.PeakLiveBytes != 600 {
		t.Fatalf("after c: %v", s)
	}
	led.ResetPeak()
	if s = led.Stats(); s.PeakLiveBytes != 400 {
		t.Fatalf("after ResetPeak: %v", s)
	}
	d := coreMust(t)(c.Repeat(3)) // 600 B: live 1000
	if s = led.Stats(); s.LiveBytes != 1000 || s.PeakLiveBytes != 1000 || s.Allocations != 4 || s.BytesAllocated != 1400 {
		t.Fatalf("after repeat: %v", s)
	}
	b.Release()
	c.Release()
	d.Release()
	if s = led.Stats(); s.LiveBytes != 0 || s.PeakLiveBytes != 1000 {
		t.Fatalf("after releasing everything: %v", s)
	}
	// Wrapped buffers were never counted, so releasing them changes nothing.
	w := coreMust(t)(WrapFloat32(led, make([]float32, 8), 8))
	w.Release()
	if s2 := led.Stats(); s2 != s {
		t.Fatalf("wrap/release changed stats: %v -> %v", s, s2)
	}
	// The element data stays readable after Release: it is accounting only.
	if v, err := a.At(5); err != nil || v != 0 {
		t.Errorf("a[5] after release = %v, %v", v, err)
	}
	if !strings.Contains(s.String(), "peak=1000B") || !strings.Contains(s.String(), "live=0B") {
		t.Errorf("Stats.String() = %q", s.String())
	}
}

func TestNilContextCountsNothing(t *testing.T) {
	var led *Ledger
	x := coreMust(t)(Randn(led, F32, 1, 8, 8))
	_ = coreMust(t)(coreMust(t)(x.T()).Contiguous())
	led.RecordAlloc(10)
	led.RecordCopy(10)
	led.RecordFree(10)
	led.ResetPeak()
	x.Release()
	if s := led.Stats(); s != (Stats{}) {
		t.Errorf("nil context stats %v", s)
	}
	if x.Ledger() != nil {
		t.Error("tensor of a nil context reports a context")
	}
	// Negative byte counts are ignored rather than corrupting the totals.
	c := NewLedger()
	c.RecordAlloc(-5)
	c.RecordCopy(-5)
	c.RecordFree(-5)
	if s := c.Stats(); s != (Stats{}) {
		t.Errorf("negative records counted: %v", s)
	}
}

// TestContextConcurrent hammers one Ledger from many goroutines (run
// under -race): totals must be exact and the peak must be at least the
// largest level any goroutine saw and at most the sum of all allocations.
func TestContextConcurrent(t *testing.T) {
	led := NewLedger()
	const workers, iters = 8, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range iters {
				led.RecordAlloc(int64(w + 1))
				led.RecordCopy(int64(i % 7))
				led.RecordFree(int64(w + 1))
			}
		}()
	}
	// Real tensors too: clones of a shared input in the same Ledger.
	src := coreMust(t)(Randn(led, F32, 9, 16, 16))
	srcT := coreMust(t)(src.T())
	clones := make([]*Tensor, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := srcT.Contiguous()
			if err != nil {
				t.Error(err)
				return
			}
			clones[w] = c
		}()
	}
	wg.Wait()
	s := led.Stats()
	perWorkerCopy := int64(0)
	for i := range iters {
		perWorkerCopy += int64(i % 7)
	}
	if s.CopyOps != workers*iters+workers || s.BytesCopied != workers*perWorkerCopy+workers*1024 {
		t.Errorf("copy totals %v", s)
	}
	if s.Allocations != workers*iters+1+workers {
		t.Errorf("allocations %d", s.Allocations)
	}
	if s.LiveBytes != 1024*(1+workers) {
		t.Errorf("live bytes %d, want %d", s.LiveBytes, 1024*(1+workers))
	}
	if s.PeakLiveBytes < s.LiveBytes || s.PeakLiveBytes > s.BytesAllocated {
		t.Errorf("peak %d outside [%d, %d]", s.PeakLiveBytes, s.LiveBytes, s.BytesAllocated)
	}
	want, _ := srcT.Float32s()
	for w, c := range clones {
		coreValues(t, "clone "+string(rune('0'+w)), c, want)
	}
}
