package attention

import (
	"testing"

	"github.com/stride-lm/stride/tensor/kernels"
)

// legacyTile is the strategy runItem used to derive per item and per key
// tile from its run-time booleans, transcribed from the kernel before
// plan() chose it:
//
//	simd := a.simd && (D > smallHeadDim || kernels.RowsAccelerated(D))
//	smallMM := useMM && a.simd && D < simdPad
//	rowwise := !half && !simd && D%8 == 0 && (!useMM || (!a.simd && D <= smallHeadDim))
//
// then rowwise first, else scores by smallMM, useMM, simd or scoreTile
// and P·V by useMM, simd or pvTile.
func legacyTile(rows, D int, half, simdOn bool) tileKind {
	useMM := rows >= mmMinRows
	simd := simdOn && (D > smallHeadDim || kernels.RowsAccelerated(D))
	smallMM := useMM && simdOn && D < simdPad
	rowwise := !half && !simd && D%8 == 0 && (!useMM || (!simdOn && D <= smallHeadDim))
	switch {
	case rowwise:
		return tileInline
	case smallMM:
		return tileAxpyKeys
	case useMM:
		return tileMatMul
	case simd:
		return tileGather
	}
	return tileBlocked
}

// chooseTile, which plan calls once per row count, picks what the old
// per-item booleans picked, for every row count around mmMinRows, head
// widths around each threshold, both cache kinds and SIMD on and off, on
// every kernel implementation of this CPU.
func TestChooseTileMatchesPerItemRule(t *testing.T) {
	was := kernels.CurrentImpl()
	defer kernels.SetImpl(was)
	seen := map[tileKind]bool{}
	for _, impl := range kernels.Available() {
		if err := kernels.SetImpl(impl); err != nil {
			t.Fatal(err)
		}
		for rows := 1; rows <= 2*mmMinRows; rows++ {
			for D := 1; D <= 72; D++ {
				for _, half := range []bool{false, true} {
					for _, simd := range []bool{false, true} {
						got, want := chooseTile(rows, D, half, simd), legacyTile(rows, D, half, simd)
						if got != want {
							t.Fatalf("%v rows=%d D=%d half=%v simd=%v: chooseTile %d, per-item rule %d", impl, rows, D, half, simd, got, want)
						}
						seen[got] = true
					}
				}
			}
		}
	}
	if len(seen) != len(tileFuncs) {
		t.Errorf("the grid reached %d of the %d tile implementations", len(seen), len(tileFuncs))
	}
}
