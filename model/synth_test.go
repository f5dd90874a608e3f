package model

import (
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/testfixture"
)

// stories15MShape is the shape of Karpathy's stories15M model.
func stories15MShape() Config {
	return Config{Dim: 288, HiddenDim: 768, NLayers: 6, NHeads: 6, NKVHeads: 6, VocabSize: 32000, SeqLen: 256,
		RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: true}
}

func TestSynthesizeDeterministic(t *testing.T) {
	c := tinyConfig(false)
	a, b := mustSynth(t, c, 42), mustSynth(t, c, 42)
	sameModel(t, a, b)
	other := mustSynth(t, c, 43)
	x, y := testfixture.Float32Bits(t, a.Weights.Layers[0].WQKV), testfixture.Float32Bits(t, other.Weights.Layers[0].WQKV)
	same := 0
	for i := range x {
		if x[i] == y[i] {
			same++
		}
	}
	if same > len(x)/100 {
		t.Fatalf("seeds 42 and 43 share %d of %d WQKV values", same, len(x))
	}
}

// bigMix is SplitMix64's mixer computed with math/big modulo 2^64: an
// independent check of the integer hashing the weights come from.
func bigMix(x uint64) uint64 {
	mod := new(big.Int).Lsh(big.NewInt(1), 64)
	z := new(big.Int).SetUint64(x)
	z.Add(z, new(big.Int).SetUint64(0x9e3779b97f4a7c15)).Mod(z, mod)
	step := func(shift uint, mul uint64) {
		s := new(big.Int).Rsh(z, shift)
		z.Xor(z, s)
		z.Mul(z, new(big.Int).SetUint64(mul)).Mod(z, mod)
	}
	step(30, 0xbf58476d1ce4e5b9)
	step(27, 0x94d049bb133111eb)
	z.Xor(z, new(big.Int).Rsh(z, 31))
	return z.Uint64()
}

// TestSynthesizeValues recomputes individual weights from the documented
// recipe (stream keys, SplitMix64 in big integers, the Irwin–Hall sum and
// its exact variance) and compares bits.
func TestSynthesizeValues(t *testing.T) {
	c := tinyConfig(true)
	const seed = 99
	m := mustSynth(t, c, seed)
	key := func(stream uint64) uint64 { return bigMix(seed ^ bigMix(stream)) }
	mat := func(stream uint64, i int, fanIn int) float32 {
		h := bigMix(key(stream) + uint64(i)*0x9e3779b97f4a7c15)
		var s int64
		for k := 0; k < 4; k++ {
			s += int64(h >> (16 * k) & 0xffff)
		}
		// Var of one uniform on {0..65535} is (65536²−1)/12.
		sigma := math.Sqrt(4 * (65536.0*65536.0 - 1) / 12)
		return float32(float64(s-131070) * (1 / math.Sqrt(float64(fanIn)) / sigma))
	}
	norm := func(stream uint64, i int) float32 {
		h := bigMix(key(stream) + uint64(i)*0x9e3779b97f4a7c15)
		u := float64(h>>11) / (1 << 53)
		return float32(1 + float64(0.1*u) - 0.05)
	}
	check := func(name string, x *tensor.Tensor, i int, want float32) {
		t.Helper()
		v, _ := x.Float32s()
		if math.Float32bits(v[i]) != math.Float32bits(want) {
			t.Fatalf("%s[%d] = %v, recipe gives %v", name, i, v[i], want)
		}
	}
	// Streams: 1 embedding; per layer 7 (attn norm, WQKV, WO, ffn norm, W1, W2, W3); then the final norm.
	for _, i := range []int{0, 1, 4799} {
		check("embedding", m.Weights.TokenEmbedding, i, mat(1, i, c.Dim))
	}
	check("layer0 attn norm", m.Weights.Layers[0].AttnNorm, 3, norm(2, 3))
	check("layer0 WQKV", m.Weights.Layers[0].WQKV, 100, mat(3, 100, c.Dim))
	check("layer1 W2", m.Weights.Layers[1].W2, 17, mat(2+7+5, 17, c.HiddenDim))
	check("final norm", m.Weights.FinalNorm, 15, norm(2+2*7, 15))
}

func TestSynthesizeStatistics(t *testing.T) {
	c := stories15MShape()
	if testing.Short() {
		c.VocabSize = 512
	}
	m := mustSynth(t, c, 1)
	if m.Weights.Classifier != m.Weights.TokenEmbedding {
		t.Fatal("shared classifier should alias the embedding")
	}
	n := int64(m.Weights.TokenEmbedding.Numel() + m.Weights.FinalNorm.Numel())
	for _, l := range m.Weights.Layers {
		for _, x := range []*tensor.Tensor{l.AttnNorm, l.WQKV, l.WO, l.FFNNorm, l.W1, l.W2, l.W3} {
			n += int64(x.Numel())
		}
	}
	if n != c.Params() {
		t.Fatalf("model holds %d parameters, config says %d", n, c.Params())
	}
	for name, x := range map[string]*tensor.Tensor{"W2 (fan-in 768)": m.Weights.Layers[3].W2,
		"WQKV (fan-in 288)": m.Weights.Layers[0].WQKV, "embedding": m.Weights.TokenEmbedding} {
		v, _ := x.Float32s()
		var s, s2, s4 float64
		for _, f := range v {
			s += float64(f)
			s2 += float64(f) * float64(f)
		}
		mean := s / float64(len(v))
		std := math.Sqrt(s2/float64(len(v)) - mean*mean)
		for _, f := range v {
			z := (float64(f) - mean) / std
			s4 += z * z * z * z
		}
		want := 1 / math.Sqrt(float64(x.Shape()[1]))
		kurt := s4 / float64(len(v))
		// Irwin–Hall(4) has kurtosis 3 − 6/(5·4) = 2.7: near-normal, bounded.
		if math.Abs(std/want-1) > 0.02 || math.Abs(mean) > 0.02*want || math.Abs(kurt-2.7) > 0.05 {
			t.Fatalf("%s: mean %g std %g (want %g) kurtosis %g (want 2.7)", name, mean, std, want, kurt)
		}
	}
	g, _ := m.Weights.Layers[2].FFNNorm.Float32s()
	lo, hi := float32(2), float32(0)
	for _, v := range g {
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo < 0.95 || hi > 1.05 || hi-lo < 0.05 {
		t.Fatalf("norm gains span [%g, %g], want a spread inside [0.95, 1.05]", lo, hi)
	}
}

func TestSynthesizeDTypes(t *testing.T) {
	c := tinyConfig(false)
	ref := mustSynth(t, c, 5)
	for _, dt := range []tensor.DType{tensor.F16, tensor.BF16} {
		c.WeightDType = dt
		m := mustSynth(t, c, 5)
		if m.Weights.Classifier.DType() != dt || m.Weights.FinalNorm.DType() != tensor.F32 {
			t.Fatalf("%v: classifier %v, final norm %v", dt, m.Weights.Classifier.DType(), m.Weights.FinalNorm.DType())
		}
		want, _ := ref.Weights.Classifier.Float32s()
		got := m.Weights.Classifier.Storage().Uint16s()
		for i, v := range want {
			b := tensor.F16Bits(v)
			if dt == tensor.BF16 {
				b = tensor.BF16Bits(v)
			}
			if got[i] != b {
				t.Fatalf("%v: classifier element %d is %#x, want the float32 value rounded: %#x", dt, i, got[i], b)
			}
		}
	}
}

func TestSynthesizeRejects(t *testing.T) {
	bad := tinyConfig(true)
	bad.NKVHeads = 3
	if _, err := Synthesize(bad, 1); err == nil || !strings.Contains(err.Error(), "n_kv_heads") {
		t.Fatalf("got %v", err)
	}
	huge := tinyConfig(true)
	huge.Dim, huge.HiddenDim, huge.VocabSize = 1<<20, 1<<20, 1<<20
	led := tensor.NewLedger()
	if _, err := SynthesizeIn(led, huge, 1); err == nil || !strings.Contains(err.Error(), "beyond the") {
		t.Fatalf("got %v", err)
	}
	if led.Stats().BytesAllocated != 0 {
		t.Fatal("allocated before rejecting")
	}
}

func TestSynthesizeIn(t *testing.T) {
	led := tensor.NewLedger()
	c := tinyConfig(false)
	if _, err := SynthesizeIn(led, c, 1); err != nil {
		t.Fatal(err)
	}
	if got := led.Stats().BytesAllocated; got != c.Params()*4 {
		t.Fatalf("allocated %d, want %d", got, c.Params()*4)
	}
}
