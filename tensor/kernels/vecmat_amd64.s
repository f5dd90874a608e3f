//go:build amd64

#include "textflag.h"

// func vecMatAVX512(dst, a *float32, d int, x *float32, stride, n int)
//
// dst[0:n] = Σ_{r<d} a[r]·x[r·stride : r·stride+n], n a multiple of 16,
// d ≥ 1. Each lane's sum starts at zero and takes one VFMADD231PS per row
// in row order, the operation axpyAVX512 applies, so the result equals d
// Axpy calls into a cleared dst bit for bit. Four 16-column chunks run
// side by side (four independent FMA chains hide the FMA latency), then
// single chunks.
TEXT ·vecMatAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ d+16(FP), R8
	MOVQ x+24(FP), BX
	MOVQ stride+32(FP), R9
	SHLQ $2, R9 // the row stride in bytes
	MOVQ n+40(FP), CX
	SHRQ $4, CX // 16-column chunks left

quad:
	CMPQ CX, $4
	JLT single
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	MOVQ BX, R10 // row r of this chunk group
	MOVQ SI, R11 // a[r]
	MOVQ R8, DX
quadrow:
	VBROADCASTSS (R11), Z0
	VFMADD231PS (R10), Z0, Z1
	VFMADD231PS 64(R10), Z0, Z2
	VFMADD231PS 128(R10), Z0, Z3
	VFMADD231PS 192(R10), Z0, Z4
	ADDQ $4, R11
	ADDQ R9, R10
	DECQ DX
	JNZ quadrow
	VMOVUPS Z1, (DI)
	VMOVUPS Z2, 64(DI)
	VMOVUPS Z3, 128(DI)
	VMOVUPS Z4, 192(DI)
	ADDQ $256, DI
	ADDQ $256, BX
	SUBQ $4, CX
	JMP quad

single:
	TESTQ CX, CX
	JZ done
	VPXORD Z1, Z1, Z1
	MOVQ BX, R10
	MOVQ SI, R11
	MOVQ R8, DX
singlerow:
	VBROADCASTSS (R11), Z0
	VFMADD231PS (R10), Z0, Z1
	ADDQ $4, R11
	ADDQ R9, R10
	DECQ DX
	JNZ singlerow
	VMOVUPS Z1, (DI)
	ADDQ $64, DI
	ADDQ $64, BX
	DECQ CX
	JMP single

done:
	VZEROUPPER
	RET
