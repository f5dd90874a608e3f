package llama2c

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/engine"
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/kernels"
	"github.com/stride-lm/stride/tensor/testfixture"
)

// refQuantize is export.py's quantize_q80 written out in float64 where
// that is exact: w.reshape(-1, gs); scale = max|w|/127 (a float32 division
// in torch); q = round(w/scale) (float32 division, round half to even).
func refQuantize(w []float32, gs int) ([]int8, []float32) {
	q := make([]int8, len(w))
	s := make([]float32, len(w)/gs)
	for g := range s {
		var amax float32
		for _, v := range w[g*gs : (g+1)*gs] {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		s[g] = amax / 127
		for k := g * gs; k < (g+1)*gs; k++ {
			if s[g] != 0 {
				q[k] = int8(math.RoundToEven(float64(w[k] / s[g])))
			}
		}
	}
	return q, s
}

// writeV2Ref is an independent writer of llama2.c's export version 2,
// following export.py's version2_export line by line, to test the reader
// and WriteV2. It takes the float32 weights of an unquantized model.
func writeV2Ref(t testing.TB, m *model.Model, gs int) []byte {
	t.Helper()
	c := m.Config
	var b bytes.Buffer
	le := binary.LittleEndian
	writeRefHeader(&b, c, 2)
	binary.Write(&b, le, int32(gs))
	b.Write(make([]byte, 256-b.Len()))
	vals := func(x *tensor.Tensor) []float32 {
		v, err := x.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	L := m.Weights.Layers
	for _, l := range L {
		binary.Write(&b, le, vals(l.AttnNorm))
	}
	for _, l := range L {
		binary.Write(&b, le, vals(l.FFNNorm))
	}
	binary.Write(&b, le, vals(m.Weights.FinalNorm))
	weights := [][]float32{vals(m.Weights.TokenEmbedding)}
	q, kv := c.NHeads*c.HeadDim()*c.Dim, c.NKVHeads*c.HeadDim()*c.Dim
	for _, part := range [][2]int{{0, q}, {q, q + kv}, {q + kv, q + 2*kv}} {
		for _, l := range L {
			weights = append(weights, vals(l.WQKV)[part[0]:part[1]])
		}
	}
	for _, f := range []func(model.Layer) *tensor.Tensor{
		func(l model.Layer) *tensor.Tensor { return l.WO }, func(l model.Layer) *tensor.Tensor { return l.W1 },
		func(l model.Layer) *tensor.Tensor { return l.W2 }, func(l model.Layer) *tensor.Tensor { return l.W3 }} {
		for _, l := range L {
			weights = append(weights, vals(f(l)))
		}
	}
	if !c.SharedClassifier {
		weights = append(weights, vals(m.Weights.Classifier))
	}
	for _, w := range weights {
		qv, s := refQuantize(w, gs)
		binary.Write(&b, le, qv)
		binary.Write(&b, le, s)
	}
	return b.Bytes()
}

func v2Bytes(t testing.TB, m *model.Model, gs int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteV2(&buf, m, gs); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sameMatrix fails unless a and b are the same Q8_0 matrix, bit for bit.
func sameMatrix(t testing.TB, name string, a, b *kernels.Matrix) {
	t.Helper()
	if a == nil || b == nil {
		t.Fatalf("%s: missing quantized matrix (%v, %v)", name, a != nil, b != nil)
	}
	if a.Format != kernels.Q8_0 || b.Format != kernels.Q8_0 || a.Rows != b.Rows || a.Cols != b.Cols || a.GroupSize != b.GroupSize {
		t.Fatalf("%s: %v (%d,%d)/%d vs %v (%d,%d)/%d", name, a.Format, a.Rows, a.Cols, a.GroupSize, b.Format, b.Rows, b.Cols, b.GroupSize)
	}
	n := a.Rows * a.Cols
	if !slices.Equal(a.Q[:n], b.Q[:n]) {
		t.Fatalf("%s: int8 values differ", name)
	}
	for i := 0; i < n/a.GroupSize; i++ {
		if math.Float32bits(a.Scales[i]) != math.Float32bits(b.Scales[i]) {
			t.Fatalf("%s: scale %d differs: %v vs %v", name, i, a.Scales[i], b.Scales[i])
		}
	}
}

// sameQuantized fails unless every matrix of a and b has the same Q8_0
// form and every norm the same bits.
func sameQuantized(t testing.TB, a, b *model.Model) {
	t.Helper()
	if a.Config != b.Config {
		t.Fatalf("config %+v vs %+v", a.Config, b.Config)
	}
	qa, qb := a.Quantized, b.Quantized
	sameMatrix(t, "embedding", qa[a.Weights.TokenEmbedding], qb[b.Weights.TokenEmbedding])
	sameMatrix(t, "classifier", qa[a.Weights.Classifier], qb[b.Weights.Classifier])
	testfixture.SameTensor(t, "final norm", a.Weights.FinalNorm, b.Weights.FinalNorm)
	for l := range a.Weights.Layers {
		x, y := a.Weights.Layers[l], b.Weights.Layers[l]
		testfixture.SameTensor(t, "attn norm", x.AttnNorm, y.AttnNorm)
		testfixture.SameTensor(t, "ffn norm", x.FFNNorm, y.FFNNorm)
		sameMatrix(t, "wqkv", qa[x.WQKV], qb[y.WQKV])
		sameMatrix(t, "wo", qa[x.WO], qb[y.WO])
		sameMatrix(t, "w1", qa[x.W1], qb[y.W1])
		sameMatrix(t, "w2", qa[x.W2], qb[y.W2])
		sameMatrix(t, "w3", qa[x.W3], qb[y.W3])
	}
}

// quantizedCopy loads an independent F32 copy of m (through the legacy
// format) and quantizes it at load, as --weights q8_0 does.
func quantizedCopy(t testing.TB, m *model.Model, gs int) *model.Model {
	t.Helper()
	data := legacyBytes(t, m)
	q, err := read(bytes.NewReader(data), int64(len(data)), "copy", model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := model.QuantizeQ8_0(q, gs); err != nil {
		t.Fatal(err)
	}
	return q
}

// loadV2 writes data to a file and loads it, mapped or read.
func loadV2(t testing.TB, data []byte, opts model.LoadOptions) *model.Model {
	t.Helper()
	path := filepath.Join(t.TempDir(), "v2.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := load(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestWriteV2MatchesExportPy(t *testing.T) {
	for _, shared := range []bool{true, false} {
		m := mustSynth(t, tinyConfig(shared), 7)
		for _, gs := range []int{8, 4, 2} {
			got, want := v2Bytes(t, m, gs), writeV2Ref(t, m, gs)
			if !bytes.Equal(got, want) {
				t.Fatalf("shared=%v gs=%d: WriteV2 (%d bytes) differs from export.py's layout (%d bytes)", shared, gs, len(got), len(want))
			}
			h, err := ReadHeader(bytes.NewReader(got), int64(len(got)), "v2")
			if err != nil {
				t.Fatal(err)
			}
			if h.Format != FormatV2 || h.GroupSize != gs || h.Size != int64(len(got)) || h.Config.SharedClassifier != shared {
				t.Fatalf("header %+v", h)
			}
		}
	}
	// Group size 0 picks 64 halved until it divides dim 16 and hidden 24.
	m := mustSynth(t, tinyConfig(true), 7)
	if got, want := v2Bytes(t, m, 0), writeV2Ref(t, m, 8); !bytes.Equal(got, want) {
		t.Fatal("group size 0 should pick 8 for dim 16, hidden_dim 24")
	}
}

// TestReadV2 loads version-2 files (mapped and read, shared and unshared
// classifier, GQA) and checks that they hold exactly the matrices that
// quantizing the float32 model at load gives, and that writing them back
// reproduces the file byte for byte.
func TestReadV2(t *testing.T) {
	for _, shared := range []bool{true, false} {
		m := mustSynth(t, tinyConfig(shared), 9)
		const gs = 8
		data := writeV2Ref(t, m, gs)
		atLoad := quantizedCopy(t, m, gs)
		for _, noMmap := range []bool{false, true} {
			led := tensor.NewLedger()
			got := loadV2(t, data, model.LoadOptions{NoMmap: noMmap, Ledger: led})
			sameQuantized(t, atLoad, got)
			if again := v2Bytes(t, got, 0); !bytes.Equal(again, data) {
				t.Fatalf("shared=%v mmap=%v: load → WriteV2 is not byte-identical", shared, !noMmap)
			}
			if got.Weights.Layers[0].WO.IsMeta() != true {
				t.Fatal("a quantized weight's tensor should be a meta placeholder")
			}
			if shared != (got.Weights.Classifier == got.Weights.TokenEmbedding) {
				t.Fatalf("shared=%v: classifier aliasing wrong", shared)
			}
			// Allocations: mapped, only the fused WQKV (values + scales);
			// read, every matrix plus the norms.
			c := got.Config
			n := int64(c.NLayers) * int64(c.QKVRows()*c.Dim)
			qkv := n + 4*n/gs
			all := int64(len(data)) - v1HeaderSize
			want := qkv
			if noMmap {
				want = all
			}
			if a := led.Stats().BytesAllocated; a != want {
				t.Fatalf("shared=%v mmap=%v: allocated %d bytes, want %d", shared, !noMmap, a, want)
			}
			mapped, copied := got.MappedBytes()
			if !noMmap && (mapped != int64(len(data)) || copied != qkv) {
				t.Fatalf("mapped %d copied %d, want %d and %d", mapped, copied, len(data), qkv)
			}
		}
	}
}

// TestReadV2Unaligned: with group size 3 the scales of a 6×5 embedding
// start at an offset that is not a multiple of 4, so a mapped load copies
// them instead of viewing them; the result is the same model.
func TestReadV2Unaligned(t *testing.T) {
	c := model.Config{Dim: 6, HiddenDim: 9, NLayers: 2, NHeads: 1, NKVHeads: 1, VocabSize: 5, SeqLen: 4,
		RopeTheta: 10000, NormEps: 1e-5}
	m := mustSynth(t, c, 2)
	data := writeV2Ref(t, m, 3)
	mapped := loadV2(t, data, model.LoadOptions{})
	read := loadV2(t, data, model.LoadOptions{NoMmap: true})
	sameQuantized(t, quantizedCopy(t, m, 3), mapped)
	sameQuantized(t, mapped, read)
	if !bytes.Equal(v2Bytes(t, mapped, 3), data) {
		t.Fatal("mapped unaligned file does not write back byte for byte")
	}
	if a, b := greedyIDs(t, mapped, 4), greedyIDs(t, read, 4); !slices.Equal(a, b) {
		t.Fatalf("mapped %v vs read %v", a, b)
	}
}

// TestQ8RoundTripBound: every weight read back from a version-2 file is
// within half a quantization step of the float32 weight it came from,
// |w − q·s| ≤ s/2 (plus the float32 rounding of w/s: |w/s| ≤ 127 is
// computed with relative error 2⁻²⁴, so at most 127·2⁻²⁴·s more), and the
// largest magnitude of each group maps to ±127.
func TestQ8RoundTripBound(t *testing.T) {
	c := tinyConfig(false)
	m := mustSynth(t, c, 21)
	// Add an all-zero row group and a large outlier to exercise both ends.
	st := m.Weights.Layers[1].W1.Storage()
	for j := 0; j < c.Dim; j++ {
		st.Store(3*c.Dim+j, 0)
	}
	st.Store(5*c.Dim+2, 40)
	const gs = 4
	got := loadV2(t, v2Bytes(t, m, gs), model.LoadOptions{})
	check := func(name string, src *tensor.Tensor, q *kernels.Matrix, r0 int) {
		w, err := src.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		off := r0 * q.Cols
		row := make([]float32, q.Cols)
		worst := 0.0
		for i := 0; i < q.Rows; i++ {
			if err := q.Row(i, row); err != nil {
				t.Fatal(err)
			}
			for j, v := range row {
				k := i*q.Cols + j
				s := float64(q.Scales[k/gs])
				d := math.Abs(float64(w[off+k]) - float64(v))
				if d > s*(0.5+127*0x1p-24)+1e-30 {
					t.Fatalf("%s[%d,%d]: |w − q·s| = %g > s/2 = %g", name, i, j, d, s/2)
				}
				if s > 0 {
					worst = max(worst, d/s)
				}
			}
		}
		for g := 0; g < q.Rows*q.Cols/gs; g++ {
			amax := 0
			for _, v := range q.Q[g*gs : (g+1)*gs] {
				amax = max(amax, int(math.Abs(float64(v))))
			}
			if (q.Scales[g] == 0) != (amax == 0) || (amax != 0 && amax != 127) {
				t.Fatalf("%s group %d: scale %v, max |q| %d (want 127, or 0 for an all-zero group)", name, g, q.Scales[g], amax)
			}
		}
		t.Logf("%s: max |w − q·s| / s = %.4f", name, worst)
	}
	for l := range got.Weights.Layers {
		L, S := got.Weights.Layers[l], m.Weights.Layers[l]
		check("w1", S.W1, got.Quantized[L.W1], 0)
		check("w2", S.W2, got.Quantized[L.W2], 0)
		check("wo", S.WO, got.Quantized[L.WO], 0)
		check("wqkv", S.WQKV, got.Quantized[L.WQKV], 0)
	}
	check("embedding", m.Weights.TokenEmbedding, got.Quantized[got.Weights.TokenEmbedding], 0)
	check("classifier", m.Weights.Classifier, got.Quantized[got.Weights.Classifier], 0)
}

// TestV2Dequantize: a version-2 model written as legacy, or loaded as
// F16/BF16, holds q·s for every weight (rounded once to the dtype).
func TestV2Dequantize(t *testing.T) {
	m := mustSynth(t, tinyConfig(false), 5)
	data := v2Bytes(t, m, 8)
	q := loadV2(t, data, model.LoadOptions{})
	want := func(x *tensor.Tensor) []float32 {
		mat := q.Quantized[x]
		out := make([]float32, mat.Rows*mat.Cols)
		for i := 0; i < mat.Rows; i++ {
			for j := 0; j < mat.Cols; j++ {
				k := i*mat.Cols + j
				out[k] = float32(mat.Q[k]) * mat.Scales[k/mat.GroupSize]
			}
		}
		return out
	}
	leg := legacyBytes(t, q)
	f32, err := read(bytes.NewReader(leg), int64(len(leg)), "leg", model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16} {
		var got *model.Model
		if dt == tensor.F32 {
			got = f32
		} else {
			got = loadV2(t, data, model.LoadOptions{WeightDType: dt})
		}
		if got.Quantized != nil || got.Config.WeightDType != dt {
			t.Fatalf("%v: quantized %v, weight dtype %v", dt, got.Quantized != nil, got.Config.WeightDType)
		}
		for name, pair := range map[string][2]*tensor.Tensor{
			"w2 layer 1":  {q.Weights.Layers[1].W2, got.Weights.Layers[1].W2},
			"wqkv":        {q.Weights.Layers[0].WQKV, got.Weights.Layers[0].WQKV},
			"classifier":  {q.Weights.Classifier, got.Weights.Classifier},
			"embedding":   {q.Weights.TokenEmbedding, got.Weights.TokenEmbedding},
			"w3 layer 0":  {q.Weights.Layers[0].W3, got.Weights.Layers[0].W3},
			"wo layer 1 ": {q.Weights.Layers[1].WO, got.Weights.Layers[1].WO},
		} {
			exp := want(pair[0])
			st := pair[1].Storage()
			if pair[1].DType() != dt || st.Len() != len(exp) {
				t.Fatalf("%v %s: dtype %v, %d elements", dt, name, pair[1].DType(), st.Len())
			}
			for k, v := range exp {
				var ok bool
				switch dt {
				case tensor.F32:
					ok = math.Float32bits(st.Float32s()[k]) == math.Float32bits(v)
				case tensor.F16:
					ok = st.Uint16s()[k] == tensor.F16Bits(v)
				case tensor.BF16:
					ok = st.Uint16s()[k] == tensor.BF16Bits(v)
				}
				if !ok {
					t.Fatalf("%v %s element %d: got %v, want q·s = %v", dt, name, k, st.Load(k), v)
				}
			}
		}
	}
}

// greedyIDs generates steps tokens greedily from BOS on m.
func greedyIDs(t testing.TB, m *model.Model, steps int) []int {
	t.Helper()
	e, err := engine.New(m, engine.Options{BlockSize: 16, NumBlocks: (steps + 15) / 16})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, _, err := e.Generate([]engine.Request{{Prompt: []int{model.BOSID}, Steps: steps, Sampler: model.NewSampler(m.Config.VocabSize, 0, 0, 1)}}, nil)
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res[0].Err)
	}
	return res[0].Tokens
}

// TestV2Generate: export → load → generate gives the same greedy tokens
// as quantizing the float32 model at load (the matrices are identical, so
// the kernels compute identical logits), on stories260K and on synthetic
// MHA and GQA models.
func TestV2Generate(t *testing.T) {
	type tc struct {
		name  string
		m     *model.Model
		steps int
	}
	cases := []tc{
		{"synthetic GQA", mustSynth(t, model.Config{Dim: 64, HiddenDim: 96, NLayers: 2, NHeads: 4, NKVHeads: 2, VocabSize: 100,
			SeqLen: 64, RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: true}, 3), 64},
		{"synthetic MHA unshared", mustSynth(t, model.Config{Dim: 32, HiddenDim: 80, NLayers: 2, NHeads: 4, NKVHeads: 4, VocabSize: 90,
			SeqLen: 64, RopeTheta: 10000, NormEps: 1e-5}, 4), 64},
	}
	if dir, reason := findShared(); dir == "" {
		t.Logf("stories260K case skipped: %s", reason)
	} else if _, err := os.Stat(filepath.Join(dir, "models", "stories260K.bin")); err != nil {
		t.Logf("stories260K case skipped: %v", err)
	} else {
		m, err := load(filepath.Join(dir, "models", "stories260K.bin"), model.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		steps := 256
		if testing.Short() {
			steps = 64
		}
		cases = append(cases, tc{"stories260K", m, steps})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gs := model.Q8GroupSize(c.m.Config, 64)
			atLoad := quantizedCopy(t, c.m, gs)
			fromFile := loadV2(t, v2Bytes(t, c.m, gs), model.LoadOptions{})
			sameQuantized(t, atLoad, fromFile)
			a, b := greedyIDs(t, atLoad, c.steps), greedyIDs(t, fromFile, c.steps)
			if len(a) == 0 || !slices.Equal(a, b) {
				t.Fatalf("v2 file generates %v, quantize-at-load %v", b, a)
			}
			f := greedyIDs(t, c.m, c.steps)
			agree := 0
			for i := range min(len(a), len(f)) {
				if a[i] != f[i] {
					break
				}
				agree++
			}
			t.Logf("group size %d: %d tokens; Q8_0 free-running greedy follows F32 for the first %d", gs, len(a), agree)
		})
	}
}

// v2Header builds a 256-byte version-2 header by hand.
func v2Header(dim, hidden, layers, heads, kvHeads, vocab, seqLen int, shared byte, gs int32) []byte {
	h := make([]byte, 256)
	le := binary.LittleEndian
	le.PutUint32(h[0:], 0x616b3432)
	le.PutUint32(h[4:], 2)
	for i, v := range []int{dim, hidden, layers, heads, kvHeads, vocab, seqLen} {
		le.PutUint32(h[8+4*i:], uint32(int32(v)))
	}
	h[36] = shared
	le.PutUint32(h[37:], uint32(gs))
	return h
}

func TestReadV2BadInput(t *testing.T) {
	good := v2Bytes(t, mustSynth(t, tinyConfig(true), 1), 8)
	set := func(off int, b ...byte) []byte {
		out := append([]byte(nil), good...)
		copy(out[off:], b)
		return out
	}
	gs := func(v int32) []byte {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(v))
		return set(37, b[:]...)
	}
	huge := v2Header(1<<20, 1<<20, 1<<20, 1<<10, 1<<10, 1<<20, 1<<20, 1, 64)
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"group size 0", gs(0), "group size 0 must be in"},
		{"negative group size", gs(-8), "group size -8 must be in"},
		{"group size not dividing hidden_dim", gs(16), "group size 16 does not divide hidden_dim 24"},
		{"group size not dividing dim", gs(32), "does not divide dim 16"},
		{"group size beyond max", gs(1 << 30), "must be in [1, 1048576]"},
		{"other group size (size mismatch)", gs(4), "group size 4) requires exactly"},
		{"truncated", good[:len(good)-1], "requires exactly"},
		{"one extra byte", append(append([]byte(nil), good...), 0), "requires exactly"},
		{"header only", good[:256], "requires exactly"},
		{"short header", good[:40], "too short for a version-1/2 header"},
		{"padding", set(41, 1), "version 2 header: padding byte 41"},
		{"shared byte", set(36, 2), "shared_classifier byte is 2"},
		{"unshared flag on a shared file", set(36, 0), "requires exactly"},
		{"odd head dim", set(8, 12, 0, 0, 0), "even"},
		{"terabyte header", huge, "requires exactly"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertRejected(t, tc.data, int64(len(tc.data)), tc.want)
		})
	}
	// The same errors through Load (mapped path), naming the path.
	path := filepath.Join(t.TempDir(), "bad-v2.bin")
	if err := os.WriteFile(path, gs(16), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := load(path, model.LoadOptions{}); err == nil || !strings.Contains(err.Error(), "checkpoint "+path+": ") {
		t.Fatalf("Load: got %v", err)
	}
}

func TestWriteV2Rejects(t *testing.T) {
	m := mustSynth(t, tinyConfig(true), 1)
	var buf bytes.Buffer
	for _, tc := range []struct {
		gs   int
		want string
	}{{-1, "group size -1"}, {16, "does not divide hidden_dim 24"}, {5, "does not divide dim 16"}} {
		if err := WriteV2(&buf, m, tc.gs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("group size %d: got %v", tc.gs, err)
		}
	}
	// A non-finite weight cannot be quantized: an error, not a poisoned group.
	m.Weights.Layers[1].W3.Storage().Store(7, float32(math.Inf(1)))
	if err := WriteV2(&buf, m, 8); err == nil || !strings.Contains(err.Error(), "w3 (layer 1)") {
		t.Fatalf("inf weight: got %v", err)
	}
	if err := WriteV2(&buf, nil, 8); err == nil {
		t.Fatal("nil model accepted")
	}
	// A meta tensor with no Q8_0 form has no data to write.
	m = mustSynth(t, tinyConfig(true), 1)
	m.Weights.Layers[0].WO = tensor.Must(tensor.Meta(tensor.F32, 16, 16))
	if err := WriteV2(&buf, m, 8); err == nil || !strings.Contains(err.Error(), "layer 0 WO is a meta tensor") {
		t.Fatalf("meta weight: got %v", err)
	}
}

// TestWriteV2Requantizes: a Q8_0 model written with another group size is
// dequantized and quantized again, and a half-precision model is widened
// exactly before quantizing.
func TestWriteV2Requantizes(t *testing.T) {
	m := mustSynth(t, tinyConfig(false), 13)
	q8 := loadV2(t, v2Bytes(t, m, 8), model.LoadOptions{})
	// Dequantized weights, then quantized with group 4: what export.py does
	// on the legacy file of the Q8_0 model.
	leg := legacyBytes(t, q8)
	deq, err := read(bytes.NewReader(leg), int64(len(leg)), "deq", model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(v2Bytes(t, q8, 4), writeV2Ref(t, deq, 4)) {
		t.Fatal("requantizing a Q8_0 model with group 4 differs from quantizing its dequantized weights")
	}
	c := tinyConfig(true)
	c.WeightDType = tensor.BF16
	half := mustSynth(t, c, 13)
	leg = legacyBytes(t, half)
	wide, err := read(bytes.NewReader(leg), int64(len(leg)), "wide", model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(v2Bytes(t, half, 8), writeV2Ref(t, wide, 8)) {
		t.Fatal("BF16 model: WriteV2 differs from quantizing its exact float32 widening")
	}
}

func FuzzCheckpointReadV2(f *testing.F) {
	for _, shared := range []bool{true, false} {
		c := model.Config{Dim: 8, HiddenDim: 4, NLayers: 1, NHeads: 2, NKVHeads: 1, VocabSize: 5, SeqLen: 2,
			RopeTheta: 10000, NormEps: 1e-5, SharedClassifier: shared}
		m := mustSynth(f, c, 1)
		f.Add(v2Bytes(f, m, 4))
		f.Add(v2Bytes(f, m, 1))
	}
	f.Add(v2Header(8, 4, 1, 2, 1, 5, 2, 1, 4))
	f.Add(v2Header(8, 4, 1, 2, 1, 5, 2, 1, 3))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := read(bytes.NewReader(data), int64(len(data)), "fuzz", model.LoadOptions{})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "checkpoint fuzz: ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error without the file name, or on several lines: %v", err)
			}
			return
		}
		h, err := ReadHeader(bytes.NewReader(data), int64(len(data)), "fuzz")
		if err != nil {
			t.Fatal(err)
		}
		if h.Format != FormatV2 {
			return // FuzzCheckpointRead covers the float32 formats
		}
		// A loaded version-2 file writes back byte for byte…
		var buf bytes.Buffer
		if err := WriteV2(&buf, m, h.GroupSize); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), data) {
			t.Fatal("load → WriteV2 is not byte-identical")
		}
		// …and as legacy (dequantized) without error, and runs a step.
		buf.Reset()
		if err := WriteLegacy(&buf, m); err != nil {
			t.Fatal(err)
		}
		greedyIDs(t, m, 1)
	})
}
