//go:build amd64

#include "textflag.h"

// func swigluAVX512(hb, hb2 *float32, n int, c *swigluConsts)
//
// SwiGLU on n values (a multiple of 8), 8 per step in float64 lanes: the
// same operations as swigluGeneric, in its order, with no fused
// multiply-add, so every result is bit-identical to the Go loop.
TEXT ·swigluAVX512(SB), NOSPLIT, $0-32
	MOVQ hb+0(FP), SI
	MOVQ hb2+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ c+24(FP), DX
	SHRQ $3, CX
	JZ done
	VBROADCASTSD 0(DX), Z20  // 64/ln2
	VBROADCASTSD 8(DX), Z21  // hi
	VBROADCASTSD 16(DX), Z22 // lo
	VBROADCASTSD 24(DX), Z23 // magic
	VBROADCASTSD 32(DX), Z24 // 1/6
	VBROADCASTSD 40(DX), Z25 // 1/24
	VBROADCASTSD 48(DX), Z26 // 0.5
	LEAQ 64(DX), R8          // 2^(j/64) table
	MOVQ $0x8000000000000000, AX
	VPBROADCASTQ AX, Z27     // float64 sign bit
	MOVQ $63, AX
	VPBROADCASTQ AX, Z28
	MOVL $0x3f800000, AX
	VPBROADCASTD AX, Y29     // 1.0f
	MOVL $0x41900000, AX
	VPBROADCASTD AX, Y30     // 18.0f
	MOVL $0xc2b20000, AX
	VPBROADCASTD AX, Y31     // -89.0f
	VPXORD Y19, Y19, Y19     // 0.0f

loop:
	VMOVUPS (SI), Y0         // z
	VCVTPS2PD Y0, Z1
	VPXORQ Z27, Z1, Z1       // x = -z
	VMULPD Z20, Z1, Z2
	VADDPD Z23, Z2, Z2       // t = x·inv + magic
	VSUBPD Z23, Z2, Z3       // kf = t − magic
	VMULPD Z21, Z3, Z4
	VSUBPD Z4, Z1, Z4        // x − kf·hi
	VMULPD Z22, Z3, Z5
	VSUBPD Z5, Z4, Z4        // r = x − kf·hi − kf·lo
	VPSUBQ Z23, Z2, Z6       // k = bits(t) − bits(magic)
	VPANDQ Z28, Z6, Z7       // k & 63
	KXNORW K1, K1, K1
	VGATHERQPD (R8)(Z7*8), K1, Z8 // 2^((k&63)/64)
	VPSRAQ $6, Z6, Z6
	VPSLLQ $52, Z6, Z6
	VPADDQ Z6, Z8, Z8        // sc
	VMULPD Z25, Z4, Z9       // r·(1/24)
	VADDPD Z24, Z9, Z9       // 1/6 + …
	VMULPD Z9, Z4, Z9        // r·(…)
	VADDPD Z26, Z9, Z9       // 0.5 + …
	VMULPD Z4, Z4, Z10       // r·r
	VMULPD Z9, Z10, Z9       // r·r·(…)
	VADDPD Z9, Z4, Z9        // r + …
	VMULPD Z9, Z8, Z9        // sc·(…)
	VADDPD Z9, Z8, Z9        // e = sc + sc·(…)
	VCVTPD2PS Z9, Y9         // float32(e)
	VADDPS Y9, Y29, Y9       // 1 + e
	VDIVPS Y9, Y29, Y9       // 1 / (1 + e)
	VMULPS Y9, Y0, Y9        // s = z·(…)
	VCMPPS $0x1e, Y30, Y0, K2 // z > 18: s = z
	VMOVAPS Y0, K2, Y9
	VCMPPS $0x11, Y31, Y0, K3 // z < −89: s = z·0
	VMULPS Y19, Y0, Y10
	VMOVAPS Y10, K3, Y9
	VMULPS (DI), Y9, Y9      // s·hb2
	VMOVUPS Y9, (SI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ loop

done:
	VZEROUPPER
	RET
