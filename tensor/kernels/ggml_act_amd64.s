//go:build amd64

#include "textflag.h"

// The Q8_0 activation quantization of ggml_act.go in AVX2 (hand-written,
// like ggml_amd64.s): ggml's quantize_row_q8_0 AVX2 path, block by block,
// plus the VNNI tiles' lane corrections. See ggmlQuantQ8_0AVX2 in
// ggml_act_amd64.go for the contract.

// ggmlQ8Perm undoes the lane interleave of VPACKSSDW + VPACKSSWB
// (_mm256_permutevar8x32_epi32 with 0, 4, 1, 5, 2, 6, 3, 7).
DATA ggmlQ8Perm<>+0(SB)/8, $0x0000000400000000
DATA ggmlQ8Perm<>+8(SB)/8, $0x0000000500000001
DATA ggmlQ8Perm<>+16(SB)/8, $0x0000000600000002
DATA ggmlQ8Perm<>+24(SB)/8, $0x0000000700000003
GLOBL ggmlQ8Perm<>(SB), RODATA|NOPTR, $32

// func ggmlQuantQ8_0AVX2(x *float32, q *int8, d *float32, nb int, xc *int32, xc8 *int32)
TEXT ·ggmlQuantQ8_0AVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	MOVQ xc+32(FP), R8
	MOVQ xc8+40(FP), R9
	MOVL $0x7fffffff, AX // |x| mask
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x42fe0000, AX // 127.0
	VMOVD AX, X14
	MOVL $0x01010101, AX // int8 ones
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x00010001, AX // int16 ones
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	VMOVDQU ggmlQ8Perm<>(SB), Y11
	VPXOR Y10, Y10, Y10
	TESTQ CX, CX
	JZ q8q_done

q8q_blk:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3

	// amax = max|x| on the bit patterns (NaN and Inf above every finite).
	VPAND Y15, Y0, Y4
	VPAND Y15, Y1, Y5
	VPMAXUD Y5, Y4, Y4
	VPAND Y15, Y2, Y5
	VPMAXUD Y5, Y4, Y4
	VPAND Y15, Y3, Y5
	VPMAXUD Y5, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPMAXUD X5, X4, X4
	VPSHUFD $0x4e, X4, X5
	VPMAXUD X5, X4, X4
	VPSHUFD $0xb1, X4, X5
	VPMAXUD X5, X4, X4
	VMOVD X4, AX
	CMPL AX, $0x7f800000
	JAE q8q_nonfinite

	// d = fp16(amax/127) widened back; id = 127/amax, or 0 when amax is 0.
	VDIVSS X14, X4, X5
	VCVTPS2PH $0, X5, X5
	VCVTPH2PS X5, X5
	VMOVSS X5, (DX)
	VXORPS X6, X6, X6
	TESTL AX, AX
	JZ q8q_scale
	VDIVSS X4, X14, X6

q8q_scale:
	// q = round(x·id), ties to even (MXCSR's default rounding).
	VBROADCASTSS X6, Y6
	VMULPS Y6, Y0, Y0
	VMULPS Y6, Y1, Y1
	VMULPS Y6, Y2, Y2
	VMULPS Y6, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3

q8q_pack:
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y11, Y0
	VMOVDQU Y0, (DI)
	TESTQ R8, R8
	JZ q8q_next

	// s = sums of 4 consecutive q; xc = −128·s, xc8 = −8·s.
	VPMADDUBSW Y0, Y13, Y1
	VPMADDWD Y12, Y1, Y1
	VPSLLD $7, Y1, Y2
	VPSUBD Y2, Y10, Y2
	VMOVDQU Y2, (R8)
	VPSLLD $3, Y1, Y2
	VPSUBD Y2, Y10, Y2
	VMOVDQU Y2, (R9)
	ADDQ $32, R8
	ADDQ $32, R9

q8q_next:
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ q8q_blk

q8q_done:
	VZEROUPPER
	RET

q8q_nonfinite:
	// A block holding NaN or ±Inf: d = NaN, q = 0.
	MOVL $0x7fc00000, BX
	MOVL BX, (DX)
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	JMP q8q_pack
