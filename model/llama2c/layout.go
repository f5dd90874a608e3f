package llama2c

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/stride-lm/stride/model"
)

// kind is one group of tensors in a checkpoint file.
type kind int

const (
	kindEmbedding kind = iota
	kindAttnNorm
	kindWQ
	kindWK
	kindWV
	kindWO
	kindFFNNorm
	kindW1
	kindW2
	kindW3
	kindFinalNorm
	kindRope // both legacy RoPE tables (cos then sin): run.c skips them
	kindClassifier
	numKinds
)

// kinds names each kind as llama2.c does (for errors) and as llama.cpp
// does (the canonical names of model.Source; per-layer names take the
// layer index).
var kinds = [numKinds]struct {
	label    string
	tensor   string
	perLayer bool
}{
	kindEmbedding:  {"token embedding", model.TensorTokenEmbd, false},
	kindAttnNorm:   {"rms_att weight", model.TensorAttnNorm, true},
	kindWQ:         {"wq", model.TensorAttnQ, true},
	kindWK:         {"wk", model.TensorAttnK, true},
	kindWV:         {"wv", model.TensorAttnV, true},
	kindWO:         {"wo", model.TensorAttnOutput, true},
	kindFFNNorm:    {"rms_ffn weight", model.TensorFFNNorm, true},
	kindW1:         {"w1", model.TensorFFNGate, true},
	kindW2:         {"w2", model.TensorFFNDown, true},
	kindW3:         {"w3", model.TensorFFNUp, true},
	kindFinalNorm:  {"rms_final weight", model.TensorOutputNorm, false},
	kindRope:       {"RoPE tables", "", false},
	kindClassifier: {"classifier", model.TensorOutput, false},
}

func (k kind) label(layer int) string {
	if kinds[k].perLayer {
		return fmt.Sprintf("%s (layer %d)", kinds[k].label, layer)
	}
	return kinds[k].label
}

// block is the run of one kind's tensors in the file: count tensors (1, or
// n_layers for per-layer kinds) of one storage type and shape, stored one
// after another, stride bytes each, the first at byte off.
type block struct {
	kind      kind
	typ       model.StorageType
	shape     []int // rows, cols; or just n for a vector
	groupSize int   // of a StorageLlama2cQ8 block
	off       int64
	stride    int64
	count     int
}

// at is the byte offset of tensor i of the block.
func (b block) at(i int) int64 { return b.off + int64(i)*b.stride }

// layout is where every tensor of a checkpoint is: the block of each kind
// the file has, and the file's total size.
type layout struct {
	blocks [numKinds]*block
	size   int64
}

var errOverflow = errors.New("the sizes it declares overflow a 64-bit byte count")

// mul64 multiplies non-negative sizes, reporting overflow.
func mul64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	if a > math.MaxInt64/b {
		return 0, false
	}
	return a * b, true
}

// fileLayout computes the layout of a checkpoint of format f, config c
// and (version 2) group size gs, already checked by checkGroupSize. It is
// O(1) in the number of layers and overflow-checked in int64 (Validate
// bounds every field by 2^20, so a single matrix is at most 2^40 values,
// but a sum over layers of several of them could still wrap), so a lying
// header is rejected before anything is allocated.
//
// File order:
//
//	legacy: header(28) embedding, then per kind across layers: rms_att,
//	  wq, wk, wv, wo, rms_ffn, w1, w2, w3; rms_final, the two RoPE tables
//	  (seq_len·head_dim/2 floats each), [classifier]; all float32
//	v1: header(256) rms_att (all layers), rms_ffn, rms_final, embedding,
//	  wq, wk, wv, wo, w1, w2, w3 (each across layers), [classifier]
//	v2: header(256) the float32 norms as in v1, then each matrix, in v1's
//	  order, as llama2c_Q8: int8 q[rows·cols] then float32 s[rows·cols/gs]
func fileLayout(f Format, c model.Config, gs int) (layout, error) {
	d, h, v := c.Dim, c.HiddenDim, c.VocabSize
	hs := c.HeadDim()
	q, kv := c.NHeads*hs, c.NKVHeads*hs
	shapes := [numKinds][]int{
		kindEmbedding: {v, d}, kindAttnNorm: {d}, kindWQ: {q, d}, kindWK: {kv, d}, kindWV: {kv, d},
		kindWO: {d, q}, kindFFNNorm: {d}, kindW1: {h, d}, kindW2: {d, h}, kindW3: {h, d},
		kindFinalNorm: {d}, kindRope: {2, c.SeqLen, hs / 2}, kindClassifier: {v, d},
	}
	var order []kind
	var pos int64
	switch f {
	case FormatLegacy:
		pos = legacyHeaderSize
		order = []kind{kindEmbedding, kindAttnNorm, kindWQ, kindWK, kindWV, kindWO, kindFFNNorm,
			kindW1, kindW2, kindW3, kindFinalNorm, kindRope}
	case FormatV1, FormatV2:
		pos = v1HeaderSize
		order = []kind{kindAttnNorm, kindFFNNorm, kindFinalNorm, kindEmbedding, kindWQ, kindWK, kindWV,
			kindWO, kindW1, kindW2, kindW3}
	default:
		return layout{}, fmt.Errorf("unknown format %d", f)
	}
	if !c.SharedClassifier {
		order = append(order, kindClassifier)
	}
	var lay layout
	for _, k := range order {
		b := &block{kind: k, typ: model.StorageF32, shape: shapes[k], off: pos, count: 1}
		if kinds[k].perLayer {
			b.count = c.NLayers
		}
		n := int64(1)
		for _, s := range b.shape {
			n *= int64(s) // at most three factors of 2^20, the first 2
		}
		if f == FormatV2 && len(b.shape) == 2 {
			b.typ, b.groupSize = model.StorageLlama2cQ8, gs
		}
		var ok bool
		if b.stride, ok = b.typ.Bytes(n, b.groupSize); !ok {
			return layout{}, fmt.Errorf("%s: %d values do not fill whole groups of %d", kinds[k].label, n, gs)
		}
		all, ok := mul64(b.stride, int64(b.count))
		if !ok || pos > math.MaxInt64-all {
			return layout{}, errOverflow
		}
		pos += all
		lay.blocks[k] = b
	}
	lay.size = pos
	return lay, nil
}

// resolve maps a canonical tensor name to its block and layer, or reports
// that a llama2.c file has no such tensor.
func (lay *layout) resolve(name string) (*block, int, bool) {
	layer := 0
	pattern := name
	if rest, ok := strings.CutPrefix(name, "blk."); ok {
		num, suffix, ok := strings.Cut(rest, ".")
		l, err := strconv.Atoi(num)
		if !ok || err != nil || l < 0 || strconv.Itoa(l) != num {
			return nil, 0, false
		}
		layer, pattern = l, "blk.%d."+suffix
	}
	for k := range numKinds {
		if kinds[k].tensor != pattern || kinds[k].tensor == "" {
			continue
		}
		b := lay.blocks[k]
		if b == nil || layer >= b.count || (!kinds[k].perLayer && layer != 0) {
			return nil, 0, false
		}
		return b, layer, true
	}
	return nil, 0, false
}
