//go:build amd64

#include "textflag.h"

// One step of ExpSub on the 16 lanes of Z1: the values go to Z9, with the
// same float32 operations as expSubGeneric: x −= mx; x = cut where
// x < cut (K3; false for NaN); t = x·inv + magic; kf = t − magic;
// r = x − kf·hi − kf·lo; k = bits(t) − bits(magic); sc = table[k & 127]
// with k >> 7 added to its exponent; p = sc + sc·(r + r·r·0.5); p = 0
// where K3.
#define EXPSTEP \
	VSUBPS Z20, Z1, Z1; \
	VCMPPS $0x11, Z21, Z1, K3; \
	VMOVAPS Z21, K3, Z1; \
	VMULPS Z22, Z1, Z2; \
	VADDPS Z25, Z2, Z2; \
	VSUBPS Z25, Z2, Z3; \
	VMULPS Z23, Z3, Z4; \
	VSUBPS Z4, Z1, Z4; \
	VMULPS Z24, Z3, Z5; \
	VSUBPS Z5, Z4, Z4; \
	VPSUBD Z27, Z2, Z6; \
	VPANDD Z28, Z6, Z7; \
	KXNORW K1, K1, K1; \
	VPGATHERDD (R8)(Z7*4), K1, Z8; \
	VPSRAD $7, Z6, Z6; \
	VPSLLD $23, Z6, Z6; \
	VPADDD Z6, Z8, Z8; \
	VMULPS Z4, Z4, Z9; \
	VMULPS Z26, Z9, Z9; \
	VADDPS Z9, Z4, Z9; \
	VMULPS Z9, Z8, Z9; \
	VADDPS Z9, Z8, Z9; \
	KNOTW K3, K4; \
	VMOVAPS.Z Z9, K4, Z9

// func expSubAVX512(s *float32, n int, mx float32, c *expConsts) float32
TEXT ·expSubAVX512(SB), NOSPLIT, $0-36
	MOVQ s+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS mx+16(FP), Z20
	MOVQ c+24(FP), DX
	VBROADCASTSS 0(DX), Z21  // cut
	VBROADCASTSS 4(DX), Z22  // 128/ln2
	VBROADCASTSS 8(DX), Z23  // hi
	VBROADCASTSS 12(DX), Z24 // lo
	VBROADCASTSS 16(DX), Z25 // magic
	VBROADCASTSS 20(DX), Z26 // 0.5
	LEAQ 64(DX), R8          // table
	MOVL $0x4b400000, AX
	VPBROADCASTD AX, Z27
	MOVL $127, AX
	VPBROADCASTD AX, Z28
	VPXORD Z0, Z0, Z0        // lane sums
	MOVQ CX, BX
	SHRQ $4, BX
	JZ tail

loop:
	VMOVUPS (SI), Z1
	EXPSTEP
	VMOVUPS Z9, (SI)
	VADDPS Z9, Z0, Z0
	ADDQ $64, SI
	DECQ BX
	JNZ loop

tail:
	ANDQ $15, CX
	JZ done
	MOVL $-1, AX
	BZHIL CX, AX, AX
	KMOVW AX, K2
	VMOVUPS.Z (SI), K2, Z1
	EXPSTEP
	VMOVUPS Z9, K2, (SI)
	VADDPS Z9, Z0, K2, Z0

done:
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF32X4 $1, Y0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VADDSS X1, X0, X0
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET
