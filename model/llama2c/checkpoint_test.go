package llama2c

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/testfixture"
)

// tinyConfig is a small GQA shape used to build test checkpoints.
func tinyConfig(shared bool) model.Config {
	return model.Config{Dim: 16, HiddenDim: 24, NLayers: 2, NHeads: 4, NKVHeads: 2, VocabSize: 300, SeqLen: 8,
		RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: shared}
}

func mustSynth(t testing.TB, c model.Config, seed uint64) *model.Model {
	t.Helper()
	m, err := model.Synthesize(c, seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func legacyBytes(t testing.TB, m *model.Model) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteLegacy(&buf, m); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sameModel(t testing.TB, a, b *model.Model) {
	t.Helper()
	if a.Config != b.Config {
		t.Fatalf("config %+v vs %+v", a.Config, b.Config)
	}
	testfixture.SameTensor(t, "embedding", a.Weights.TokenEmbedding, b.Weights.TokenEmbedding)
	testfixture.SameTensor(t, "classifier", a.Weights.Classifier, b.Weights.Classifier)
	testfixture.SameTensor(t, "final norm", a.Weights.FinalNorm, b.Weights.FinalNorm)
	for l := range a.Weights.Layers {
		x, y := a.Weights.Layers[l], b.Weights.Layers[l]
		testfixture.SameTensor(t, "attn norm", x.AttnNorm, y.AttnNorm)
		testfixture.SameTensor(t, "wqkv", x.WQKV, y.WQKV)
		testfixture.SameTensor(t, "wo", x.WO, y.WO)
		testfixture.SameTensor(t, "ffn norm", x.FFNNorm, y.FFNNorm)
		testfixture.SameTensor(t, "w1", x.W1, y.W1)
		testfixture.SameTensor(t, "w2", x.W2, y.W2)
		testfixture.SameTensor(t, "w3", x.W3, y.W3)
	}
}

func TestWriteLegacyRoundTrip(t *testing.T) {
	for _, shared := range []bool{true, false} {
		m := mustSynth(t, tinyConfig(shared), 7)
		data := legacyBytes(t, m)
		// Header: the sign of vocab_size carries the shared flag.
		vocab := int32(binary.LittleEndian.Uint32(data[20:]))
		if want := int32(300); (shared && vocab != want) || (!shared && vocab != -want) {
			t.Fatalf("shared=%v: header vocab_size %d", shared, vocab)
		}
		got, err := read(bytes.NewReader(data), int64(len(data)), "mem", model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sameModel(t, m, got)
		if shared != (got.Weights.Classifier == got.Weights.TokenEmbedding) {
			t.Fatalf("shared=%v but classifier aliasing is %v", shared, !shared)
		}
		if again := legacyBytes(t, got); !bytes.Equal(again, data) {
			t.Fatalf("shared=%v: export → load → export is not byte-identical", shared)
		}
	}
}

func TestWriteLegacyHalfPrecision(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.F16, tensor.BF16} {
		c := tinyConfig(false)
		c.WeightDType = dt
		m := mustSynth(t, c, 3)
		data := legacyBytes(t, m)
		// Loading as the same dtype rounds the (already representable)
		// values to themselves: bit-identical.
		got, err := read(bytes.NewReader(data), int64(len(data)), "mem", model.LoadOptions{WeightDType: dt})
		if err != nil {
			t.Fatal(err)
		}
		sameModel(t, m, got)
		// Loading as float32 widens exactly.
		f32, err := read(bytes.NewReader(data), int64(len(data)), "mem", model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a, b := testfixture.Float32Bits(t, m.Weights.Layers[1].W2), testfixture.Float32Bits(t, f32.Weights.Layers[1].W2)
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%v: widened element %d differs", dt, i)
			}
		}
	}
}

func TestWriteLegacyStridedWeights(t *testing.T) {
	// A transposed view written by WriteLegacy must come back as its
	// logical (row-major) contents.
	m := mustSynth(t, tinyConfig(true), 5)
	w := m.Weights.Layers[0].W2 // (dim, hidden)
	vals, _ := w.Float32s()
	backing := tensor.Must(tensor.FromFloat32(nil, tensor.F32, transpose(vals, 16, 24), 24, 16))
	view, err := backing.T()
	if err != nil {
		t.Fatal(err)
	}
	if view.IsContiguous() {
		t.Fatal("test needs a non-contiguous view")
	}
	m.Weights.Layers[0].W2 = view
	data := legacyBytes(t, m)
	got, err := read(bytes.NewReader(data), int64(len(data)), "mem", model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testfixture.SameTensor(t, "w2", tensor.Must(w.Clone()), got.Weights.Layers[0].W2)
}

func transpose(v []float32, rows, cols int) []float32 {
	out := make([]float32, len(v))
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			out[j*rows+i] = v[i*cols+j]
		}
	}
	return out
}

// writeRefHeader writes the start of export.py's version 1 and 2 headers:
// magic "ak42", the version, the seven config ints and the shared-classifier
// byte (version 2 continues with group_size; both pad to 256 bytes).
func writeRefHeader(b *bytes.Buffer, c model.Config, version int32) {
	le := binary.LittleEndian
	binary.Write(b, le, uint32(0x616b3432))
	binary.Write(b, le, version)
	for _, v := range []int{c.Dim, c.HiddenDim, c.NLayers, c.NHeads, c.NKVHeads, c.VocabSize, c.SeqLen} {
		binary.Write(b, le, int32(v))
	}
	if c.SharedClassifier {
		b.WriteByte(1)
	} else {
		b.WriteByte(0)
	}
}

// writeV1 is an independent writer of llama2.c's export version 1, written
// from export.py's version1_export, to test the reader.
func writeV1(t testing.TB, m *model.Model) []byte {
	t.Helper()
	c := m.Config
	var b bytes.Buffer
	le := binary.LittleEndian
	writeRefHeader(&b, c, 1)
	b.Write(make([]byte, 256-b.Len()))
	put := func(x *tensor.Tensor, from, to int) {
		v, err := x.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		binary.Write(&b, le, v[from:to])
	}
	all := func(x *tensor.Tensor) { put(x, 0, x.Numel()) }
	L := m.Weights.Layers
	q, kv := c.NHeads*c.HeadDim()*c.Dim, c.NKVHeads*c.HeadDim()*c.Dim
	for _, l := range L {
		all(l.AttnNorm)
	}
	for _, l := range L {
		all(l.FFNNorm)
	}
	all(m.Weights.FinalNorm)
	all(m.Weights.TokenEmbedding)
	for _, l := range L {
		put(l.WQKV, 0, q)
	}
	for _, l := range L {
		put(l.WQKV, q, q+kv)
	}
	for _, l := range L {
		put(l.WQKV, q+kv, q+2*kv)
	}
	for _, f := range []func(model.Layer) *tensor.Tensor{
		func(l model.Layer) *tensor.Tensor { return l.WO }, func(l model.Layer) *tensor.Tensor { return l.W1 },
		func(l model.Layer) *tensor.Tensor { return l.W2 }, func(l model.Layer) *tensor.Tensor { return l.W3 }} {
		for _, l := range L {
			all(f(l))
		}
	}
	if !c.SharedClassifier {
		all(m.Weights.Classifier)
	}
	return b.Bytes()
}

func TestReadVersion1(t *testing.T) {
	for _, shared := range []bool{true, false} {
		m := mustSynth(t, tinyConfig(shared), 11)
		data := writeV1(t, m)
		h, err := ReadHeader(bytes.NewReader(data), int64(len(data)), "v1")
		if err != nil {
			t.Fatal(err)
		}
		if h.Format != FormatV1 || h.Size != int64(len(data)) {
			t.Fatalf("header %+v", h)
		}
		got, err := read(bytes.NewReader(data), int64(len(data)), "v1", model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sameModel(t, m, got)
		// v1 → legacy → load gives the same model again.
		leg := legacyBytes(t, got)
		again, err := read(bytes.NewReader(leg), int64(len(leg)), "leg", model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sameModel(t, m, again)
	}
}

// legacyOffsets returns, computed by hand from the llama2.c legacy layout,
// the float index (from the end of the 28-byte header) of each tensor kind.
func legacyOffsets(c model.Config) map[string]int {
	d, h, L, v := c.Dim, c.HiddenDim, c.NLayers, c.VocabSize
	hs := d / c.NHeads
	kv := c.NKVHeads * hs
	o := map[string]int{}
	p := 0
	for _, e := range []struct {
		name string
		n    int
	}{{"emb", v * d}, {"rms_att", L * d}, {"wq", L * d * d}, {"wk", L * kv * d}, {"wv", L * kv * d},
		{"wo", L * d * d}, {"rms_ffn", L * d}, {"w1", L * h * d}, {"w2", L * d * h}, {"w3", L * h * d},
		{"rms_final", d}, {"rope", c.SeqLen * hs}, {"end", 0}} {
		o[e.name] = p
		p += e.n
	}
	return o
}

func TestLoadStories260K(t *testing.T) {
	path := sharedFile(t, "models/stories260K.bin")
	led := tensor.NewLedger()
	// Read into Go memory: every weight is allocated (see mmap_test.go for
	// the mapped load, which allocates only the fused WQKV).
	m, err := load(path, model.LoadOptions{Ledger: led, NoMmap: true})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config
	want := model.Config{Dim: 64, HiddenDim: 172, NLayers: 5, NHeads: 8, NKVHeads: 4, VocabSize: 512, SeqLen: 512,
		RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: true}
	if c != want {
		t.Fatalf("config %+v, want %+v", c, want)
	}
	if m.Weights.Classifier != m.Weights.TokenEmbedding {
		t.Fatal("shared classifier should be the embedding tensor itself")
	}
	if got := led.Stats().BytesAllocated; got != c.Params()*4 {
		t.Fatalf("allocated %d bytes, want params·4 = %d", got, c.Params()*4)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fl := func(i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(raw[28+4*i:])) }
	off := legacyOffsets(c)
	if 28+4*off["end"] != len(raw) {
		t.Fatalf("hand layout covers %d bytes, file is %d", 28+4*off["end"], len(raw))
	}
	hs := c.HeadDim()
	q, kv := c.NHeads*hs, c.NKVHeads*hs
	for l := 0; l < c.NLayers; l++ {
		w := m.Weights.Layers[l].WQKV
		for r := 0; r < q+2*kv; r++ {
			var src int // float index of row r's first element in the file
			switch {
			case r < q:
				src = off["wq"] + (l*q+r)*c.Dim
			case r < q+kv:
				src = off["wk"] + (l*kv+r-q)*c.Dim
			default:
				src = off["wv"] + (l*kv+r-q-kv)*c.Dim
			}
			for j := 0; j < c.Dim; j++ {
				got, _ := w.At(r, j)
				if math.Float32bits(got) != math.Float32bits(fl(src+j)) {
					t.Fatalf("layer %d WQKV[%d,%d] = %v, file has %v", l, r, j, got, fl(src+j))
				}
			}
		}
		for j := 0; j < c.Dim; j++ {
			g, _ := m.Weights.Layers[l].FFNNorm.At(j)
			if g != fl(off["rms_ffn"]+l*c.Dim+j) {
				t.Fatalf("layer %d ffn norm %d", l, j)
			}
		}
		for i := 0; i < c.Dim; i++ {
			g, _ := m.Weights.Layers[l].W2.At(i, c.HiddenDim-1)
			if g != fl(off["w2"]+(l*c.Dim+i)*c.HiddenDim+c.HiddenDim-1) {
				t.Fatalf("layer %d w2 row %d", l, i)
			}
		}
	}
	for j := 0; j < c.Dim; j++ {
		g, _ := m.Weights.FinalNorm.At(j)
		e, _ := m.Weights.TokenEmbedding.At(c.VocabSize-1, j)
		if g != fl(off["rms_final"]+j) || e != fl((c.VocabSize-1)*c.Dim+j) {
			t.Fatalf("final norm / embedding element %d", j)
		}
	}

	// Writing it back reproduces the file: the weights byte for byte, and
	// the RoPE tables (which run.c and Read ignore) to within float32
	// rounding of PyTorch's cos/sin.
	out := legacyBytes(t, m)
	if len(out) != len(raw) {
		t.Fatalf("re-export is %d bytes, file is %d", len(out), len(raw))
	}
	rope0, rope1 := 28+4*off["rope"], 28+4*off["end"]
	if !bytes.Equal(out[:rope0], raw[:rope0]) || !bytes.Equal(out[rope1:], raw[rope1:]) {
		t.Fatal("re-exported weights differ from the file")
	}
	exact, maxDiff := 0, 0.0
	for i := rope0; i < rope1; i += 4 {
		a := math.Float32frombits(binary.LittleEndian.Uint32(out[i:]))
		b := math.Float32frombits(binary.LittleEndian.Uint32(raw[i:]))
		if a == b {
			exact++
		}
		maxDiff = math.Max(maxDiff, math.Abs(float64(a-b)))
	}
	t.Logf("RoPE tables: %d of %d floats bit-identical to llama2.c's export, max |diff| %.3g", exact, (rope1-rope0)/4, maxDiff)
	if maxDiff > 1e-4 {
		t.Fatalf("RoPE tables differ from the file by up to %g", maxDiff)
	}
}

func TestLoadStories260KHalf(t *testing.T) {
	path := sharedFile(t, "models/stories260K.bin")
	f32, err := load(path, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []tensor.DType{tensor.F16, tensor.BF16} {
		led := tensor.NewLedger()
		m, err := load(path, model.LoadOptions{WeightDType: dt, Ledger: led, NoMmap: true})
		if err != nil {
			t.Fatal(err)
		}
		if m.Config.WeightDType != dt || m.Weights.Layers[0].WQKV.DType() != dt || m.Weights.Layers[0].AttnNorm.DType() != tensor.F32 {
			t.Fatalf("%v: dtypes config %v wqkv %v norm %v", dt, m.Config.WeightDType,
				m.Weights.Layers[0].WQKV.DType(), m.Weights.Layers[0].AttnNorm.DType())
		}
		// Every matrix element is the float32 value rounded once.
		src, _ := f32.Weights.Layers[2].W1.Float32s()
		st := m.Weights.Layers[2].W1.Storage()
		for i, v := range src {
			want := tensor.F16Bits(v)
			if dt == tensor.BF16 {
				want = tensor.BF16Bits(v)
			}
			if st.Uint16s()[i] != want {
				t.Fatalf("%v: element %d has bits %#x, want %#x", dt, i, st.Uint16s()[i], want)
			}
		}
		c := m.Config
		norms := int64(2*c.NLayers+1) * int64(c.Dim)
		if got, want := led.Stats().BytesAllocated, (c.Params()-norms)*2+norms*4; got != want {
			t.Fatalf("%v: allocated %d bytes, want %d", dt, got, want)
		}
	}
}

// corrupt returns a copy of data with int32 field i of the legacy header set to v.
func corrupt(data []byte, i int, v int32) []byte {
	out := append([]byte(nil), data...)
	binary.LittleEndian.PutUint32(out[4*i:], uint32(v))
	return out
}

func TestReadBadInput(t *testing.T) {
	good := legacyBytes(t, mustSynth(t, tinyConfig(true), 1))
	unshared := legacyBytes(t, mustSynth(t, tinyConfig(false), 1))
	v1 := writeV1(t, mustSynth(t, tinyConfig(true), 1))
	setV1 := func(off int, b ...byte) []byte {
		out := append([]byte(nil), v1...)
		copy(out[off:], b)
		return out
	}
	cases := []struct {
		name string
		data []byte
		size int64 // 0: len(data)
		want string
	}{
		{"empty", nil, 0, "too short for a header"},
		{"header only", good[:28], 0, "requires exactly"},
		{"truncated by one byte", good[:len(good)-1], 0, "requires exactly"},
		{"truncated half", good[:len(good)/2], 0, "requires exactly"},
		{"one extra byte", append(append([]byte(nil), good...), 0), 0, "requires exactly"},
		{"shared file with negative vocab", corrupt(good, 5, -300), 0, "fits the shared-classifier variant"},
		{"unshared file with positive vocab", corrupt(unshared, 5, 300), 0, "fits the unshared-classifier variant"},
		{"dim changed", corrupt(good, 0, 32), 0, "requires exactly"},
		{"dim not divisible by heads", corrupt(good, 0, 18), 0, "divisible by n_heads"},
		{"heads not divisible by kv heads", corrupt(good, 4, 3), 0, "divisible by n_kv_heads"},
		{"odd head dim", corrupt(corrupt(good, 0, 12), 3, 4), 0, "even"},
		{"negative layers", corrupt(good, 2, -1), 0, "n_layers must be > 0"},
		{"zero heads", corrupt(good, 3, 0), 0, "n_heads must be > 0"},
		{"negative seq_len", corrupt(good, 6, -5), 0, "seq_len must be > 0"},
		{"vocab MinInt32", corrupt(good, 5, math.MinInt32), 0, "vocab_size"},
		{"absurd dim", corrupt(good, 0, 1<<30), 0, "beyond the supported maximum"},
		{"terabyte header", corrupt(corrupt(corrupt(good, 0, 1<<20), 1, 1<<20), 5, 1<<20), 0, "TiB"},
		{"terabyte header, lying size", corrupt(corrupt(good, 0, 1<<20), 5, 1<<20), 0, "requires exactly"},
		{"size beyond the header's", good, int64(len(good)) + 4, "requires exactly"},
		{"reader shorter than its claimed size", good[:len(good)-10], int64(len(good)), "truncated: cannot read byte"},
		{"v1 bad version", setV1(4, 3, 0, 0, 0), 0, "unsupported export version 3"},
		{"v1 shared byte", setV1(36, 7), 0, "shared_classifier byte is 7"},
		{"v1 padding", setV1(200, 1), 0, "padding byte 200"},
		{"v1 truncated", v1[:len(v1)-4], 0, "requires exactly"},
		{"v1 short header", v1[:100], 0, "too short for a version-1/2 header"},
		{"v1 negative vocab", setV1(28, 0xd4, 0xfe, 0xff, 0xff), 0, "vocab_size must be > 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			size := tc.size
			if size == 0 {
				size = int64(len(tc.data))
			}
			assertRejected(t, tc.data, size, tc.want)
		})
	}
}

// shortReader claims more bytes than it has only for reads past n, after
// the header check: it fails mid-weights, exercising the truncation path.
type shortReader struct {
	data []byte
	fail int64
}

func (r shortReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > r.fail && off < int64(len(r.data))-1 {
		return 0, os.ErrDeadlineExceeded
	}
	return bytes.NewReader(r.data).ReadAt(p, off)
}

func TestReadErrorMidWeights(t *testing.T) {
	good := legacyBytes(t, mustSynth(t, tinyConfig(true), 1))
	_, err := read(shortReader{good, 2000}, int64(len(good)), "flaky.bin", model.LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "checkpoint flaky.bin: truncated or unreadable") {
		t.Fatalf("got %v", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := load(t.TempDir()+"/nope.bin", model.LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "nope.bin") {
		t.Fatalf("got %v", err)
	}
	_, err = load(t.TempDir(), model.LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("directory: got %v", err)
	}
	good := legacyBytes(t, mustSynth(t, tinyConfig(true), 1))
	_, err = read(bytes.NewReader(good), int64(len(good)), "x", model.LoadOptions{WeightDType: 9})
	if err == nil || !strings.Contains(err.Error(), "dtype") {
		t.Fatalf("bad dtype: got %v", err)
	}
}

func TestWriteLegacyRejectsInconsistentModel(t *testing.T) {
	m := mustSynth(t, tinyConfig(true), 1)
	m.Weights.Layers[1].W3 = m.Weights.Layers[1].W2 // wrong shape
	var buf bytes.Buffer
	err := WriteLegacy(&buf, m)
	if err == nil || !strings.Contains(err.Error(), "layer 1 W3 has shape [16, 24], want [24, 16]") {
		t.Fatalf("got %v", err)
	}
	m.Weights.Layers = m.Weights.Layers[:1]
	if err := WriteLegacy(&buf, m); err == nil || !strings.Contains(err.Error(), "1 layers") {
		t.Fatalf("got %v", err)
	}
	if err := WriteLegacy(&buf, nil); err == nil {
		t.Fatal("nil model accepted")
	}
}

// A consistent model that llama2.c's formats cannot hold (rotate-half
// RoPE, frequency factors, q/k/v biases) is refused by both writers with
// one line saying what it has, rather than written as another model.
func TestWriteRejectsWhatLlama2cCannotHold(t *testing.T) {
	c := tinyConfig(true)
	for _, tc := range []struct {
		name string
		edit func(m *model.Model)
		want string
	}{
		{"neox", func(m *model.Model) { m.Config.RopeStyle = model.RopeNeox }, "rotates with"},
		{"rope freqs", func(m *model.Model) {
			m.Weights.RopeFreqs = tensor.Must(tensor.Zeros(nil, tensor.F32, c.RopeDims()/2))
		}, "the model has RoPE frequency factors, which llama2.c files cannot hold"},
		{"biases", func(m *model.Model) {
			m.Weights.Layers[1].BQKV = tensor.Must(tensor.Zeros(nil, tensor.F32, c.QKVRows()))
		}, "layer 1 has q/k/v biases, which llama2.c files cannot hold"},
	} {
		m := mustSynth(t, c, 1)
		tc.edit(m)
		if err := m.Validate(); err != nil {
			t.Fatalf("%s: the edited model is inconsistent, so the test would not reach checkWritable: %v", tc.name, err)
		}
		var buf bytes.Buffer
		if err := WriteLegacy(&buf, m); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: WriteLegacy error %v, want one containing %q", tc.name, err, tc.want)
		}
		if err := WriteV2(&buf, m, 8); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: WriteV2 error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func FuzzCheckpointRead(f *testing.F) {
	for _, shared := range []bool{true, false} {
		c := model.Config{Dim: 8, HiddenDim: 4, NLayers: 1, NHeads: 2, NKVHeads: 1, VocabSize: 5, SeqLen: 2,
			RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: shared}
		m := mustSynth(f, c, 1)
		f.Add(legacyBytes(f, m))
		f.Add(writeV1(f, m))
	}
	f.Add([]byte{})
	f.Add(make([]byte, 28))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := read(bytes.NewReader(data), int64(len(data)), "fuzz", model.LoadOptions{})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "checkpoint fuzz: ") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		// Whatever loads must write back and load again to the same model.
		var buf bytes.Buffer
		if err := WriteLegacy(&buf, m); err != nil {
			t.Fatal(err)
		}
		if m.Quantized != nil {
			return // a version-2 file: FuzzCheckpointReadV2 checks those
		}
		again, err := read(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "again", model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sameModel(t, m, again)
	})
}

// BenchmarkReadStories15MShape reads a synthetic checkpoint of the
// stories15M shape (60.8 MB) from memory: the cost of parsing and
// converting, without the disk.
func BenchmarkReadStories15MShape(b *testing.B) {
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16} {
		b.Run(dt.String(), func(b *testing.B) {
			data := legacyBytes(b, mustSynth(b, stories15MShape(), 1))
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := read(bytes.NewReader(data), int64(len(data)), "bench", model.LoadOptions{WeightDType: dt}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// assertRejected reads data (claiming size bytes) as a checkpoint named
// bad.bin and requires a one-line error that names the file and mentions
// want, with no weight allocated and under 1 MiB allocated in all.
func assertRejected(t *testing.T, data []byte, size int64, want string) {
	t.Helper()
	led := tensor.NewLedger()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	m, err := read(bytes.NewReader(data), size, "bad.bin", model.LoadOptions{Ledger: led})
	runtime.ReadMemStats(&ms1)
	if err == nil {
		t.Fatalf("accepted (%+v)", m.Config)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "checkpoint bad.bin: ") || !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
		t.Fatalf("error %q should be one line starting with the file name and mention %q", msg, want)
	}
	if got := led.Stats().BytesAllocated; got != 0 {
		t.Fatalf("allocated %d bytes of weights before rejecting the file", got)
	}
	if grew := ms1.TotalAlloc - ms0.TotalAlloc; grew > 1<<20 {
		t.Fatalf("allocated %d bytes while rejecting a %d-byte file", grew, len(data))
	}
	t.Log(msg)
}
