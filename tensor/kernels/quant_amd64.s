//go:build amd64

#include "textflag.h"

// Shared steps of the two quantizers below.
//
// QCONSTS loads the constants: Z31 |·| mask, Z30 sign mask, Z29 1.0,
// Z28 0.5, Z27 the largest finite float32, Z25 bytes of 1 (VPDPBUSD sums
// a lane's 4 int8 against them).
#define QCONSTS \
	MOVL $0x7fffffff, AX; \
	VPBROADCASTD AX, Z31; \
	MOVL $0x80000000, AX; \
	VPBROADCASTD AX, Z30; \
	MOVL $0x3f800000, AX; \
	VPBROADCASTD AX, Z29; \
	MOVL $0x3f000000, AX; \
	VPBROADCASTD AX, Z28; \
	MOVL $0x7f7fffff, AX; \
	VPBROADCASTD AX, Z27; \
	MOVL $0x01010101, AX; \
	VPBROADCASTD AX, Z25

// QROUND takes f = x / scale in Z3 and leaves q = round half away from
// zero (f) as int32 in Z4: t = trunc(f), then t ± 1 where |f − t| ≥ ½
// (the fraction is exact in float32). Uses Z5, Z6, K1.
#define QROUND \
	VRNDSCALEPS $0x0b, Z3, Z4; \
	VSUBPS Z4, Z3, Z5; \
	VANDPS Z31, Z5, Z5; \
	VCMPPS $0x1d, Z28, Z5, K1; \
	VANDPS Z30, Z3, Z6; \
	VORPS Z29, Z6, Z6; \
	VADDPS Z6, Z4, K1, Z4; \
	VCVTTPS2DQ Z4, Z4

// QBIAS sets X8 to the 4 lanes' biases −128·Σq of the 16 int8 in X7.
// Uses X9.
#define QBIAS \
	VPXORD X8, X8, X8; \
	VPDPBUSD X7, X25, X8; \
	VPSLLD $7, X8, X8; \
	VPXORD X9, X9, X9; \
	VPSUBD X8, X9, X8

// QAUXADDR sets AX to this step's place in aux (R9): the biases of column
// j (R12) are at (j/64)·128 + (j mod 64) bytes, their scales 64 further.
// Uses BX.
#define QAUXADDR \
	MOVQ R12, AX; \
	SHRQ $6, AX; \
	SHLQ $7, AX; \
	MOVQ R12, BX; \
	ANDQ $63, BX; \
	ADDQ BX, AX; \
	ADDQ R9, AX

// func quantRowAVX512(x *float32, q *int8, s *float32, aux *int32, ngroups int, gs int)
//
// runq.c's quantize() for one token, 16 values per step, bit-identical to
// quantizeRow (Go): per group of gs values (gs a multiple of 16)
// scale = max|x|/127 and q = round(x/scale), half away from zero, computed
// as t = trunc(x/scale), then t ± 1 where |x/scale − t| ≥ ½ (the fraction
// is exact in float32). A group holding NaN or ±Inf gets scale NaN and
// q = 0; an all-zero group scale 0 and q = 0. When aux is not nil it also
// writes the VNNI side data (laneAux): for each 4-value lane, the bias
// −128·Σq and the lane's scale, at aux + (j/64)·128 bytes + (j mod 64) for
// the biases and 64 bytes further for the scales (j = the lane's first
// column).
TEXT ·quantRowAVX512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ s+16(FP), R8
	MOVQ aux+24(FP), R9
	MOVQ ngroups+32(FP), R10
	MOVQ gs+40(FP), R11
	XORQ R12, R12 // j: column of the current 16-value step

	QCONSTS
	MOVL $0x42fe0000, AX
	VMOVD AX, X26        // 127.0

	TESTQ R10, R10
	JZ done

group:
	// Pass 1: amax = max|x|, and K4 = lanes with |x| > max finite or NaN.
	VPXORD Z0, Z0, Z0
	KXORW K4, K4, K4
	MOVQ R11, R13
	SHRQ $4, R13
	MOVQ SI, AX
amax:
	VANDPS (AX), Z31, Z1
	VMAXPS Z1, Z0, Z0
	VCMPPS $0x16, Z27, Z1, K3 // NLE_UQ: |x| > max finite, or unordered
	KORW K3, K4, K4
	ADDQ $64, AX
	DECQ R13
	JNZ amax
	KORTESTW K4, K4
	JNZ nonfinite
	VEXTRACTF64X4 $1, Z0, Y1
	VMAXPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VMAXSS X1, X0, X0
	VDIVSS X26, X0, X0 // scale = amax / 127
	VMOVSS X0, (R8)
	VBROADCASTSS X0, Z2
	VXORPS X1, X1, X1
	VUCOMISS X1, X0
	JEQ fill // all zeros: scale 0, q 0

	// Pass 2: q = round half away from zero (x / scale).
	MOVQ R11, R13
	SHRQ $4, R13
quant:
	VMOVUPS (SI), Z3
	VDIVPS Z2, Z3, Z3          // f = x / scale
	QROUND
	VPMOVSDB Z4, X7
	VMOVDQU X7, (DI)
	TESTQ R9, R9
	JZ quant_next
	QBIAS
	QAUXADDR
	VMOVDQU X8, (AX)
	VMOVUPS X2, 64(AX)
quant_next:
	ADDQ $64, SI
	ADDQ $16, DI
	ADDQ $16, R12
	DECQ R13
	JNZ quant
	JMP next

nonfinite:
	MOVL $0x7fc00000, AX // NaN
	MOVL AX, (R8)
	VPBROADCASTD AX, Z2

	// fill: q = 0 for the group, aux bias 0 and scale Z2.
fill:
	MOVQ R11, R13
	SHRQ $4, R13
	VPXORD X7, X7, X7
fill_loop:
	VMOVDQU X7, (DI)
	TESTQ R9, R9
	JZ fill_next
	QAUXADDR
	VMOVDQU X7, (AX)
	VMOVUPS X2, 64(AX)
fill_next:
	ADDQ $64, SI
	ADDQ $16, DI
	ADDQ $16, R12
	DECQ R13
	JNZ fill_loop

next:
	ADDQ $4, R8
	DECQ R10
	JNZ group

done:
	VZEROUPPER
	RET

// func quantRowSmallAVX512(x *float32, q *int8, s *float32, aux *int32, cols int, gs int)
//
// quantRowAVX512 for groups of 4 or 8 (gs), 16 values (4 or 2 groups) per
// step and any cols that is a multiple of gs: the last step loads only the
// values inside the row (K2). Each lane gets its group's max|x| by folding
// neighbours (VPERMILPS within 128 bits; for 8, also the adjacent 128-bit
// unit), and its group's scale by one vector division; the group scales are
// stored with VCOMPRESSPS (lanes 0, 4, 8, 12 or 0, 8). Groups holding NaN or
// ±Inf get scale NaN and q = 0, all-zero groups scale 0 and q = 0, as in
// quantizeRow. aux as in quantRowAVX512.
TEXT ·quantRowSmallAVX512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ s+16(FP), R8
	MOVQ aux+24(FP), R9
	MOVQ cols+32(FP), R10
	MOVQ gs+40(FP), R11
	XORQ R12, R12 // j

	QCONSTS
	MOVL $0x42fe0000, AX
	VPBROADCASTD AX, Z26 // 127.0
	MOVL $0x7fc00000, AX
	VPBROADCASTD AX, Z24 // NaN
	VPXORD Z23, Z23, Z23 // 0
	MOVL $0x1111, R13    // group lanes for gs = 4
	CMPQ R11, $8
	JNE small_step
	MOVL $0x0101, R13    // group lanes for gs = 8

small_step:
	CMPQ R12, R10
	JGE small_done
	MOVQ R10, CX
	SUBQ R12, CX         // values left
	MOVL $-1, AX
	CMPQ CX, $16
	JGE small_full
	BZHIL CX, AX, AX
small_full:
	KMOVW AX, K2         // lanes inside the row
	VMOVUPS.Z (SI), K2, Z3
	VANDPS Z31, Z3, Z1           // |x|
	VCMPPS $0x16, Z27, Z1, K3    // |x| > max finite, or NaN
	VPMOVM2D K3, Z10
	// Fold the group max and the group's non-finite flag to every lane.
	VPERMILPS $0xb1, Z1, Z2
	VMAXPS Z2, Z1, Z1
	VPERMILPS $0xb1, Z10, Z11
	VPORD Z11, Z10, Z10
	VPERMILPS $0x4e, Z1, Z2
	VMAXPS Z2, Z1, Z1
	VPERMILPS $0x4e, Z10, Z11
	VPORD Z11, Z10, Z10
	CMPQ R11, $8
	JNE small_folded
	VSHUFF32X4 $0xb1, Z1, Z1, Z2
	VMAXPS Z2, Z1, Z1
	VSHUFI32X4 $0xb1, Z10, Z10, Z11
	VPORD Z11, Z10, Z10
small_folded:
	VPMOVD2M Z10, K3             // lanes of non-finite groups
	VDIVPS Z26, Z1, Z2           // scale = amax / 127, per lane
	VCMPPS $0x00, Z23, Z2, K5    // EQ_OQ: scale == 0
	KORW K3, K5, K6              // lanes whose q is 0
	VDIVPS Z2, Z3, Z3            // f = x / scale
	QROUND
	VPXORD Z4, Z4, K6, Z4        // q = 0 in zero and non-finite groups
	VPMOVSDB Z4, X7
	VMOVDQU X7, (DI)
	VMOVAPS Z24, K3, Z2          // scale NaN in non-finite groups
	KMOVW R13, K4
	KANDW K2, K4, K4             // groups inside the row
	VCOMPRESSPS Z2, K4, (R8)
	KMOVW K4, AX
	POPCNTL AX, AX
	LEAQ (R8)(AX*4), R8
	TESTQ R9, R9
	JZ small_next
	QBIAS
	QAUXADDR
	VMOVDQU X8, (AX)
	MOVL $0x1111, BX
	KMOVW BX, K4
	VCOMPRESSPS Z2, K4, 64(AX)   // the 4 lanes' scales
small_next:
	ADDQ $64, SI
	ADDQ $16, DI
	ADDQ $16, R12
	JMP small_step

small_done:
	VZEROUPPER
	RET
