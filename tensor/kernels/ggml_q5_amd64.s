//go:build amd64

#include "textflag.h"
#include "ggml_amd64.h"

// The row kernels of the 5-bit and "_1" ggml types (see ggml_q5.go and
// ggml_q5_amd64.go), in the summation order of ggml_amd64.s's header:
// each follows ggml's AVX2 vec_dot for its type (ggml-cpu-quants.c,
// llama.cpp c392e50), so an output has the bits llama.cpp's AVX2 build
// computes. What differs from Q4_0 is the unpacking of the weights:
//
//	Q5_0  qx = nibbles | (~bit & 0xF0), so q − 16 as int8 (bit clear:
//	      nibble − 16; set: nibble); mul_sum_i8_pairs_float(qx, qy).
//	Q4_1  qx = nibbles, unsigned; mul_sum_us8_pairs_float(qx, qy).
//	Q5_1  qx = nibbles | (bit & 0x10), unsigned; mul_sum_us8_pairs_float.
//
// the fifth bits from bytes_from_bits_32: the uint32 qh broadcast, byte j
// of the 32 made a copy of qh's byte j/8 (ggmlQ5Shuf), ORed with a mask
// that has every bit set but bit j%8, compared with all-ones, so 0xFF
// where bit j of qh is set. The "_1" types add m·s per block into a
// scalar float, and the row is hsum_float_8(acc) + summs. llama.cpp's x86
// build compiles `summs += m*s` to one VFMADD231SS, as here; a product of
// two fp16 values is exact in float32, so fused or not, the bits agree.
//
// The VNNI forms replace VPMADDUBSW+VPMADDWD by VPDPBUSD, which forms the
// same int32 lanes (ggml's AVX512-VNNI build does the same).

// ggmlQ5Shuf: byte j takes byte j/8 of the broadcast qh.
DATA ggmlQ5Shuf<>+0(SB)/8, $0x0000000000000000
DATA ggmlQ5Shuf<>+8(SB)/8, $0x0101010101010101
DATA ggmlQ5Shuf<>+16(SB)/8, $0x0202020202020202
DATA ggmlQ5Shuf<>+24(SB)/8, $0x0303030303030303
GLOBL ggmlQ5Shuf<>(SB), RODATA|NOPTR, $32

// Q5CONSTS sets Y14 = 0x0F bytes, Y13 = hi (0xF0 for Q5_0, 0x10 for
// Q5_1; a 32-bit pattern), and for bytes_from_bits_32 Y12 = ggmlQ5Shuf,
// Y11 = the bit mask 0x7fbfdfeff7fbfdfe, Y10 = all ones. Uses AX.
#define Q5CONSTS(hi) \
	MOVL $0x0f0f0f0f, AX; \
	VMOVD AX, X14; \
	VPBROADCASTD X14, Y14; \
	MOVL hi, AX; \
	VMOVD AX, X13; \
	VPBROADCASTD X13, Y13; \
	VMOVDQU ggmlQ5Shuf<>(SB), Y12; \
	MOVQ $0x7fbfdfeff7fbfdfe, AX; \
	VMOVQ AX, X11; \
	VPBROADCASTQ X11, Y11; \
	VPCMPEQB Y10, Y10, Y10

// NIBBLES sets Y to bytes_from_nibbles_32 of the 16 bytes at qs: the low
// nibbles in the low lane (weights 0..15), the high ones in the high lane
// (weights 16..31). Xt is scratch. Needs Y14.
#define NIBBLES(qs, X, Y, Xt) \
	VMOVDQU qs, X; \
	VPSRLW $4, X, Xt; \
	VINSERTI128 $1, Xt, Y, Y; \
	VPAND Y14, Y, Y

// BITS sets Y to bytes_from_bits_32 of the uint32 at qh. Needs Y10-Y12.
#define BITS(qh, Y) \
	VPBROADCASTD qh, Y; \
	VPSHUFB Y12, Y, Y; \
	VPOR Y11, Y, Y; \
	VPCMPEQB Y10, Y, Y

// Q5_0Q sets Y2 to a Q5_0 block's q − 16 (int8), the block at b. Uses Y3.
#define Q5_0Q(b) \
	NIBBLES(6 b, X2, Y2, X3); \
	BITS(2 b, Y3); \
	VPANDN Y13, Y3, Y3; \
	VPOR Y3, Y2, Y2

// DOT_AVX2 and DOT_VNNI set D to the 8 int32 lanes Σ u·s (u unsigned, s
// signed bytes, 4 to a lane) as float32.
#define DOT_AVX2(s, u, D) \
	VPMADDUBSW s, u, D; \
	VPMADDWD Y15, D, D; \
	VCVTDQ2PS D, D

#define DOT_VNNI(s, u, D) \
	VPXOR D, D, D; \
	VPDPBUSD s, u, D; \
	VCVTDQ2PS D, D

// Q5_0BLK is one Q5_0 block of the one-row kernels: acc Y0 += d_w·d_x ×
// mul_sum_i8_pairs_float(q − 16, x), the block at (R10), x at (R11).
#define Q5_0BLK(DOT) \
	Q5_0Q((R10)); \
	VMOVDQU (R11), Y3; \
	VPSIGNB Y2, Y2, Y4; \
	VPSIGNB Y2, Y3, Y5; \
	DOT(Y5, Y4, Y6); \
	Q8SCALE; \
	VFMADD231PS Y6, Y7, Y0

// Q5_0R4(b, ACC, DOT) is one Q5_0 block of row b (an address) in the
// Rows4 kernels: ACC += d_w·d_x × mul_sum_i8_pairs_float(q − 16, x), with
// the token's x in Y4 and d_x in all lanes of Y5. Uses Y6-Y9.
#define Q5_0R4(b, ACC, DOT) \
	NIBBLES(6 b, X6, Y6, X7); \
	BITS(2 b, Y7); \
	VPANDN Y13, Y7, Y7; \
	VPOR Y7, Y6, Y6; \
	VPSIGNB Y6, Y6, Y7; \
	VPSIGNB Y6, Y4, Y8; \
	DOT(Y8, Y7, Y9); \
	VPBROADCASTW b, X8; \
	VCVTPH2PS X8, Y8; \
	VMULPS Y5, Y8, Y8; \
	VFMADD231PS Y9, Y8, ACC

// R4ARGS loads the Rows4 kernels' arguments: R10 row 0, BX = ws and
// R13 = 3·ws the row steps, R9 the rows to prefetch, R11 x, R12 d_x, CX
// the blocks, DX out; Y15 = int16 ones and Y0-Y3 the accumulators.
#define R4ARGS \
	MOVQ pf+48(FP), R9; \
	MOVQ w+0(FP), R10; \
	MOVQ ws+8(FP), BX; \
	MOVQ xq+16(FP), R11; \
	MOVQ xd+24(FP), R12; \
	MOVQ nb+32(FP), CX; \
	MOVQ out+40(FP), DX; \
	LEAQ (BX)(BX*2), R13; \
	MOVL $0x00010001, AX; \
	VMOVD AX, X15; \
	VPBROADCASTD X15, Y15; \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3

// R4PREFETCH prefetches pf's four rows' block into L2 and loads the
// token's block: x to Y4, d_x to Y5.
#define R4PREFETCH \
	PREFETCHT1 (R9); \
	PREFETCHT1 (R9)(BX*1); \
	PREFETCHT1 (R9)(BX*2); \
	PREFETCHT1 (R9)(R13*1); \
	VMOVDQU (R11), Y4; \
	VBROADCASTSS (R12), Y5

// R4STORE stores hsum_float_8 of accumulator Y (X its low half) to o(DX).
#define R4STORE(Y, X, o) \
	VEXTRACTF128 $1, Y, X11; \
	VADDPS X, X11, X11; \
	VMOVHLPS X11, X11, X12; \
	VADDPS X12, X11, X11; \
	VMOVSHDUP X11, X12; \
	VADDSS X12, X11, X11; \
	VMOVSS X11, o(DX)

#define R4STORES \
	R4STORE(Y0, X0, 0); \
	R4STORE(Y1, X1, 4); \
	R4STORE(Y2, X2, 8); \
	R4STORE(Y3, X3, 12)

// Q81ARGS loads the Q8_1 kernels' arguments (Q8ARGS's, and R14 = xs)
// and sets Y15 to int16 ones.
#define Q81ARGS \
	MOVQ w+0(FP), SI; \
	MOVQ ws+8(FP), BX; \
	MOVQ xq+16(FP), DI; \
	MOVQ xd+24(FP), R8; \
	MOVQ xs+32(FP), R14; \
	MOVQ nb+40(FP), CX; \
	MOVQ out+48(FP), DX; \
	MOVQ nrows+56(FP), R9; \
	MOVL $0x00010001, AX; \
	VMOVD AX, X15; \
	VPBROADCASTD X15, Y15

// Q81ROW starts a row as Q8ROW, with R15 the s pointer and X9 summs.
#define Q81ROW \
	Q8ROW; \
	MOVQ R14, R15; \
	VXORPS X9, X9, X9

// Q81BLK finishes a block whose unsigned codes are in Y2: acc Y0 +=
// d_w·d_x × mul_sum_us8_pairs_float(codes, x), then summs X9 =
// fma(m, s, summs), m the block's fp16 at 2(R10).
#define Q81BLK(DOT) \
	DOT((R11), Y2, Y6); \
	Q8SCALE; \
	VFMADD231PS Y6, Y7, Y0; \
	MOVWLZX 2(R10), AX; \
	VMOVD AX, X7; \
	VCVTPH2PS X7, X7; \
	VFMADD231SS (R15), X7, X9

// Q81ENDROW stores hsum_float_8(acc) + summs and moves to the next row.
#define Q81ENDROW \
	HSUM8; \
	VADDSS X9, X1, X1; \
	VMOVSS X1, (DX); \
	ADDQ $4, DX; \
	ADDQ BX, SI; \
	DECQ R9

// Q5_1Q sets Y2 to a Q5_1 block's 5-bit codes, the block at (R10).
#define Q5_1Q \
	NIBBLES(8(R10), X2, Y2, X3); \
	BITS(4(R10), Y3); \
	VPAND Y13, Y3, Y3; \
	VPOR Y3, Y2, Y2

// The Q4_1 and Q5_1 Rows4 kernels: four rows per call, each as the
// one-row kernel computes it (the same DOT of codes and x, the same
// fma into acc per block, summs = fma(m, s, summs) per block, the row
// hsum_float_8(acc) + summs), sharing the token's loads and prefetching
// the four rows at pf. Registers: Y0-Y3 the rows' acc, X4-X7 their summs;
// Y8 a block's codes, Y9 their fifth bits, Y10 the lanes, Y11 the scale;
// Y12 d_x in all lanes; Y13 = 0x10 bytes (Q5_1), Y14 = 0x0f bytes, Y15 =
// int16 ones. bytes_from_bits_32's constants come from memory.

// Q81R4(b, CODES, ACC, SUMM, DOT) is one block of row b (an address):
// CODES(b) sets Y8, then ACC += d_w·d_x × DOT(x, codes) and SUMM =
// fma(m, s, SUMM), m the block's fp16 at 2 b, s the token's at (R15).
#define Q81R4(b, CODES, ACC, SUMM, DOT) \
	CODES(b); \
	DOT((R11), Y8, Y10); \
	VPBROADCASTW b, X11; \
	VCVTPH2PS X11, Y11; \
	VMULPS Y12, Y11, Y11; \
	VFMADD231PS Y10, Y11, ACC; \
	VPBROADCASTW 2 b, X11; \
	VCVTPH2PS X11, X11; \
	VFMADD231SS (R15), X11, SUMM

// Q4_1R4Q sets Y8 to a Q4_1 block's nibbles, the block at b.
#define Q4_1R4Q(b) \
	NIBBLES(4 b, X8, Y8, X9)

// Q5_1R4Q sets Y8 to a Q5_1 block's 5-bit codes, the block at b, as
// Q5_1Q does with the bit constants from memory.
#define Q5_1R4Q(b) \
	NIBBLES(8 b, X8, Y8, X9); \
	VPBROADCASTD 4 b, Y9; \
	VPSHUFB ggmlQ5Shuf<>(SB), Y9, Y9; \
	VPOR ggmlQ5Bit<>(SB), Y9, Y9; \
	VPCMPEQB ggmlQ5Ones<>(SB), Y9, Y9; \
	VPAND Y13, Y9, Y9; \
	VPOR Y9, Y8, Y8

// Q81R4BLK is one block of all four rows (R10, BX = ws, R13 = 3·ws),
// after prefetching pf's four rows' block at R9.
#define Q81R4BLK(CODES, DOT) \
	PREFETCHT1 (R9); \
	PREFETCHT1 (R9)(BX*1); \
	PREFETCHT1 (R9)(BX*2); \
	PREFETCHT1 (R9)(R13*1); \
	VBROADCASTSS (R12), Y12; \
	Q81R4((R10), CODES, Y0, X4, DOT); \
	Q81R4((R10)(BX*1), CODES, Y1, X5, DOT); \
	Q81R4((R10)(BX*2), CODES, Y2, X6, DOT); \
	Q81R4((R10)(R13*1), CODES, Y3, X7, DOT)

// Q81R4ARGS loads the arguments (R15 = xs, else as R4ARGS) and sets the
// constants; the accumulators and summs start at zero.
#define Q81R4ARGS \
	MOVQ pf+56(FP), R9; \
	MOVQ w+0(FP), R10; \
	MOVQ ws+8(FP), BX; \
	MOVQ xq+16(FP), R11; \
	MOVQ xd+24(FP), R12; \
	MOVQ xs+32(FP), R15; \
	MOVQ nb+40(FP), CX; \
	MOVQ out+48(FP), DX; \
	LEAQ (BX)(BX*2), R13; \
	MOVL $0x00010001, AX; \
	VMOVD AX, X15; \
	VPBROADCASTD X15, Y15; \
	MOVL $0x0f0f0f0f, AX; \
	VMOVD AX, X14; \
	VPBROADCASTD X14, Y14; \
	MOVL $0x10101010, AX; \
	VMOVD AX, X13; \
	VPBROADCASTD X13, Y13; \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS X4, X4, X4; \
	VXORPS X5, X5, X5; \
	VXORPS X6, X6, X6; \
	VXORPS X7, X7, X7

// Q81R4STORE stores hsum_float_8 of acc Y (X its low half) + summs S to
// o(DX). Uses X11, X12.
#define Q81R4STORE(Y, X, S, o) \
	VEXTRACTF128 $1, Y, X11; \
	VADDPS X, X11, X11; \
	VMOVHLPS X11, X11, X12; \
	VADDPS X12, X11, X11; \
	VMOVSHDUP X11, X12; \
	VADDSS X12, X11, X11; \
	VADDSS S, X11, X11; \
	VMOVSS X11, o(DX)

#define Q81R4STORES \
	Q81R4STORE(Y0, X0, X4, 0); \
	Q81R4STORE(Y1, X1, X5, 4); \
	Q81R4STORE(Y2, X2, X6, 8); \
	Q81R4STORE(Y3, X3, X7, 12)

// func ggmlQ5_0RowsAVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, nrows int)
TEXT ·ggmlQ5_0RowsAVX2(SB), NOSPLIT, $0-56
	Q8ARGS
	Q5CONSTS($0xf0f0f0f0)
q50a_row:
	Q8ROW
q50a_blk:
	Q5_0BLK(DOT_AVX2)
	ADDQ $22, R10
	ADDQ $32, R11
	ADDQ $4, R12
	DECQ R13
	JNZ q50a_blk
	Q8ENDROW
	JNZ q50a_row
	VZEROUPPER
	RET

// func ggmlQ5_0RowsVNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, nrows int)
TEXT ·ggmlQ5_0RowsVNNI(SB), NOSPLIT, $0-56
	Q8ARGS
	Q5CONSTS($0xf0f0f0f0)
q50v_row:
	Q8ROW
q50v_blk:
	Q5_0BLK(DOT_VNNI)
	ADDQ $22, R10
	ADDQ $32, R11
	ADDQ $4, R12
	DECQ R13
	JNZ q50v_blk
	Q8ENDROW
	JNZ q50v_row
	VZEROUPPER
	RET

// func ggmlQ5_0Rows4AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, pf unsafe.Pointer)
TEXT ·ggmlQ5_0Rows4AVX2(SB), NOSPLIT, $0-56
	R4ARGS
	Q5CONSTS($0xf0f0f0f0)
q50a4_blk:
	R4PREFETCH
	Q5_0R4((R10), Y0, DOT_AVX2)
	Q5_0R4((R10)(BX*1), Y1, DOT_AVX2)
	Q5_0R4((R10)(BX*2), Y2, DOT_AVX2)
	Q5_0R4((R10)(R13*1), Y3, DOT_AVX2)
	ADDQ $22, R10
	ADDQ $22, R9
	ADDQ $32, R11
	ADDQ $4, R12
	DECQ CX
	JNZ q50a4_blk
	R4STORES
	VZEROUPPER
	RET

// func ggmlQ5_0Rows4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, nb int, out *float32, pf unsafe.Pointer)
TEXT ·ggmlQ5_0Rows4VNNI(SB), NOSPLIT, $0-56
	R4ARGS
	Q5CONSTS($0xf0f0f0f0)
q50v4_blk:
	R4PREFETCH
	Q5_0R4((R10), Y0, DOT_VNNI)
	Q5_0R4((R10)(BX*1), Y1, DOT_VNNI)
	Q5_0R4((R10)(BX*2), Y2, DOT_VNNI)
	Q5_0R4((R10)(R13*1), Y3, DOT_VNNI)
	ADDQ $22, R10
	ADDQ $22, R9
	ADDQ $32, R11
	ADDQ $4, R12
	DECQ CX
	JNZ q50v4_blk
	R4STORES
	VZEROUPPER
	RET

// func ggmlQ4_1RowsAVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, xs *float32, nb int, out *float32, nrows int)
TEXT ·ggmlQ4_1RowsAVX2(SB), NOSPLIT, $0-64
	Q81ARGS
	Q5CONSTS($0x10101010)
q41a_row:
	Q81ROW
q41a_blk:
	NIBBLES(4(R10), X2, Y2, X3)
	Q81BLK(DOT_AVX2)
	ADDQ $20, R10
	ADDQ $32, R11
	ADDQ $4, R12
	ADDQ $4, R15
	DECQ R13
	JNZ q41a_blk
	Q81ENDROW
	JNZ q41a_row
	VZEROUPPER
	RET

// func ggmlQ4_1RowsVNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, xs *float32, nb int, out *float32, nrows int)
TEXT ·ggmlQ4_1RowsVNNI(SB), NOSPLIT, $0-64
	Q81ARGS
	Q5CONSTS($0x10101010)
q41v_row:
	Q81ROW
q41v_blk:
	NIBBLES(4(R10), X2, Y2, X3)
	Q81BLK(DOT_VNNI)
	ADDQ $20, R10
	ADDQ $32, R11
	ADDQ $4, R12
	ADDQ $4, R15
	DECQ R13
	JNZ q41v_blk
	Q81ENDROW
	JNZ q41v_row
	VZEROUPPER
	RET

// func ggmlQ5_1RowsAVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, xs *float32, nb int, out *float32, nrows int)
TEXT ·ggmlQ5_1RowsAVX2(SB), NOSPLIT, $0-64
	Q81ARGS
	Q5CONSTS($0x10101010)
q51a_row:
	Q81ROW
q51a_blk:
	Q5_1Q
	Q81BLK(DOT_AVX2)
	ADDQ $24, R10
	ADDQ $32, R11
	ADDQ $4, R12
	ADDQ $4, R15
	DECQ R13
	JNZ q51a_blk
	Q81ENDROW
	JNZ q51a_row
	VZEROUPPER
	RET

// func ggmlQ5_1RowsVNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd *float32, xs *float32, nb int, out *float32, nrows int)
TEXT ·ggmlQ5_1RowsVNNI(SB), NOSPLIT, $0-64
	Q81ARGS
	Q5CONSTS($0x10101010)
q51v_row:
	Q81ROW
q51v_blk:
	Q5_1Q
	Q81BLK(DOT_VNNI)
	ADDQ $24, R10
	ADDQ $32, R11
	ADDQ $4, R12
	ADDQ $4, R15
	DECQ R13
	JNZ q51v_blk
	Q81ENDROW
	JNZ q51v_row
	VZEROUPPER
	RET

// The Q5_0 prefill tiles (see ggml_tile.go and ggml_amd64.s's tile
// section): the Q8_0 tiles' structure, 4 rows × 8 or 4 tokens (VNNI) or
// 2 (AVX2), with the row kernel's int32 lanes and float sequence per
// output, so its bits.
//
// The VNNI tiles feed VPDPBUSD the weights q − 16 as unsigned bytes
// (q − 16) + 128 = q + 112 against the signed activations, the lanes
// starting from Q8_0's corrections xc = −128·Σx: the same lanes. The
// fifth bits come from the two rows' qh read straight into a mask register
// (bit j of qh masks byte j), which picks nibble + 0x80 over nibble + 0x70.

// Q5T_ROWPAIR loads a Q5_0 row pair's block (rows 2p and 2p+1 at b0 and
// b1) as Q4T_ROWPAIR does a Q4_0 one, the weights as q + 112. Needs Z30 =
// 0x0f bytes, Z29 = 0x70 bytes, Z28 = 0x10 bytes and K1 = 0xff00. Uses
// Z21, K2, K3.
#define Q5T_ROWPAIR(b0, b1, WY, WZ, SY, SZ) \
	VMOVDQU32 6 b0, X21; \
	VINSERTI32X4 $1, 6 b1, Y21, Y21; \
	VPSRLW $4, Y21, WY; \
	VINSERTI64X4 $1, WY, Z21, WZ; \
	VPANDD Z30, WZ, WZ; \
	VSHUFI64X2 $0xd8, WZ, WZ, WZ; \
	KMOVD 2 b0, K2; \
	KMOVD 2 b1, K3; \
	KUNPCKDQ K2, K3, K2; \
	VPORD Z29, WZ, WZ; \
	VPADDB Z28, WZ, K2, WZ; \
	VPBROADCASTW b0, SY; \
	VPBROADCASTW b1, K1, SY; \
	VCVTPH2PS SY, SZ

// Q5T_CONSTS sets Z30 = 0x0f, Z29 = 0x70 and Z28 = 0x10 bytes.
#define Q5T_CONSTS \
	MOVL $0x0f0f0f0f, DX; \
	VPBROADCASTD DX, Z30; \
	MOVL $0x70707070, DX; \
	VPBROADCASTD DX, Z29; \
	MOVL $0x10101010, DX; \
	VPBROADCASTD DX, Z28

// func ggmlQ5_0Tile4x8VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// ggmlQ8_0Tile4x8VNNI on Q5_0 blocks: accumulator Z(2t+p) is token t,
// row pair p; tokens 4-7 address from R11, R13 and DX.
TEXT ·ggmlQ5_0Tile4x8VNNI(SB), NOSPLIT, $8-80
	Q8T_SETUP
	// CX, the block count, becomes the pointer of the next tile's row 5
	// (as in ggmlQ8_0Tile4x8VNNI): all four rows are prefetched.
	IMULQ $22, CX
	ADDQ SI, CX
	MOVQ CX, end-8(SP)
	LEAQ (SI)(BX*4), CX
	ADDQ BX, CX
	Q5T_CONSTS
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
q50t8_blk:
	PREFETCHT0 (SI)(BX*4)
	PREFETCHT0 (CX)
	PREFETCHT0 (SI)(R8*2)
	PREFETCHT0 (CX)(BX*2)
	Q5T_ROWPAIR((SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q5T_ROWPAIR((SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q8T_TOKEN((DI), (R12), (R14), Z0, Z1)
	Q8T_TOKEN((DI)(R9*1), (R12)(R9*1), (R14)(R15*1), Z2, Z3)
	Q8T_TOKEN((DI)(R9*2), (R12)(R9*2), (R14)(R15*2), Z4, Z5)
	Q8T_TOKEN((DI)(R10*1), (R12)(R10*1), (R14)(AX*1), Z6, Z7)
	Q8T_TOKEN((R11), (R13), (DX), Z8, Z9)
	Q8T_TOKEN((R11)(R9*1), (R13)(R9*1), (DX)(R15*1), Z10, Z11)
	Q8T_TOKEN((R11)(R9*2), (R13)(R9*2), (DX)(R15*2), Z12, Z13)
	Q8T_TOKEN((R11)(R10*1), (R13)(R10*1), (DX)(AX*1), Z14, Z15)
	ADDQ $22, SI
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $4, R14
	ADDQ $4, DX
	ADDQ $22, CX
	CMPQ SI, end-8(SP)
	JNE q50t8_blk
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

// func ggmlQ5_0Tile4x4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-3, as ggmlQ5_0Tile4x8VNNI.
TEXT ·ggmlQ5_0Tile4x4VNNI(SB), NOSPLIT, $0-80
	Q8T_SETUP
	LEAQ (SI)(BX*4), R11
	Q5T_CONSTS
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
q50t4_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	Q5T_ROWPAIR((SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q5T_ROWPAIR((SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q8T_TOKEN((DI), (R12), (R14), Z0, Z1)
	Q8T_TOKEN((DI)(R9*1), (R12)(R9*1), (R14)(R15*1), Z2, Z3)
	Q8T_TOKEN((DI)(R9*2), (R12)(R9*2), (R14)(R15*2), Z4, Z5)
	Q8T_TOKEN((DI)(R10*1), (R12)(R10*1), (R14)(AX*1), Z6, Z7)
	ADDQ $22, SI
	ADDQ $22, R11
	ADDQ $32, DI
	ADDQ $32, R12
	ADDQ $4, R14
	DECQ CX
	JNZ q50t4_blk
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

// func ggmlQ5_0Tile4x3VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-2, as ggmlQ5_0Tile4x8VNNI.
TEXT ·ggmlQ5_0Tile4x3VNNI(SB), NOSPLIT, $0-80
	Q8T_SETUP
	LEAQ (SI)(BX*4), R11
	Q5T_CONSTS
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
q50t3_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	Q5T_ROWPAIR((SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q5T_ROWPAIR((SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q8T_TOKEN((DI), (R12), (R14), Z0, Z1)
	Q8T_TOKEN((DI)(R9*1), (R12)(R9*1), (R14)(R15*1), Z2, Z3)
	Q8T_TOKEN((DI)(R9*2), (R12)(R9*2), (R14)(R15*2), Z4, Z5)
	ADDQ $22, SI
	ADDQ $22, R11
	ADDQ $32, DI
	ADDQ $32, R12
	ADDQ $4, R14
	DECQ CX
	JNZ q50t3_blk
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

// func ggmlQ5_0Tile4x2VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-1, as ggmlQ5_0Tile4x8VNNI.
TEXT ·ggmlQ5_0Tile4x2VNNI(SB), NOSPLIT, $0-80
	Q8T_SETUP
	LEAQ (SI)(BX*4), R11
	Q5T_CONSTS
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
q50t2_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	Q5T_ROWPAIR((SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q5T_ROWPAIR((SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q8T_TOKEN((DI), (R12), (R14), Z0, Z1)
	Q8T_TOKEN((DI)(R9*1), (R12)(R9*1), (R14)(R15*1), Z2, Z3)
	ADDQ $22, SI
	ADDQ $22, R11
	ADDQ $32, DI
	ADDQ $32, R12
	ADDQ $4, R14
	DECQ CX
	JNZ q50t2_blk
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	Q8T_STORE(Z0, Y0, X0, 0(DI), 4(DI))
	Q8T_STORE(Z1, Y1, X1, 8(DI), 12(DI))
	ADDQ R9, DI
	Q8T_STORE(Z2, Y2, X2, 0(DI), 4(DI))
	Q8T_STORE(Z3, Y3, X3, 8(DI), 12(DI))
	ADDQ R9, DI
	VZEROUPPER
	RET

// The AVX2 tile: ggmlQ8_0Tile4x2AVX2's registers (Y0-Y7 the outputs,
// token t row r in Y(2r+t); Y8 |w|, Y9 the row's scale, Y10 and Y11 the
// tokens' quants, Y12 and Y13 temporaries, Y14 the row's weights, Y15 =
// int16 ones), so the Q5_0 constants come from memory.

// Q5A_ROW is one Q5_0 row, the block at b: q − 16 formed as the row
// kernel's Q5_0Q does into Y14, then against both tokens.
#define Q5A_ROW(b, A0, A1) \
	VMOVDQU 6 b, X14; \
	VPSRLW $4, X14, X12; \
	VINSERTI128 $1, X12, Y14, Y14; \
	VPAND ggmlQ5Nib<>(SB), Y14, Y14; \
	VPBROADCASTD 2 b, Y12; \
	VPSHUFB ggmlQ5Shuf<>(SB), Y12, Y12; \
	VPOR ggmlQ5Bit<>(SB), Y12, Y12; \
	VPCMPEQB ggmlQ5Ones<>(SB), Y12, Y12; \
	VPANDN ggmlQ5Hi<>(SB), Y12, Y12; \
	VPOR Y12, Y14, Y14; \
	VPSIGNB Y14, Y14, Y8; \
	Q8A_SCALE(b); \
	Q8A_PAIR(Y14, Y10, (R12), A0); \
	Q8A_PAIR(Y14, Y11, (R12)(R13*1), A1)

// Q5CONSTS's vectors, in memory for the AVX2 tile.
DATA ggmlQ5Nib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ggmlQ5Nib<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ggmlQ5Nib<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ggmlQ5Nib<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL ggmlQ5Nib<>(SB), RODATA|NOPTR, $32
DATA ggmlQ5Hi<>+0(SB)/8, $0xf0f0f0f0f0f0f0f0
DATA ggmlQ5Hi<>+8(SB)/8, $0xf0f0f0f0f0f0f0f0
DATA ggmlQ5Hi<>+16(SB)/8, $0xf0f0f0f0f0f0f0f0
DATA ggmlQ5Hi<>+24(SB)/8, $0xf0f0f0f0f0f0f0f0
GLOBL ggmlQ5Hi<>(SB), RODATA|NOPTR, $32
DATA ggmlQ5Bit<>+0(SB)/8, $0x7fbfdfeff7fbfdfe
DATA ggmlQ5Bit<>+8(SB)/8, $0x7fbfdfeff7fbfdfe
DATA ggmlQ5Bit<>+16(SB)/8, $0x7fbfdfeff7fbfdfe
DATA ggmlQ5Bit<>+24(SB)/8, $0x7fbfdfeff7fbfdfe
GLOBL ggmlQ5Bit<>(SB), RODATA|NOPTR, $32
DATA ggmlQ5Ones<>+0(SB)/8, $-1
DATA ggmlQ5Ones<>+8(SB)/8, $-1
DATA ggmlQ5Ones<>+16(SB)/8, $-1
DATA ggmlQ5Ones<>+24(SB)/8, $-1
GLOBL ggmlQ5Ones<>(SB), RODATA|NOPTR, $32

// func ggmlQ5_0Tile4x2AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xc *int32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 (SI, BX = ws, R8 = 3·ws) × tokens 0-1 (quants DI, xs apart in
// R9; scales R12, ds apart in R13); xc is unused.
TEXT ·ggmlQ5_0Tile4x2AVX2(SB), NOSPLIT, $0-80
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
q50a2_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	VMOVDQU (DI), Y10
	VMOVDQU (DI)(R9*1), Y11
	Q5A_ROW((SI), Y0, Y1)
	Q5A_ROW((SI)(BX*1), Y2, Y3)
	Q5A_ROW((SI)(BX*2), Y4, Y5)
	Q5A_ROW((SI)(R8*1), Y6, Y7)
	ADDQ $22, SI
	ADDQ $22, R11
	ADDQ $32, DI
	ADDQ $4, R12
	DECQ CX
	JNZ q50a2_blk
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

// The Q8_1 Rows4 kernels (their macros stand before the first TEXT: go
// vet reads FP references in a #define as the preceding TEXT's).

// func ggmlQ4_1Rows4AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd, xs *float32, nb int, out *float32, pf unsafe.Pointer)
TEXT ·ggmlQ4_1Rows4AVX2(SB), NOSPLIT, $0-64
	Q81R4ARGS
q41a4_blk:
	Q81R4BLK(Q4_1R4Q, DOT_AVX2)
	ADDQ $20, R10
	ADDQ $20, R9
	ADDQ $32, R11
	ADDQ $4, R12
	ADDQ $4, R15
	DECQ CX
	JNZ q41a4_blk
	Q81R4STORES
	VZEROUPPER
	RET

// func ggmlQ4_1Rows4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd, xs *float32, nb int, out *float32, pf unsafe.Pointer)
TEXT ·ggmlQ4_1Rows4VNNI(SB), NOSPLIT, $0-64
	Q81R4ARGS
q41v4_blk:
	Q81R4BLK(Q4_1R4Q, DOT_VNNI)
	ADDQ $20, R10
	ADDQ $20, R9
	ADDQ $32, R11
	ADDQ $4, R12
	ADDQ $4, R15
	DECQ CX
	JNZ q41v4_blk
	Q81R4STORES
	VZEROUPPER
	RET

// func ggmlQ5_1Rows4AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xd, xs *float32, nb int, out *float32, pf unsafe.Pointer)
TEXT ·ggmlQ5_1Rows4AVX2(SB), NOSPLIT, $0-64
	Q81R4ARGS
q51a4_blk:
	Q81R4BLK(Q5_1R4Q, DOT_AVX2)
	ADDQ $24, R10
	ADDQ $24, R9
	ADDQ $32, R11
	ADDQ $4, R12
	ADDQ $4, R15
	DECQ CX
	JNZ q51a4_blk
	Q81R4STORES
	VZEROUPPER
	RET

// func ggmlQ5_1Rows4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xd, xs *float32, nb int, out *float32, pf unsafe.Pointer)
TEXT ·ggmlQ5_1Rows4VNNI(SB), NOSPLIT, $0-64
	Q81R4ARGS
q51v4_blk:
	Q81R4BLK(Q5_1R4Q, DOT_VNNI)
	ADDQ $24, R10
	ADDQ $24, R9
	ADDQ $32, R11
	ADDQ $4, R12
	ADDQ $4, R15
	DECQ CX
	JNZ q51v4_blk
	Q81R4STORES
	VZEROUPPER
	RET
