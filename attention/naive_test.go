package attention

import (
	"testing"

	"github.com/stride-lm/stride/tensor"
)

func TestNaiveMatchesReference(t *testing.T) {
	for _, s := range equivalenceCases() {
		t.Run(s.name, func(t *testing.T) {
			tc := buildCase(t, s)
			out, err := NewNaive(Options{}).Attend(tc.q, tc.k, tc.v, tc.kCache, tc.vCache, tc.batch, nil)
			if err != nil {
				t.Fatal(err)
			}
			// The reference attends over the rounded cache contents, and
			// so does the naive path, for a fresh prefill as for cached
			// context: the same tolerance as the fused path, whatever the
			// cache dtype.
			checkOutput(t, tc, out, 1e-5)
			checkCacheWrite(t, tc)
		})
	}
}

// naiveBytes is the analytic byte count of the naive path's copies on a
// batch: the cache write, and per group of B sequences with S new tokens
// and C context, the KV gather (when C > S, or the cache is 16-bit), the GQA repeat_interleave
// (g× the KV), the contiguous() of the output (unless S = 1, when the
// transposed [B, 1, H, D] is contiguous already), and the final assembly
// when the groups do not make up the output alone.
func naiveBytes(tc *testCase) (copied int64, ops int64) {
	s := tc.spec
	H, KVH, D := s.H, s.KVH, s.D
	copied = int64(2 * tc.written * KVH * D * 4)
	ops = 2
	groups := naiveGroups(tc.batch)
	for _, g := range groups {
		if g.C != g.S || s.cacheDType != tensor.F32 { // gathered, not viewed
			copied += 2 * int64(g.B*KVH*g.C*D*4)
			ops += 2
		}
		if H != KVH {
			copied += 2 * int64(g.B*H*g.C*D*4)
			ops += 2
		}
		if g.S > 1 && H > 1 { // [B, 1, H, D] is contiguous already
			copied += int64(g.B * g.S * H * D * 4)
			ops++
		}
	}
	if !(len(groups) == 1 && groups[0].B*groups[0].S == tc.T) {
		for _, g := range groups {
			copied += int64(g.B * g.S * H * D * 4)
			ops++
		}
	}
	return copied, ops
}

func TestNaiveCopiesMatchAnalyticBytes(t *testing.T) {
	cases := []caseSpec{
		{name: "mha-prefill", H: 4, KVH: 4, D: 8, bs: 16, seqs: []seqSpec{{10, 10}, {10, 10}}, seed: 1},
		{name: "gqa-prefill", H: 12, KVH: 4, D: 8, bs: 16, seqs: []seqSpec{{10, 10}, {10, 10}}, seed: 2},
		{name: "gqa-decode", H: 12, KVH: 4, D: 8, bs: 5, seqs: []seqSpec{{1, 33}, {1, 33}, {1, 7}}, seed: 3},
		{name: "mqa-varlen-padded", H: 4, KVH: 1, D: 8, bs: 5, seqs: []seqSpec{{6, 6}, {2, 20}, {1, 9}}, padding: true, seed: 4},
	}
	for _, s := range cases {
		t.Run(s.name, func(t *testing.T) {
			tc := buildCase(t, s)
			before := tc.led.Stats()
			tr := tensor.NewTrace(s.name)
			if _, err := NewNaive(Options{}).Attend(tc.q, tc.k, tc.v, tc.kCache, tc.vCache, tc.batch, tr); err != nil {
				t.Fatal(err)
			}
			d := tc.led.Stats().Sub(before)
			wantCopied, wantOps := naiveBytes(tc)
			if d.BytesCopied != wantCopied || d.CopyOps != wantOps {
				t.Fatalf("copied %d bytes in %d ops; analytic count is %d bytes in %d ops", d.BytesCopied, d.CopyOps, wantCopied, wantOps)
			}
			// The trace's per-step bytes add up to what the Ledger saw.
			var trCopied, trAlloc int64
			for _, st := range tr.Steps {
				trCopied += st.BytesCopied
				trAlloc += st.BytesAllocated
			}
			if trCopied != d.BytesCopied || trAlloc != d.BytesAllocated {
				t.Fatalf("trace rows sum to %d copied / %d allocated; the Ledger counted %d / %d",
					trCopied, trAlloc, d.BytesCopied, d.BytesAllocated)
			}
			// Every intermediate but the returned output is released.
			if d.LiveBytes-before.LiveBytes > int64(tc.T*s.H*s.D*4) {
				t.Fatalf("%d bytes still live after the step; only the [T, H·D] output should be", d.LiveBytes-before.LiveBytes)
			}
		})
	}
}

// With one group of equal sequences and no padding, the naive result is
// the [B, S, H·D] output of the last view itself (no assembly copy).
func TestNaiveSingleGroupReturnsView(t *testing.T) {
	s := caseSpec{H: 4, KVH: 4, D: 8, bs: 16, seqs: []seqSpec{{6, 6}, {6, 6}}, seed: 9}
	tc := buildCase(t, s)
	tr := tensor.NewTrace("one group")
	out, err := NewNaive(Options{}).Attend(tc.q, tc.k, tc.v, tc.kCache, tc.vCache, tc.batch, tr)
	if err != nil {
		t.Fatal(err)
	}
	last := tr.Steps[len(tr.Steps)-1]
	if last.Op != "out = out.view(2, 6, 32)" || !tensor.SharesStorage(out, out) {
		t.Fatalf("last step %q", last.Op)
	}
	if out.Shape()[0] != 12 || out.Strides()[0] != 32 {
		t.Fatalf("output %v", out)
	}
}
