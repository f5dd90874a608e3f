package hf

import (
	"bytes"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stride-lm/stride/attention"
	"github.com/stride-lm/stride/model"
	"github.com/stride-lm/stride/model/internal/formattest"
	"github.com/stride-lm/stride/model/llama2c"
	"github.com/stride-lm/stride/tensor"
	"github.com/stride-lm/stride/tensor/testfixture"
)

// goldenIDs are run.c's greedy ids for stories260K from BOS.
func goldenIDs(t *testing.T) []int {
	return testfixture.Ints(t, "models/golden/stories260K.greedy.ids")
}

// load opens dir with the rotary option and builds its model.
func load(t *testing.T, dir string, rot Rotary, lopts model.LoadOptions) (*model.Model, *Source) {
	t.Helper()
	src, err := Open(dir, lopts, Options{Rotary: rot})
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.FromSource(src, lopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, src
}

func loadBin(t *testing.T) *model.Model {
	t.Helper()
	src, err := llama2c.Open(sharedFile(t, "models/stories260K.bin"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.FromSource(src, model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// logits runs tokens (positions 0…) through m in one prefill and returns
// the logits of every position.
func logits(t *testing.T, m *model.Model, tokens []int) []float32 {
	t.Helper()
	f, err := model.NewForward(m, model.ForwardOptions{Projection: model.FusedQKV, Path: attention.NewFused(attention.Options{}), Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := m.Config
	const bs = 16
	n := len(tokens)
	blocks := (n + bs - 1) / bs
	caches := make([]model.LayerCache, c.NLayers)
	for l := range caches {
		caches[l].K = tensor.Must(tensor.Zeros(nil, tensor.F32, blocks, bs, c.NKVHeads, c.HeadDim()))
		caches[l].V = tensor.Must(tensor.Zeros(nil, tensor.F32, blocks, bs, c.NKVHeads, c.HeadDim()))
	}
	b, _, err := attention.NewLinearBatch([]int{n}, []int{n}, bs)
	if err != nil {
		t.Fatal(err)
	}
	pos, rows := make([]int, n), make([]int, n)
	for i := range pos {
		pos[i], rows[i] = i, i
	}
	out, err := f.Run(tokens, pos, b, caches, rows)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Clone(out)
}

// The float32 directory generates run.c's golden ids and the same ids as
// the llama2.c file it was exported from, greedy and sampled, through
// both rotary routes.
func TestStories260KGeneratesLikeLlama2c(t *testing.T) {
	golden := goldenIDs(t)
	dir := sharedFile(t, "models/hf/stories260K")
	bm := loadBin(t)
	tok, err := llama2c.LoadTokenizer(sharedFile(t, "models/tok512.bin"), 512)
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := tok.Encode("Once upon a time, a little girl", true, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, rot := range []Rotary{RotaryAuto, RotaryNeox, RotaryUnpermute} {
		hm, src := load(t, dir, rot, model.LoadOptions{})
		stops := src.StopTokens()
		if !slices.Equal(stops, []int{2, 1}) {
			t.Errorf("stop ids %v, want config.json's eos 2 and bos 1", stops)
		}
		if got := formattest.Generate(t, hm, []int{model.BOSID}, 256, 0, 0.9, 1, stops); !slices.Equal(got, golden) {
			t.Errorf("rotary %d: greedy from BOS differs from run.c's at %d", rot, firstDiff(got, golden))
		}
		for _, c := range []struct {
			name       string
			temp, topp float32
			seed       uint64
		}{{"greedy with prompt", 0, 0.9, 1}, {"sampled", 1.0, 0.9, 42}, {"sampled hot", 1.3, 0.8, 7}} {
			want := formattest.Generate(t, bm, prompt, 200, c.temp, c.topp, c.seed, nil)
			got := formattest.Generate(t, hm, prompt, 200, c.temp, c.topp, c.seed, stops)
			// The .bin stops at BOS only; the directory also at EOS (2).
			cut := len(want)
			if i := slices.Index(want, 2); i >= 0 {
				cut = i
			}
			if len(got) != cut || !slices.Equal(got, want[:cut]) {
				t.Errorf("rotary %d, %s: %d ids, .bin %d (cut %d); first difference at %d", rot, c.name, len(got), len(want), cut, firstDiff(got, want))
			}
		}
	}
}

// Both rotary routes give the llama2.c file's logits: un-permuting at
// load computes exactly what the .bin computes (bit for bit), rotating
// halves on the stored layout sums q·k over the head dimensions in
// another order (agreement to float32 rounding).
func TestRotaryRoutesSameLogits(t *testing.T) {
	dir := sharedFile(t, "models/hf/stories260K")
	bm := loadBin(t)
	tokens := []int{1, 403, 407, 261, 378, 425, 267, 395, 334, 281, 426, 430, 285, 437, 412, 337, 263, 341, 294, 489, 279, 376, 266, 391}
	want := logits(t, bm, tokens)
	var led tensor.Ledger
	um, usrc := load(t, dir, RotaryUnpermute, model.LoadOptions{Ledger: &led})
	if um.Config.RopeStyle != model.RopeNorm {
		t.Errorf("un-permuted model rotates %v", um.Config.RopeStyle)
	}
	// q (8 heads × 8) and k (4 × 8) rows of 64 floats, in 5 layers.
	if got, want := usrc.PermutedBytes(), int64(5*(64+32)*64*4); got != want {
		t.Errorf("un-permuted %d bytes, want %d", got, want)
	}
	if st := led.Stats(); st.BytesCopied < usrc.PermutedBytes() {
		t.Errorf("ledger copied %d bytes, fewer than the %d un-permuted", st.BytesCopied, usrc.PermutedBytes())
	}
	if got := logits(t, um, tokens); !slices.Equal(got, want) {
		t.Errorf("un-permuted: logits differ from the .bin's (max |Δ| %g)", maxDiff(got, want))
	}
	nm, nsrc := load(t, dir, RotaryNeox, model.LoadOptions{})
	if nm.Config.RopeStyle != model.RopeNeox || nsrc.PermutedBytes() != 0 {
		t.Errorf("NEOX route: style %v, %d bytes permuted", nm.Config.RopeStyle, nsrc.PermutedBytes())
	}
	got := logits(t, nm, tokens)
	if d := maxDiff(got, want); d > 1e-4 {
		t.Errorf("NEOX on the stored layout: max |Δ| %g from the .bin's logits", d)
	}
	if mapped, copied := nm.MappedBytes(); mapped != 1044992 || copied >= mapped/2 {
		t.Errorf("NEOX route mapped %d bytes and copied %d: want the file mapped and only the fused QKV copied", mapped, copied)
	}
}

// The bfloat16 directory runs; as bf16 weights its matrices are views of
// the mapping, and its logits stay near the float32 file's (bf16 keeps 8
// bits of mantissa: relative error 2^-9 per weight).
func TestStories260KBF16(t *testing.T) {
	dir := sharedFile(t, "models/hf/stories260K-bf16")
	bm := loadBin(t)
	tokens := goldenIDs(t)[:64]
	tokens = append([]int{1}, tokens...)
	want := logits(t, bm, tokens)
	hm, _ := load(t, dir, RotaryNeox, model.LoadOptions{WeightDType: tensor.BF16})
	if hm.Config.WeightDType != tensor.BF16 {
		t.Fatalf("weight dtype %v", hm.Config.WeightDType)
	}
	got := logits(t, hm, tokens)
	var scale float64
	for _, v := range want {
		scale = max(scale, math.Abs(float64(v)))
	}
	if d := maxDiff(got, want); d > 0.05*scale {
		t.Errorf("bf16 logits differ from float32's by %g (logit scale %g)", d, scale)
	}
	// Argmax agreement on most positions.
	agree := 0
	v := hm.Config.VocabSize
	for p := range len(tokens) {
		if argmax(got[p*v:(p+1)*v]) == argmax(want[p*v:(p+1)*v]) {
			agree++
		}
	}
	if agree < len(tokens)*9/10 {
		t.Errorf("bf16 argmax agrees with float32 at %d of %d positions", agree, len(tokens))
	}
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

func maxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// RotaryAuto un-permutes Llama and keeps Qwen2, as llama.cpp's converter.
func TestRotaryAuto(t *testing.T) {
	src, err := Open(sharedFile(t, "models/hf/stories260K"), model.LoadOptions{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if src.Rotary() != RotaryUnpermute || src.Config().RopeStyle != model.RopeNorm {
		t.Errorf("Llama: rotary %d, style %v", src.Rotary(), src.Config().RopeStyle)
	}
	dir, _ := writeSynth(t, qwen2Spec)
	q, err := Open(dir, model.LoadOptions{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if q.Rotary() != RotaryNeox || q.Config().RopeStyle != model.RopeNeox {
		t.Errorf("Qwen2: rotary %d, style %v", q.Rotary(), q.Config().RopeStyle)
	}
}

// A model kept in the stored rotary layout cannot be written as a
// llama2.c file (run.c would rotate the wrong pairs); the default
// (un-permuted) one writes stories260K.bin's header and weights byte for
// byte. (The file ends with the legacy freq_cis tables, which run.c never
// reads; WriteLegacy recomputes them, in the last bits unlike the
// export that made stories260K.bin.)
func TestWriteLegacy(t *testing.T) {
	dir := sharedFile(t, "models/hf/stories260K")
	nm, _ := load(t, dir, RotaryNeox, model.LoadOptions{})
	var buf bytes.Buffer
	if err := llama2c.WriteLegacy(&buf, nm); err == nil || !strings.Contains(err.Error(), "neox") {
		t.Errorf("WriteLegacy of a NEOX model: %v", err)
	}
	um, _ := load(t, dir, RotaryAuto, model.LoadOptions{})
	buf.Reset()
	if err := llama2c.WriteLegacy(&buf, um); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(sharedFile(t, "models/stories260K.bin"))
	if err != nil {
		t.Fatal(err)
	}
	tables := 2 * 512 * 4 * 4 // cos and sin: seq_len × head_dim/2 float32
	if buf.Len() != len(want) || !bytes.Equal(buf.Bytes()[:len(want)-tables], want[:len(want)-tables]) {
		t.Errorf("exported %d bytes differ from stories260K.bin (%d bytes) from byte %d", buf.Len(), len(want), firstByteDiff(buf.Bytes(), want))
	}
}

func firstByteDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
