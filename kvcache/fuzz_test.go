package kvcache

import (
	"encoding/binary"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// FuzzCacheOps drives a small Cache with an arbitrary stream of calls and
// arguments (negative, huge, unknown ids, wrong starts): no call may
// panic, and the bookkeeping must stay consistent after every one of them.
func FuzzCacheOps(f *testing.F) {
	f.Add([]byte{0, 1, 9, 1, 1, 0, 5, 2, 1, 3, 4, 1, 0, 7})
	f.Add([]byte{0, 1, 20, 0, 2, 20, 3, 1, 2, 1, 1, 0, 1, 6, 2})
	f.Add([]byte{0, 0, 255, 1, 0, 128, 255, 255, 255, 127, 5, 0, 4})
	f.Add([]byte{0, 1, 7, 1, 2, 0, 2, 9, 0, 7, 1, 8, 1, 3, 2, 0, 1, 2, 1, 8, 2, 1, 1, 9, 3, 9, 1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := New(nil, Config{NumLayers: 1, NumKVHeads: 1, HeadDim: 1, BlockSize: 3, NumBlocks: 6, DType: tensor.F32})
		if err != nil {
			t.Fatal(err)
		}
		var step Step
		next := func() int {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			if b >= 250 && len(data) >= 8 { // occasionally a full 64-bit value
				v := int(int64(binary.LittleEndian.Uint64(data)))
				data = data[8:]
				return v
			}
			return int(int8(b)) // small, possibly negative
		}
		for len(data) > 0 {
			op, id := (next()&15)%10, next()&3
			switch op {
			case 0:
				n := next() & 31
				prompt := make([]int, n)
				for i := range prompt {
					prompt[i] = next() & 3
				}
				c.AddSequence(id, prompt)
			case 1:
				c.Slots(id, next(), next())
			case 2:
				if n, err := c.ContextLen(id); err == nil {
					toks := make([]int, n)
					for i := range toks {
						toks[i] = next() & 3
					}
					c.Commit(id, toks)
				}
			case 3:
				c.Fork(id, next()&3)
			case 4:
				c.Truncate(id, next())
			case 5:
				c.Free(id)
			case 6:
				c.CheckSlots(id, next(), []int32{int32(next()), int32(next())})
				c.CanEverFit(next())
				c.CanAdmit(next())
				c.RefCount(next())
			case 7:
				if n, err := c.ContextLen(id); err == nil && n > 0 {
					key := must(tensor.Zeros(nil, tensor.F32, 1, 1, 1))
					c.Write(next(), key, key, []int32{int32(next())})
				}
			case 8: // a step of up to four sequences, ids possibly repeated or unknown
				seqs := []StepSeq{{ID: id, N: next()}}
				for range next() & 3 {
					seqs = append(seqs, StepSeq{ID: next() & 3, N: next()})
				}
				before := c.Stats()
				if err := c.AppendStep(&step, seqs); err != nil {
					if after := c.Stats(); after != before {
						t.Fatalf("a failed step (%v) changed the cache: %v → %v", err, before, after)
					}
				} else if len(step.BlockTables) != len(seqs) {
					t.Fatalf("%d tables for %d sequences", len(step.BlockTables), len(seqs))
				}
			case 9:
				prompt := make([]int, next()&31)
				for i := range prompt {
					prompt[i] = next() & 3
				}
				c.PendingPrefixBlocks(prompt)
			}
			if err := c.CheckConsistency(); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range c.Sequences() {
			c.Free(id)
		}
		if st := c.Stats(); st.FreeBlocks != 6 {
			t.Fatalf("leak: %v", st)
		}
	})
}
