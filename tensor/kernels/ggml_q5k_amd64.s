//go:build amd64

#include "textflag.h"
#include "ggml_amd64.h"

// Q5_K: ggml_vec_dot_q5_K_q8_K's AVX2 path. Per super-block (176 bytes:
// d, dmin, 12 scale bytes, qh[32], qs[128]) the scales and mins unpack as
// Q4_K's (K4SCALES); the mins go madd(mins, pairwise bsums) to 4 int32,
// summed to one int (exact, so in any order), and into a scalar summs =
// fma(dmin·(−y.d), float(Σ), summs): ggml's `summs += dmin * hsum`, which
// GCC's -march=native build compiles to VFMADD231SS. Step j of 4 takes 32
// bytes of qs, the low nibbles sub-block 2j, the high ones 2j+1; the fifth
// bit of sub-block s's weight l is bit s of qh[l], which ggml isolates
// with a moving one-bit mask and shifts to bit 4; here one word shift by
// 4 − s (left) or s − 4 (right) and an AND with 0x10 bytes put the same
// bit there (a 16-bit shift by at most 4 moves no bit across bytes into
// bit 4). Then acc += d·y.d × float(Σ_j madd(scale, maddubs(q5, q8)));
// the row is hsum_float_8(acc) + summs. The VNNI form adds the products
// with VPDPWSSD, scale broadcast from the frame: the same int32 lanes.
//
// Registers: SI the row, DX out, R9 the rows left; per row R10 the
// super-block, R11 the token's quants, R12 its scales, R13 its pairwise
// bsums, CX the super-blocks left; Y0 acc, X7 summs, X8 the sign of lane
// 1, Y9 d·y.d, Y10 0x10 bytes, Y11 qh, Y15 0x0F bytes, Y6 the lanes; the
// scales as int16 pairs (sc_i, sc_i) at 4i(SP).

// Q5KCODES sets Y2 (sub-block 2j) and Y3 (2j+1) to step j's 5-bit codes:
// nibbles at wo(R10), fifth bits by shifts op0 $n0 and op1 $n1 of qh.
#define Q5KCODES(wo, op0, n0, op1, n1) \
	VMOVDQU wo(R10), Y2; \
	VPSRLW $4, Y2, Y3; \
	VPAND Y15, Y2, Y2; \
	VPAND Y15, Y3, Y3; \
	op0 $n0, Y11, Y4; \
	op1 $n1, Y11, Y5; \
	VPAND Y10, Y4, Y4; \
	VPAND Y10, Y5, Y5; \
	VPOR Y4, Y2, Y2; \
	VPOR Y5, Y3, Y3

// Q5KSUB_AVX2 is step j (as Q4KSUB): codes Y2, Y3 against q8 at x0 and
// x1 (64j and 64j+32), times scales 2j and 2j+1 (frame offsets k0, k1),
// added to Y6.
#define Q5KSUB_AVX2(k0, k1, wo, x0, x1, op0, n0, op1, n1) \
	Q5KCODES(wo, op0, n0, op1, n1); \
	VPBROADCASTD k0(SP), Y13; \
	VPBROADCASTD k1(SP), Y14; \
	VPMADDUBSW x0(R11), Y2, Y4; \
	VPMADDWD Y4, Y13, Y4; \
	VPMADDUBSW x1(R11), Y3, Y5; \
	VPMADDWD Y5, Y14, Y5; \
	VPADDD Y5, Y4, Y4; \
	VPADDD Y4, Y6, Y6

#define Q5KSUB_VNNI(k0, k1, wo, x0, x1, op0, n0, op1, n1) \
	Q5KCODES(wo, op0, n0, op1, n1); \
	VPMADDUBSW x0(R11), Y2, Y4; \
	VPMADDUBSW x1(R11), Y3, Y5; \
	VPDPWSSD.BCST k0(SP), Y4, Y6; \
	VPDPWSSD.BCST k1(SP), Y5, Y6

// Q5KBLK is one super-block of a row, its steps by SUB.
#define Q5KBLK(SUB) \
	PREFETCHT1 4096(R10); \
	PREFETCHT1 4160(R10); \
	PREFETCHT1 4224(R10); \
	VMOVDQU 4(R10), X11; \
	K4SCALES(X11, X12, X13, X14); \
	VPMOVZXBW X12, Y11; \
	VPUNPCKLWD X11, X11, X13; \
	VPUNPCKHWD X11, X11, X14; \
	VMOVDQU X13, 0(SP); \
	VMOVDQU X14, 16(SP); \
	VMOVD 0(R10), X9; \
	VCVTPH2PS X9, X9; \
	VBROADCASTSS (R12), X13; \
	VXORPS X8, X13, X13; \
	VMULPS X13, X9, X9; \
	VEXTRACTI128 $1, Y11, X13; \
	VPMADDWD (R13), X13, X13; \
	VPSHUFD $0x0e, X13, X14; \
	VPADDD X14, X13, X13; \
	VPSHUFD $0x01, X13, X14; \
	VPADDD X14, X13, X13; \
	VCVTDQ2PS X13, X13; \
	VMOVSHDUP X9, X14; \
	VFMADD231SS X13, X14, X7; \
	VBROADCASTSS X9, Y9; \
	VMOVDQU 16(R10), Y11; \
	VPXOR Y6, Y6, Y6; \
	SUB(0, 4, 48, 0, 32, VPSLLW, 4, VPSLLW, 3); \
	SUB(8, 12, 80, 64, 96, VPSLLW, 2, VPSLLW, 1); \
	SUB(16, 20, 112, 128, 160, VPSRLW, 0, VPSRLW, 1); \
	SUB(24, 28, 144, 192, 224, VPSRLW, 2, VPSRLW, 3); \
	VCVTDQ2PS Y6, Y6; \
	VFMADD231PS Y6, Y9, Y0; \
	ADDQ $176, R10; \
	ADDQ $256, R11; \
	ADDQ $4, R12; \
	ADDQ $16, R13

// Q5KARGS loads the row-independent arguments and constants.
#define Q5KARGS \
	MOVQ w+0(FP), SI; \
	MOVQ out+48(FP), DX; \
	MOVQ nrows+56(FP), R9; \
	MOVL $0x0f0f0f0f, AX; \
	VMOVD AX, X15; \
	VPBROADCASTD X15, Y15; \
	MOVL $0x10101010, AX; \
	VMOVD AX, X10; \
	VPBROADCASTD X10, Y10; \
	MOVQ $0x8000000000000000, AX; \
	VMOVQ AX, X8

// Q5KROW starts a row.
#define Q5KROW \
	MOVQ SI, R10; \
	MOVQ xq+16(FP), R11; \
	MOVQ xd+24(FP), R12; \
	MOVQ bs32+32(FP), R13; \
	MOVQ nb+40(FP), CX; \
	VXORPS Y0, Y0, Y0; \
	VXORPS X7, X7, X7

// Q5KENDROW stores hsum_float_8(acc) + summs and moves to the next row.
#define Q5KENDROW \
	HSUM8; \
	VADDSS X7, X1, X1; \
	VMOVSS X1, (DX); \
	ADDQ $4, DX; \
	ADDQ ws+8(FP), SI; \
	DECQ R9

// func ggmlQ5KRowsAVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, bs32 *int16, nb int, out *float32, nrows int)
TEXT ·ggmlQ5KRowsAVX2(SB), NOSPLIT, $32-64
	Q5KARGS
q5ka_row:
	Q5KROW
q5ka_blk:
	Q5KBLK(Q5KSUB_AVX2)
	DECQ CX
	JNZ q5ka_blk
	Q5KENDROW
	JNZ q5ka_row
	VZEROUPPER
	RET

// func ggmlQ5KRowsVNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, bs32 *int16, nb int, out *float32, nrows int)
TEXT ·ggmlQ5KRowsVNNI(SB), NOSPLIT, $32-64
	Q5KARGS
q5kv_row:
	Q5KROW
q5kv_blk:
	Q5KBLK(Q5KSUB_VNNI)
	DECQ CX
	JNZ q5kv_blk
	Q5KENDROW
	JNZ q5kv_row
	VZEROUPPER
	RET

// The Q5_K tiles (prefill): 4 rows × 4 tokens (VNNI) or 2 (AVX2), one row
// at a time against the tokens, as the Q4_K tiles of ggml_amd64.s, so
// each super-block's scales, mins and 5-bit codes are formed once for all
// the tokens (the row kernel forms them per token). Per token the int32
// lanes, the fma into acc, the mins' exact int sum, the scalar fma into
// summs and the final hsum(acc) + summs are the row kernel's, so every
// output has its bits.

// q5kBit4 is 32 bytes of 0x10, q5kSign1 the sign of float lane 1 (for
// the AVX2 tile, which has no register left for them).
DATA q5kBit4<>+0(SB)/8, $0x1010101010101010
DATA q5kBit4<>+8(SB)/8, $0x1010101010101010
DATA q5kBit4<>+16(SB)/8, $0x1010101010101010
DATA q5kBit4<>+24(SB)/8, $0x1010101010101010
GLOBL q5kBit4<>(SB), RODATA|NOPTR, $32
DATA q5kSign1<>+0(SB)/8, $0x8000000000000000
DATA q5kSign1<>+8(SB)/8, $0
GLOBL q5kSign1<>(SB), RODATA|NOPTR, $16

// The VNNI tile's registers: Y0-Y3 token t's acc, Y4-Y7 its super-block
// lanes, X8-X11 its summs; Y12, Y13 a step's codes (sub-blocks 2j, 2j+1);
// X14 the 8 mins; Y15 = 0x0f bytes; Y26 = 0x10 bytes; Y27 the qh bytes,
// Y28, Y29 their fifth bits; X20 the sign of lane 1; X21 = (d, dmin).

// Q5KT_STEP is step j (as Q5KSUB_VNNI) for every token: the codes from
// nibbles at wo(R10) and qh shifted by op0 $n0 and op1 $n1, against token
// t's q8 at x0 and x1 from its quants pointer.
#define Q5KT_STEP(k0, k1, wo, x0, x1, op0, n0, op1, n1) \
	VMOVDQU32 wo(R10), Y12; \
	VPSRLW $4, Y12, Y13; \
	VPANDD Y15, Y12, Y12; \
	VPANDD Y15, Y13, Y13; \
	op0 $n0, Y27, Y28; \
	op1 $n1, Y27, Y29; \
	VPANDD Y26, Y28, Y28; \
	VPANDD Y26, Y29, Y29; \
	VPORD Y28, Y12, Y12; \
	VPORD Y29, Y13, Y13; \
	VPMADDUBSW x0(R11), Y12, Y22; \
	VPMADDUBSW x0(R11)(R9*1), Y12, Y23; \
	VPMADDUBSW x0(R8), Y12, Y24; \
	VPMADDUBSW x0(R8)(R9*1), Y12, Y25; \
	VPDPWSSD.BCST k0(SP), Y22, Y4; \
	VPDPWSSD.BCST k0(SP), Y23, Y5; \
	VPDPWSSD.BCST k0(SP), Y24, Y6; \
	VPDPWSSD.BCST k0(SP), Y25, Y7; \
	VPMADDUBSW x1(R11), Y13, Y22; \
	VPMADDUBSW x1(R11)(R9*1), Y13, Y23; \
	VPMADDUBSW x1(R8), Y13, Y24; \
	VPMADDUBSW x1(R8)(R9*1), Y13, Y25; \
	VPDPWSSD.BCST k1(SP), Y22, Y4; \
	VPDPWSSD.BCST k1(SP), Y23, Y5; \
	VPDPWSSD.BCST k1(SP), Y24, Y6; \
	VPDPWSSD.BCST k1(SP), Y25, Y7

// Q5KT_TOKEN closes one token's super-block: (d·y.d, dmin·(−y.d)) from
// X21 and its scale at yd; summs M = fma(dmin·(−y.d), float(Σ madd(mins,
// bs32 at bs)), M); acc A += d·y.d × float(lanes L), L cleared.
#define Q5KT_TOKEN(yd, bs, L, M, A) \
	VBROADCASTSS yd, X16; \
	VXORPS X20, X16, X16; \
	VMULPS X16, X21, X16; \
	VPMADDWD bs, X14, X17; \
	VPSHUFD $0x0e, X17, X18; \
	VPADDD X18, X17, X17; \
	VPSHUFD $0x01, X17, X18; \
	VPADDD X18, X17, X17; \
	VCVTDQ2PS X17, X17; \
	VMOVSHDUP X16, X18; \
	VFMADD231SS X17, X18, M; \
	VBROADCASTSS X16, Y16; \
	VCVTDQ2PS L, L; \
	VFMADD231PS L, Y16, A; \
	VPXORD L, L, L

// Q5KT_STORE stores token t's hsum_float_8(A) + summs M into o.
#define Q5KT_STORE(MX, AY, AX, o) \
	VEXTRACTF32X4 $1, AY, X17; \
	VADDPS AX, X17, X17; \
	VMOVHLPS X17, X17, X18; \
	VADDPS X18, X17, X17; \
	VMOVSHDUP X17, X18; \
	VADDSS X18, X17, X17; \
	VADDSS MX, X17, X17; \
	VMOVSS X17, o

// func ggmlQ5KTile4x4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xs uintptr, xd *float32, ds uintptr, bs32 *int16, bss uintptr, nb int, out *float32, os uintptr)
//
// Tokens 0-3 address as (P), (P)(S*1), (P2), (P2)(S*1) with P2 = P + 2·S:
// quants R11 and R8 (S = xs in R9), scales R12 and BX (S = ds in R13),
// pairwise sums R14 and DI (S = bss in AX). SI is the row, R10 its
// super-block, CX the super-blocks left, DX the rows left; 32(SP) holds
// the row's output of token 0.
TEXT ·ggmlQ5KTile4x4VNNI(SB), NOSPLIT, $40-88
	MOVQ w+0(FP), SI
	MOVQ xs+24(FP), R9
	MOVQ ds+40(FP), R13
	MOVQ bss+56(FP), AX
	MOVQ out+72(FP), DX
	MOVQ DX, 32(SP)
	MOVQ $4, DX
	MOVL $0x0f0f0f0f, CX
	VPBROADCASTD CX, Y15
	MOVL $0x10101010, CX
	VPBROADCASTD CX, Y26
	MOVQ $0x8000000000000000, CX
	VMOVQ CX, X20
q5kt_row:
	MOVQ SI, R10
	MOVQ xq+16(FP), R11
	LEAQ (R11)(R9*2), R8
	MOVQ xd+32(FP), R12
	LEAQ (R12)(R13*2), BX
	MOVQ bs32+48(FP), R14
	LEAQ (R14)(AX*2), DI
	MOVQ nb+64(FP), CX
	VPXORD Y0, Y0, Y0
	VPXORD Y1, Y1, Y1
	VPXORD Y2, Y2, Y2
	VPXORD Y3, Y3, Y3
	VPXORD Y4, Y4, Y4
	VPXORD Y5, Y5, Y5
	VPXORD Y6, Y6, Y6
	VPXORD Y7, Y7, Y7
	VPXORD X8, X8, X8
	VPXORD X9, X9, X9
	VPXORD X10, X10, X10
	VPXORD X11, X11, X11
q5kt_blk:
	// The scales and mins as in the row kernel (K4SCALES, there on
	// X11-X14), here on X16-X19: the scales to the frame as int16 pairs,
	// the mins to X14.
	VMOVDQU32 4(R10), X16
	VPSHUFB ggmlK4P<>(SB), X16, X17
	VPSHUFB ggmlK4Q<>(SB), X16, X18
	VPSRLW $4, X17, X19
	VPANDD ggmlK4M1<>(SB), X17, X17
	VPANDD ggmlK4M2<>(SB), X19, X19
	VPSRLW $2, X18, X18
	VPANDD ggmlK4M3<>(SB), X18, X18
	VPORD X19, X17, X17
	VPORD X18, X17, X17
	VPMOVZXBW X17, Y16
	VPUNPCKLWD X16, X16, X18
	VPUNPCKHWD X16, X16, X19
	VMOVDQU32 X18, 0(SP)
	VMOVDQU32 X19, 16(SP)
	VEXTRACTI32X4 $1, Y16, X14
	VMOVD 0(R10), X21
	VCVTPH2PS X21, X21
	VMOVDQU32 16(R10), Y27
	Q5KT_STEP(0, 4, 48, 0, 32, VPSLLW, 4, VPSLLW, 3)
	Q5KT_STEP(8, 12, 80, 64, 96, VPSLLW, 2, VPSLLW, 1)
	Q5KT_STEP(16, 20, 112, 128, 160, VPSRLW, 0, VPSRLW, 1)
	Q5KT_STEP(24, 28, 144, 192, 224, VPSRLW, 2, VPSRLW, 3)
	Q5KT_TOKEN((R12), (R14), Y4, X8, Y0)
	Q5KT_TOKEN((R12)(R13*1), (R14)(AX*1), Y5, X9, Y1)
	Q5KT_TOKEN((BX), (DI), Y6, X10, Y2)
	Q5KT_TOKEN((BX)(R13*1), (DI)(AX*1), Y7, X11, Y3)
	ADDQ $176, R10
	ADDQ $256, R11
	ADDQ $256, R8
	ADDQ $4, R12
	ADDQ $4, BX
	ADDQ $16, R14
	ADDQ $16, DI
	DECQ CX
	JNZ q5kt_blk
	MOVQ 32(SP), R10
	MOVQ os+80(FP), R11
	Q5KT_STORE(X8, Y0, X0, (R10))
	ADDQ R11, R10
	Q5KT_STORE(X9, Y1, X1, (R10))
	ADDQ R11, R10
	Q5KT_STORE(X10, Y2, X2, (R10))
	ADDQ R11, R10
	Q5KT_STORE(X11, Y3, X3, (R10))
	ADDQ $4, 32(SP)
	ADDQ ws+8(FP), SI
	DECQ DX
	JNZ q5kt_row
	VZEROUPPER
	RET

// The AVX2 tile's registers: Y0, Y1 the tokens' acc, Y2, Y3 their
// super-block lanes, X4, X5 their summs; Y6, Y7 a step's codes, Y8, Y9
// its two scales; Y10, Y11, Y14 temporaries; Y12 the qh bytes; X13 =
// (d, dmin); Y15 = 0x0f bytes. The 8 mins wait in the frame at 32(SP).

// Q5KA_STEP is step j (as Q5KSUB_AVX2) for both tokens.
#define Q5KA_STEP(k0, k1, wo, x0, x1, op0, n0, op1, n1) \
	VMOVDQU wo(R10), Y6; \
	VPSRLW $4, Y6, Y7; \
	VPAND Y15, Y6, Y6; \
	VPAND Y15, Y7, Y7; \
	op0 $n0, Y12, Y10; \
	op1 $n1, Y12, Y11; \
	VPAND q5kBit4<>(SB), Y10, Y10; \
	VPAND q5kBit4<>(SB), Y11, Y11; \
	VPOR Y10, Y6, Y6; \
	VPOR Y11, Y7, Y7; \
	VPBROADCASTD k0(SP), Y8; \
	VPBROADCASTD k1(SP), Y9; \
	VPMADDUBSW x0(R11), Y6, Y10; \
	VPMADDWD Y10, Y8, Y10; \
	VPMADDUBSW x1(R11), Y7, Y11; \
	VPMADDWD Y11, Y9, Y11; \
	VPADDD Y11, Y10, Y10; \
	VPADDD Y10, Y2, Y2; \
	VPMADDUBSW x0(R11)(R9*1), Y6, Y10; \
	VPMADDWD Y10, Y8, Y10; \
	VPMADDUBSW x1(R11)(R9*1), Y7, Y11; \
	VPMADDWD Y11, Y9, Y11; \
	VPADDD Y11, Y10, Y10; \
	VPADDD Y10, Y3, Y3

// Q5KA_TOKEN closes one token's super-block as Q5KT_TOKEN does.
#define Q5KA_TOKEN(yd, bs, L, M, A) \
	VBROADCASTSS yd, X14; \
	VXORPS q5kSign1<>(SB), X14, X14; \
	VMULPS X14, X13, X14; \
	VMOVDQU 32(SP), X10; \
	VPMADDWD bs, X10, X10; \
	VPSHUFD $0x0e, X10, X11; \
	VPADDD X11, X10, X10; \
	VPSHUFD $0x01, X10, X11; \
	VPADDD X11, X10, X10; \
	VCVTDQ2PS X10, X10; \
	VMOVSHDUP X14, X11; \
	VFMADD231SS X10, X11, M; \
	VBROADCASTSS X14, Y14; \
	VCVTDQ2PS L, L; \
	VFMADD231PS L, Y14, A; \
	VPXOR L, L, L

// Q5KA_STORE stores hsum_float_8(A) + summs M into o. Uses X10, X11.
#define Q5KA_STORE(MX, AY, AX, o) \
	VEXTRACTF128 $1, AY, X10; \
	VADDPS AX, X10, X10; \
	VMOVHLPS X10, X10, X11; \
	VADDPS X11, X10, X10; \
	VMOVSHDUP X10, X11; \
	VADDSS X11, X10, X10; \
	VADDSS MX, X10, X10; \
	VMOVSS X10, o

// func ggmlQ5KTile4x2AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xs uintptr, xd *float32, ds uintptr, bs32 *int16, bss uintptr, nb int, out *float32, os uintptr)
//
// Token 1 addresses one stride on from token 0: quants R11 (xs apart, in
// R9), scales R12 (ds, in R13), pairwise sums R14 (bss, in AX). SI is the
// row, R10 its super-block, CX the super-blocks left, DX the rows left;
// 48(SP) holds the row's output of token 0.
TEXT ·ggmlQ5KTile4x2AVX2(SB), NOSPLIT, $56-88
	MOVQ w+0(FP), SI
	MOVQ xs+24(FP), R9
	MOVQ ds+40(FP), R13
	MOVQ bss+56(FP), AX
	MOVQ out+72(FP), DX
	MOVQ DX, 48(SP)
	MOVQ $4, DX
	MOVL $0x0f0f0f0f, CX
	VMOVD CX, X15
	VPBROADCASTD X15, Y15
q5ka2_row:
	MOVQ SI, R10
	MOVQ xq+16(FP), R11
	MOVQ xd+32(FP), R12
	MOVQ bs32+48(FP), R14
	MOVQ nb+64(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VXORPS X4, X4, X4
	VXORPS X5, X5, X5
q5ka2_blk:
	// The scales and mins as in the row kernel (there X11-X14 and Y11),
	// here into Y10 (mins_and_scales), the frame (scales at 0, mins at 32).
	VMOVDQU 4(R10), X6
	K4SCALES(X6, X7, X8, X9)
	VPMOVZXBW X7, Y10
	VPUNPCKLWD X10, X10, X8
	VPUNPCKHWD X10, X10, X9
	VMOVDQU X8, 0(SP)
	VMOVDQU X9, 16(SP)
	VEXTRACTI128 $1, Y10, X11
	VMOVDQU X11, 32(SP)
	VMOVD 0(R10), X13
	VCVTPH2PS X13, X13
	VMOVDQU 16(R10), Y12
	Q5KA_STEP(0, 4, 48, 0, 32, VPSLLW, 4, VPSLLW, 3)
	Q5KA_STEP(8, 12, 80, 64, 96, VPSLLW, 2, VPSLLW, 1)
	Q5KA_STEP(16, 20, 112, 128, 160, VPSRLW, 0, VPSRLW, 1)
	Q5KA_STEP(24, 28, 144, 192, 224, VPSRLW, 2, VPSRLW, 3)
	Q5KA_TOKEN((R12), (R14), Y2, X4, Y0)
	Q5KA_TOKEN((R12)(R13*1), (R14)(AX*1), Y3, X5, Y1)
	ADDQ $176, R10
	ADDQ $256, R11
	ADDQ $4, R12
	ADDQ $16, R14
	DECQ CX
	JNZ q5ka2_blk
	MOVQ 48(SP), R10
	MOVQ os+80(FP), R11
	Q5KA_STORE(X4, Y0, X0, (R10))
	Q5KA_STORE(X5, Y1, X1, (R10)(R11*1))
	ADDQ $4, 48(SP)
	ADDQ ws+8(FP), SI
	DECQ DX
	JNZ q5ka2_row
	VZEROUPPER
	RET
