//go:build ignore

// asmgen writes kernels_amd64.s and kernels_amd64_gen.go.
//
// The program is split by kernel family: this file holds the ISAs, the
// formats, the flags and the emitter's shared helpers; asmgen_block.go the
// register-block kernels, asmgen_vnni.go the AVX-512 VNNI Q8_0 kernels,
// asmgen_vec.go the vector and row-gather kernels, and asmgen_write.go the
// generated Go dispatchers. Run it with `go generate ./tensor/kernels`,
// which passes the flags the committed files were made with
// (cpu_amd64.go's //go:generate line; the files' first line records them
// too), or `go run asmgen*.go -h` inside this directory for the flags. CI regenerates and fails on any diff. The
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
