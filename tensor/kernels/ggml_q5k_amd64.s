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
