//go:build ignore

// The vector kernels: attention's row gathers (DotRows, AxpyRows) and
// Dot, Sum, Axpy and Scale.

package main

import "fmt"

// gatherOps emits the AVX-512 row-gather kernels of gather.go for rows of
// v vectors (D = 16·v, v = 1…16), and for D = 8 on one Y register ("8w"),
// so the query (DotRows) or the output accumulator (AxpyRows) stays in
// registers 16…15+v for a whole tile of keys:
//
//	func dotRows<v>AVX512(out, q, base *float32, rows *int, n int)
//	func axpyRows<v>AVX512(acc, p, base *float32, rows *int, n int)
//
// Key j's row starts at base + 4·rows[j]. A score is two FMA chains (even
// and odd vectors), added, then the blocks' halving sum; AxpyRows adds
// p[j]·row to each accumulator with one FMA per vector, key after key.
func (g *gen) gatherOps() (dots, axpys []string) {
	// D = 8 (stories260K's head width): one 8-lane Y register per row.
	g.gatherPair("8w", "Y", 1, 32)
	for v := 1; v <= 16; v++ {
		d, a := g.gatherPair(fmt.Sprint(v), "Z", v, 64)
		dots, axpys = append(dots, d), append(axpys, a)
	}
	return dots, axpys
}

// gatherPair emits dotRows<id>AVX512 and axpyRows<id>AVX512 for rows of v
// vectors of register kind reg (vb bytes each), kept in registers 16…15+v.
func (g *gen) gatherPair(id, reg string, v, vb int) (dot, axpy string) {
	r := func(i int) string { return fmt.Sprintf("%s%d", reg, i) }
	head := func(name, args, ptr string) {
		fmt.Fprintf(&g.g, "//go:noescape\nfunc %s(%s, base *float32, rows *int, n int)\n\n", name, args)
		fmt.Fprintf(&g.s, "// func %s(%s, base *float32, rows *int, n int); rows of %d floats.\n", name, args, v*vb/4)
		fmt.Fprintf(&g.s, "TEXT ·%s(SB), NOSPLIT, $0-40\n", name)
		g.p("MOVQ %s+0(FP), DI", ptr)
		g.p("MOVQ %s+8(FP), SI", map[string]string{"out": "q", "acc": "p"}[ptr])
		g.p("MOVQ base+16(FP), BX")
		g.p("MOVQ rows+24(FP), R8")
		g.p("MOVQ n+32(FP), CX")
	}
	// keyLoop wraps body in the loop over rows[0…n): DX = the key's row.
	keyLoop := func(name string, body func(), step string) {
		g.p("TESTQ CX, CX")
		g.p("JZ %s_done", name)
		g.label(name + "_key")
		g.p("MOVQ (R8), AX")
		g.p("LEAQ (BX)(AX*4), DX")
		body()
		g.p("ADDQ $4, %s", step)
		g.p("ADDQ $8, R8")
		g.p("DECQ CX")
		g.p("JNZ %s_key", name)
		g.label(name + "_done")
	}

	dot = "dotRows" + id + "AVX512"
	head(dot, "out, q", "out")
	for k := 0; k < v; k++ {
		g.p("VMOVUPS %d(SI), %s", vb*k, r(16+k))
	}
	keyLoop(dot, func() {
		g.p("VMULPS (DX), %s, %s", r(16), r(0))
		if v > 1 {
			g.p("VMULPS %d(DX), %s, %s", vb, r(17), r(1))
		}
		for k := 2; k < v; k++ {
			g.p("VFMADD231PS %d(DX), %s, %s", vb*k, r(16+k), r(k%2))
		}
		if v > 1 {
			g.p("VADDPS %s, %s, %s", r(1), r(0), r(0))
		}
		g.fold(0, 2, reg, "(DI)")
	}, "DI")
	g.ret()

	axpy = "axpyRows" + id + "AVX512"
	head(axpy, "acc, p", "acc")
	for k := 0; k < v; k++ {
		g.p("VMOVUPS %d(DI), %s", vb*k, r(16+k))
	}
	keyLoop(axpy, func() {
		g.p("VBROADCASTSS (SI), %s", r(0))
		for k := 0; k < v; k++ {
			g.p("VFMADD231PS %d(DX), %s, %s", vb*k, r(0), r(16+k))
		}
	}, "SI")
	for k := 0; k < v; k++ {
		g.p("VMOVUPS %s, %d(DI)", r(16+k), vb*k)
	}
	g.ret()
	return dot, axpy
}

// vecOps emits Dot, Axpy, Scale and Sum for one ISA. They process whole
// vectors only; Go handles the tail.
func (g *gen) vecOps() {
	g.dotOp()
	g.sumOp()
	g.axpyOp()
	g.scaleOp()
}

// reduce4 adds accumulators 1–3 into accumulator 0.
func (g *gen) reduce4() {
	v := g.v
	g.p("VADDPS %s, %s, %s", v(1), v(0), v(0))
	g.p("VADDPS %s, %s, %s", v(3), v(2), v(2))
	g.p("VADDPS %s, %s, %s", v(2), v(0), v(0))
}

// dotOp writes the Dot kernel: 4 accumulators over 4W-column blocks,
// then W-column blocks.
func (g *gen) dotOp() {
	is := g.isa
	W := is.W
	v := g.v
	name := "dot" + is.name
	g.vecOpHeader(name, "(a, b *float32, n int) float32", W, 28)
	g.p("MOVQ a+0(FP), SI")
	g.p("MOVQ b+8(FP), DI")
	g.p("MOVQ n+16(FP), CX")
	for i := 0; i < 4; i++ {
		g.zero(v(i))
	}
	g.p("MOVQ CX, DX")
	g.p("SHRQ $%d, DX", is.log2W+2)
	g.p("JZ %s_one", name)
	g.label(name + "_four")
	for i := 0; i < 4; i++ {
		g.p("VMOVUPS %d(SI), %s", i*W*4, v(4+i))
	}
	for i := 0; i < 4; i++ {
		g.p("VFMADD231PS %d(DI), %s, %s", i*W*4, v(4+i), v(i))
	}
	g.p("ADDQ $%d, SI", 4*W*4)
	g.p("ADDQ $%d, DI", 4*W*4)
	g.p("DECQ DX")
	g.p("JNZ %s_four", name)
	g.label(name + "_one")
	g.p("ANDQ $%d, CX", 3*W)
	g.p("SHRQ $%d, CX", is.log2W)
	g.p("JZ %s_done", name)
	g.label(name + "_oneloop")
	g.p("VMOVUPS (SI), %s", v(4))
	g.p("VFMADD231PS (DI), %s, %s", v(4), v(0))
	g.p("ADDQ $%d, SI", W*4)
	g.p("ADDQ $%d, DI", W*4)
	g.p("DECQ CX")
	g.p("JNZ %s_oneloop", name)
	g.label(name + "_done")
	g.reduce4()
	g.fold(0, 4, is.reg, "ret+24(FP)")
	g.ret()
}

// sumOp writes the bandwidth sum: a streaming read, 4 accumulators over
// 4W blocks (n a multiple of 4W).
func (g *gen) sumOp() {
	is := g.isa
	W := is.W
	v := g.v
	name := "sum" + is.name
	g.vecOpHeader(name, "(a *float32, n int) float32", 4*W, 20)
	g.p("MOVQ a+0(FP), SI")
	g.p("MOVQ n+8(FP), CX")
	for i := 0; i < 4; i++ {
		g.zero(v(i))
	}
	g.p("SHRQ $%d, CX", is.log2W+2)
	g.p("JZ %s_done", name)
	g.label(name + "_loop")
	for i := 0; i < 4; i++ {
		g.p("VADDPS %d(SI), %s, %s", i*W*4, v(i), v(i))
	}
	g.p("ADDQ $%d, SI", 4*W*4)
	g.p("DECQ CX")
	g.p("JNZ %s_loop", name)
	g.label(name + "_done")
	g.reduce4()
	g.fold(0, 4, is.reg, "ret+16(FP)")
	g.ret()
}

// axpyOp writes the Axpy kernel: y += a·x, W columns per iteration.
func (g *gen) axpyOp() {
	is := g.isa
	W := is.W
	v := g.v
	name := "axpy" + is.name
	g.vecOpHeader(name, "(a float32, x, y *float32, n int)", W, 32)
	g.p("VBROADCASTSS a+0(FP), %s", v(0))
	g.p("MOVQ x+8(FP), SI")
	g.p("MOVQ y+16(FP), DI")
	g.p("MOVQ n+24(FP), CX")
	g.p("SHRQ $%d, CX", is.log2W)
	g.p("JZ %s_done", name)
	g.label(name + "_loop")
	g.p("VMOVUPS (DI), %s", v(1))
	g.p("VFMADD231PS (SI), %s, %s", v(0), v(1))
	g.p("VMOVUPS %s, (DI)", v(1))
	g.p("ADDQ $%d, SI", W*4)
	g.p("ADDQ $%d, DI", W*4)
	g.p("DECQ CX")
	g.p("JNZ %s_loop", name)
	g.label(name + "_done")
	g.ret()
}

// scaleOp writes the Scale kernel: x *= a.
func (g *gen) scaleOp() {
	is := g.isa
	W := is.W
	v := g.v
	name := "scale" + is.name
	g.vecOpHeader(name, "(a float32, x *float32, n int)", W, 24)
	g.p("VBROADCASTSS a+0(FP), %s", v(0))
	g.p("MOVQ x+8(FP), DI")
	g.p("MOVQ n+16(FP), CX")
	g.p("SHRQ $%d, CX", is.log2W)
	g.p("JZ %s_done", name)
	g.label(name + "_loop")
	g.p("VMULPS (DI), %s, %s", v(0), v(1))
	g.p("VMOVUPS %s, (DI)", v(1))
	g.p("ADDQ $%d, DI", W*4)
	g.p("DECQ CX")
	g.p("JNZ %s_loop", name)
	g.label(name + "_done")
	g.ret()
}
