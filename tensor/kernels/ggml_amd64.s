//go:build amd64

#include "textflag.h"

// ggml dot-product kernels (see ggml_amd64.go). Each computes nrows
// consecutive weight rows (row stride ws bytes) against one token's
// quantized activations and stores the nrows results to out[0:nrows].
// The instruction sequence per row follows ggml's AVX2 code for the same
// dot product (ggml-cpu-quants.c, llama.cpp c392e50), so each output has
// the bits llama.cpp's AVX2 build computes from the same activations:
// one float32 accumulator of 8 lanes, acc = fma(scale, float(int lanes),
// acc) per block (super-block for the K-quants), then hsum_float_8's
// folding: (hi + lo), + movehl, + movehdup.
//
// The tile kernels at the end of the file (prefill, see ggml_tile.go)
// compute 4 rows × several tokens with the same per-output sequence.




// ggmlK6Shuf2: 32-byte masks over 8 int16 scales held in both lanes;
// mask k broadcasts scale 2k to the low lane and 2k+1 to the high lane
// (ggml's get_scale_shuffle then _mm256_cvtepi8_epi16, on widened scales).
DATA ggmlK6Shuf2<>+0(SB)/8, $0x0100010001000100
DATA ggmlK6Shuf2<>+8(SB)/8, $0x0100010001000100
DATA ggmlK6Shuf2<>+16(SB)/8, $0x0302030203020302
DATA ggmlK6Shuf2<>+24(SB)/8, $0x0302030203020302
DATA ggmlK6Shuf2<>+32(SB)/8, $0x0504050405040504
DATA ggmlK6Shuf2<>+40(SB)/8, $0x0504050405040504
DATA ggmlK6Shuf2<>+48(SB)/8, $0x0706070607060706
DATA ggmlK6Shuf2<>+56(SB)/8, $0x0706070607060706
DATA ggmlK6Shuf2<>+64(SB)/8, $0x0908090809080908
DATA ggmlK6Shuf2<>+72(SB)/8, $0x0908090809080908
DATA ggmlK6Shuf2<>+80(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA ggmlK6Shuf2<>+88(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA ggmlK6Shuf2<>+96(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA ggmlK6Shuf2<>+104(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA ggmlK6Shuf2<>+112(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA ggmlK6Shuf2<>+120(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL ggmlK6Shuf2<>(SB), RODATA|NOPTR, $128

#include "ggml_amd64.h"

// Q8_0 block (34 bytes): d fp16, 32 int8.
#define Q8_0LOAD \
	VMOVDQU 2(R10), Y2; \
	VMOVDQU (R11), Y3

// Q4_0 block (18 bytes): d fp16, 16 bytes of nibbles; bytes_from_nibbles_32
// puts the low nibbles in the low lane, the high ones in the high lane,
// then 8 is subtracted. Needs Y14 = 0x0F bytes and Y13 = 8 bytes.
#define Q4_0LOAD \
	VMOVDQU 2(R10), X2; \
	VPSRLW $4, X2, X3; \
	VINSERTI128 $1, X3, Y2, Y2; \
	VPAND Y14, Y2, Y2; \
	VPSUBB Y13, Y2, Y2; \
	VMOVDQU (R11), Y3

#define Q4CONSTS \
	MOVL $0x0f0f0f0f, AX; \
	VMOVD AX, X14; \
	VPBROADCASTD X14, Y14; \
	MOVL $0x08080808, AX; \
	VMOVD AX, X13; \
	VPBROADCASTD X13, Y13

// func ggmlQ8_0RowsAVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, nrows int)
TEXT ·ggmlQ8_0RowsAVX2(SB), NOSPLIT, $0-56
	Q8ARGS
q80a_row:
	Q8ROW
q80a_blk:
	Q8_0LOAD
	MULSUM_AVX2
	Q8SCALE
	VFMADD231PS Y6, Y7, Y0
	ADDQ $34, R10
	ADDQ $32, R11
	ADDQ $4, R12
	DECQ R13
	JNZ q80a_blk
	Q8ENDROW
	JNZ q80a_row
	VZEROUPPER
	RET

// func ggmlQ8_0RowsVNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, nrows int)
TEXT ·ggmlQ8_0RowsVNNI(SB), NOSPLIT, $0-56
	Q8ARGS
q80v_row:
	Q8ROW
q80v_blk:
	Q8_0LOAD
	MULSUM_VNNI
	Q8SCALE
	VFMADD231PS Y6, Y7, Y0
	ADDQ $34, R10
	ADDQ $32, R11
	ADDQ $4, R12
	DECQ R13
	JNZ q80v_blk
	Q8ENDROW
	JNZ q80v_row
	VZEROUPPER
	RET

// func ggmlQ4_0RowsAVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, nrows int)
TEXT ·ggmlQ4_0RowsAVX2(SB), NOSPLIT, $0-56
	Q8ARGS
	Q4CONSTS
q40a_row:
	Q8ROW
q40a_blk:
	Q4_0LOAD
	MULSUM_AVX2
	Q8SCALE
	VFMADD231PS Y6, Y7, Y0
	ADDQ $18, R10
	ADDQ $32, R11
	ADDQ $4, R12
	DECQ R13
	JNZ q40a_blk
	Q8ENDROW
	JNZ q40a_row
	VZEROUPPER
	RET

// func ggmlQ4_0RowsVNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, nrows int)
TEXT ·ggmlQ4_0RowsVNNI(SB), NOSPLIT, $0-56
	Q8ARGS
	Q4CONSTS
q40v_row:
	Q8ROW
q40v_blk:
	Q4_0LOAD
	MULSUM_VNNI
	Q8SCALE
	VFMADD231PS Y6, Y7, Y0
	ADDQ $18, R10
	ADDQ $32, R11
	ADDQ $4, R12
	DECQ R13
	JNZ q40v_blk
	Q8ENDROW
	JNZ q40v_row
	VZEROUPPER
	RET

// KSCALE sets X9 to y.d (at (R12)) times fp16 at off(R10). Uses AX.
#define KSCALE(off) \
	MOVWLZX off(R10), AX; \
	VMOVD AX, X9; \
	VCVTPH2PS X9, X9; \
	VMULSS (R12), X9, X9

// Q4KSUB(k0, k1, wo, x0, x1) is one 64-value step j of ggml's AVX2 q4_K
// loop: 32 bytes of nibbles at wo = 16+32j, low nibbles against q8 at
// x0 = 64j with scale 2j, high nibbles against x1 = 64j+32 with scale
// 2j+1, added to Y6. The scale vectors are what ggml's
// get_scale_shuffle_k4 shuffles make (scale i in all 16 int16 lanes),
// here broadcast from the frame, where scale i is stored as the int16 pair
// (sc, sc) at k = 4i: a broadcast from memory costs a load, not a shuffle.
// Y15 holds 0x0F bytes.
#define Q4KSUB(k0, k1, wo, x0, x1) \
	VPBROADCASTD k0(SP), Y13; \
	VPBROADCASTD k1(SP), Y14; \
	VMOVDQU wo(R10), Y2; \
	VPSRLW $4, Y2, Y3; \
	VPAND Y15, Y2, Y2; \
	VPAND Y15, Y3, Y3; \
	VPMADDUBSW x0(R11), Y2, Y4; \
	VPMADDWD Y4, Y13, Y4; \
	VPMADDUBSW x1(R11), Y3, Y5; \
	VPMADDWD Y5, Y14, Y5; \
	VPADDD Y5, Y4, Y4; \
	VPADDD Y4, Y6, Y6

// The K-quant kernels walk their rows as one stream and prefetch 4 KiB
// ahead into L2 (a hint: it never faults, even past the matrix). With
// 1 KiB, a TinyLlama-shaped Q4_K_M decode token (0.63 GB, from DRAM) took
// 82–93 CPU ms on one thread; with 4 KiB 62–66 (BenchmarkGGMLDecode1B).

// func ggmlQ4KRowsAVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, bs32 *int16, nb int, out *float32, nrows int)
//
// ggml_vec_dot_q4_K_q8_K's AVX2 path: per super-block, the 12 scale bytes
// unpacked into 8 scales and 8 mins (utmp, here with byte shuffles rather
// than ggml's 32-bit shifts: the same bytes), acc_m += −dmin·y.d ×
// madd(mins, pairwise bsums) on 4 lanes, acc += d·y.d × float(Σ_j
// madd(scale, maddubs(q4, q8))); the row is hsum(acc) + hsum4(acc_m).
TEXT ·ggmlQ4KRowsAVX2(SB), NOSPLIT, $32-64
	MOVQ w+0(FP), SI
	MOVQ out+48(FP), DX
	MOVQ nrows+56(FP), R9
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	// X8: the sign of lane 1, to form (y.d, −y.d).
	MOVQ $0x8000000000000000, AX
	VMOVQ AX, X8
q4k_row:
	MOVQ SI, R10
	MOVQ xq+16(FP), R11
	MOVQ xd+24(FP), R12
	MOVQ bs32+32(FP), R13
	MOVQ nb+40(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS X10, X10, X10
q4k_blk:
	PREFETCHT1 4096(R10)
	PREFETCHT1 4160(R10)
	PREFETCHT1 4224(R10)
	// The 12 scale bytes at 4(R10) to ggml's utmp (see K4SCALES).
	VMOVDQU 4(R10), X11
	K4SCALES(X11, X12, X13, X14)
	// mins_and_scales: 16 int16, scales in lanes 0-7, mins in 8-15.
	VPMOVZXBW X12, Y11
	// The scales as int16 pairs (sc_i, sc_i) at 4i(SP).
	VPUNPCKLWD X11, X11, X13
	VPUNPCKHWD X11, X11, X14
	VMOVDQU X13, 0(SP)
	VMOVDQU X14, 16(SP)
	// X9 = (d·y.d, dmin·(−y.d)): ggml's d and dmin, from the block's two
	// fp16 and the token's scale.
	VMOVD 0(R10), X9
	VCVTPH2PS X9, X9
	VBROADCASTSS (R12), X7
	VXORPS X8, X7, X7
	VMULPS X7, X9, X9
	// Mins: acc_m += dmin × float(madd(mins, q8s)), q8s the 8 pairwise
	// bsums (bsums[2i] + bsums[2i+1], ggml's _mm_hadd_epi16), which the
	// activation side stores ready (bs32).
	VEXTRACTI128 $1, Y11, X13
	VPMADDWD (R13), X13, X13
	VCVTDQ2PS X13, X13
	VPERMILPS $0x55, X9, X7
	VFMADD231PS X13, X7, X10
	VBROADCASTSS X9, Y9
	VPXOR Y6, Y6, Y6
	Q4KSUB(0, 4, 16, 0, 32)
	Q4KSUB(8, 12, 48, 64, 96)
	Q4KSUB(16, 20, 80, 128, 160)
	Q4KSUB(24, 28, 112, 192, 224)
	VCVTDQ2PS Y6, Y6
	VFMADD231PS Y6, Y9, Y0
	ADDQ $144, R10
	ADDQ $256, R11
	ADDQ $4, R12
	ADDQ $16, R13
	DECQ CX
	JNZ q4k_blk
	// acc_m += movehl(acc_m); acc_m = add_ss(acc_m, movehdup(acc_m))
	VMOVHLPS X10, X10, X2
	VADDPS X2, X10, X10
	VMOVSHDUP X10, X2
	VADDSS X2, X10, X10
	HSUM8
	VADDSS X10, X1, X1
	VMOVSS X1, (DX)
	ADDQ $4, DX
	ADDQ ws+8(FP), SI
	DECQ R9
	JNZ q4k_row
	VZEROUPPER
	RET

// Q6KQUAD(xoff, poff, moff, S) finishes one 32-value quad of a Q6_K
// half: Y7 holds the 6-bit codes q (0..63); p16 = maddubs(q, q8) −
// maddubs(32, q8) (so q − 32), with maddubs(32, q8) read ready from the
// token's q8s (poff(BX)) rather than recomputed for every row; times the
// quad's two int16 sub-block scales, which the ggmlK6Shuf2 mask at moff
// selects from S (the half's 8 sign-extended scales in both lanes), added
// to Y6. The int16 lanes are ggml's, so the sums are too.
#define Q6KQUAD(xoff, poff, moff, S) \
	VPMADDUBSW xoff(R11), Y7, Y7; \
	VPSUBW poff(BX), Y7, Y7; \
	VPSHUFB ggmlK6Shuf2<>+moff(SB), S, Y8; \
	VPMADDWD Y7, Y8, Y7; \
	VPADDD Y7, Y6, Y6

// func ggmlQ6KRowsAVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, q8s *int16, nb int, out *float32, nrows int)
//
// ggml_vec_dot_q6_K_q8_K's AVX2 path: per super-block acc += d·y.d ×
// float(Σ madd(scales, maddubs(q, q8) − maddubs(32, q8))).
TEXT ·ggmlQ6KRowsAVX2(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), SI
	MOVQ xq+16(FP), DI
	MOVQ xd+24(FP), R8
	MOVQ nb+40(FP), CX
	MOVQ out+48(FP), DX
	MOVQ nrows+56(FP), R9
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x03030303, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
q6k_row:
	Q8ROW
	MOVQ q8s+32(FP), BX
q6k_blk:
	PREFETCHT1 4096(R10)
	PREFETCHT1 4160(R10)
	PREFETCHT1 4224(R10)
	PREFETCHT1 4288(R10)
	// Scales: sc0..7 in both lanes of Y11, sc8..15 in both lanes of Y12.
	VPMOVSXBW 192(R10), Y10
	VPERMQ $0x44, Y10, Y11
	VPERMQ $0xee, Y10, Y12
	VPXOR Y6, Y6, Y6
	// Half 0: ql[0:64], qh[0:32], q8[0:128].
	VMOVDQU 0(R10), Y2
	VMOVDQU 32(R10), Y3
	VMOVDQU 128(R10), Y4
	VPAND Y14, Y4, Y7
	VPSLLW $4, Y7, Y7
	VPAND Y15, Y2, Y8
	VPOR Y8, Y7, Y7
	Q6KQUAD(0, 0, 0, Y11)
	VPSRLW $2, Y4, Y7
	VPAND Y14, Y7, Y7
	VPSLLW $4, Y7, Y7
	VPAND Y15, Y3, Y8
	VPOR Y8, Y7, Y7
	Q6KQUAD(32, 32, 32, Y11)
	VPSRLW $4, Y4, Y7
	VPAND Y14, Y7, Y7
	VPSLLW $4, Y7, Y7
	VPSRLW $4, Y2, Y8
	VPAND Y15, Y8, Y8
	VPOR Y8, Y7, Y7
	Q6KQUAD(64, 64, 64, Y11)
	VPSRLW $6, Y4, Y7
	VPAND Y14, Y7, Y7
	VPSLLW $4, Y7, Y7
	VPSRLW $4, Y3, Y8
	VPAND Y15, Y8, Y8
	VPOR Y8, Y7, Y7
	Q6KQUAD(96, 96, 96, Y11)
	// Half 1: ql[64:128], qh[32:64], q8[128:256].
	VMOVDQU 64(R10), Y2
	VMOVDQU 96(R10), Y3
	VMOVDQU 160(R10), Y4
	VPAND Y14, Y4, Y7
	VPSLLW $4, Y7, Y7
	VPAND Y15, Y2, Y8
	VPOR Y8, Y7, Y7
	Q6KQUAD(128, 128, 0, Y12)
	VPSRLW $2, Y4, Y7
	VPAND Y14, Y7, Y7
	VPSLLW $4, Y7, Y7
	VPAND Y15, Y3, Y8
	VPOR Y8, Y7, Y7
	Q6KQUAD(160, 160, 32, Y12)
	VPSRLW $4, Y4, Y7
	VPAND Y14, Y7, Y7
	VPSLLW $4, Y7, Y7
	VPSRLW $4, Y2, Y8
	VPAND Y15, Y8, Y8
	VPOR Y8, Y7, Y7
	Q6KQUAD(192, 192, 64, Y12)
	VPSRLW $6, Y4, Y7
	VPAND Y14, Y7, Y7
	VPSLLW $4, Y7, Y7
	VPSRLW $4, Y3, Y8
	VPAND Y15, Y8, Y8
	VPOR Y8, Y7, Y7
	Q6KQUAD(224, 224, 96, Y12)
	KSCALE(208)
	VBROADCASTSS X9, Y9
	VCVTDQ2PS Y6, Y6
	VFMADD231PS Y6, Y9, Y0
	ADDQ $210, R10
	ADDQ $256, R11
	ADDQ $256, BX
	ADDQ $4, R12
	DECQ R13
	JNZ q6k_blk
	HSUM8
	VMOVSS X1, (DX)
	ADDQ $4, DX
	ADDQ ws+8(FP), SI
	DECQ R9
	JNZ q6k_row
	VZEROUPPER
	RET

// func ggmlQ8_0Rows4AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, pf unsafe.Pointer)
//
// Four rows at once: each row computes exactly as in the one-row kernel,
// and the token's values and scale are loaded once for the four. pf is
// four rows further on (rows4Prefetch rows ahead, see ggml_amd64.go),
// prefetched into L2 in step (PREFETCHT1, as the generated matvec kernels
// do): four streams well ahead keep more bytes in flight than the
// hardware streamers alone.
TEXT ·ggmlQ8_0Rows4AVX2(SB), NOSPLIT, $0-56
	MOVQ pf+48(FP), R9
	MOVQ w+0(FP), R10
	MOVQ ws+8(FP), BX
	MOVQ xq+16(FP), R11
	MOVQ xd+24(FP), R12
	MOVQ nb+32(FP), CX
	MOVQ out+40(FP), DX
	LEAQ (BX)(BX*2), R13
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
ggmlq8_0rows4avx2_blk:
	PREFETCHT1 (R9)
	PREFETCHT1 (R9)(BX*1)
	PREFETCHT1 (R9)(BX*2)
	PREFETCHT1 (R9)(R13*1)
	VMOVDQU (R11), Y4
	VBROADCASTSS (R12), Y5
	VMOVDQU 2(R10), Y6
	VPSIGNB Y6, Y6, Y7
	VPSIGNB Y6, Y4, Y8
	VPMADDUBSW Y8, Y7, Y9
	VPMADDWD Y15, Y9, Y9
	VCVTDQ2PS Y9, Y9
	VPBROADCASTW (R10), X10
	VCVTPH2PS X10, Y10
	VMULPS Y5, Y10, Y10
	VFMADD231PS Y9, Y10, Y0
	VMOVDQU 2(R10)(BX*1), Y6
	VPSIGNB Y6, Y6, Y7
	VPSIGNB Y6, Y4, Y8
	VPMADDUBSW Y8, Y7, Y9
	VPMADDWD Y15, Y9, Y9
	VCVTDQ2PS Y9, Y9
	VPBROADCASTW (R10)(BX*1), X10
	VCVTPH2PS X10, Y10
	VMULPS Y5, Y10, Y10
	VFMADD231PS Y9, Y10, Y1
	VMOVDQU 2(R10)(BX*2), Y6
	VPSIGNB Y6, Y6, Y7
	VPSIGNB Y6, Y4, Y8
	VPMADDUBSW Y8, Y7, Y9
	VPMADDWD Y15, Y9, Y9
	VCVTDQ2PS Y9, Y9
	VPBROADCASTW (R10)(BX*2), X10
	VCVTPH2PS X10, Y10
	VMULPS Y5, Y10, Y10
	VFMADD231PS Y9, Y10, Y2
	VMOVDQU 2(R10)(R13*1), Y6
	VPSIGNB Y6, Y6, Y7
	VPSIGNB Y6, Y4, Y8
	VPMADDUBSW Y8, Y7, Y9
	VPMADDWD Y15, Y9, Y9
	VCVTDQ2PS Y9, Y9
	VPBROADCASTW (R10)(R13*1), X10
	VCVTPH2PS X10, Y10
	VMULPS Y5, Y10, Y10
	VFMADD231PS Y9, Y10, Y3
	ADDQ $34, R10
	ADDQ $34, R9
	ADDQ $32, R11
	ADDQ $4, R12
	DECQ CX
	JNZ ggmlq8_0rows4avx2_blk
	VEXTRACTF128 $1, Y0, X11
	VADDPS X0, X11, X11
	VMOVHLPS X11, X11, X12
	VADDPS X12, X11, X11
	VMOVSHDUP X11, X12
	VADDSS X12, X11, X11
	VMOVSS X11, 0(DX)
	VEXTRACTF128 $1, Y1, X11
	VADDPS X1, X11, X11
	VMOVHLPS X11, X11, X12
	VADDPS X12, X11, X11
	VMOVSHDUP X11, X12
	VADDSS X12, X11, X11
	VMOVSS X11, 4(DX)
	VEXTRACTF128 $1, Y2, X11
	VADDPS X2, X11, X11
	VMOVHLPS X11, X11, X12
	VADDPS X12, X11, X11
	VMOVSHDUP X11, X12
	VADDSS X12, X11, X11
	VMOVSS X11, 8(DX)
	VEXTRACTF128 $1, Y3, X11
	VADDPS X3, X11, X11
	VMOVHLPS X11, X11, X12
	VADDPS X12, X11, X11
	VMOVSHDUP X11, X12
	VADDSS X12, X11, X11
	VMOVSS X11, 12(DX)
	VZEROUPPER
	RET

// func ggmlQ8_0Rows4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, pf unsafe.Pointer)
//
// Four rows at once: each row computes exactly as in the one-row kernel,
// and the token's values and scale are loaded once for the four. pf is
// four rows further on (rows4Prefetch rows ahead, see ggml_amd64.go),
// prefetched into L2 in step (PREFETCHT1, as the generated matvec kernels
// do): four streams well ahead keep more bytes in flight than the
// hardware streamers alone.
TEXT ·ggmlQ8_0Rows4VNNI(SB), NOSPLIT, $0-56
	MOVQ pf+48(FP), R9
	MOVQ w+0(FP), R10
	MOVQ ws+8(FP), BX
	MOVQ xq+16(FP), R11
	MOVQ xd+24(FP), R12
	MOVQ nb+32(FP), CX
	MOVQ out+40(FP), DX
	LEAQ (BX)(BX*2), R13
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
ggmlq8_0rows4vnni_blk:
	PREFETCHT1 (R9)
	PREFETCHT1 (R9)(BX*1)
	PREFETCHT1 (R9)(BX*2)
	PREFETCHT1 (R9)(R13*1)
	VMOVDQU (R11), Y4
	VBROADCASTSS (R12), Y5
	VMOVDQU 2(R10), Y6
	VPSIGNB Y6, Y6, Y7
	VPSIGNB Y6, Y4, Y8
	VPXOR Y9, Y9, Y9
	VPDPBUSD Y8, Y7, Y9
	VCVTDQ2PS Y9, Y9
	VPBROADCASTW (R10), X10
	VCVTPH2PS X10, Y10
	VMULPS Y5, Y10, Y10
	VFMADD231PS Y9, Y10, Y0
	VMOVDQU 2(R10)(BX*1), Y6
	VPSIGNB Y6, Y6, Y7
	VPSIGNB Y6, Y4, Y8
	VPXOR Y9, Y9, Y9
	VPDPBUSD Y8, Y7, Y9
	VCVTDQ2PS Y9, Y9
	VPBROADCASTW (R10)(BX*1), X10
	VCVTPH2PS X10, Y10
	VMULPS Y5, Y10, Y10
	VFMADD231PS Y9, Y10, Y1
	VMOVDQU 2(R10)(BX*2), Y6
	VPSIGNB Y6, Y6, Y7
	VPSIGNB Y6, Y4, Y8
	VPXOR Y9, Y9, Y9
	VPDPBUSD Y8, Y7, Y9
	VCVTDQ2PS Y9, Y9
	VPBROADCASTW (R10)(BX*2), X10
	VCVTPH2PS X10, Y10
	VMULPS Y5, Y10, Y10
	VFMADD231PS Y9, Y10, Y2
	VMOVDQU 2(R10)(R13*1), Y6
	VPSIGNB Y6, Y6, Y7
	VPSIGNB Y6, Y4, Y8
	VPXOR Y9, Y9, Y9
	VPDPBUSD Y8, Y7, Y9
	VCVTDQ2PS Y9, Y9
	VPBROADCASTW (R10)(R13*1), X10
	VCVTPH2PS X10, Y10
	VMULPS Y5, Y10, Y10
	VFMADD231PS Y9, Y10, Y3
	ADDQ $34, R10
	ADDQ $34, R9
	ADDQ $32, R11
	ADDQ $4, R12
	DECQ CX
	JNZ ggmlq8_0rows4vnni_blk
	VEXTRACTF128 $1, Y0, X11
	VADDPS X0, X11, X11
	VMOVHLPS X11, X11, X12
	VADDPS X12, X11, X11
	VMOVSHDUP X11, X12
	VADDSS X12, X11, X11
	VMOVSS X11, 0(DX)
	VEXTRACTF128 $1, Y1, X11
	VADDPS X1, X11, X11
	VMOVHLPS X11, X11, X12
	VADDPS X12, X11, X11
	VMOVSHDUP X11, X12
	VADDSS X12, X11, X11
	VMOVSS X11, 4(DX)
	VEXTRACTF128 $1, Y2, X11
	VADDPS X2, X11, X11
	VMOVHLPS X11, X11, X12
	VADDPS X12, X11, X11
	VMOVSHDUP X11, X12
	VADDSS X12, X11, X11
	VMOVSS X11, 8(DX)
	VEXTRACTF128 $1, Y3, X11
	VADDPS X3, X11, X11
	VMOVHLPS X11, X11, X12
	VADDPS X12, X11, X11
	VMOVSHDUP X11, X12
	VADDSS X12, X11, X11
	VMOVSS X11, 12(DX)
	VZEROUPPER
	RET

// func ggmlQ4_0Rows4AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, pf unsafe.Pointer)
//
// Four rows at once: each row computes exactly as in the one-row kernel,
// and the token's values and scale are loaded once for the four. pf is
// four rows further on (rows4Prefetch rows ahead, see ggml_amd64.go),
// prefetched into L2 in step (PREFETCHT1, as the generated matvec kernels
// do): four streams well ahead keep more bytes in flight than the
// hardware streamers alone.
TEXT ·ggmlQ4_0Rows4AVX2(SB), NOSPLIT, $0-56
	MOVQ pf+48(FP), R9
	MOVQ w+0(FP), R10
	MOVQ ws+8(FP), BX
	MOVQ xq+16(FP), R11
	MOVQ xd+24(FP), R12
	MOVQ nb+32(FP), CX
	MOVQ out+40(FP), DX
	LEAQ (BX)(BX*2), R13
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	Q4CONSTS
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
ggmlq4_0rows4avx2_blk:
	PREFETCHT1 (R9)
	PREFETCHT1 (R9)(BX*1)
	PREFETCHT1 (R9)(BX*2)
	PREFETCHT1 (R9)(R13*1)
	VMOVDQU (R11), Y4
	VBROADCASTSS (R12), Y5
	VMOVDQU 2(R10), X6
	VPSRLW $4, X6, X7
	VINSERTI128 $1, X7, Y6, Y6
	VPAND Y14, Y6, Y6
	VPSUBB Y13, Y6, Y6
	VPSIGNB Y6, Y6, Y7
	VPSIGNB Y6, Y4, Y8
	VPMADDUBSW Y8, Y7, Y9
	VPMADDWD Y15, Y9, Y9
	VCVTDQ2PS Y9, Y9
	VPBROADCASTW (R10), X10
	VCVTPH2PS X10, Y10
	VMULPS Y5, Y10, Y10
	VFMADD231PS Y9, Y10, Y0
	VMOVDQU 2(R10)(BX*1), X6
	VPSRLW $4, X6, X7
	VINSERTI128 $1, X7, Y6, Y6
	VPAND Y14, Y6, Y6
	VPSUBB Y13, Y6, Y6
	VPSIGNB Y6, Y6, Y7
	VPSIGNB Y6, Y4, Y8
	VPMADDUBSW Y8, Y7, Y9
	VPMADDWD Y15, Y9, Y9
	VCVTDQ2PS Y9, Y9
	VPBROADCASTW (R10)(BX*1), X10
	VCVTPH2PS X10, Y10
	VMULPS Y5, Y10, Y10
	VFMADD231PS Y9, Y10, Y1
	VMOVDQU 2(R10)(BX*2), X6
	VPSRLW $4, X6, X7
	VINSERTI128 $1, X7, Y6, Y6
	VPAND Y14, Y6, Y6
	VPSUBB Y13, Y6, Y6
	VPSIGNB Y6, Y6, Y7
	VPSIGNB Y6, Y4, Y8
	VPMADDUBSW Y8, Y7, Y9
	VPMADDWD Y15, Y9, Y9
	VCVTDQ2PS Y9, Y9
	VPBROADCASTW (R10)(BX*2), X10
	VCVTPH2PS X10, Y10
	VMULPS Y5, Y10, Y10
	VFMADD231PS Y9, Y10, Y2
	VMOVDQU 2(R10)(R13*1), X6
	VPSRLW $4, X6, X7
	VINSERTI128 $1, X7, Y6, Y6
	VPAND Y14, Y6, Y6
	VPSUBB Y13, Y6, Y6
	VPSIGNB Y6, Y6, Y7
	VPSIGNB Y6, Y4, Y8
	VPMADDUBSW Y8, Y7, Y9
	VPMADDWD Y15, Y9, Y9
	VCVTDQ2PS Y9, Y9
	VPBROADCASTW (R10)(R13*1), X10
	VCVTPH2PS X10, Y10
	VMULPS Y5, Y10, Y10
	VFMADD231PS Y9, Y10, Y3
	ADDQ $18, R10
	ADDQ $18, R9
	ADDQ $32, R11
	ADDQ $4, R12
	DECQ CX
	JNZ ggmlq4_0rows4avx2_blk
	VEXTRACTF128 $1, Y0, X11
	VADDPS X0, X11, X11
	VMOVHLPS X11, X11, X12
	VADDPS X12, X11, X11
	VMOVSHDUP X11, X12
	VADDSS X12, X11, X11
	VMOVSS X11, 0(DX)
	VEXTRACTF128 $1, Y1, X11
	VADDPS X1, X11, X11
	VMOVHLPS X11, X11, X12
	VADDPS X12, X11, X11
	VMOVSHDUP X11, X12
	VADDSS X12, X11, X11
	VMOVSS X11, 4(DX)
	VEXTRACTF128 $1, Y2, X11
	VADDPS X2, X11, X11
	VMOVHLPS X11, X11, X12
	VADDPS X12, X11, X11
	VMOVSHDUP X11, X12
	VADDSS X12, X11, X11
	VMOVSS X11, 8(DX)
	VEXTRACTF128 $1, Y3, X11
	VADDPS X3, X11, X11
	VMOVHLPS X11, X11, X12
	VADDPS X12, X11, X11
	VMOVSHDUP X11, X12
	VADDSS X12, X11, X11
	VMOVSS X11, 12(DX)
	VZEROUPPER
	RET

// func ggmlQ4_0Rows4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, pf unsafe.Pointer)
//
// Four rows at once: each row computes exactly as in the one-row kernel,
// and the token's values and scale are loaded once for the four. pf is
// four rows further on (rows4Prefetch rows ahead, see ggml_amd64.go),
// prefetched into L2 in step (PREFETCHT1, as the generated matvec kernels
// do): four streams well ahead keep more bytes in flight than the
// hardware streamers alone.
TEXT ·ggmlQ4_0Rows4VNNI(SB), NOSPLIT, $0-56
	MOVQ pf+48(FP), R9
	MOVQ w+0(FP), R10
	MOVQ ws+8(FP), BX
	MOVQ xq+16(FP), R11
	MOVQ xd+24(FP), R12
	MOVQ nb+32(FP), CX
	MOVQ out+40(FP), DX
	LEAQ (BX)(BX*2), R13
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	Q4CONSTS
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
ggmlq4_0rows4vnni_blk:
	PREFETCHT1 (R9)
	PREFETCHT1 (R9)(BX*1)
	PREFETCHT1 (R9)(BX*2)
	PREFETCHT1 (R9)(R13*1)
	VMOVDQU (R11), Y4
	VBROADCASTSS (R12), Y5
	VMOVDQU 2(R10), X6
	VPSRLW $4, X6, X7
	VINSERTI128 $1, X7, Y6, Y6
	VPAND Y14, Y6, Y6
	VPSUBB Y13, Y6, Y6
	VPSIGNB Y6, Y6, Y7
	VPSIGNB Y6, Y4, Y8
	VPXOR Y9, Y9, Y9
	VPDPBUSD Y8, Y7, Y9
	VCVTDQ2PS Y9, Y9
	VPBROADCASTW (R10), X10
	VCVTPH2PS X10, Y10
	VMULPS Y5, Y10, Y10
	VFMADD231PS Y9, Y10, Y0
	VMOVDQU 2(R10)(BX*1), X6
	VPSRLW $4, X6, X7
	VINSERTI128 $1, X7, Y6, Y6
	VPAND Y14, Y6, Y6
	VPSUBB Y13, Y6, Y6
	VPSIGNB Y6, Y6, Y7
	VPSIGNB Y6, Y4, Y8
	VPXOR Y9, Y9, Y9
	VPDPBUSD Y8, Y7, Y9
	VCVTDQ2PS Y9, Y9
	VPBROADCASTW (R10)(BX*1), X10
	VCVTPH2PS X10, Y10
	VMULPS Y5, Y10, Y10
	VFMADD231PS Y9, Y10, Y1
	VMOVDQU 2(R10)(BX*2), X6
	VPSRLW $4, X6, X7
	VINSERTI128 $1, X7, Y6, Y6
	VPAND Y14, Y6, Y6
	VPSUBB Y13, Y6, Y6
	VPSIGNB Y6, Y6, Y7
	VPSIGNB Y6, Y4, Y8
	VPXOR Y9, Y9, Y9
	VPDPBUSD Y8, Y7, Y9
	VCVTDQ2PS Y9, Y9
	VPBROADCASTW (R10)(BX*2), X10
	VCVTPH2PS X10, Y10
	VMULPS Y5, Y10, Y10
	VFMADD231PS Y9, Y10, Y2
	VMOVDQU 2(R10)(R13*1), X6
	VPSRLW $4, X6, X7
	VINSERTI128 $1, X7, Y6, Y6
	VPAND Y14, Y6, Y6
	VPSUBB Y13, Y6, Y6
	VPSIGNB Y6, Y6, Y7
	VPSIGNB Y6, Y4, Y8
	VPXOR Y9, Y9, Y9
	VPDPBUSD Y8, Y7, Y9
	VCVTDQ2PS Y9, Y9
	VPBROADCASTW (R10)(R13*1), X10
	VCVTPH2PS X10, Y10
	VMULPS Y5, Y10, Y10
	VFMADD231PS Y9, Y10, Y3
	ADDQ $18, R10
	ADDQ $18, R9
	ADDQ $32, R11
	ADDQ $4, R12
	DECQ CX
	JNZ ggmlq4_0rows4vnni_blk
	VEXTRACTF128 $1, Y0, X11
	VADDPS X0, X11, X11
	VMOVHLPS X11, X11, X12
	VADDPS X12, X11, X11
	VMOVSHDUP X11, X12
	VADDSS X12, X11, X11
	VMOVSS X11, 0(DX)
	VEXTRACTF128 $1, Y1, X11
	VADDPS X1, X11, X11
	VMOVHLPS X11, X11, X12
	VADDPS X12, X11, X11
	VMOVSHDUP X11, X12
	VADDSS X12, X11, X11
	VMOVSS X11, 4(DX)
	VEXTRACTF128 $1, Y2, X11
	VADDPS X2, X11, X11
	VMOVHLPS X11, X11, X12
	VADDPS X12, X11, X11
	VMOVSHDUP X11, X12
	VADDSS X12, X11, X11
	VMOVSS X11, 8(DX)
	VEXTRACTF128 $1, Y3, X11
	VADDPS X3, X11, X11
	VMOVHLPS X11, X11, X12
	VADDPS X12, X11, X11
	VMOVSHDUP X11, X12
	VADDSS X12, X11, X11
	VMOVSS X11, 12(DX)
	VZEROUPPER
	RET

// The tile kernels (prefill, T > 1) compute 4 rows × nt tokens per call
// with the 4·nt accumulators in registers, so each weight block is loaded
// once for nt tokens and each activation block once for 4 rows. Every
// output still sums exactly as the row kernels do (the same int32 lanes,
// acc = fma(d_w·d_x, float(lanes), acc) per block, hsum_float_8), so a
// tile's outputs have the row kernel's bits.
//
// The VNNI tiles hold two rows in one zmm accumulator: rows 2p and 2p+1
// of row pair p in the low and high 8 lanes, each lane pattern the
// 8-lane ymm accumulator of its row. VPDPBUSD multiplies unsigned by
// signed bytes, so the weights go in as w+128 (XOR 0x80) against the
// signed activations x, and the int32 lanes start from xc = −128·Σ of
// the lane's 4 x (prepared once per call, ggml_act.go): Σ(w+128)·x −
// 128·Σx = Σw·x, the lanes VPMADDUBSW and VPMADDWD form. There is no
// zmm VPSIGNB, and this trick needs none. Q4_0 is the same with its
// nibbles (w+8, 0..15) as the unsigned bytes and lanes starting from
// xc8 = −8·Σx.

// Q8T_ROWPAIR loads a Q8_0 row pair's block: the quants of rows 2p and
// 2p+1 (at w0 and w1) as w+128 in Z16+p, row 2p in the low 256 bits; their
// fp16 scales (at d0 and d1) as float32 in Z18+p's low and high 8 lanes.
// Needs Z31 = 0x80 bytes and K1 = 0xff00 (the high 8 words of a ymm).
#define Q8T_ROWPAIR(w0, w1, d0, d1, WY, WZ, SY, SZ) \
	VMOVDQU32 w0, WY; \
	VINSERTI64X4 $1, w1, WZ, WZ; \
	VPXORD Z31, WZ, WZ; \
	VPBROADCASTW d0, SY; \
	VPBROADCASTW d1, K1, SY; \
	VCVTPH2PS SY, SZ

// Q8T_TOKEN and Q8T_STORE are in ggml_amd64.h.

// func ggmlQ8_0Tile4x8VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-7: accumulator Z(2t+p) is token t, row pair p.
// Tokens 4-7 address from R11 (quants), R13 (corrections) and DX
// (scales), four token strides on.
TEXT ·ggmlQ8_0Tile4x8VNNI(SB), NOSPLIT, $8-80
	Q8T_SETUP
	// CX, the block count, becomes the pointer of the next tile's row 5
	// (no other register is free), so the loop ends at SI's last block,
	// kept in end: the next tile's four rows are all prefetched.
	IMULQ $34, CX
	ADDQ SI, CX
	MOVQ CX, end-8(SP)
	LEAQ (SI)(BX*4), CX
	ADDQ BX, CX
	LEAQ (DI)(R9*4), R11
	LEAQ (R12)(R9*4), R13
	LEAQ (R14)(R15*4), DX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
q80t8_blk:
	PREFETCHT0 (SI)(BX*4)
	PREFETCHT0 (CX)
	PREFETCHT0 (SI)(R8*2)
	PREFETCHT0 (CX)(BX*2)
	Q8T_ROWPAIR(2(SI), 2(SI)(BX*1), (SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q8T_ROWPAIR(2(SI)(BX*2), 2(SI)(R8*1), (SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q8T_TOKEN((DI), (R12), (R14), Z0, Z1)
	Q8T_TOKEN((DI)(R9*1), (R12)(R9*1), (R14)(R15*1), Z2, Z3)
	Q8T_TOKEN((DI)(R9*2), (R12)(R9*2), (R14)(R15*2), Z4, Z5)
	Q8T_TOKEN((DI)(R10*1), (R12)(R10*1), (R14)(AX*1), Z6, Z7)
	Q8T_TOKEN((R11), (R13), (DX), Z8, Z9)
	Q8T_TOKEN((R11)(R9*1), (R13)(R9*1), (DX)(R15*1), Z10, Z11)
	Q8T_TOKEN((R11)(R9*2), (R13)(R9*2), (DX)(R15*2), Z12, Z13)
	Q8T_TOKEN((R11)(R10*1), (R13)(R10*1), (DX)(AX*1), Z14, Z15)
	ADDQ $34, SI
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $4, R14
	ADDQ $4, DX
	ADDQ $34, CX
	CMPQ SI, end-8(SP)
	JNE q80t8_blk
	// Token t's outputs go to out + t·os: rows 0-3 at 0, 4, 8, 12.
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	Q8T_STORE(Z0, Y0, X0, 0(DI), 4(DI))
	Q8T_STORE(Z1, Y1, X1, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z2, Y2, X2, 0(DI), 4(DI))
	Q8T_STORE(Z3, Y3, X3, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z4, Y4, X4, 0(DI), 4(DI))
	Q8T_STORE(Z5, Y5, X5, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z6, Y6, X6, 0(DI), 4(DI))
	Q8T_STORE(Z7, Y7, X7, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z8, Y8, X8, 0(DI), 4(DI))
	Q8T_STORE(Z9, Y9, X9, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z10, Y10, X10, 0(DI), 4(DI))
	Q8T_STORE(Z11, Y11, X11, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z12, Y12, X12, 0(DI), 4(DI))
	Q8T_STORE(Z13, Y13, X13, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z14, Y14, X14, 0(DI), 4(DI))
	Q8T_STORE(Z15, Y15, X15, 8(DI), 12(DI))
	VZEROUPPER
	RET

// func ggmlQ8_0Tile4x4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-3, as ggmlQ8_0Tile4x8VNNI.
TEXT ·ggmlQ8_0Tile4x4VNNI(SB), NOSPLIT, $0-80
	Q8T_SETUP
	LEAQ (SI)(BX*4), R11
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
q80t4_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	Q8T_ROWPAIR(2(SI), 2(SI)(BX*1), (SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q8T_ROWPAIR(2(SI)(BX*2), 2(SI)(R8*1), (SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q8T_TOKEN((DI), (R12), (R14), Z0, Z1)
	Q8T_TOKEN((DI)(R9*1), (R12)(R9*1), (R14)(R15*1), Z2, Z3)
	Q8T_TOKEN((DI)(R9*2), (R12)(R9*2), (R14)(R15*2), Z4, Z5)
	Q8T_TOKEN((DI)(R10*1), (R12)(R10*1), (R14)(AX*1), Z6, Z7)
	ADDQ $34, SI
	ADDQ $34, R11
	ADDQ $32, DI
	ADDQ $32, R12
	ADDQ $4, R14
	DECQ CX
	JNZ q80t4_blk
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	Q8T_STORE(Z0, Y0, X0, 0(DI), 4(DI))
	Q8T_STORE(Z1, Y1, X1, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z2, Y2, X2, 0(DI), 4(DI))
	Q8T_STORE(Z3, Y3, X3, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z4, Y4, X4, 0(DI), 4(DI))
	Q8T_STORE(Z5, Y5, X5, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z6, Y6, X6, 0(DI), 4(DI))
	Q8T_STORE(Z7, Y7, X7, 8(DI), 12(DI))
	VZEROUPPER
	RET

// Q4T_ROWPAIR loads a Q4_0 row pair's block as Q8T_ROWPAIR does, the
// weights as their nibbles w+8 in ggml's order (bytes_from_nibbles_32:
// the 16 low nibbles, then the 16 high ones): the two rows' 16 bytes side
// by side, and shifted right by 4 above them, masked to 4 bits, then the
// 128-bit lanes reordered from (r0, r1, r0>>4, r1>>4) to (r0, r0>>4, r1,
// r1>>4). Needs Z30 = 0x0f bytes and K1 = 0xff00. Uses Z21.
#define Q4T_ROWPAIR(w0, w1, d0, d1, WY, WZ, SY, SZ) \
	VMOVDQU32 w0, X21; \
	VINSERTI32X4 $1, w1, Y21, Y21; \
	VPSRLW $4, Y21, WY; \
	VINSERTI64X4 $1, WY, Z21, WZ; \
	VPANDD Z30, WZ, WZ; \
	VSHUFI64X2 $0xd8, WZ, WZ, WZ; \
	VPBROADCASTW d0, SY; \
	VPBROADCASTW d1, K1, SY; \
	VCVTPH2PS SY, SZ

// Q4T_CONSTS sets Z30 to 0x0f bytes.
#define Q4T_CONSTS \
	MOVL $0x0f0f0f0f, DX; \
	VPBROADCASTD DX, Z30

// func ggmlQ4_0Tile4x8VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// ggmlQ8_0Tile4x8VNNI on Q4_0 blocks, xc the corrections −8·Σx.
TEXT ·ggmlQ4_0Tile4x8VNNI(SB), NOSPLIT, $8-80
	Q8T_SETUP
	// CX, the block count, becomes the pointer of the next tile's row 5
	// (as in ggmlQ8_0Tile4x8VNNI): all four rows are prefetched.
	IMULQ $18, CX
	ADDQ SI, CX
	MOVQ CX, end-8(SP)
	LEAQ (SI)(BX*4), CX
	ADDQ BX, CX
	Q4T_CONSTS
	LEAQ (DI)(R9*4), R11
	LEAQ (R12)(R9*4), R13
	LEAQ (R14)(R15*4), DX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
q40t8_blk:
	PREFETCHT0 (SI)(BX*4)
	PREFETCHT0 (CX)
	PREFETCHT0 (SI)(R8*2)
	PREFETCHT0 (CX)(BX*2)
	Q4T_ROWPAIR(2(SI), 2(SI)(BX*1), (SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q4T_ROWPAIR(2(SI)(BX*2), 2(SI)(R8*1), (SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q8T_TOKEN((DI), (R12), (R14), Z0, Z1)
	Q8T_TOKEN((DI)(R9*1), (R12)(R9*1), (R14)(R15*1), Z2, Z3)
	Q8T_TOKEN((DI)(R9*2), (R12)(R9*2), (R14)(R15*2), Z4, Z5)
	Q8T_TOKEN((DI)(R10*1), (R12)(R10*1), (R14)(AX*1), Z6, Z7)
	Q8T_TOKEN((R11), (R13), (DX), Z8, Z9)
	Q8T_TOKEN((R11)(R9*1), (R13)(R9*1), (DX)(R15*1), Z10, Z11)
	Q8T_TOKEN((R11)(R9*2), (R13)(R9*2), (DX)(R15*2), Z12, Z13)
	Q8T_TOKEN((R11)(R10*1), (R13)(R10*1), (DX)(AX*1), Z14, Z15)
	ADDQ $18, SI
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $4, R14
	ADDQ $4, DX
	ADDQ $18, CX
	CMPQ SI, end-8(SP)
	JNE q40t8_blk
	// Token t's outputs go to out + t·os: rows 0-3 at 0, 4, 8, 12.
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	Q8T_STORE(Z0, Y0, X0, 0(DI), 4(DI))
	Q8T_STORE(Z1, Y1, X1, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z2, Y2, X2, 0(DI), 4(DI))
	Q8T_STORE(Z3, Y3, X3, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z4, Y4, X4, 0(DI), 4(DI))
	Q8T_STORE(Z5, Y5, X5, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z6, Y6, X6, 0(DI), 4(DI))
	Q8T_STORE(Z7, Y7, X7, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z8, Y8, X8, 0(DI), 4(DI))
	Q8T_STORE(Z9, Y9, X9, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z10, Y10, X10, 0(DI), 4(DI))
	Q8T_STORE(Z11, Y11, X11, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z12, Y12, X12, 0(DI), 4(DI))
	Q8T_STORE(Z13, Y13, X13, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z14, Y14, X14, 0(DI), 4(DI))
	Q8T_STORE(Z15, Y15, X15, 8(DI), 12(DI))
	VZEROUPPER
	RET

// func ggmlQ4_0Tile4x4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-3, as ggmlQ4_0Tile4x8VNNI.
TEXT ·ggmlQ4_0Tile4x4VNNI(SB), NOSPLIT, $0-80
	Q8T_SETUP
	LEAQ (SI)(BX*4), R11
	Q4T_CONSTS
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
q40t4_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	Q4T_ROWPAIR(2(SI), 2(SI)(BX*1), (SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q4T_ROWPAIR(2(SI)(BX*2), 2(SI)(R8*1), (SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q8T_TOKEN((DI), (R12), (R14), Z0, Z1)
	Q8T_TOKEN((DI)(R9*1), (R12)(R9*1), (R14)(R15*1), Z2, Z3)
	Q8T_TOKEN((DI)(R9*2), (R12)(R9*2), (R14)(R15*2), Z4, Z5)
	Q8T_TOKEN((DI)(R10*1), (R12)(R10*1), (R14)(AX*1), Z6, Z7)
	ADDQ $18, SI
	ADDQ $18, R11
	ADDQ $32, DI
	ADDQ $32, R12
	ADDQ $4, R14
	DECQ CX
	JNZ q40t4_blk
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	Q8T_STORE(Z0, Y0, X0, 0(DI), 4(DI))
	Q8T_STORE(Z1, Y1, X1, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z2, Y2, X2, 0(DI), 4(DI))
	Q8T_STORE(Z3, Y3, X3, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z4, Y4, X4, 0(DI), 4(DI))
	Q8T_STORE(Z5, Y5, X5, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z6, Y6, X6, 0(DI), 4(DI))
	Q8T_STORE(Z7, Y7, X7, 8(DI), 12(DI))
	VZEROUPPER
	RET

// func ggmlQ8_0Tile4x3VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-2, as ggmlQ8_0Tile4x8VNNI.
TEXT ·ggmlQ8_0Tile4x3VNNI(SB), NOSPLIT, $0-80
	Q8T_SETUP
	LEAQ (SI)(BX*4), R11
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
q80t3_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	Q8T_ROWPAIR(2(SI), 2(SI)(BX*1), (SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q8T_ROWPAIR(2(SI)(BX*2), 2(SI)(R8*1), (SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q8T_TOKEN((DI), (R12), (R14), Z0, Z1)
	Q8T_TOKEN((DI)(R9*1), (R12)(R9*1), (R14)(R15*1), Z2, Z3)
	Q8T_TOKEN((DI)(R9*2), (R12)(R9*2), (R14)(R15*2), Z4, Z5)
	ADDQ $34, SI
	ADDQ $34, R11
	ADDQ $32, DI
	ADDQ $32, R12
	ADDQ $4, R14
	DECQ CX
	JNZ q80t3_blk
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	Q8T_STORE(Z0, Y0, X0, 0(DI), 4(DI))
	Q8T_STORE(Z1, Y1, X1, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z2, Y2, X2, 0(DI), 4(DI))
	Q8T_STORE(Z3, Y3, X3, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z4, Y4, X4, 0(DI), 4(DI))
	Q8T_STORE(Z5, Y5, X5, 8(DI), 12(DI))
	VZEROUPPER
	RET

// func ggmlQ8_0Tile4x2VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-1, as ggmlQ8_0Tile4x8VNNI.
TEXT ·ggmlQ8_0Tile4x2VNNI(SB), NOSPLIT, $0-80
	Q8T_SETUP
	LEAQ (SI)(BX*4), R11
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
q80t2_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	Q8T_ROWPAIR(2(SI), 2(SI)(BX*1), (SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q8T_ROWPAIR(2(SI)(BX*2), 2(SI)(R8*1), (SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q8T_TOKEN((DI), (R12), (R14), Z0, Z1)
	Q8T_TOKEN((DI)(R9*1), (R12)(R9*1), (R14)(R15*1), Z2, Z3)
	ADDQ $34, SI
	ADDQ $34, R11
	ADDQ $32, DI
	ADDQ $32, R12
	ADDQ $4, R14
	DECQ CX
	JNZ q80t2_blk
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	Q8T_STORE(Z0, Y0, X0, 0(DI), 4(DI))
	Q8T_STORE(Z1, Y1, X1, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z2, Y2, X2, 0(DI), 4(DI))
	Q8T_STORE(Z3, Y3, X3, 8(DI), 12(DI))
	VZEROUPPER
	RET

// func ggmlQ4_0Tile4x3VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-2, as ggmlQ4_0Tile4x8VNNI.
TEXT ·ggmlQ4_0Tile4x3VNNI(SB), NOSPLIT, $0-80
	Q8T_SETUP
	LEAQ (SI)(BX*4), R11
	Q4T_CONSTS
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
q40t3_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	Q4T_ROWPAIR(2(SI), 2(SI)(BX*1), (SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q4T_ROWPAIR(2(SI)(BX*2), 2(SI)(R8*1), (SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q8T_TOKEN((DI), (R12), (R14), Z0, Z1)
	Q8T_TOKEN((DI)(R9*1), (R12)(R9*1), (R14)(R15*1), Z2, Z3)
	Q8T_TOKEN((DI)(R9*2), (R12)(R9*2), (R14)(R15*2), Z4, Z5)
	ADDQ $18, SI
	ADDQ $18, R11
	ADDQ $32, DI
	ADDQ $32, R12
	ADDQ $4, R14
	DECQ CX
	JNZ q40t3_blk
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	Q8T_STORE(Z0, Y0, X0, 0(DI), 4(DI))
	Q8T_STORE(Z1, Y1, X1, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z2, Y2, X2, 0(DI), 4(DI))
	Q8T_STORE(Z3, Y3, X3, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z4, Y4, X4, 0(DI), 4(DI))
	Q8T_STORE(Z5, Y5, X5, 8(DI), 12(DI))
	VZEROUPPER
	RET

// func ggmlQ4_0Tile4x2VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-1, as ggmlQ4_0Tile4x8VNNI.
TEXT ·ggmlQ4_0Tile4x2VNNI(SB), NOSPLIT, $0-80
	Q8T_SETUP
	LEAQ (SI)(BX*4), R11
	Q4T_CONSTS
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
q40t2_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	Q4T_ROWPAIR(2(SI), 2(SI)(BX*1), (SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q4T_ROWPAIR(2(SI)(BX*2), 2(SI)(R8*1), (SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q8T_TOKEN((DI), (R12), (R14), Z0, Z1)
	Q8T_TOKEN((DI)(R9*1), (R12)(R9*1), (R14)(R15*1), Z2, Z3)
	ADDQ $18, SI
	ADDQ $18, R11
	ADDQ $32, DI
	ADDQ $32, R12
	ADDQ $4, R14
	DECQ CX
	JNZ q40t2_blk
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	Q8T_STORE(Z0, Y0, X0, 0(DI), 4(DI))
	Q8T_STORE(Z1, Y1, X1, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z2, Y2, X2, 0(DI), 4(DI))
	Q8T_STORE(Z3, Y3, X3, 8(DI), 12(DI))
	VZEROUPPER
	RET

// The AVX2 tiles: 4 rows × 2 tokens, one ymm accumulator per output (Y0-Y7,
// token t row r in Y(2r+t)), the row kernels' VPSIGNB, VPMADDUBSW and
// VPMADDWD per block, so the same int32 lanes. Each row's |w| and scale
// are formed once for both tokens, each token's quants loaded once for the
// four rows. Registers: Y8 = |w|, Y9 = the row's fp16 scale as float32,
// Y10 and Y11 the two tokens' quants, Y12 and Y13 temporaries, Y14 the
// row's Q4_0 weights, Y15 = int16 ones. Q8A_PAIR, Q8A_SCALE and
// Q8A_STORE are in ggml_amd64.h.

// Q8A_ROW is one Q8_0 row (quants at w, scale at d) against both tokens.
#define Q8A_ROW(w, d, A0, A1) \
	VPABSB w, Y8; \
	Q8A_SCALE(d); \
	Q8A_PAIR(w, Y10, (R12), A0); \
	Q8A_PAIR(w, Y11, (R12)(R13*1), A1)

// Q4A_ROW is one Q4_0 row: its nibbles unpacked as the row kernel's
// Q4_0LOAD does (low nibbles, then high, minus 8) into Y14.
#define Q4A_ROW(w, d, A0, A1) \
	VMOVDQU w, X14; \
	VPSRLW $4, X14, X12; \
	VINSERTI128 $1, X12, Y14, Y14; \
	VPAND ggmlNib<>(SB), Y14, Y14; \
	VPSUBB ggmlEight<>(SB), Y14, Y14; \
	VPSIGNB Y14, Y14, Y8; \
	Q8A_SCALE(d); \
	Q8A_PAIR(Y14, Y10, (R12), A0); \
	Q8A_PAIR(Y14, Y11, (R12)(R13*1), A1)

DATA ggmlNib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ggmlNib<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ggmlNib<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ggmlNib<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL ggmlNib<>(SB), RODATA|NOPTR, $32
DATA ggmlEight<>+0(SB)/8, $0x0808080808080808
DATA ggmlEight<>+8(SB)/8, $0x0808080808080808
DATA ggmlEight<>+16(SB)/8, $0x0808080808080808
DATA ggmlEight<>+24(SB)/8, $0x0808080808080808
GLOBL ggmlEight<>(SB), RODATA|NOPTR, $32

// func ggmlQ8_0Tile4x2AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 (SI, BX = ws, R8 = 3·ws) × tokens 0-1 (quants DI, xs apart in
// R9; scales R12, ds apart in R13); xc is unused.
TEXT ·ggmlQ8_0Tile4x2AVX2(SB), NOSPLIT, $0-80
	MOVQ w+0(FP), SI
	MOVQ ws+8(FP), BX
	LEAQ (BX)(BX*2), R8
	LEAQ (SI)(BX*4), R11
	MOVQ xq+16(FP), DI
	MOVQ xs+32(FP), R9
	MOVQ xd+40(FP), R12
	MOVQ ds+48(FP), R13
	MOVQ nb+56(FP), CX
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
q80a2_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	VMOVDQU (DI), Y10
	VMOVDQU (DI)(R9*1), Y11
	Q8A_ROW(2(SI), (SI), Y0, Y1)
	Q8A_ROW(2(SI)(BX*1), (SI)(BX*1), Y2, Y3)
	Q8A_ROW(2(SI)(BX*2), (SI)(BX*2), Y4, Y5)
	Q8A_ROW(2(SI)(R8*1), (SI)(R8*1), Y6, Y7)
	ADDQ $34, SI
	ADDQ $34, R11
	ADDQ $32, DI
	ADDQ $4, R12
	DECQ CX
	JNZ q80a2_blk
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	Q8A_STORE(Y0, X0, 0(DI))
	Q8A_STORE(Y2, X2, 4(DI))
	Q8A_STORE(Y4, X4, 8(DI))
	Q8A_STORE(Y6, X6, 12(DI))
	Q8A_STORE(Y1, X1, 0(DI)(R9*1))
	Q8A_STORE(Y3, X3, 4(DI)(R9*1))
	Q8A_STORE(Y5, X5, 8(DI)(R9*1))
	Q8A_STORE(Y7, X7, 12(DI)(R9*1))
	VZEROUPPER
	RET

// func ggmlQ4_0Tile4x2AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 (SI, BX = ws, R8 = 3·ws) × tokens 0-1 (quants DI, xs apart in
// R9; scales R12, ds apart in R13); xc is unused.
TEXT ·ggmlQ4_0Tile4x2AVX2(SB), NOSPLIT, $0-80
	MOVQ w+0(FP), SI
	MOVQ ws+8(FP), BX
	LEAQ (BX)(BX*2), R8
	LEAQ (SI)(BX*4), R11
	MOVQ xq+16(FP), DI
	MOVQ xs+32(FP), R9
	MOVQ xd+40(FP), R12
	MOVQ ds+48(FP), R13
	MOVQ nb+56(FP), CX
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
q40a2_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	VMOVDQU (DI), Y10
	VMOVDQU (DI)(R9*1), Y11
	Q4A_ROW(2(SI), (SI), Y0, Y1)
	Q4A_ROW(2(SI)(BX*1), (SI)(BX*1), Y2, Y3)
	Q4A_ROW(2(SI)(BX*2), (SI)(BX*2), Y4, Y5)
	Q4A_ROW(2(SI)(R8*1), (SI)(R8*1), Y6, Y7)
	ADDQ $18, SI
	ADDQ $18, R11
	ADDQ $32, DI
	ADDQ $4, R12
	DECQ CX
	JNZ q40a2_blk
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	Q8A_STORE(Y0, X0, 0(DI))
	Q8A_STORE(Y2, X2, 4(DI))
	Q8A_STORE(Y4, X4, 8(DI))
	Q8A_STORE(Y6, X6, 12(DI))
	Q8A_STORE(Y1, X1, 0(DI)(R9*1))
	Q8A_STORE(Y3, X3, 4(DI)(R9*1))
	Q8A_STORE(Y5, X5, 8(DI)(R9*1))
	Q8A_STORE(Y7, X7, 12(DI)(R9*1))
	VZEROUPPER
	RET

// The Q6_K AVX2 tile: 4 rows × 2 tokens, one row at a time, each quad's
// codes and scales formed once for both tokens, the lanes as the row
// kernel's Q6KQUAD per token. Registers: Y0, Y1 the tokens' accumulators,
// Y2, Y3 their super-block lanes, Y4-Y6 a half's ql and qh, Y7 a quad's
// codes, Y8 its scales, Y9 and Y10 temporaries, Y11 and Y12 the scales
// per half, X13 the block's d, Y14 = 0x03 bytes, Y15 = 0x0f bytes.

// Q6KA_QUAD(xoff, moff, S): codes Y7 against both tokens' q8 at xoff
// (q8s at xoff too), the scales selected from S by mask moff.
#define Q6KA_QUAD(xoff, moff, S) \
	VPSHUFB ggmlK6Shuf2<>+moff(SB), S, Y8; \
	VPMADDUBSW xoff(R11), Y7, Y9; \
	VPMADDUBSW xoff(R11)(R9*1), Y7, Y10; \
	VPSUBW xoff(R14), Y9, Y9; \
	VPSUBW xoff(R14)(R9*1), Y10, Y10; \
	VPMADDWD Y9, Y8, Y9; \
	VPMADDWD Y10, Y8, Y10; \
	VPADDD Y9, Y2, Y2; \
	VPADDD Y10, Y3, Y3

// Q6KA_CODES sets Y7 to ((qh >> hs) & 3) << 4 | (ql >> ls) & 15.
#define Q6KA_CODES(QH, hs, QL, ls) \
	VPSRLW $hs, QH, Y7; \
	VPAND Y14, Y7, Y7; \
	VPSLLW $4, Y7, Y7; \
	VPSRLW $ls, QL, Y9; \
	VPAND Y15, Y9, Y9; \
	VPOR Y9, Y7, Y7

// Q6KA_HALF is half h of a super-block: ql at qlo(R10) and qlo2(R10), qh
// at qho(R10), values from xo0-xo3, scales S.
#define Q6KA_HALF(qlo, qlo2, qho, xo0, xo1, xo2, xo3, S) \
	VMOVDQU qlo(R10), Y4; \
	VMOVDQU qlo2(R10), Y5; \
	VMOVDQU qho(R10), Y6; \
	Q6KA_CODES(Y6, 0, Y4, 0); \
	Q6KA_QUAD(xo0, 0, S); \
	Q6KA_CODES(Y6, 2, Y5, 0); \
	Q6KA_QUAD(xo1, 32, S); \
	Q6KA_CODES(Y6, 4, Y4, 4); \
	Q6KA_QUAD(xo2, 64, S); \
	Q6KA_CODES(Y6, 6, Y5, 4); \
	Q6KA_QUAD(xo3, 96, S)

// Q6KA_TOKEN closes one token's super-block: A += d·y.d (y.d at yd) ×
// float(lanes L), L cleared.
#define Q6KA_TOKEN(yd, L, A) \
	VMULSS yd, X13, X9; \
	VBROADCASTSS X9, Y9; \
	VCVTDQ2PS L, L; \
	VFMADD231PS L, Y9, A; \
	VPXOR L, L, L

// func ggmlQ6KTile4x2AVX2(w unsafe.Pointer, ws uintptr, xq *int8, q8s *int16, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Token 1 addresses one stride on from token 0: quants R11 and q8s R14
// (xs apart, in R9), scales R12 (ds apart, in R13). SI is the row, R10
// its super-block, CX the super-blocks left, DX the rows left; 0(SP)
// holds the row's output of token 0.
TEXT ·ggmlQ6KTile4x2AVX2(SB), NOSPLIT, $8-80
	MOVQ w+0(FP), SI
	MOVQ xs+32(FP), R9
	MOVQ ds+48(FP), R13
	MOVQ out+64(FP), DX
	MOVQ DX, 0(SP)
	MOVQ $4, DX
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x03030303, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
q6ka_row:
	MOVQ SI, R10
	MOVQ xq+16(FP), R11
	MOVQ q8s+24(FP), R14
	MOVQ xd+40(FP), R12
	MOVQ nb+56(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
q6ka_blk:
	// Scales: sc0..7 in both lanes of Y11, sc8..15 in both lanes of Y12.
	VPMOVSXBW 192(R10), Y13
	VPERMQ $0x44, Y13, Y11
	VPERMQ $0xee, Y13, Y12
	Q6KA_HALF(0, 32, 128, 0, 32, 64, 96, Y11)
	Q6KA_HALF(64, 96, 160, 128, 160, 192, 224, Y12)
	MOVWLZX 208(R10), AX
	VMOVD AX, X13
	VCVTPH2PS X13, X13
	Q6KA_TOKEN((R12), Y2, Y0)
	Q6KA_TOKEN((R12)(R13*1), Y3, Y1)
	ADDQ $210, R10
	ADDQ $256, R11
	ADDQ $256, R14
	ADDQ $4, R12
	DECQ CX
	JNZ q6ka_blk
	MOVQ 0(SP), R10
	MOVQ os+72(FP), R11
	Q8A_STORE(Y0, X0, (R10))
	Q8A_STORE(Y1, X1, (R10)(R11*1))
	ADDQ $4, 0(SP)
	ADDQ ws+8(FP), SI
	DECQ DX
	JNZ q6ka_row
	VZEROUPPER
	RET

// The Q4_K AVX2 tile: 4 rows × 2 tokens, one row at a time, each
// super-block's scales, mins and nibbles unpacked once for both tokens,
// the lanes and both accumulators per token as the row kernel's.
// Registers: Y0, Y1 the tokens' accumulators, Y2, Y3 their super-block
// lanes, X4, X5 their min accumulators (acc_m); Y6, Y7 a step's low and
// high nibbles, Y8, Y9 its two scales; Y10, Y11, Y14 temporaries; X12 the
// 8 mins; X13 = (d, dmin); Y15 = 0x0f bytes.

DATA ggmlSign1<>+0(SB)/8, $0x8000000000000000
DATA ggmlSign1<>+8(SB)/8, $0
GLOBL ggmlSign1<>(SB), RODATA|NOPTR, $16

// Q4KA_STEP(k0, k1, wo, x0, x1) is step j (as Q4KSUB) for both tokens.
#define Q4KA_STEP(k0, k1, wo, x0, x1) \
	VPBROADCASTD k0(SP), Y8; \
	VPBROADCASTD k1(SP), Y9; \
	VMOVDQU wo(R10), Y6; \
	VPSRLW $4, Y6, Y7; \
	VPAND Y15, Y6, Y6; \
	VPAND Y15, Y7, Y7; \
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

// Q4KA_TOKEN closes one token's super-block: (d·y.d, dmin·(−y.d)) from
// X13 and its scale at yd; acc_m M += dmin·(−y.d) × float(madd(mins,
// bs32 at bs)); acc A += d·y.d × float(lanes L), L cleared.
#define Q4KA_TOKEN(yd, bs, L, M, A) \
	VBROADCASTSS yd, X14; \
	VXORPS ggmlSign1<>(SB), X14, X14; \
	VMULPS X14, X13, X14; \
	VPMADDWD bs, X12, X10; \
	VCVTDQ2PS X10, X10; \
	VPERMILPS $0x55, X14, X11; \
	VFMADD231PS X10, X11, M; \
	VBROADCASTSS X14, Y14; \
	VCVTDQ2PS L, L; \
	VFMADD231PS L, Y14, A; \
	VPXOR L, L, L

// Q4KA_STORE folds acc_m M and acc A as the row kernel does, hsum(A) +
// hsum4(M), into o. Uses X10, X11.
#define Q4KA_STORE(MX, AY, AX, o) \
	VMOVHLPS MX, MX, X10; \
	VADDPS X10, MX, MX; \
	VMOVSHDUP MX, X10; \
	VADDSS X10, MX, MX; \
	VEXTRACTF128 $1, AY, X10; \
	VADDPS AX, X10, X10; \
	VMOVHLPS X10, X10, X11; \
	VADDPS X11, X10, X10; \
	VMOVSHDUP X10, X11; \
	VADDSS X11, X10, X10; \
	VADDSS MX, X10, X10; \
	VMOVSS X10, o

// func ggmlQ4KTile4x2AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xs uintptr, xd *float32, ds uintptr, bs32 *int16, bss uintptr, nb int, out *float32, os uintptr)
//
// Token 1 addresses one stride on from token 0: quants R11 (xs apart, in
// R9), scales R12 (ds, in R13), pairwise sums R14 (bss, in AX). SI is the
// row, R10 its super-block, CX the super-blocks left, DX the rows left;
// 32(SP) holds the row's output of token 0.
TEXT ·ggmlQ4KTile4x2AVX2(SB), NOSPLIT, $40-88
	MOVQ w+0(FP), SI
	MOVQ xs+24(FP), R9
	MOVQ ds+40(FP), R13
	MOVQ bss+56(FP), AX
	MOVQ out+72(FP), DX
	MOVQ DX, 32(SP)
	MOVQ $4, DX
	MOVL $0x0f0f0f0f, CX
	VMOVD CX, X15
	VPBROADCASTD X15, Y15
q4ka_row:
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
q4ka_blk:
	// The scales and mins as in ggmlQ4KRowsAVX2 (there X11-X14 and Y11),
	// here into Y10 (mins_and_scales), the frame and X12 (the mins).
	VMOVDQU 4(R10), X6
	K4SCALES(X6, X7, X8, X9)
	VPMOVZXBW X7, Y10
	VPUNPCKLWD X10, X10, X8
	VPUNPCKHWD X10, X10, X9
	VMOVDQU X8, 0(SP)
	VMOVDQU X9, 16(SP)
	VEXTRACTI128 $1, Y10, X12
	VMOVD 0(R10), X13
	VCVTPH2PS X13, X13
	Q4KA_STEP(0, 4, 16, 0, 32)
	Q4KA_STEP(8, 12, 48, 64, 96)
	Q4KA_STEP(16, 20, 80, 128, 160)
	Q4KA_STEP(24, 28, 112, 192, 224)
	Q4KA_TOKEN((R12), (R14), Y2, X4, Y0)
	Q4KA_TOKEN((R12)(R13*1), (R14)(AX*1), Y3, X5, Y1)
	ADDQ $144, R10
	ADDQ $256, R11
	ADDQ $4, R12
	ADDQ $16, R14
	DECQ CX
	JNZ q4ka_blk
	MOVQ 32(SP), R10
	MOVQ os+80(FP), R11
	Q4KA_STORE(X4, Y0, X0, (R10))
	Q4KA_STORE(X5, Y1, X1, (R10)(R11*1))
	ADDQ $4, 32(SP)
	ADDQ ws+8(FP), SI
	DECQ DX
	JNZ q4ka_row
	VZEROUPPER
	RET
