package llama2c

import (
	"fmt"
	"math"

	"github.com/stride-lm/stride/model"
)

// maxGroupSize bounds a version-2 header's group size (as Config bounds
// every width).
const maxGroupSize = 1 << 20

// validate checks what a parsed header means against a file of size
// bytes: a valid configuration, a group size that quantizes every matrix,
// the exact size the layout implies, and a plausible seq_len. It fills in
// h.Size.
func validate(h *Header, size int64) error {
	cfg := h.Config
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid %s header: %v", h.Format, err)
	}
	if h.Format == FormatV2 {
		if err := checkGroupSize(cfg, h.GroupSize); err != nil {
			return fmt.Errorf("invalid %s header: %v", h.Format, err)
		}
	}
	lay, err := fileLayout(h.Format, cfg, h.GroupSize)
	if err != nil {
		return fmt.Errorf("invalid %s header: %v", h.Format, err)
	}
	if want := lay.size; want != size {
		hint := ""
		if h.Format == FormatLegacy {
			other := cfg
			other.SharedClassifier = !cfg.SharedClassifier
			if alt, err := fileLayout(h.Format, other, 0); err == nil && alt.size == size {
				hint = fmt.Sprintf(" (the size fits the %s-classifier variant, but the sign of vocab_size says %s)",
					sharedWord(other.SharedClassifier), sharedWord(cfg.SharedClassifier))
			}
		}
		extra := ""
		if h.Format == FormatV2 {
			extra = fmt.Sprintf(", group size %d", h.GroupSize)
		}
		return fmt.Errorf("file is %d bytes but its %s header (%s%s) requires exactly %d bytes (%s)%s",
			size, h.Format, describe(cfg), extra, want, model.HumanBytes(want), hint)
	}
	if err := checkSeqLen(cfg, size); err != nil {
		return fmt.Errorf("invalid %s header: %v", h.Format, err)
	}
	h.Size = size
	return nil
}

// checkGroupSize reports whether gs can quantize every matrix of c: it
// must divide dim and hidden_dim (every matrix's row length), so that no
// group straddles two rows. The error names the largest size that works,
// and the largest not above gs.
func checkGroupSize(c model.Config, gs int) error {
	if gs <= 0 || gs > maxGroupSize {
		return fmt.Errorf("group size %d must be in [1, %d]", gs, maxGroupSize)
	}
	for _, w := range []struct {
		name string
		v    int
	}{{"dim", c.Dim}, {"hidden_dim", c.HiddenDim}} {
		if w.v%gs != 0 {
			return fmt.Errorf("group size %d does not divide %s %d: groups would straddle matrix rows (%s)",
				gs, w.name, w.v, validGroupSizes(c, gs))
		}
	}
	return nil
}

// validGroupSizes describes the group sizes that work for c: the
// divisors of gcd(dim, hidden_dim), the largest being the gcd itself.
func validGroupSizes(c model.Config, asked int) string {
	g := gcd(c.Dim, c.HiddenDim)
	msg := fmt.Sprintf("valid sizes divide both dim %d and hidden_dim %d; the largest is %d", c.Dim, c.HiddenDim, g)
	if asked < g {
		below := asked
		for g%below != 0 {
			below--
		}
		msg += fmt.Sprintf(", the largest below %d is %d", asked, below)
	}
	return msg
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// A header's seq_len costs memory at run time, per position: the KV cache
// (2·n_layers·kv_dim values) and the RoPE tables. Versions 1 and 2 store
// nothing per position, so nothing in the file confirms their seq_len; the
// legacy format stores RoPE tables of seq_len·head_dim floats, which the
// exact-size check ties to the file, but with a small head_dim and many
// layers those tables are still a tiny fraction of the KV cache that
// seq_len implies. So every format's seq_len is bounded by what it makes
// the model cost: one full-length sequence's float32 KV cache may take at
// most maxKVPerFileByte times the file's bytes, or minKVBound, whichever
// is larger. (The run-time pool is sized separately and checked against
// physical memory; this only rejects headers no real model has.) Real checkpoints are far inside: Llama 2 7B (seq_len 4096) needs
// a 4.3 GB cache for a 27 GB (v1) or 7 GB (v2) file, stories15M 3.5 MB
// for 58 MB. A 17.9 MB file claiming seq_len 2^20 would need 14 GiB.
const (
	maxKVPerFileByte = 16
	minKVBound       = 1 << 30
)

// checkSeqLen applies that bound to a configuration read from a file of
// size bytes.
func checkSeqLen(c model.Config, size int64) error {
	perPos := 2 * int64(c.NLayers) * int64(c.KVDim()) * 4 // ≤ 2^43
	need, ok := mul64(perPos, int64(c.SeqLen))
	if !ok {
		need = math.MaxInt64
	}
	limit := max(int64(minKVBound), size)
	if limit <= (1<<62)/maxKVPerFileByte {
		limit = max(limit, maxKVPerFileByte*size)
	}
	if ok && need <= limit {
		return nil
	}
	fit := limit / perPos
	return fmt.Errorf("seq_len %d is implausible for a %s file: one full-length sequence would need a %s float32 KV cache, "+
		"beyond max(%d× the file, %s) = %s (seq_len %d fits)",
		c.SeqLen, model.HumanBytes(size), model.HumanBytes(need), maxKVPerFileByte, model.HumanBytes(minKVBound), model.HumanBytes(limit), fit)
}
