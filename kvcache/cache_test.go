package kvcache

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

func smallConfig(blocks, bs int) Config {
	return Config{NumLayers: 2, NumKVHeads: 2, HeadDim: 3, BlockSize: bs, NumBlocks: blocks, DType: tensor.F32}
}

func mustNew(t *testing.T, led *tensor.Ledger, cfg Config) *Cache {
	t.Helper()
	c, err := New(led, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func check(t *testing.T, c *Cache) {
	t.Helper()
	if err := c.CheckConsistency(); err != nil {
		t.Fatal(err)
	}
}

func seqTokens(n, base int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = base + i
	}
	return out
}

func TestNewAllocatesAccountedTensors(t *testing.T) {
	led := tensor.NewLedger()
	cfg := Config{NumLayers: 3, NumKVHeads: 2, HeadDim: 4, BlockSize: 8, MemoryBudget: 64 << 10, DType: tensor.F16}
	c := mustNew(t, led, cfg)
	// 2·3·2·4·2 = 96 bytes per token, 768 per block: 65536/768 = 85 blocks.
	if c.BytesPerToken() != 96 || c.NumBlocks() != 85 || c.Config().NumBlocks != 85 {
		t.Fatalf("bytes/token %d blocks %d", c.BytesPerToken(), c.NumBlocks())
	}
	st := led.Stats()
	if st.Allocations != 6 || st.BytesAllocated != 85*768 || st.LiveBytes != 85*768 {
		t.Fatalf("accounting %v, want 6 allocations of %d bytes in all", st, 85*768)
	}
	want := []int{85, 8, 2, 4}
	for l := 0; l < 3; l++ {
		k, v := c.Layer(l)
		if k == nil || v == nil || !slices.Equal(k.Shape(), want) || !slices.Equal(v.Shape(), want) || k.DType() != tensor.F16 ||
			!k.IsContiguous() || tensor.SharesStorage(k, v) {
			t.Fatalf("layer %d: %v %v", l, k, v)
		}
		if !slices.Equal(k.Strides(), c.Layout().Strides()) {
			t.Fatalf("layer %d strides %v, layout says %v", l, k.Strides(), c.Layout().Strides())
		}
	}
	if k, v := c.Layer(3); k != nil || v != nil {
		t.Fatal("Layer(3) of a 3-layer cache is not nil")
	}
	if k, _ := c.Layer(-1); k != nil {
		t.Fatal("Layer(-1) is not nil")
	}
	s := c.Stats()
	if s.NumBlocks != 85 || s.FreeBlocks != 85 || s.UsedBlocks != 0 || s.BytesPerToken != 96 || s.BytesPerBlock != 768 {
		t.Fatalf("stats %v", s)
	}
	c.Release()
	if led.Stats().LiveBytes != 0 {
		t.Fatalf("live bytes %d after Release", led.Stats().LiveBytes)
	}
}

func TestSlotMappingAndGrowth(t *testing.T) {
	c := mustNew(t, nil, smallConfig(16, 4))
	prompt := seqTokens(6, 100)
	cached, err := c.AddSequence(1, prompt)
	if err != nil || cached != 0 {
		t.Fatalf("AddSequence = %d, %v", cached, err)
	}
	// The whole prompt is reserved up front: ⌈6/4⌉ = 2 blocks.
	table := must(c.BlockTable(1))
	if len(table) != 2 || c.FreeBlocks() != 14 || must(c.ContextLen(1)) != 0 {
		t.Fatalf("table %v free %d", table, c.FreeBlocks())
	}
	slots, err := c.Slots(1, 0, 6)
	if err != nil {
		t.Fatal(err)
	}
	// slot = table[p/4]·4 + p%4, written out by hand.
	want := []int32{table[0] * 4, table[0]*4 + 1, table[0]*4 + 2, table[0]*4 + 3, table[1] * 4, table[1]*4 + 1}
	if !slices.Equal(slots, want) {
		t.Fatalf("slots %v, want %v", slots, want)
	}
	if err := c.CheckSlots(1, 0, slots); err != nil {
		t.Fatal(err)
	}
	// Decode: positions 6, 7 fit in block 1; position 8 takes a new block.
	for pos := 6; pos < 13; pos++ {
		s, err := c.Slots(1, pos, 1)
		if err != nil {
			t.Fatal(err)
		}
		table = must(c.BlockTable(1))
		if wantBlocks := pos/4 + 1; len(table) != wantBlocks {
			t.Fatalf("pos %d: %d blocks, want %d", pos, len(table), wantBlocks)
		}
		if s[0] != table[pos/4]*4+int32(pos%4) {
			t.Fatalf("pos %d: slot %d, table %v", pos, s[0], table)
		}
		check(t, c)
	}
	if must(c.ContextLen(1)) != 13 || c.FreeBlocks() != 12 {
		t.Fatalf("ctx %d free %d", must(c.ContextLen(1)), c.FreeBlocks())
	}
	// A second sequence never receives a slot of the first.
	if _, err := c.AddSequence(2, seqTokens(9, 0)); err != nil {
		t.Fatal(err)
	}
	s2 := must(c.Slots(2, 0, 9))
	all := append(must(c.Slots(1, 13, 0)), s2...)
	for p := 0; p < 13; p++ {
		all = append(all, must(c.Layout().Slot(must(c.BlockTable(1)), p)))
	}
	sorted := slices.Clone(all)
	slices.Sort(sorted)
	if len(slices.Compact(sorted)) != len(all) {
		t.Fatalf("two positions share a slot: %v", all)
	}
	if err := c.Free(1); err != nil {
		t.Fatal(err)
	}
	if err := c.Free(2); err != nil {
		t.Fatal(err)
	}
	if c.FreeBlocks() != 16 || len(c.Sequences()) != 0 {
		t.Fatalf("free %d seqs %v after freeing everything", c.FreeBlocks(), c.Sequences())
	}
	check(t, c)
}

func TestOutOfBlocksLeavesStateUnchanged(t *testing.T) {
	c := mustNew(t, nil, smallConfig(5, 4))
	if _, err := c.AddSequence(1, seqTokens(10, 0)); err != nil { // 3 blocks
		t.Fatal(err)
	}
	must(c.Slots(1, 0, 10))
	if _, err := c.AddSequence(3, seqTokens(4, 90)); err != nil { // 1 block
		t.Fatal(err)
	}
	before, tb := c.Stats(), must(c.BlockTable(1))
	// Needs 2 blocks, 1 free.
	if _, err := c.AddSequence(2, seqTokens(5, 50)); !errors.Is(err, ErrOutOfBlocks) {
		t.Fatalf("AddSequence err = %v, want ErrOutOfBlocks", err)
	}
	// Positions 10 … 17 need blocks 3 and 4: only one is free.
	if _, err := c.Slots(1, 10, 8); !errors.Is(err, ErrOutOfBlocks) {
		t.Fatalf("Slots err = %v, want ErrOutOfBlocks", err)
	}
	if after := c.Stats(); after != before || !slices.Equal(must(c.BlockTable(1)), tb) || must(c.ContextLen(1)) != 10 {
		t.Fatalf("state changed by failed calls: %v → %v", before, after)
	}
	if c.CanAdmit(5) || !c.CanAdmit(4) {
		t.Fatal("CanAdmit disagrees with the free block count")
	}
	// Preempt sequence 1: everything comes back.
	if err := c.Free(1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddSequence(2, seqTokens(5, 50)); err != nil {
		t.Fatal(err)
	}
	check(t, c)
}

func TestNeverFitsAndBadArguments(t *testing.T) {
	c := mustNew(t, nil, smallConfig(3, 4))
	if err := c.CanEverFit(12); err != nil {
		t.Fatalf("12 tokens in 3×4 slots: %v", err)
	}
	err := c.CanEverFit(13)
	if !errors.Is(err, ErrExceedsPool) || !strings.Contains(err.Error(), "4 blocks") {
		t.Fatalf("CanEverFit(13) = %v", err)
	}
	if c.CanEverFit(-1) == nil || c.CanAdmit(0) || c.CanAdmit(13) {
		t.Fatal("negative / empty / oversized lengths accepted")
	}
	if _, err := c.AddSequence(1, seqTokens(13, 0)); !errors.Is(err, ErrExceedsPool) {
		t.Fatalf("AddSequence of 13 tokens: %v", err)
	}
	if _, err := c.AddSequence(1, nil); err == nil || !strings.Contains(err.Error(), "empty prompt") {
		t.Fatalf("empty prompt: %v", err)
	}
	if _, err := c.AddSequence(1, seqTokens(5, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddSequence(1, seqTokens(2, 0)); !errors.Is(err, ErrSequenceExists) {
		t.Fatalf("duplicate id: %v", err)
	}
	for name, err := range map[string]error{
		"slots":     func() error { _, err := c.Slots(9, 0, 1); return err }(),
		"commit":    c.Commit(9, nil),
		"free":      c.Free(9),
		"fork":      c.Fork(9, 10),
		"truncate":  c.Truncate(9, 0),
		"table":     func() error { _, err := c.BlockTable(9); return err }(),
		"ctxlen":    func() error { _, err := c.ContextLen(9); return err }(),
		"checkslot": c.CheckSlots(9, 0, nil),
	} {
		if !errors.Is(err, ErrUnknownSequence) || !strings.Contains(err.Error(), "sequence 9") {
			t.Errorf("%s on unknown id: %v", name, err)
		}
	}
	if _, err := c.Slots(1, 3, 1); err == nil || !strings.Contains(err.Error(), "context length 0") {
		t.Fatalf("Slots at the wrong start: %v", err)
	}
	if _, err := c.Slots(1, 0, -1); err == nil {
		t.Fatal("negative count accepted")
	}
	if _, err := c.Slots(1, 0, 13); !errors.Is(err, ErrExceedsPool) {
		t.Fatalf("Slots beyond the pool: %v", err)
	}
	if _, err := c.Slots(1, 0, int(^uint(0)>>1)); !errors.Is(err, ErrExceedsPool) {
		t.Fatalf("Slots of MaxInt tokens: %v", err)
	}
	if s, err := c.Slots(1, 0, 0); err != nil || len(s) != 0 {
		t.Fatalf("zero slots: %v %v", s, err)
	}
	slots := must(c.Slots(1, 0, 5))
	// A slot of a block the sequence does not hold there.
	bad := slices.Clone(slots)
	bad[4] = (bad[4]/4+1)%3*4 + bad[4]%4
	if err := c.CheckSlots(1, 0, bad); err == nil || !strings.Contains(err.Error(), "position 4") {
		t.Fatalf("CheckSlots of a foreign block: %v", err)
	}
	if err := c.CheckSlots(1, 4, []int32{slots[4], slots[4] + 1}); err == nil || !strings.Contains(err.Error(), "outside its context") {
		t.Fatalf("CheckSlots past the context: %v", err)
	}
	if err := c.Fork(1, 1); !errors.Is(err, ErrSequenceExists) {
		t.Fatalf("fork onto itself: %v", err)
	}
	if err := c.Truncate(1, 6); err == nil {
		t.Fatal("truncate beyond the context accepted")
	}
	if _, err := c.RefCount(3); err == nil {
		t.Fatal("RefCount of block 3 of 3 accepted")
	}
	if err := c.Write(2, nil, nil, nil); err == nil || !strings.Contains(err.Error(), "layer 2") {
		t.Fatalf("Write to layer 2 of 2: %v", err)
	}
	check(t, c)
}

// readToken returns K and V of layer l at position pos of a sequence,
// read through its block table with the 4-d At accessor.
func readToken(t *testing.T, c *Cache, id, l, pos int) (k, v []float32) {
	t.Helper()
	slot := must(c.Layout().Slot(must(c.BlockTable(id)), pos))
	kc, vc := c.Layer(l)
	bs := c.BlockSize()
	for h := 0; h < c.Layout().NumKVHeads; h++ {
		for d := 0; d < c.Layout().HeadDim; d++ {
			k = append(k, must(kc.At(int(slot)/bs, int(slot)%bs, h, d)))
			v = append(v, must(vc.At(int(slot)/bs, int(slot)%bs, h, d)))
		}
	}
	return k, v
}

// kvValue is the synthetic "K/V" of position pos in layer l: any function
// that differs per (seq content, position, layer, head, dim) does.
func kvValue(tok, pos, l, i int, isV bool) float32 {
	x := float32(tok*1000 + pos*10 + l)
	if isV {
		x = -x
	}
	return x + float32(i)/8
}

// writeStep writes the synthetic K/V of tokens[start:start+len(slots)]
// into every layer with Cache.Write.
func writeStep(t *testing.T, c *Cache, tokens []int, start int, slots []int32) {
	t.Helper()
	L := c.Layout()
	w := L.NumKVHeads * L.HeadDim
	for l := 0; l < c.Config().NumLayers; l++ {
		kd := make([]float32, len(slots)*w)
		vd := make([]float32, len(slots)*w)
		for j := range slots {
			for i := 0; i < w; i++ {
				kd[j*w+i] = kvValue(tokens[start+j], start+j, l, i, false)
				vd[j*w+i] = kvValue(tokens[start+j], start+j, l, i, true)
			}
		}
		key := must(tensor.FromFloat32(nil, tensor.F32, kd, len(slots), L.NumKVHeads, L.HeadDim))
		val := must(tensor.FromFloat32(nil, tensor.F32, vd, len(slots), L.NumKVHeads, L.HeadDim))
		if err := c.Write(l, key, val, slots); err != nil {
			t.Fatal(err)
		}
	}
}

// checkSeq reads every position of a sequence back through its table.
func checkSeq(t *testing.T, c *Cache, id int, tokens []int) {
	t.Helper()
	n := must(c.ContextLen(id))
	for pos := 0; pos < n; pos++ {
		for l := 0; l < c.Config().NumLayers; l++ {
			k, v := readToken(t, c, id, l, pos)
			for i := range k {
				if k[i] != kvValue(tokens[pos], pos, l, i, false) || v[i] != kvValue(tokens[pos], pos, l, i, true) {
					t.Fatalf("sequence %d position %d layer %d element %d: K %g V %g, want %g %g", id, pos, l, i,
						k[i], v[i], kvValue(tokens[pos], pos, l, i, false), kvValue(tokens[pos], pos, l, i, true))
				}
			}
		}
	}
}

func TestWriteAndReadBackThroughBlockTable(t *testing.T) {
	c := mustNew(t, nil, smallConfig(12, 4))
	toks := map[int][]int{1: seqTokens(7, 10), 2: seqTokens(3, 70)}
	for _, id := range []int{1, 2} {
		must(c.AddSequence(id, toks[id]))
		writeStep(t, c, toks[id], 0, must(c.Slots(id, 0, len(toks[id]))))
	}
	for step := 0; step < 6; step++ { // interleaved decode
		for _, id := range []int{1, 2} {
			pos := len(toks[id])
			toks[id] = append(toks[id], 500+step)
			writeStep(t, c, toks[id], pos, must(c.Slots(id, pos, 1)))
		}
	}
	checkSeq(t, c, 1, toks[1])
	checkSeq(t, c, 2, toks[2])
	check(t, c)
}

// Usage is used blocks over all blocks, and 0 for a pool of none.
func TestStatsUsage(t *testing.T) {
	for _, c := range []struct {
		s    Stats
		want float64
	}{{Stats{}, 0}, {Stats{NumBlocks: 8, UsedBlocks: 2}, 0.25}, {Stats{NumBlocks: 8, UsedBlocks: 8}, 1}} {
		if got := c.s.Usage(); got != c.want {
			t.Errorf("%d of %d blocks used: usage %v, want %v", c.s.UsedBlocks, c.s.NumBlocks, got, c.want)
		}
	}
}
