package engine

import (
	"fmt"

	"github.com/stride-lm/stride/tensor"
)

// tokenHistory is one sequence's tokens (BOS, prompt, generated) as an
// int32 tensor, with an unfold(0, n, 1) view of its n-token windows for
// every n the proposer tries. The buffer is allocated once, at the most
// tokens the sequence can reach, and so are the views: a window i is
// ids[i : i+n], read through the view's strides, and only windows
// i ≤ len−n hold tokens yet. Appending a token writes one int32; no step
// allocates.
//
// With history h = [t0 … t_{L−1}] and n = 3, windows = h.unfold(0, 3, 1)
// has shape [cap−2, 3] and strides [1, 1]: windows[i] = (t_i, t_i+1,
// t_i+2), every window sharing h's storage (infer layout 'h =
// empty(24, dtype=torch.int32); w = h.unfold(0, 3, 1)' shows the view).
type tokenHistory struct {
	ids     []int32          // the storage of hist; ids[:n] are the tokens
	n       int              // tokens held
	hist    *tensor.Tensor   // [cap] int32
	windows []*tensor.Tensor // windows[j] = hist.unfold(0, minN+j, 1)
	minN    int
}

// newTokenHistory returns an empty history with room for capacity tokens
// and window views of sizes minN … maxN (sizes above capacity are
// skipped: no window of them can exist).
func newTokenHistory(capacity, minN, maxN int) (*tokenHistory, error) {
	h := &tokenHistory{ids: make([]int32, capacity), minN: minN}
	var err error
	if h.hist, err = tensor.WrapInt32(nil, h.ids, capacity); err != nil {
		return nil, fmt.Errorf("token history: %w", err)
	}
	for n := minN; n <= min(maxN, capacity); n++ {
		w, err := h.hist.Unfold(0, n, 1)
		if err != nil {
			return nil, fmt.Errorf("token history: %w", err)
		}
		h.windows = append(h.windows, w)
	}
	return h, nil
}

// sync appends the tokens of tokens not yet in the history (tokens only
// grow, so the history is always a prefix of them).
func (h *tokenHistory) sync(tokens []int) {
	for ; h.n < len(tokens) && h.n < len(h.ids); h.n++ {
		h.ids[h.n] = int32(tokens[h.n])
	}
}

// ngramProposer is prompt-lookup drafting (vLLM's NgramProposer, HF's
// PromptLookupCandidateGenerator): the sequence's last n tokens, for n
// from maxN down to minN, are looked up among its earlier tokens, and the
// k tokens that followed their most recent earlier occurrence are the
// draft. The longest n that matches wins.
//
// The copy may overlap itself, as LZ77's does: when the occurrence is p
// tokens back and p < k, only p tokens follow it in the history, and the
// draft goes on with its own first tokens (draft[j] = draft[j−p]). A
// sequence in a loop of period p thus drafts all k tokens of the loop's
// continuation instead of p.
type ngramProposer struct {
	k, minN, maxN int
}

// propose appends to dst (and returns) at most limit draft tokens for
// history h: the tokens that followed the most recent earlier occurrence
// of h's longest matching suffix n-gram, continued by overlapping copy
// past the history's end, and that n (0 when none matched). It reads the windows through the unfold view's strides
// (window i, element j is at offset + i·stride0 + j·stride1 of the
// storage), comparing each window with the suffix window without copying
// either; the scan is O(len·n) per n tried, with an early exit at the
// first mismatching element, and allocates nothing.
func (p *ngramProposer) propose(dst []int, h *tokenHistory, limit int) ([]int, int) {
	limit = min(limit, p.k)
	if limit <= 0 {
		return dst, 0
	}
	L := h.n
	for n := min(p.maxN, L-1); n >= p.minN; n-- {
		w := h.windows[n-h.minN]
		ids := w.Storage().Int32s()
		off := w.Offset()
		s0, _ := w.Stride(0)
		s1, _ := w.Stride(1)
		suffix := off + (L-n)*s0 // the window of the last n tokens
		// Most recent first: window i is followed by token i+n, so the
		// last candidate is i = L−n−1 (its successor is the suffix's
		// first token, still an earlier occurrence).
		for i := L - n - 1; i >= 0; i-- {
			base := off + i*s0
			j := 0
			for j < n && ids[base+j*s1] == ids[suffix+j*s1] {
				j++
			}
			if j < n {
				continue
			}
			start := len(dst)
			for t := i + n; t < i+n+limit; t++ {
				if t < L {
					dst = append(dst, int(h.ids[t]))
				} else {
					dst = append(dst, dst[start+t-L]) // the draft's own token p back
				}
			}
			return dst, n
		}
	}
	return dst, 0
}
