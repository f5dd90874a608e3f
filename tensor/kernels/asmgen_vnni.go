//go:build ignore

// The AVX-512 VNNI kernels: Q8_0 weights times Q8_0-quantized activations.

package main

import (
	"fmt"
	"log"
)

// vnniBlock emits one AVX-512 VNNI register block for Q8_0 weights times
// Q8_0-quantized activations (runq.c's integer dot products):
//
//	func k(w unsafe.Pointer, ws uintptr, s *float32, ss uintptr, xq *int8, xqs uintptr,
//	       aux *int32, n int, cpg int, sadv uintptr, prm *vnniParams, out *float32, os uintptr, pf unsafe.Pointer)
//
//	w, ws   first int8 of weight row 0, row stride in bytes
//	s, ss   first scale of row 0, scale-row stride in bytes
//	xq, xqs first int8 of token 0's quantized x, token stride in bytes
//	aux     token 0's per-chunk side data; token t at aux + t·2·xqs. Chunk c
//	        (64 columns = 16 int32 lanes of 4 columns) holds 16 int32 biases
//	        −128·Σ of the lane's 4 x values, then the lane's 16 float32 x scales
//	n       grp: groups; sub: 64-column chunks
//	cpg     grp: chunks per group (GroupSize/64); sub: unused
//	sadv    sub: scale bytes per chunk (4·64/GroupSize); grp: unused
//	prm     sub: lane → scale index table and the load mask of one chunk's scales
//	out, os as in block
//	pf      8×1: start of the next 8-row block to prefetch, or nil
//
// VPDPBUSD multiplies unsigned by signed bytes, so weights are flipped to
// w+128 (XOR 0x80) and the bias lanes remove the 128·Σx this adds: each
// lane then holds the exact int32 dot of its 4 columns. Per chunk and
// (row, token): acc += float(dot) · xscale_lane · wscale_lane. grp kernels
// (GroupSize a multiple of 64) broadcast one weight scale per group; sub
// kernels (GroupSize 4…32) gather a chunk's 64/GroupSize scales with a
// masked load (no read past the scale row) and VPERMPS. Every shape runs
// the same per-lane operations in the same order, then block's reduction.
func (g *gen) vnniBlock(MR, NT int, grp bool) string {
	k := g.newVNNI(MR, NT, grp)
	name := k.name
	k.prologue()
	g.p("TESTQ %s, %s", rN, rN)
	g.p("JZ %s_tail", name)
	pf := NT == 1 && MR == 8 && prefetchOn
	g.pfLoops(name, pf, 104, name+"_tail", k.loops)
	g.label(name + "_tail")
	if !grp {
		// Groups past the last whole chunk (a row of 288 or 172 columns):
		// one more chunk whose weight bytes (K3) and scales (K4) are
		// masked loads, so nothing past the row is read; the activation
		// side of the chunk is zero-padded (zero biases and scales).
		g.p("MOVQ prm+80(FP), AX")
		g.p("KMOVQ 72(AX), K3")
		g.p("KORTESTQ K3, K3")
		g.p("JZ %s_reduce", name)
		g.p("KMOVW 80(AX), K4")
		g.masked = true
		k.body(false)
		g.masked = false
	}
	g.label(name + "_reduce")
	g.storeOut(88, NT, MR, k.acc, k.tv)
	g.ret()
	return name
}

// vnniKernel is one VNNI register block being emitted: its shape and its
// vector registers (Z0…: accumulators, then MR lane-scale vectors, the
// weight vectors, and xv, bv, sv, tv, c80, idx).
type vnniKernel struct {
	*gen
	MR, NT int
	grp    bool
	name   string
	swl    int // first of MR lane-scale vectors
	wv     int // first weight vector (flipped): MR for NT > 1, one temp for NT == 1
	// xv: token bytes; bv: bias lanes; sv: token lane scales; tv: a dot's
	// lanes; c80: 0x80 in every byte; idx: sub kernels' scale permutation.
	xv, bv, sv, tv, c80, idx int
}

// rAUX holds the VNNI kernels' aux pointer (biases and lane scales).
const rAUX = "R10"

// zreg names vector register Z i.
func zreg(i int) string { return fmt.Sprintf("Z%d", i) }

// acc is the accumulator register of row r, token t.
func (k *vnniKernel) acc(r, t int) int { return t*k.MR + r }

// newVNNI plans the vector registers of one VNNI block.
func (g *gen) newVNNI(MR, NT int, grp bool) *vnniKernel {
	variant := "Sub"
	if grp {
		variant = "Grp"
	}
	k := &vnniKernel{gen: g, MR: MR, NT: NT, grp: grp, name: fmt.Sprintf("q8vnni%sBlock%dx%d", variant, MR, NT)}
	next := MR * NT
	k.swl = next
	next += MR
	k.wv = next
	if NT > 1 {
		next += MR
	} else {
		next++
	}
	k.xv, k.bv, k.sv, k.tv, k.c80, k.idx = next, next+1, next+2, next+3, next+4, next+5
	next += 6
	if next > 32 {
		log.Fatalf("%s needs %d vector registers", k.name, next)
	}
	return k
}

// prologue declares the kernel and loads its arguments, the 0x80 bytes,
// (sub) the scale permutation and mask, n, and zeroed accumulators.
func (k *vnniKernel) prologue() {
	g, MR, NT, name := k.gen, k.MR, k.NT, k.name
	sig := "(w unsafe.Pointer, ws uintptr, s *float32, ss uintptr, xq *int8, xqs uintptr, aux *int32, n int, cpg int, sadv uintptr, prm *vnniParams, out *float32, os uintptr, pf unsafe.Pointer)"
	fmt.Fprintf(&g.g, "//go:noescape\nfunc %s%s\n\n", name, sig)
	fmt.Fprintf(&g.s, "// func %s%s\n", name, sig)
	fmt.Fprintf(&g.s, "// %d rows × %d tokens, Q8_0 weights × Q8_0 activations, AVX-512 VNNI.\n", MR, NT)
	fmt.Fprintf(&g.s, "TEXT ·%s(SB), NOSPLIT, $0-112\n", name)
	g.p("MOVQ w+0(FP), %s", rWP)
	g.p("MOVQ ws+8(FP), %s", rWS)
	g.p("LEAQ (%s)(%s*2), %s", rWS, rWS, rWS3)
	if MR > 4 {
		g.p("LEAQ (%s)(%s*4), %s", rWP, rWS, rWP4)
	}
	g.p("MOVQ s+16(FP), %s", rSP)
	g.p("MOVQ ss+24(FP), %s", rSS)
	g.p("LEAQ (%s)(%s*2), %s", rSS, rSS, rSS3)
	if MR > 4 {
		g.p("LEAQ (%s)(%s*4), %s", rSP, rSS, rSP4)
	}
	g.p("MOVQ xq+32(FP), %s", rXP)
	if NT > 1 {
		if NT > 3 {
			log.Fatalf("%s: aux addressing supports at most 3 tokens", name)
		}
		g.p("MOVQ xqs+40(FP), %s", rXS)
	}
	g.p("MOVQ aux+48(FP), %s", rAUX)
	g.p("MOVL $0x80808080, AX")
	g.p("VPBROADCASTD AX, %s", zreg(k.c80))
	if !k.grp {
		g.p("MOVQ prm+80(FP), AX")
		g.p("VMOVDQU32 (AX), %s", zreg(k.idx))
		g.p("KMOVW 64(AX), K1")
	}
	g.p("MOVQ n+56(FP), %s", rN)
	for i := 0; i < MR*NT; i++ {
		g.zero(zreg(i))
	}
}

// auxAddr is the address of token t's aux entry at byte displacement disp.
func auxAddr(t, disp int) string {
	d := ""
	if disp != 0 {
		d = fmt.Sprint(disp)
	}
	switch t {
	case 0:
		return fmt.Sprintf("%s(%s)", d, rAUX)
	case 1:
		return fmt.Sprintf("%s(%s)(%s*2)", d, rAUX, rXS)
	case 2:
		return fmt.Sprintf("%s(%s)(%s*4)", d, rAUX, rXS)
	}
	panic("auxAddr")
}

// scales loads the lane scales of every row for this chunk (sub) or
// group (grp).
func (k *vnniKernel) scales() {
	for r := 0; r < k.MR; r++ {
		sa := addr(r, rSP, rSS, rSS3, rSP4, 0)
		if k.grp {
			k.p("VBROADCASTSS %s, %s", sa, zreg(k.swl+r))
			continue
		}
		m := "K1"
		if k.masked {
			m = "K4" // the tail chunk's scales only
		}
		k.p("VMOVUPS.Z %s, %s, %s", sa, m, zreg(k.swl+r))
		k.p("VPERMPS %s, %s, %s", zreg(k.swl+r), zreg(k.idx), zreg(k.swl+r))
	}
}

// dotLane sets tv = float(dot of w vector wreg with the token's chunk) ·
// xscale.
func (k *vnniKernel) dotLane(wreg string) {
	k.p("VMOVDQA32 %s, %s", zreg(k.bv), zreg(k.tv))
	k.p("VPDPBUSD %s, %s, %s", zreg(k.xv), wreg, zreg(k.tv))
	k.p("VCVTDQ2PS %s, %s", zreg(k.tv), zreg(k.tv))
	k.p("VMULPS %s, %s, %s", zreg(k.sv), zreg(k.tv), zreg(k.tv))
}

// body emits one 64-column chunk: (sub) its scales, the token bytes,
// biases and scales, every (row, token) dot into its accumulator, and the
// pointer advances; with prefetch it also prefetches this chunk's share
// of the next row block.
func (k *vnniKernel) body(prefetch bool) {
	g, MR, NT, z := k.gen, k.MR, k.NT, zreg
	if !k.grp {
		k.scales()
	}
	if NT == 1 {
		g.p("VMOVDQU32 (%s), %s", rXP, z(k.xv))
		g.p("VMOVDQU32 (%s), %s", rAUX, z(k.bv))
		g.p("VMOVUPS 64(%s), %s", rAUX, z(k.sv))
		if prefetch {
			// The next 8-row block is contiguous: 8 rows × 64 bytes
			// per chunk, so prefetch as many lines as this chunk reads.
			for l := 0; l < MR; l++ {
				g.p("%s %d(%s)", prefetchOp, 64*l, rPF)
			}
			g.p("ADDQ $%d, %s", 64*MR, rPF)
		}
		for r := 0; r < MR; r++ {
			g.vnniLoadW(addr(r, rWP, rWS, rWS3, rWP4, 0), z(k.c80), z(k.wv))
			k.dotLane(z(k.wv))
			g.p("VFMADD231PS %s, %s, %s", z(k.swl+r), z(k.tv), z(k.acc(r, 0)))
		}
	} else {
		for r := 0; r < MR; r++ {
			g.vnniLoadW(addr(r, rWP, rWS, rWS3, rWP4, 0), z(k.c80), z(k.wv+r))
		}
		for t := 0; t < NT; t++ {
			g.p("VMOVDQU32 %s, %s", addr(t, rXP, rXS, "", "", 0), z(k.xv))
			g.p("VMOVDQU32 %s, %s", auxAddr(t, 0), z(k.bv))
			g.p("VMOVUPS %s, %s", auxAddr(t, 64), z(k.sv))
			for r := 0; r < MR; r++ {
				k.dotLane(z(k.wv + r))
				g.p("VFMADD231PS %s, %s, %s", z(k.swl+r), z(k.tv), z(k.acc(r, t)))
			}
		}
	}
	g.p("ADDQ $64, %s", rWP)
	if MR > 4 {
		g.p("ADDQ $64, %s", rWP4)
	}
	g.p("ADDQ $64, %s", rXP)
	g.p("ADDQ $128, %s", rAUX)
	if !k.grp {
		g.p("ADDQ sadv+72(FP), %s", rSP)
		if MR > 4 {
			g.p("ADDQ sadv+72(FP), %s", rSP4)
		}
	}
}

// loops emits the chunk loop (for grp kernels, groups of chunks with one
// scale load per group); with prefetch it is the copy that also
// prefetches the next row block.
func (k *vnniKernel) loops(l string, prefetch bool) {
	g := k.gen
	if !k.grp {
		g.label(l + "_loop")
		k.body(prefetch)
		g.p("DECQ %s", rN)
		g.p("JNZ %s_loop", l)
		return
	}
	g.label(l + "_group")
	k.scales()
	g.p("MOVQ cpg+64(FP), %s", rGC)
	g.label(l + "_chunk")
	k.body(prefetch)
	g.p("DECQ %s", rGC)
	g.p("JNZ %s_chunk", l)
	g.p("ADDQ $4, %s", rSP)
	if k.MR > 4 {
		g.p("ADDQ $4, %s", rSP4)
	}
	g.p("DECQ %s", rN)
	g.p("JNZ %s_group", l)
}

// vnniLoadW loads one 64-byte weight chunk flipped to w+128 (XOR 0x80);
// in the tail chunk only the bytes in K3 are read (the rest are 0, and
// flip to 128, which meets zero activations).
func (g *gen) vnniLoadW(a, c80, dst string) {
	if g.masked {
		g.p("VMOVDQU8.Z %s, K3, %s", a, dst)
		g.p("VPXORD %s, %s, %s", dst, c80, dst)
		return
	}
	g.p("VPXORD %s, %s, %s", a, c80, dst)
}
