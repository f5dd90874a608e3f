package attention

import (
	"math"
	"testing"

	"github.com/stride-lm/stride/tensor"
)

// FuzzAttend builds a batch, shapes and cache from arbitrary bytes: most
// are invalid (rows outside T, overlapping sequences, short or
// out-of-range block tables, slots that disagree with them). Neither path
// may panic; both must accept or refuse the same batches; and when they
// accept one whose sequences share no block, their outputs must agree.
func FuzzAttend(f *testing.F) {
	// Valid batches (decoded field by field: heads, D, block size, blocks,
	// sequences, then per sequence qlen, extra context, table, trim,
	// overlap; then padding and slot perturbation).
	f.Add([]byte{2, 7, 3, 10, 2, 4, 0, 4, 1, 0, 1, 6, 6, 8, 1, 0, 1, 1})               // GQA prefill + decode, padding row
	f.Add([]byte{1, 4, 4, 6, 3, 3, 7, 3, 1, 2, 0, 5, 0, 5, 3, 0, 1, 0, 2, 1, 0, 0, 1}) // MQA, prefill on context
	f.Add([]byte{3, 2, 0, 8, 1, 2, 3, 8, 7, 6, 5, 4, 1, 0, 0, 1})                      // MHA, block size 1
	// Invalid ones.
	f.Add([]byte{0, 7, 3, 9, 2, 3, 5, 1, 2, 1, 0})
	f.Add([]byte{2, 3, 4, 12, 3, 2, 0, 1, 7, 2, 3, 4, 5, 6, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		pos := 0
		next := func() int {
			if pos >= len(data) {
				return 0
			}
			pos++
			return int(data[pos-1])
		}
		heads := [][2]int{{1, 1}, {2, 1}, {4, 2}, {3, 3}}[next()%4]
		H, KVH, D := heads[0], heads[1], 1+next()%9
		bs := 1 + next()%6
		numBlocks := next() % 24
		b := &Batch{}
		row := 0
		for s, n := 0, next()%4; s < n; s++ {
			ql := next() % 6
			cl := ql + next()%12
			table := make([]int32, (cl+bs-1)/bs)
			for j := range table {
				table[j] = int32(next()%(numBlocks+2)) - 1 // sometimes −1 or past the end
			}
			if next()%7 == 0 && len(table) > 0 {
				table = table[:len(table)-1]
			}
			b.QueryStart = append(b.QueryStart, row-next()%2) // sometimes overlapping
			b.QueryLen = append(b.QueryLen, ql)
			b.ContextLen = append(b.ContextLen, cl)
			b.BlockTables = append(b.BlockTables, table)
			row += ql
		}
		T := row + next()%2
		b.SlotMapping = make([]int32, T)
		for i := range b.SlotMapping {
			b.SlotMapping[i] = -1
		}
		for s := range b.QueryLen {
			for j := 0; j < b.QueryLen[s]; j++ {
				t, p := b.QueryStart[s]+j, b.ContextLen[s]-b.QueryLen[s]+j
				if t < 0 || t >= T || p/bs >= len(b.BlockTables[s]) {
					continue
				}
				b.SlotMapping[t] = b.BlockTables[s][p/bs]*int32(bs) + int32(p%bs)
			}
		}
		if next()%5 == 0 && T > 0 {
			b.SlotMapping[next()%T] = int32(next()) - 3
		}

		run := func(p Path) ([]float32, error) {
			led := tensor.NewLedger()
			kc := tensor.Must(tensor.Randn(led, tensor.F32, 1, numBlocks, bs, KVH, D))
			vc := tensor.Must(tensor.Randn(led, tensor.F32, 2, numBlocks, bs, KVH, D))
			q := tensor.Must(tensor.Randn(led, tensor.F32, 3, T, H, D))
			k := tensor.Must(tensor.Randn(led, tensor.F32, 4, T, KVH, D))
			v := tensor.Must(tensor.Randn(led, tensor.F32, 5, T, KVH, D))
			out, err := p.Attend(q, k, v, kc, vc, b, nil)
			if err != nil {
				return nil, err
			}
			return out.Float32s()
		}
		fo, ferr := run(NewFused(Options{QueryTile: 3, KeyTile: 5}))
		no, nerr := run(NewNaive(Options{}))
		if (ferr == nil) != (nerr == nil) {
			t.Fatalf("fused error %v, naive error %v", ferr, nerr)
		}
		if ferr != nil || sharesBlocks(b, bs) {
			return
		}
		for i := range fo {
			if d := math.Abs(float64(fo[i] - no[i])); d > 1e-4*(1+math.Abs(float64(no[i]))) || math.IsNaN(d) {
				t.Fatalf("element %d: fused %v, naive %v", i, fo[i], no[i])
			}
		}
	})
}

// sharesBlocks reports whether two sequences use the same cache block, in
// which case one's new K/V may overwrite what the other reads and the
// naive path's fresh-prefill shortcut legitimately differs.
func sharesBlocks(b *Batch, bs int) bool {
	owner := map[int32]int{}
	for s, table := range b.BlockTables {
		for _, blk := range table[:(b.ContextLen[s]+bs-1)/bs] {
			if o, ok := owner[blk]; ok && o != s {
				return true
			}
			owner[blk] = s
		}
	}
	return false
}
