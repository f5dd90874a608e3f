//go:build ignore

// The generated Go file: the kernels' declarations and the dispatchers
// that pick one by ISA, format and shape.

package main

import (
	"bytes"
	"fmt"
)

// kernelNames are the generated kernels' names, by the dispatcher that
// calls them.
type kernelNames struct {
	table         []blockEntry // callBlock's cases
	vnni          []string     // callVNNI's: sub 1×1, 8×1, MM; then grp 1×1, 8×1, MM
	gDots, gAxpys []string     // dotRowsAVX512's and axpyRowsAVX512's, by width/16
}

// blockEntry is one register-block kernel: ISA, format, shape and name.
type blockEntry struct{ isa, f, shape, name string }

// writePrologue starts both files: the header, reduce8's lane table and
// the CPUID helper.
func writePrologue(s, d *bytes.Buffer, header string) {
	s.WriteString(header + "#include \"textflag.h\"\n\n")
	s.WriteString("// reduce8idx picks lanes 0, 4, 8, 12 of two vectors (VPERMT2PS): reduce8's\n// eight row sums.\n")
	for i, v := range []int{0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0} {
		fmt.Fprintf(s, "DATA reduce8idx<>+%d(SB)/4, $%d\n", 4*i, v)
	}
	s.WriteString("GLOBL reduce8idx<>(SB), RODATA|NOPTR, $64\n\n")
	s.WriteString(`// func cpuidECX1() uint32: CPUID leaf 1, ECX (bit 29 = F16C).
TEXT ·cpuidECX1(SB), NOSPLIT, $0-4
	MOVL $1, AX
	XORL CX, CX
	CPUID
	MOVL CX, ret+0(FP)
	RET

`)
	d.WriteString(header + "package kernels\n\nimport \"unsafe\"\n\n")
	d.WriteString("//go:noescape\nfunc cpuidECX1() uint32\n\n")
}

// writeKernels generates every ISA's kernels into s (assembly) and d
// (their Go declarations) and returns their names.
func writeKernels(s, d *bytes.Buffer) kernelNames {
	var k kernelNames
	for _, is := range isas {
		g := &gen{isa: is}
		for _, f := range fmts {
			k.table = append(k.table, blockEntry{is.name, f.name, "shape1x1", g.block(f, 1, 1)})
			k.table = append(k.table, blockEntry{is.name, f.name, "shapeMV", g.block(f, is.mvR, 1)})
			mr, nt := is.mmR, is.mmT
			if f.q8 {
				mr, nt = is.q8mmR, is.q8mmT
			}
			k.table = append(k.table, blockEntry{is.name, f.name, "shapeMM", g.block(f, mr, nt)})
		}
		g.vecOps()
		if is.name == "AVX512" {
			k.gDots, k.gAxpys = g.gatherOps()
			for _, grp := range []bool{false, true} {
				k.vnni = append(k.vnni, g.vnniBlock(1, 1, grp), g.vnniBlock(8, 1, grp), g.vnniBlock(vnniMMRows, vnniMMTok, grp))
			}
		}
		s.Write(g.s.Bytes())
		d.Write(g.g.Bytes())
	}
	return k
}

// writeGeometry writes the register-block geometry table per ISA and
// format.
func writeGeometry(d *bytes.Buffer) {
	d.WriteString("// simdGeometry is the register-block geometry per ISA and format.\nvar simdGeometry = [...][4]geometry{\n")
	for _, is := range isas {
		fmt.Fprintf(d, "\t%s: {\n", "Impl"+is.name)
		for _, f := range fmts {
			mr, nt := is.mmR, is.mmT
			if f.q8 {
				mr, nt = is.q8mmR, is.q8mmT
			}
			fmt.Fprintf(d, "\t\t%s: {W: %d, mvRows: %d, mmRows: %d, mmTok: %d},\n", f.name, is.W, is.mvR, mr, nt)
		}
		d.WriteString("\t},\n")
	}
	d.WriteString("}\n\n")
}

// writeCallBlock writes the direct-call dispatcher of the register-block
// kernels. Calls go through a switch, not a func value, so the compiler
// sees //go:noescape and the caller's out buffer stays on the stack.
func writeCallBlock(d *bytes.Buffer, table []blockEntry) {
	d.WriteString("// callBlock runs the generated kernel kernelID(impl, format, shape); the\n// constant cases compile to a jump table.\n")
	d.WriteString("func callBlock(kid int, w unsafe.Pointer, ws uintptr, s *float32, ss uintptr, x *float32, xs uintptr, n, cpg int, out *float32, os uintptr, pf unsafe.Pointer) {\n")
	d.WriteString("\tswitch kid {\n")
	for _, e := range table {
		fmt.Fprintf(d, "\tcase (int(Impl%s)*4+int(%s))*3 + %s:\n\t\t%s(w, ws, s, ss, x, xs, n, cpg, out, os, pf)\n", e.isa, e.f, e.shape, e.name)
	}
	d.WriteString("\tdefault:\n\t\tpanic(\"kernels: no generated kernel for this impl/format/shape\")\n\t}\n}\n\n")
}

// writeCallVNNIAndRows writes the VNNI block constants and dispatcher and
// the row-gather kernels' dispatchers.
func writeCallVNNIAndRows(d *bytes.Buffer, k kernelNames) {
	fmt.Fprintf(d, "// vnniMMRows and vnniMMTok are the VNNI Q8_0 prefill block (rows × tokens).\nconst (\n\tvnniMMRows = %d\n\tvnniMMTok = %d\n)\n\n", vnniMMRows, vnniMMTok)
	d.WriteString("// callVNNI runs VNNI kernel vnniKernelID(grp, shape).\n")
	d.WriteString("func callVNNI(kid int, w unsafe.Pointer, ws uintptr, s *float32, ss uintptr, xq *int8, xqs uintptr, aux *int32, n, cpg int, sadv uintptr, prm *vnniParams, out *float32, os uintptr, pf unsafe.Pointer) {\n\tswitch kid {\n")
	for i, name := range k.vnni {
		fmt.Fprintf(d, "\tcase %d:\n\t\t%s(w, ws, s, ss, xq, xqs, aux, n, cpg, sadv, prm, out, os, pf)\n", i, name)
	}
	d.WriteString("\tdefault:\n\t\tpanic(\"kernels: no VNNI kernel for this shape\")\n\t}\n}\n\n")
	d.WriteString("// dotRowsAVX512 runs the DotRows kernel for rows of d = 16·v floats.\n")
	d.WriteString("func dotRowsAVX512(out, q *float32, d int, base *float32, rows *int, n int) {\n\tswitch d / 16 {\n")
	for i, name := range k.gDots {
		fmt.Fprintf(d, "\tcase %d:\n\t\t%s(out, q, base, rows, n)\n", i+1, name)
	}
	d.WriteString("\tdefault:\n\t\tpanic(\"kernels: no DotRows kernel for this width\")\n\t}\n}\n\n")
	d.WriteString("// axpyRowsAVX512 runs the AxpyRows kernel for rows of d = 16·v floats.\n")
	d.WriteString("func axpyRowsAVX512(acc *float32, d int, p, base *float32, rows *int, n int) {\n\tswitch d / 16 {\n")
	for i, name := range k.gAxpys {
		fmt.Fprintf(d, "\tcase %d:\n\t\t%s(acc, p, base, rows, n)\n", i+1, name)
	}
	d.WriteString("\tdefault:\n\t\tpanic(\"kernels: no AxpyRows kernel for this width\")\n\t}\n}\n\n")
}

// writeSIMDDispatch writes dotSIMD, sumSIMD, axpySIMD and scaleSIMD, which
// pick the AVX-512 or AVX2 vector kernel.
func writeSIMDDispatch(d *bytes.Buffer) {
	for _, op := range []string{"dot", "sum", "axpy", "scale"} {
		var sig, call string
		switch op {
		case "dot":
			sig, call = "(impl Impl, a, b *float32, n int) float32", "return %s(a, b, n)"
		case "sum":
			sig, call = "(impl Impl, a *float32, n int) float32", "return %s(a, n)"
		case "axpy":
			sig, call = "(impl Impl, a float32, x, y *float32, n int)", "%s(a, x, y, n)"
		case "scale":
			sig, call = "(impl Impl, a float32, x *float32, n int)", "%s(a, x, n)"
		}
		fmt.Fprintf(d, "func %sSIMD%s {\n\tif impl == ImplAVX512 {\n\t\t"+call+"\n\t} else {\n\t\t"+call+"\n\t}\n", op, sig, op+"AVX512", op+"AVX2")
		d.WriteString("}\n\n")
	}
}
