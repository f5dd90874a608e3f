//go:build ignore

// asmgen writes kernels_amd64.s and kernels_amd64_gen.go.
//
// Run it with `go generate ./tensor/kernels`, which passes the flags the
// committed files were made with (cpu_amd64.go's //go:generate line; the
// files' first line records them too), or `go run asmgen.go -h` inside
// this directory for the flags. CI regenerates and fails on any diff. The
// kernels are regular enough (ISA × weight format ×
// register-block shape) that generating them is safer than writing 28
// near-identical assembly functions by hand: every kernel shares one
// accumulation order and one horizontal reduction, which is what makes the
// 1×1, 8×1 and MR×NT kernels of one ISA bit-identical per output.
//
// Register-block kernel contract (all formats):
//
//	func k(w unsafe.Pointer, ws uintptr, s *float32, ss uintptr,
//	       x *float32, xs uintptr, n int, cpg int, out *float32, os uintptr, pf unsafe.Pointer)
//
//	w, ws   first element of weight row 0, and the row stride in bytes
//	s, ss   Q8_0 only: first scale of row 0, and the per-row scale stride in bytes
//	x, xs   first element of token 0, and the token stride in bytes
//	n       F32/BF16/F16: columns to process, a multiple of the vector width W
//	        Q8_0: number of groups to process
//	cpg     Q8_0 only: vector chunks per group (GroupSize / W)
//	out, os out + t·os + 4r receives Σ_j w[r, j] · x[t, j] for r < MR, t < NT
//	        (os: the output's token stride in bytes)
//	pf      8×1 kernels: start of the next 8-row block to prefetch, or nil
//
// Each (r, t) pair owns one vector accumulator. Chunk k (W columns) is added
// as acc = w_chunk·x_chunk + acc with one FMA; after the last chunk the W
// lanes are folded by halves (W→8→4→2→1). The order therefore depends only on
// the ISA, never on MR, NT or which rows/tokens share the block.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"slices"
	"strings"
)

type isa struct {
	name  string // suffix of the function names
	W     int    // float32 lanes per vector
	log2W int
	reg   string // "Y" or "Z"
	nregs int
	mvR   int // rows of the matvec (NT=1) kernel
	mmR   int // rows of the batched kernel
	mmT   int // tokens of the batched kernel
	// q8mmR, q8mmT: the batched Q8_0 shape, which may differ because
	// group accumulators (gacc) double the accumulator count.
	q8mmR, q8mmT int
	// gacc: Q8_0 sums each group in its own accumulator and applies the
	// scale once per group (acc += gacc·scale) instead of multiplying every
	// weight vector by it: one vector op fewer per W weights.
	gacc bool
}

type wfmt struct {
	name  string // Go-side Format constant
	short string // function name stem
	esize int    // bytes per weight element
	q8    bool
}

var isas = []isa{
	{name: "AVX2", W: 8, log2W: 3, reg: "Y", nregs: 16, mvR: 8, mmR: 3, mmT: 4, q8mmR: 3, q8mmT: 4},
	{name: "AVX512", W: 16, log2W: 4, reg: "Z", nregs: 32, mvR: 8, mmR: 4, mmT: 4, q8mmR: 4, q8mmT: 3, gacc: true},
}

// vnniMMRows × vnniMMTok is the VNNI Q8_0 prefill block: 12 accumulators,
// 4 lane-scale and 4 weight vectors, and the token's three; the aux
// addressing (stride 2·xqs) reaches at most 3 tokens.
const (
	vnniMMRows = 4
	vnniMMTok  = 3
)

var fmts = []wfmt{
	{name: "F32", short: "f32", esize: 4},
	{name: "BF16", short: "bf16", esize: 2},
	{name: "F16", short: "f16", esize: 2},
	{name: "Q8_0", short: "q8", esize: 1, q8: true},
}

// prefetchOn enables the matvec kernels' software prefetch of the next row
// block, and prefetchOp is its instruction: the flags -prefetch and
// -prefetch-op, which the generated files' headers record. The defaults are
// what //go:generate runs; other values exist for measurements (-prefetch=false
// drops the prefetch code from every 8×1 kernel). PREFETCHT1 (into L2, not
// L1) won on the stories110M weight set in alternating runs for F32 and
// BF16 decode: the lines reach L1 in time from L2 anyway, and do not crowd
// the current block's lines out of it; PREFETCHT2 and prefetching two
// blocks ahead measured the same as PREFETCHT1. The numbers and the
// commands behind them are in docs/kernels.md ("Decisions the benchmarks
// made").
var (
	prefetchOn bool
	prefetchOp string
)

// prefetchOps are the instructions -prefetch-op accepts.
var prefetchOps = []string{"PREFETCHT0", "PREFETCHT1", "PREFETCHT2", "PREFETCHNTA"}

// parseFlags reads asmgen's command line into prefetchOn and prefetchOp
// and returns it as the generated headers state it. The environment
// variables older versions read (PF, PFOP) are refused rather than
// ignored, so a stale command line cannot silently generate the defaults.
func parseFlags() (string, error) {
	flag.BoolVar(&prefetchOn, "prefetch", true, "software-prefetch the next row block in the 8×1 matvec kernels")
	flag.StringVar(&prefetchOp, "prefetch-op", "PREFETCHT1", "prefetch instruction: "+strings.Join(prefetchOps, ", "))
	flag.Parse()
	if flag.NArg() > 0 {
		return "", fmt.Errorf("unexpected arguments %q (asmgen takes only flags; see -h)", flag.Args())
	}
	for _, k := range []string{"PF", "PFOP"} {
		if _, set := os.LookupEnv(k); set {
			return "", fmt.Errorf("the environment variable %s is no longer read; use -prefetch and -prefetch-op", k)
		}
	}
	if !slices.Contains(prefetchOps, prefetchOp) {
		return "", fmt.Errorf("-prefetch-op %q is not one of %s", prefetchOp, strings.Join(prefetchOps, ", "))
	}
	return fmt.Sprintf("-prefetch=%t -prefetch-op=%s", prefetchOn, prefetchOp), nil
}

// General-purpose registers. R14 (g) and BP (frame pointer) are left alone.
const (
	rWP  = "SI"  // weight row 0 pointer, advanced by W elements per chunk
	rWS  = "BX"  // weight row stride (bytes)
	rWS3 = "DX"  // 3 × weight row stride
	rWP4 = "R8"  // weight row 4 pointer
	rXP  = "DI"  // token 0 pointer
	rXS  = "R9"  // token stride (bytes)
	rXS3 = "R10" // 3 × token stride
	rSP  = "R11" // scale pointer of row 0 (Q8_0), advanced by 4 per group
	rSS  = "R12" // scale row stride
	rSS3 = "R13" // 3 × scale row stride
	rSP4 = "R15" // scale pointer of row 4
	rN   = "CX"  // remaining chunks (or groups)
	rGC  = "AX"  // remaining chunks in the current group
	rPF  = "R9"  // matvec: prefetch pointer into the next row block (shares XS, unused when NT = 1)
)

// addr returns the address of element block i (row or token) for a
// base/stride/3×stride/base4 register family at byte displacement disp.
func addr(i int, base, stride, stride3, base4 string, disp int) string {
	d := ""
	if disp != 0 {
		d = fmt.Sprint(disp)
	}
	b := base
	if i >= 4 {
		b = base4
		i -= 4
	}
	switch i {
	case 0:
		return fmt.Sprintf("%s(%s)", d, b)
	case 1:
		return fmt.Sprintf("%s(%s)(%s*1)", d, b, stride)
	case 2:
		return fmt.Sprintf("%s(%s)(%s*2)", d, b, stride)
	case 3:
		return fmt.Sprintf("%s(%s)(%s*1)", d, b, stride3)
	}
	panic("addr")
}

type gen struct {
	s      bytes.Buffer // assembly
	g      bytes.Buffer // Go declarations
	isa    isa
	masked bool // emitting the masked tail chunk (AVX-512, K2)
}

func (g *gen) p(format string, args ...any) {
	fmt.Fprintf(&g.s, "\t"+format+"\n", args...)
}

func (g *gen) label(l string) { fmt.Fprintf(&g.s, "%s:\n", l) }

func (g *gen) v(i int) string { return fmt.Sprintf("%s%d", g.isa.reg, i) }

// ret ends a kernel: VZEROUPPER clears the upper vector halves so the Go
// code after it pays no AVX-SSE transition penalty, then RET.
func (g *gen) ret() {
	g.p("VZEROUPPER")
	g.p("RET")
	g.s.WriteString("\n")
}

// vecOpHeader writes the Go declaration and the TEXT line of the vector
// kernel name with signature sig (parameters and result) whose n is a
// multiple of mult; frame is the byte size of its arguments and results.
func (g *gen) vecOpHeader(name, sig string, mult, frame int) {
	fmt.Fprintf(&g.g, "//go:noescape\nfunc %s%s\n\n", name, sig)
	fmt.Fprintf(&g.s, "// func %s%s; n is a multiple of %d.\n", name, sig, mult)
	fmt.Fprintf(&g.s, "TEXT ·%s(SB), NOSPLIT, $0-%d\n", name, frame)
}

// loadW converts W weights of row r at the current chunk into vector dst
// (float32 lanes). tmp is a scratch vector used only by AVX2 Q8_0. In the
// masked tail chunk (g.masked) only the lanes set in K2 are read and the
// rest are zero, so no byte past the row is touched.
func (g *gen) loadW(f wfmt, r int, dst, tmp string) {
	a := addr(r, rWP, rWS, rWS3, rWP4, 0)
	if g.masked {
		half := "Y" + dst[1:]
		switch f.short {
		case "f32":
			g.p("VMOVUPS.Z %s, K2, %s", a, dst)
		case "bf16":
			g.p("VMOVDQU16.Z %s, K2, %s", a, half)
			g.p("VPMOVZXWD %s, %s", half, dst)
			g.p("VPSLLD $16, %s, %s", dst, dst)
		case "f16":
			g.p("VMOVDQU16.Z %s, K2, %s", a, half)
			g.p("VCVTPH2PS %s, %s", half, dst)
		default:
			log.Fatalf("no masked load for %s", f.short)
		}
		return
	}
	switch f.short {
	case "f32":
		g.p("VMOVUPS %s, %s", a, dst)
	case "bf16":
		// bf16 is the top half of an fp32: zero-extend and shift left 16.
		g.p("VPMOVZXWD %s, %s", a, dst)
		g.p("VPSLLD $16, %s, %s", dst, dst)
	case "f16":
		g.p("VCVTPH2PS %s, %s", a, dst)
	case "q8":
		// int8 → int32 → float32, times the group's scale unless the
		// kernel scales whole group sums (gacc).
		g.p("VPMOVSXBD %s, %s", a, dst)
		g.p("VCVTDQ2PS %s, %s", dst, dst)
		if g.isa.gacc {
			return
		}
		sa := addr(r, rSP, rSS, rSS3, rSP4, 0)
		if g.isa.name == "AVX512" {
			g.p("VMULPS.BCST %s, %s, %s", sa, dst, dst)
		} else {
			g.p("VBROADCASTSS %s, %s", sa, tmp)
			g.p("VMULPS %s, %s, %s", tmp, dst, dst)
		}
	}
}

// storeOut folds every accumulator and stores it straight into the
// caller's output: (row r, token t) at out + t·os + 4r, where out and os
// are the arguments at frame offsets outOff and outOff+8. Writing in place
// (instead of to a buffer the caller copies) saves a copy per block.
func (g *gen) storeOut(outOff, NT, MR int, acc func(r, t int) int, tmp int) {
	g.p("MOVQ out+%d(FP), SI", outOff)
	if g.isa.name == "AVX512" && NT == 1 && MR == 8 && acc(0, 0) == 0 && acc(7, 0) == 7 {
		g.reduce8(tmp + 1)
		return
	}
	if NT > 1 {
		g.p("MOVQ os+%d(FP), %s", outOff+8, rWS)
	}
	for t := 0; t < NT; t++ {
		if t > 0 {
			g.p("ADDQ %s, SI", rWS)
		}
		for r := 0; r < MR; r++ {
			g.reduce(acc(r, t), tmp, 4*r)
		}
	}
}

// reduce8 folds the AVX-512 decode block's eight accumulators Z0…Z7 (rows
// 0…7 of one token) together and stores the 8 sums at (SI) in one store.
// Each sum is the same pairwise tree that reduce computes for one
// accumulator (lanes i+8, then i+4, i+2, i+1), so the 8×1 kernel stays
// bit-identical to the 1×1 and MR×NT ones; but the four levels run on
// packed pairs and quads of accumulators (about 26 instructions instead
// of 8 × 9), which matters for short rows such as stories260K's 64 columns.
// Temporaries are Z(t0)…Z(t0+8).
func (g *gen) reduce8(t0 int) {
	z := func(i int) string { return fmt.Sprintf("Z%d", i) }
	y := func(i int) string { return fmt.Sprintf("Y%d", i) }
	if t0+8 > 31 {
		log.Fatalf("reduce8: temporaries Z%d… past Z31", t0)
	}
	// Level 1 (lane i + lane i+8): S_p = [A.lo + A.hi | B.lo + B.hi] for
	// the pairs (A, B) = (Z0, Z1), (Z2, Z3), (Z4, Z5), (Z6, Z7).
	S := []int{t0, t0 + 1, t0 + 2, t0 + 3}
	tmp := t0 + 4
	for p := 0; p < 4; p++ {
		a, b := 2*p, 2*p+1
		g.p("VINSERTF64X4 $1, %s, %s, %s", y(b), z(a), z(S[p])) // [A.lo, B.lo]
		g.p("VSHUFF64X2 $0xee, %s, %s, %s", z(b), z(a), z(tmp)) // [A.hi, B.hi]
		g.p("VADDPS %s, %s, %s", z(tmp), z(S[p]), z(S[p]))
	}
	// Level 2 (lane i + lane i+4): T = [C0 | C1 | C2 | C3], C_k the 4-lane
	// folds of the rows in S_2q, S_2q+1, from their 128-bit units.
	T := []int{t0 + 5, t0 + 6}
	for q := 0; q < 2; q++ {
		g.p("VSHUFF32X4 $0x88, %s, %s, %s", z(S[2*q+1]), z(S[2*q]), z(T[q])) // low halves
		g.p("VSHUFF32X4 $0xdd, %s, %s, %s", z(S[2*q+1]), z(S[2*q]), z(tmp))  // high halves
		g.p("VADDPS %s, %s, %s", z(tmp), z(T[q]), z(T[q]))
	}
	// Levels 3 and 4 (lane i + i+2, then i + i+1) in every 128-bit unit:
	// lane 0 of unit k then holds row k's sum.
	for q := 0; q < 2; q++ {
		g.p("VPERMILPS $0x4e, %s, %s", z(T[q]), z(tmp))
		g.p("VADDPS %s, %s, %s", z(tmp), z(T[q]), z(T[q]))
		g.p("VPERMILPS $0xb1, %s, %s", z(T[q]), z(tmp))
		g.p("VADDPS %s, %s, %s", z(tmp), z(T[q]), z(T[q]))
	}
	// Gather lanes 0, 4, 8, 12 of both into rows 0…7 and store them.
	idx := t0 + 7
	g.p("VMOVDQU32 reduce8idx<>(SB), %s", z(idx))
	g.p("VPERMT2PS %s, %s, %s", z(T[1]), z(idx), z(T[0]))
	g.p("VMOVUPS %s, (SI)", y(T[0]))
}

// reduce folds vector acc to a scalar and stores it at off(SI).
func (g *gen) reduce(acc int, tmp int, off int) {
	g.fold(acc, tmp, g.isa.reg, fmt.Sprintf("%d(SI)", off))
}

// fold sums the lanes of vector acc (a Z or Y register, from) by halves —
// lane i + i+8, then i+4, i+2, i+1 — and stores the float32 sum at dst.
// Every kernel that sums a vector uses this one tree, which is what makes
// their results agree bit for bit. tmp is a scratch vector.
func (g *gen) fold(acc, tmp int, from, dst string) {
	x := func(i int) string { return fmt.Sprintf("X%d", i) }
	y := func(i int) string { return fmt.Sprintf("Y%d", i) }
	if from == "Z" {
		g.p("VEXTRACTF64X4 $1, Z%d, %s", acc, y(tmp))
		g.p("VADDPS %s, %s, %s", y(tmp), y(acc), y(acc))
	}
	if g.isa.name == "AVX512" {
		g.p("VEXTRACTF32X4 $1, %s, %s", y(acc), x(tmp)) // EVEX: any of Y0…Y31
	} else {
		g.p("VEXTRACTF128 $1, %s, %s", y(acc), x(tmp))
	}
	g.p("VADDPS %s, %s, %s", x(tmp), x(acc), x(acc))
	g.p("VPERMILPS $0x4e, %s, %s", x(acc), x(tmp))
	g.p("VADDPS %s, %s, %s", x(tmp), x(acc), x(acc))
	g.p("VPERMILPS $0xb1, %s, %s", x(acc), x(tmp))
	g.p("VADDSS %s, %s, %s", x(tmp), x(acc), x(acc))
	g.p("VMOVSS %s, %s", x(acc), dst)
}

// pfLoops emits a block's column loop, twice when the block prefetches:
// a copy that also prefetches the next row block, taken when the pf
// argument (frame offset pfOff) is not nil, and one that does not. The
// prefetching copy then jumps to the label after.
func (g *gen) pfLoops(name string, pf bool, pfOff int, after string, loops func(l string, prefetch bool)) {
	if pf {
		g.p("MOVQ pf+%d(FP), %s", pfOff, rPF)
		g.p("TESTQ %s, %s", rPF, rPF)
		g.p("JNZ %s_pf_start", name)
	}
	loops(name, false)
	if pf {
		g.p("JMP %s", after)
		g.label(name + "_pf_start")
		loops(name+"_pf", true)
	}
}

func (g *gen) zero(r string) {
	if g.isa.name == "AVX512" {
		g.p("VPXORD %s, %s, %s", r, r, r)
	} else {
		g.p("VXORPS %s, %s, %s", r, r, r)
	}
}

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

func main() {
	log.SetFlags(0)
	log.SetPrefix("asmgen: ")
	flags, err := parseFlags()
	if err != nil {
		log.Fatal(err)
	}
	header := "// Code generated by asmgen.go " + flags + "; DO NOT EDIT.\n\n//go:build amd64\n\n"
	var s, d bytes.Buffer
	writePrologue(&s, &d, header)
	k := writeKernels(&s, &d)
	writeGeometry(&d)
	writeCallBlock(&d, k.table)
	writeCallVNNIAndRows(&d, k)
	writeSIMDDispatch(&d)
	src, err := format.Source(d.Bytes())
	if err != nil {
		log.Fatalf("gofmt generated Go: %v\n%s", err, d.String())
	}
	if err := os.WriteFile("kernels_amd64.s", []byte(strings.TrimRight(s.String(), "\n")+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("kernels_amd64_gen.go", src, 0o644); err != nil {
		log.Fatal(err)
	}
}

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
