package model

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/testfixture"
)

// TestFromSourceConvert: F16 and BF16 storage load as stored (bit for
// bit) and widen exactly to F32; F32 rounds once to F16/BF16.
func TestFromSourceConvert(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.F16, tensor.BF16} {
		c := tinyConfig(false)
		c.WeightDType = dt
		m := mustSynth(t, c, 7)
		typ := map[tensor.DType]StorageType{tensor.F16: StorageF16, tensor.BF16: StorageBF16}[dt]
		same, err := FromSource(sourceOf(t, m, typ), LoadOptions{WeightDType: dt})
		if err != nil {
			t.Fatal(err)
		}
		sameModel(t, m, same)
		wide, err := FromSource(sourceOf(t, m, typ), LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if wide.Weights.Layers[1].W2.DType() != tensor.F32 {
			t.Fatal("default weight dtype should widen to F32")
		}
		if a, b := testfixture.Float32Bits(t, m.Weights.Layers[1].W2), testfixture.Float32Bits(t, wide.Weights.Layers[1].W2); fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("%v widened to F32 differs", dt)
		}
		// F32 storage rounded once to dt equals the synthesized dt model.
		f32 := mustSynth(t, tinyConfig(false), 7)
		rounded, err := FromSource(sourceOf(t, f32, StorageF32), LoadOptions{WeightDType: dt})
		if err != nil {
			t.Fatal(err)
		}
		sameModel(t, m, rounded)
	}
}

// TestFromSourceAsStored: with AsStored, F16 and BF16 matrices stay as
// the file stores them, as views of its bytes, whatever WeightDType says.
func TestFromSourceAsStored(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.F16, tensor.BF16} {
		c := tinyConfig(false)
		c.WeightDType = dt
		m := mustSynth(t, c, 9)
		typ := map[tensor.DType]StorageType{tensor.F16: StorageF16, tensor.BF16: StorageBF16}[dt]
		src := sourceOf(t, m, typ)
		led := tensor.NewLedger()
		got, err := FromSource(src, LoadOptions{AsStored: true, WeightDType: tensor.F32, Ledger: led})
		if err != nil {
			t.Fatal(err)
		}
		sameModel(t, m, got)
		w2 := got.Weights.Layers[1].W2
		if got.Config.WeightDType != dt || w2.DType() != dt ||
			unsafe.Pointer(&w2.Storage().Uint16s()[0]) != unsafePointer(src.tensors["blk.1.ffn_down.weight"].Data) {
			t.Fatalf("%v: weight dtype %v, w2 %v: want the stored %v bytes themselves", dt, got.Config.WeightDType, w2.DType(), dt)
		}
		// A source that maps nothing hands over Go memory: every weight
		// counts as allocated at its stored size (matrices 2 bytes, norms
		// 4), the fused WQKV included, the q/k/v parts it copied not.
		norms := int64(2*c.NLayers+1) * int64(c.Dim)
		if a, want := led.Stats().BytesAllocated, (c.Params()-norms)*2+norms*4; a != want {
			t.Fatalf("%v: allocated %d bytes, want %d", dt, a, want)
		}
	}
}
