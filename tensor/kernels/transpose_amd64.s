//go:build amd64

#include "textflag.h"

// func transpose8AVX2(dst *float32, n int, src *float32, rows *int, nblocks int)
//
// For each block b of eight rows (element offsets rows[8b … 8b+7] into
// src), loads the eight 8-float rows r0 … r7 and stores column x of the
// block, (r0[x] … r7[x]), at dst + x·n + 8b. The transpose is the usual
// three stages: VUNPCKL/HPS interleave row pairs, VSHUFPS gathers four
// rows' elements per 128-bit lane, VPERM2F128 joins the lanes.
TEXT ·transpose8AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ n+8(FP), DX
	SHLQ $2, DX // the column stride in bytes
	MOVQ src+16(FP), SI
	MOVQ rows+24(FP), BX
	MOVQ nblocks+32(FP), CX
	TESTQ CX, CX
	JZ done

block:
	// r0 … r7 into Y0 … Y7.
	MOVQ 0(BX), AX
	VMOVUPS (SI)(AX*4), Y0
	MOVQ 8(BX), AX
	VMOVUPS (SI)(AX*4), Y1
	MOVQ 16(BX), AX
	VMOVUPS (SI)(AX*4), Y2
	MOVQ 24(BX), AX
	VMOVUPS (SI)(AX*4), Y3
	MOVQ 32(BX), AX
	VMOVUPS (SI)(AX*4), Y4
	MOVQ 40(BX), AX
	VMOVUPS (SI)(AX*4), Y5
	MOVQ 48(BX), AX
	VMOVUPS (SI)(AX*4), Y6
	MOVQ 56(BX), AX
	VMOVUPS (SI)(AX*4), Y7

	// t: pairs interleaved.
	VUNPCKLPS Y1, Y0, Y8  // r0[0] r1[0] r0[1] r1[1] | r0[4] r1[4] r0[5] r1[5]
	VUNPCKHPS Y1, Y0, Y9  // r0[2] r1[2] r0[3] r1[3] | r0[6] …
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15

	// u: four rows' element x (lo lane) and x+4 (hi lane).
	VSHUFPS $0x44, Y10, Y8, Y0  // x = 0, 4 of r0 … r3
	VSHUFPS $0xEE, Y10, Y8, Y1  // x = 1, 5
	VSHUFPS $0x44, Y11, Y9, Y2  // x = 2, 6
	VSHUFPS $0xEE, Y11, Y9, Y3  // x = 3, 7
	VSHUFPS $0x44, Y14, Y12, Y4 // the same for r4 … r7
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7

	// columns: rows 0-3 from u0-3, rows 4-7 from u4-7.
	VPERM2F128 $0x20, Y4, Y0, Y8  // x = 0
	VPERM2F128 $0x20, Y5, Y1, Y9  // x = 1
	VPERM2F128 $0x20, Y6, Y2, Y10 // x = 2
	VPERM2F128 $0x20, Y7, Y3, Y11 // x = 3
	VPERM2F128 $0x31, Y4, Y0, Y12 // x = 4
	VPERM2F128 $0x31, Y5, Y1, Y13 // x = 5
	VPERM2F128 $0x31, Y6, Y2, Y14 // x = 6
	VPERM2F128 $0x31, Y7, Y3, Y15 // x = 7

	MOVQ DI, R8
	VMOVUPS Y8, (R8)
	ADDQ DX, R8
	VMOVUPS Y9, (R8)
	ADDQ DX, R8
	VMOVUPS Y10, (R8)
	ADDQ DX, R8
	VMOVUPS Y11, (R8)
	ADDQ DX, R8
	VMOVUPS Y12, (R8)
	ADDQ DX, R8
	VMOVUPS Y13, (R8)
	ADDQ DX, R8
	VMOVUPS Y14, (R8)
	ADDQ DX, R8
	VMOVUPS Y15, (R8)

	ADDQ $32, DI // the next eight columns of dst
	ADDQ $64, BX // the next eight row offsets
	DECQ CX
	JNZ block

done:
	VZEROUPPER
	RET
