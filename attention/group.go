package attention

import "github.com/stride-lm/stride/tensor/kernels"

// Row groups: a speculative verify step's d+1 rows reach the kernel as
// d+1 one-row entries over the same block table at consecutive positions
// (the causal mask of one (d+1)-row query, but each row a decode row), so
// that every row has the bits a decode step gives it at its position.
// Run as separate work items, each of those rows would walk the block
// table and read the context on its own. plan merges such a run of
// entries into one work item per KV head, and runRowGroup walks the table
// once, key tile by key tile, and runs every row of the tile with the
// decode item's own tile implementation, called exactly as the decode
// item calls it: the same g query rows, the same key tile (tiles start at
// multiples of KeyTile from position 0, and a decode row's last tile ends
// at its position), the same keys, unmasked. Each row's online softmax
// thus sums in the decode order, by construction, while the tile's K and
// V come from memory once for all the rows (the second row on reads them
// from the L1 cache). What each tile implementation does with the keys is
// still done per row: the MatMul tile (4 or more query heads per KV head)
// transposes and widens the key tile again for every row, work a staging
// step shared by the rows would save. The row-gather tiles (the SIMD decode path) go
// further, in gatherGroupTile: one scoring call for all the rows, so the
// kernels can share each key's load (and at head width 8 its transposed
// staging) among them, and P·V in key segments, so each accumulator still
// gets exactly its own keys in order. TestRowGroupMatchesDecodeBits checks
// every row against the row alone, bit for bit.

// rowGroup is how many entries from s on plan may run as one row group,
// at most maxN: one-row entries whose rows and context lengths both
// count up by one from entry s's and whose block tables are the same
// slice (the same first element; the shorter ones are prefixes of the
// longest). 1 means entry s runs on its own.
func rowGroup(a *flashArgs, s, maxN int) int {
	if a.qLen[s] != 1 || len(a.blockTables[s]) == 0 {
		return 1
	}
	t0 := &a.blockTables[s][0]
	n := 1
	for ; n < maxN && s+n < len(a.qLen); n++ {
		e := s + n
		tb := a.blockTables[e]
		if a.qLen[e] != 1 || a.qStart[e] != a.qStart[s]+n || a.ctxLen[e] != a.ctxLen[s]+n ||
			len(tb) == 0 || &tb[0] != t0 {
			break
		}
	}
	return n
}

// runRowGroup computes a row-group work item: entries it.seq … it.seq+it.t1−1
// for the g query heads of KV head it.kvHead, entry i's row at position
// ctxLen[it.seq]−1+i. It loads all the rows' queries, walks the block
// table of the last entry (the longest) one key tile at a time, and hands
// each row whose position the tile reaches the tile's first
// position+1−k0 keys (at most KeyTile) as a decode item of that row does.
func runRowGroup(a *flashArgs, it *workItem, sc *scratch, kt int) error {
	tile := tileFuncs[it.tile]
	seq, kvh, n := int(it.seq), int(it.kvHead), int(it.t1)
	g, D := a.numHeads/a.numKVHeads, a.headDim
	first := a.ctxLen[seq] - 1
	loadQuery(a, sc, seq, kvh, 0, n*g, first)
	maxPos := first + n - 1
	table := a.blockTables[seq+n-1]
	sub := sc.sub
	*sub = *sc
	sub.sub = nil
	for k0 := 0; k0 <= maxPos; k0 += kt {
		nk := min(kt, maxPos+1-k0)
		walkTable(a, sc.krow[:nk], table, k0, kvh)
		if it.tile == tileGather {
			if err := gatherGroupTile(a, sc, k0, nk, first, n); err != nil {
				return err
			}
			continue
		}
		for i := max(0, k0-first); i < n; i++ {
			lim := min(first+i+1-k0, nk) // the decode row's tile: keys k0 … its position
			r := i * g
			sub.q, sub.acc = sc.q[r*D:], sc.acc[r*D:]
			sub.m, sub.l, sub.pos = sc.m[r:], sc.l[r:], sc.pos[r:]
			krow := sc.gkrow[:lim] // the tile may overwrite its offsets
			copy(krow, sc.krow[:lim])
			t := &sub.tile
			*t = keyTile{rows: g, k0: k0, nk: lim, krow: krow}
			if err := tile(a, sub, t); err != nil {
				return err
			}
		}
	}
	writeOutput(a, sc, seq, kvh, 0, n*g)
	return nil
}

// gatherGroupTile is gatherTile for the rows of a row group, n entries
// from position first, over the key tile of nk keys from k0 (walked into
// sc.krow): every row the tile reaches is scored against all nk keys in
// one kernels.DotRowsN call (each score depends on its query row and key
// alone, so a row's first lim scores are those its decode item computes
// over its lim keys), then each row's online softmax runs over its own lim
// keys (kernels.RowMax, raiseMax, expSub, as softmaxTile does for the
// decode item), and P·V goes through kernels.AxpyRowsN in segments of
// keys: keys [lim_{i−1}, lim_i) for the rows of entries i on. A row's
// accumulator thus gets exactly its lim keys' fused multiply-adds in key
// order, the decode item's chain, while each key's row is loaded once for
// all the rows that use it.
func gatherGroupTile(a *flashArgs, sc *scratch, k0, nk, first, n int) error {
	D, g := a.headDim, a.numHeads/a.numKVHeads
	t := &sc.tile
	*t = keyTile{rows: n * g, k0: k0, nk: nk, krow: sc.krow[:nk]}
	kBuf, vBuf, krow, vrow := directRows(a, sc, t)
	i0 := max(0, k0-first) // the first entry whose position the tile reaches
	r0, R := i0*g, (n-i0)*g
	s := sc.s[:R*nk]
	if err := kernels.DotRowsN(s, nk, sc.q[r0*D:(r0+R)*D], D, R, kBuf, krow); err != nil {
		return err
	}
	for i := i0; i < n; i++ {
		lim := min(first+i+1-k0, nk)
		for r := i * g; r < (i+1)*g; r++ {
			srow := s[(r-r0)*nk : (r-r0)*nk+lim]
			mx := sc.raiseMax(r, D, kernels.RowMax(srow))
			sc.l[r] += expSub(srow, mx)
		}
	}
	prev := 0
	for i := i0; i < n; i++ {
		lim := min(first+i+1-k0, nk)
		if lim == prev {
			continue
		}
		r := i * g
		if err := kernels.AxpyRowsN(sc.acc[r*D:(r0+R)*D], D, (n-i)*g, s[(r-r0)*nk+prev:], nk, vBuf, vrow[prev:lim]); err != nil {
			return err
		}
		prev = lim
	}
	return nil
}
