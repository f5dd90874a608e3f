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
// scalar float: llama.cpp's x86 build compiles `summs += m*s` to one
// VFMADD231SS (a fused multiply-add, not a product then a sum), and
// the row is hsum_float_8(acc) + summs.
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
