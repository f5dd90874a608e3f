//go:build amd64

#include "textflag.h"

// func dotRows8TAVX512(out *float32, ldo int, q *float32, n int, kT *float32, ldk int, nblk int)
//
// Scores of n query rows of 8 floats (q[r·8 : r·8+8]) against nblk·16
// keys staged transposed, kT[d·ldk + j] = k_j[d], into out[r·ldo + j].
// Sixteen keys per step, each lane one key: x_d = q[d]·k[d] (VMULPS, one
// rounding each), then ((x0+x4)+(x2+x6)) + ((x1+x5)+(x3+x7)): the adds,
// operand for operand, of dotRows8wAVX512's horizontal sum of one key, so
// every score has its bits.
TEXT ·dotRows8TAVX512(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ ldo+8(FP), R9
	SHLQ $2, R9
	MOVQ q+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ kT+32(FP), AX
	MOVQ ldk+40(FP), R10
	SHLQ $2, R10
	MOVQ nblk+48(FP), R11
	TESTQ CX, CX
	JZ dotRows8T_done
	TESTQ R11, R11
	JZ dotRows8T_done
	LEAQ (R10)(R10*2), R12 // 3·ldk bytes

dotRows8T_row:
	VBROADCASTSS 0(SI), Z16
	VBROADCASTSS 4(SI), Z17
	VBROADCASTSS 8(SI), Z18
	VBROADCASTSS 12(SI), Z19
	VBROADCASTSS 16(SI), Z20
	VBROADCASTSS 20(SI), Z21
	VBROADCASTSS 24(SI), Z22
	VBROADCASTSS 28(SI), Z23
	MOVQ AX, BX              // kT rows 0-3 at this block
	LEAQ (AX)(R10*4), R13    // kT rows 4-7
	MOVQ DI, R8
	MOVQ R11, DX

dotRows8T_blk:
	VMULPS (BX), Z16, Z0
	VMULPS (BX)(R10*1), Z17, Z1
	VMULPS (BX)(R10*2), Z18, Z2
	VMULPS (BX)(R12*1), Z19, Z3
	VMULPS (R13), Z20, Z4
	VMULPS (R13)(R10*1), Z21, Z5
	VMULPS (R13)(R10*2), Z22, Z6
	VMULPS (R13)(R12*1), Z23, Z7
	VADDPS Z4, Z0, Z0
	VADDPS Z6, Z2, Z2
	VADDPS Z5, Z1, Z1
	VADDPS Z7, Z3, Z3
	VADDPS Z2, Z0, Z0
	VADDPS Z3, Z1, Z1
	VADDPS Z1, Z0, Z0
	VMOVUPS Z0, (R8)
	ADDQ $64, BX
	ADDQ $64, R13
	ADDQ $64, R8
	DECQ DX
	JNZ dotRows8T_blk

	ADDQ $32, SI
	ADDQ R9, DI
	DECQ CX
	JNZ dotRows8T_row

dotRows8T_done:
	VZEROUPPER
	RET

// func axpyRows8x4AVX512(acc, p *float32, ldp int, base *float32, rows *int, n int)
//
// axpyRows8wAVX512 for four accumulators at once (acc[i·8 : i·8+8] with
// weights p[i·ldp + j], i < 4): each key's row is loaded once and each
// accumulator gets its fused multiply-add, key by key in order, so each
// gets the bits of its own axpyRows8wAVX512 call; the four chains hide
// one another's FMA latency.
TEXT ·axpyRows8x4AVX512(SB), NOSPLIT, $0-48
	MOVQ acc+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ ldp+16(FP), R9
	SHLQ $2, R9
	MOVQ base+24(FP), BX
	MOVQ rows+32(FP), R8
	MOVQ n+40(FP), CX
	LEAQ (R9)(R9*2), R10 // 3·ldp bytes
	VMOVUPS 0(DI), Y16
	VMOVUPS 32(DI), Y17
	VMOVUPS 64(DI), Y18
	VMOVUPS 96(DI), Y19
	TESTQ CX, CX
	JZ axpyRows8x4_done

axpyRows8x4_key:
	MOVQ (R8), AX
	VMOVUPS (BX)(AX*4), Y0
	VBROADCASTSS (SI), Y1
	VBROADCASTSS (SI)(R9*1), Y2
	VBROADCASTSS (SI)(R9*2), Y3
	VBROADCASTSS (SI)(R10*1), Y4
	VFMADD231PS Y0, Y1, Y16
	VFMADD231PS Y0, Y2, Y17
	VFMADD231PS Y0, Y3, Y18
	VFMADD231PS Y0, Y4, Y19
	ADDQ $4, SI
	ADDQ $8, R8
	DECQ CX
	JNZ axpyRows8x4_key

axpyRows8x4_done:
	VMOVUPS Y16, 0(DI)
	VMOVUPS Y17, 32(DI)
	VMOVUPS Y18, 64(DI)
	VMOVUPS Y19, 96(DI)
	VZEROUPPER
	RET
