//go:build amd64

#include "textflag.h"

// func rowMaxAVX512(s *float32, n int) float32
//
// RowMax for n ≥ 16: sixteen running maxima (two vectors, two chains in
// flight) from −Inf. Each step is VMAXPS with the new values as the first
// source and the running max as the second, which returns the second
// operand when either is NaN: NaNs are skipped, as RowMax requires. The
// last partial vector is loaded under a mask into a register of −Inf, so
// the lanes past n cannot win. The 16 lanes fold with the same max.
TEXT ·rowMaxAVX512(SB), NOSPLIT, $0-20
	MOVQ s+0(FP), SI
	MOVQ n+8(FP), CX
	MOVL $0xff800000, AX // −Inf
	VPBROADCASTD AX, Z2
	VMOVAPS Z2, Z0
	VMOVAPS Z2, Z1

pair:
	CMPQ CX, $32
	JLT one
	VMOVUPS (SI), Z3
	VMOVUPS 64(SI), Z4
	VMAXPS Z0, Z3, Z0
	VMAXPS Z1, Z4, Z1
	ADDQ $128, SI
	SUBQ $32, CX
	JMP pair

one:
	CMPQ CX, $16
	JLT tail
	VMOVUPS (SI), Z3
	VMAXPS Z0, Z3, Z0
	ADDQ $64, SI
	SUBQ $16, CX

tail:
	TESTQ CX, CX
	JZ fold
	MOVL $1, AX
	SHLL CX, AX
	DECL AX // the low CX bits
	KMOVW AX, K1
	VMOVAPS Z2, Z3
	VMOVUPS (SI), K1, Z3
	VMAXPS Z1, Z3, Z1

fold:
	VMAXPS Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VMAXPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X1, X0, X0
	VZEROUPPER
	MOVSS X0, ret+16(FP)
	RET
