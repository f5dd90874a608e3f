//go:build ignore

// The register-block kernels: F32, BF16, F16 and Q8_0 weights times
// float32 activations, MR rows × NT tokens (see asmgen.go for the contract).

package main

import (
	"fmt"
	"log"
)

// block emits one register-block kernel of MR rows × NT tokens.
func (g *gen) block(f wfmt, MR, NT int) string {
	k := g.newBlock(f, MR, NT)
	name, is := k.name, g.isa
	k.prologue()
	// AVX-512 F32/BF16/F16 kernels take any n: whole chunks, then one
	// chunk masked to the last n mod W columns (K2 = 2^(n mod W) − 1), so
	// no column is left to Go. AVX2 has no cheap masked loads; its n is a
	// multiple of W and Go adds the rest.
	tailMask := !f.q8 && is.name == "AVX512"
	after := name + "_reduce"
	if tailMask {
		after = name + "_tail"
		g.p("MOVQ %s, AX", rN)
		g.p("ANDQ $%d, AX", is.W-1)
		g.p("MOVL $-1, %s", rSP)
		g.p("BZHIL AX, %s, %s", rSP, rSP)
		g.p("KMOVW %s, K2", rSP)
	}
	if !f.q8 {
		g.p("SHRQ $%d, %s", is.log2W, rN)
	}
	g.p("TESTQ %s, %s", rN, rN)
	g.p("JZ %s", after)
	// Matvec blocks prefetch the next block of rows (see body).
	pf := NT == 1 && MR == 8 && prefetchOn
	g.pfLoops(name, pf, 80, after, k.loops)
	if tailMask {
		g.label(name + "_tail")
		g.p("TESTQ AX, AX")
		g.p("JZ %s_reduce", name)
		g.masked = true
		k.body(false)
		g.masked = false
	}
	g.label(name + "_reduce")
	g.storeOut(64, NT, MR, k.acc, k.xv)
	g.ret()
	return name
}

// blockKernel is one register-block kernel being emitted: its shape and
// its vector registers.
type blockKernel struct {
	*gen
	f       wfmt
	MR, NT  int
	name    string
	gacc    bool  // Q8_0 group accumulators (isa.gacc)
	wv      []int // weight vectors: MR of them (NT > 1) or one temp (NT = 1)
	xv, tmp int   // the token vector; the Q8 temp
	pfLines int   // 64-byte lines of the next row block prefetched per chunk
}

// acc is the accumulator register of row r, token t.
func (k *blockKernel) acc(r, t int) int { return t*k.MR + r }

// sum is where the chunk FMAs of (r, t) accumulate: the accumulator, or
// with group accumulators the register after all accumulators.
func (k *blockKernel) sum(r, t int) int {
	if k.gacc {
		return k.MR*k.NT + t*k.MR + r
	}
	return k.acc(r, t)
}

// newBlock plans the vector registers: accumulators first (then group
// accumulators), then MR weight vectors (NT>1) or one weight temp
// (NT==1), then the token vector, then a Q8 temp.
func (g *gen) newBlock(f wfmt, MR, NT int) *blockKernel {
	is := g.isa
	k := &blockKernel{gen: g, f: f, MR: MR, NT: NT, gacc: f.q8 && is.gacc,
		name: fmt.Sprintf("%sBlock%dx%d%s", f.short, MR, NT, is.name), pfLines: MR * is.W * f.esize / 64}
	next := MR * NT
	if k.gacc {
		next += MR * NT
	}
	if NT == 1 {
		k.wv = []int{next}
		next++
	} else {
		for r := 0; r < MR; r++ {
			k.wv = append(k.wv, next)
			next++
		}
	}
	k.xv = next
	next++
	k.tmp = k.xv // AVX2 Q8 scale broadcast reuses the token vector before it is loaded
	if NT == 1 && f.q8 && is.name == "AVX2" {
		k.tmp = next
		next++
	}
	if next > is.nregs {
		log.Fatalf("%s needs %d vector registers", k.name, next)
	}
	return k
}

// prologue declares the kernel and loads its arguments: weight, token and
// (Q8_0) scale pointers and strides, n, and zeroed accumulators.
func (k *blockKernel) prologue() {
	g, f, MR, NT, name := k.gen, k.f, k.MR, k.NT, k.name
	fmt.Fprintf(&g.g, "//go:noescape\nfunc %s(w unsafe.Pointer, ws uintptr, s *float32, ss uintptr, x *float32, xs uintptr, n int, cpg int, out *float32, os uintptr, pf unsafe.Pointer)\n\n", name)

	fmt.Fprintf(&g.s, "// func %s(w unsafe.Pointer, ws uintptr, s *float32, ss uintptr, x *float32, xs uintptr, n int, cpg int, out *float32, os uintptr, pf unsafe.Pointer)\n", name)
	fmt.Fprintf(&g.s, "// %d rows × %d tokens of %s weights, %d-lane vectors.\n", MR, NT, f.name, g.isa.W)
	fmt.Fprintf(&g.s, "TEXT ·%s(SB), NOSPLIT, $0-88\n", name)
	g.p("MOVQ w+0(FP), %s", rWP)
	g.p("MOVQ ws+8(FP), %s", rWS)
	g.p("LEAQ (%s)(%s*2), %s", rWS, rWS, rWS3)
	if MR > 4 {
		g.p("LEAQ (%s)(%s*4), %s", rWP, rWS, rWP4)
	}
	g.p("MOVQ x+32(FP), %s", rXP)
	if NT > 1 {
		g.p("MOVQ xs+40(FP), %s", rXS)
		g.p("LEAQ (%s)(%s*2), %s", rXS, rXS, rXS3)
	}
	if f.q8 {
		g.p("MOVQ s+16(FP), %s", rSP)
		g.p("MOVQ ss+24(FP), %s", rSS)
		g.p("LEAQ (%s)(%s*2), %s", rSS, rSS, rSS3)
		if MR > 4 {
			g.p("LEAQ (%s)(%s*4), %s", rSP, rSS, rSP4)
		}
	}
	g.p("MOVQ n+48(FP), %s", rN)
	for i := 0; i < MR*NT; i++ {
		g.zero(g.v(i))
	}
}

// xload loads a token chunk, masked to K2 in the tail chunk.
func (k *blockKernel) xload(src, dst string) {
	if k.masked {
		k.p("VMOVUPS.Z %s, K2, %s", src, dst)
	} else {
		k.p("VMOVUPS %s, %s", src, dst)
	}
}

// body emits one chunk of W columns: load, multiply-add into every
// (row, token) sum, advance the pointers; with prefetch it also
// prefetches this chunk's share of the next row block.
func (k *blockKernel) body(prefetch bool) {
	g, f, MR, NT, is := k.gen, k.f, k.MR, k.NT, k.gen.isa
	if NT == 1 {
		k.xload(fmt.Sprintf("(%s)", rXP), g.v(k.xv))
		if prefetch {
			// The next 8-row block is contiguous: prefetch its lines in
			// order, as many per chunk as this chunk consumes.
			for l := 0; l < k.pfLines; l++ {
				g.p("%s %d(%s)", prefetchOp, 64*l, rPF)
			}
			g.p("ADDQ $%d, %s", 64*k.pfLines, rPF)
		}
		for r := 0; r < MR; r++ {
			if f.short == "f32" && !g.masked {
				g.p("VFMADD231PS %s, %s, %s", addr(r, rWP, rWS, rWS3, rWP4, 0), g.v(k.xv), g.v(k.sum(r, 0)))
				continue
			}
			g.loadW(f, r, g.v(k.wv[0]), g.v(k.tmp))
			g.p("VFMADD231PS %s, %s, %s", g.v(k.wv[0]), g.v(k.xv), g.v(k.sum(r, 0)))
		}
	} else {
		for r := 0; r < MR; r++ {
			g.loadW(f, r, g.v(k.wv[r]), g.v(k.tmp))
		}
		for t := 0; t < NT; t++ {
			k.xload(addr(t, rXP, rXS, rXS3, "", 0), g.v(k.xv))
			for r := 0; r < MR; r++ {
				g.p("VFMADD231PS %s, %s, %s", g.v(k.wv[r]), g.v(k.xv), g.v(k.sum(r, t)))
			}
		}
	}
	g.p("ADDQ $%d, %s", is.W*f.esize, rWP)
	if MR > 4 {
		g.p("ADDQ $%d, %s", is.W*f.esize, rWP4)
	}
	g.p("ADDQ $%d, %s", is.W*4, rXP)
}

// loops emits the column loop (for Q8_0, groups of chunks, each group's
// sums scaled into the accumulators); with prefetch it is the copy that
// also prefetches the next row block.
func (k *blockKernel) loops(l string, prefetch bool) {
	g, MR, NT := k.gen, k.MR, k.NT
	if !k.f.q8 {
		g.label(l + "_loop")
		k.body(prefetch)
		g.p("DECQ %s", rN)
		g.p("JNZ %s_loop", l)
		return
	}
	g.label(l + "_group")
	g.p("MOVQ cpg+56(FP), %s", rGC)
	if k.gacc {
		for i := 0; i < MR*NT; i++ {
			g.zero(g.v(MR*NT + i))
		}
	}
	g.label(l + "_chunk")
	k.body(prefetch)
	g.p("DECQ %s", rGC)
	g.p("JNZ %s_chunk", l)
	if k.gacc {
		// acc += gacc · scale[row]: one FMA per group with the scale
		// broadcast from memory.
		for t := 0; t < NT; t++ {
			for r := 0; r < MR; r++ {
				g.p("VFMADD231PS.BCST %s, %s, %s", addr(r, rSP, rSS, rSS3, rSP4, 0), g.v(k.sum(r, t)), g.v(k.acc(r, t)))
			}
		}
	}
	g.p("ADDQ $4, %s", rSP)
	if MR > 4 {
		g.p("ADDQ $4, %s", rSP4)
	}
	g.p("DECQ %s", rN)
	g.p("JNZ %s_group", l)
}
