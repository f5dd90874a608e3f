//go:build amd64

#include "textflag.h"

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

	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z31 // |·| mask
	MOVL $0x80000000, AX
	VPBROADCASTD AX, Z30 // sign mask
	MOVL $0x3f800000, AX
	VPBROADCASTD AX, Z29 // 1.0
	MOVL $0x3f000000, AX
	VPBROADCASTD AX, Z28 // 0.5
	MOVL $0x7f7fffff, AX
	VPBROADCASTD AX, Z27 // largest finite float32
	MOVL $0x42fe0000, AX
	VMOVD AX, X26        // 127.0
	MOVL $0x01010101, AX
	VPBROADCASTD AX, Z25 // bytes of 1, to sum 4 int8 per lane with VPDPBUSD

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
	VRNDSCALEPS $0x0b, Z3, Z4  // t = trunc(f)
	VSUBPS Z4, Z3, Z5          // f − t, exact
	VANDPS Z31, Z5, Z5
	VCMPPS $0x1d, Z28, Z5, K1  // GE_OQ: |f − t| ≥ ½
	VANDPS Z30, Z3, Z6
	VORPS Z29, Z6, Z6          // ±1 with f's sign
	VADDPS Z6, Z4, K1, Z4
	VCVTTPS2DQ Z4, Z4
	VPMOVSDB Z4, X7
	VMOVDQU X7, (DI)
	TESTQ R9, R9
	JZ quant_next
	VPXORD X8, X8, X8
	VPDPBUSD X7, X25, X8 // Σ of each lane's 4 int8
	VPSLLD $7, X8, X8
	VPXORD X9, X9, X9
	VPSUBD X8, X9, X8    // −128·Σ
	MOVQ R12, AX
	SHRQ $6, AX
	SHLQ $7, AX
	MOVQ R12, BX
	ANDQ $63, BX
	ADDQ BX, AX
	ADDQ R9, AX
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
	MOVQ R12, AX
	SHRQ $6, AX
	SHLQ $7, AX
	MOVQ R12, BX
	ANDQ $63, BX
	ADDQ BX, AX
	ADDQ R9, AX
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
