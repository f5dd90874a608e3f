//go:build amd64

#include "textflag.h"
#include "ggml_amd64.h"

// The Q4_1 and Q5_1 tiles (see ggml_tile.go and ggml_q1tile_amd64.go): the
// Q4_0 and Q5_0 VNNI tiles' structure (a row pair's codes in one Z
// register, row 2p in the low half, each token's quants broadcast to
// both halves), with the "_1" row kernels' arithmetic per output (see
// ggml_q5_amd64.s): lanes = VPDPBUSD of the unsigned codes and the
// signed quants from zero (the same int32 lanes as DOT_VNNI), acc =
// fma(d_w·d_x, float(lanes), acc) per block, summs = fma(m_w, s_x, summs)
// per block, and the output hsum_float_8(acc) + summs, so every output
// has the row kernel's bits. The four rows' summs of a token sit in the
// four lanes of one X register (X8 + token), fed by one
// VFMADD231PS.BCST per block against the rows' m (X12): lane by lane the
// scalar VFMADD231SS of the row kernel.
//
// Registers: Z0-Z7 the accumulators (token t, row pair p: Z(2t+p)), X8-X11
// the summs, X12 the rows' m, Z16/Z17 the row pairs' codes, Z18/Z19 their
// d_w, Z20-Z25 temporaries, Z28 = 0x10 bytes (Q5_1), Z30 = 0x0f bytes.
// Q8T_SETUP's pointers, with R12 the tokens' s (xsum, ds apart like the
// scales) instead of the corrections.

// Q1T_CODES4 sets WZ to a Q4_1 row pair's codes (the blocks at b0, b1:
// qs at 4) as Q4T_ROWPAIR does, and SZ to their d_w. Uses Z21.
#define Q1T_CODES4(b0, b1, WY, WZ, SY, SZ) \
	VMOVDQU32 4 b0, X21; \
	VINSERTI32X4 $1, 4 b1, Y21, Y21; \
	VPSRLW $4, Y21, WY; \
	VINSERTI64X4 $1, WY, Z21, WZ; \
	VPANDD Z30, WZ, WZ; \
	VSHUFI64X2 $0xd8, WZ, WZ, WZ; \
	VPBROADCASTW b0, SY; \
	VPBROADCASTW b1, K1, SY; \
	VCVTPH2PS SY, SZ

// Q1T_CODES5 is Q1T_CODES4 for Q5_1 (qh at 4, qs at 8): the nibbles,
// plus 0x10 where bit j of the row's qh is set (Q5T_ROWPAIR's mask), the
// row kernel's nibbles | (bit & 0x10). Uses Z21, K2, K3.
#define Q1T_CODES5(b0, b1, WY, WZ, SY, SZ) \
	VMOVDQU32 8 b0, X21; \
	VINSERTI32X4 $1, 8 b1, Y21, Y21; \
	VPSRLW $4, Y21, WY; \
	VINSERTI64X4 $1, WY, Z21, WZ; \
	VPANDD Z30, WZ, WZ; \
	VSHUFI64X2 $0xd8, WZ, WZ, WZ; \
	KMOVD 4 b0, K2; \
	KMOVD 4 b1, K3; \
	KUNPCKDQ K2, K3, K2; \
	VPADDB Z28, WZ, K2, WZ; \
	VPBROADCASTW b0, SY; \
	VPBROADCASTW b1, K1, SY; \
	VCVTPH2PS SY, SZ

// Q1T_MINS sets X12 to the four rows' m (fp16 at 2 of each block).
#define Q1T_MINS \
	MOVWLZX 2(SI), DX; \
	VMOVD DX, X12; \
	VPINSRW $1, 2(SI)(BX*1), X12, X12; \
	VPINSRW $2, 2(SI)(BX*2), X12, X12; \
	VPINSRW $3, 2(SI)(R8*1), X12, X12; \
	VCVTPH2PS X12, X12

// Q1T_TOKEN is one token against both row pairs: x its 32 quants
// (broadcast to both halves), s its block's s, d its scale; A0 and A1 the
// row pairs' accumulators, S the token's summs.
#define Q1T_TOKEN(x, s, d, A0, A1, S) \
	VBROADCASTI64X4 x, Z20; \
	VPXORD Z22, Z22, Z22; \
	VPXORD Z24, Z24, Z24; \
	VPDPBUSD Z20, Z16, Z22; \
	VPDPBUSD Z20, Z17, Z24; \
	VCVTDQ2PS Z22, Z22; \
	VCVTDQ2PS Z24, Z24; \
	VMULPS.BCST d, Z18, Z23; \
	VMULPS.BCST d, Z19, Z25; \
	VFMADD231PS Z22, Z23, A0; \
	VFMADD231PS Z24, Z25, A1; \
	VFMADD231PS.BCST s, X12, S

// Q1T_HSUM stores hsum_float_8 of the 8 lanes at LO (the low half of
// accumulator half H) plus summs lane S into o, as Q81R4STORE does. Uses
// X26, X27.
#define Q1T_HSUM(H, LO, S, o) \
	VEXTRACTF32X4 $1, H, X26; \
	VADDPS LO, X26, X26; \
	VMOVHLPS X26, X26, X27; \
	VADDPS X27, X26, X26; \
	VMOVSHDUP X26, X27; \
	VADDSS X27, X26, X26; \
	VADDSS S, X26, X26; \
	VMOVSS X26, o

// Q1T_STORE stores token t's four outputs (accumulators A0 = Z(2t), A1 =
// Z(2t+1), summs S) at DI: rows 0-3 at 0, 4, 8, 12. Uses Y28, X26,
// X27, X29-X31.
#define Q1T_STORE(A0Z, A0Y, A0X, A1Z, A1Y, A1X, S) \
	VMOVSHDUP S, X29; \
	VMOVHLPS S, S, X30; \
	VPERMILPS $3, S, X31; \
	Q1T_HSUM(A0Y, A0X, S, 0(DI)); \
	VEXTRACTF64X4 $1, A0Z, Y28; \
	Q1T_HSUM(Y28, X28, X29, 4(DI)); \
	Q1T_HSUM(A1Y, A1X, X30, 8(DI)); \
	VEXTRACTF64X4 $1, A1Z, Y28; \
	Q1T_HSUM(Y28, X28, X31, 12(DI))

// func ggmlQ4_1Tile4x4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-3 of Q4_1 blocks.
TEXT ·ggmlQ4_1Tile4x4VNNI(SB), NOSPLIT, $0-80
	Q8T_SETUP
	LEAQ (SI)(BX*4), R11
	MOVL $0x0f0f0f0f, DX
	VPBROADCASTD DX, Z30
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VXORPS X8, X8, X8
	VXORPS X9, X9, X9
	VXORPS X10, X10, X10
	VXORPS X11, X11, X11
q41t4_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	Q1T_CODES4((SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q1T_CODES4((SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q1T_MINS
	Q1T_TOKEN((DI), (R12), (R14), Z0, Z1, X8)
	Q1T_TOKEN((DI)(R9*1), (R12)(R15*1), (R14)(R15*1), Z2, Z3, X9)
	Q1T_TOKEN((DI)(R9*2), (R12)(R15*2), (R14)(R15*2), Z4, Z5, X10)
	Q1T_TOKEN((DI)(R10*1), (R12)(AX*1), (R14)(AX*1), Z6, Z7, X11)
	ADDQ $20, SI
	ADDQ $20, R11
	ADDQ $32, DI
	ADDQ $4, R12
	ADDQ $4, R14
	DECQ CX
	JNZ q41t4_blk
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	Q1T_STORE(Z0, Y0, X0, Z1, Y1, X1, X8)
	ADDQ R9, DI
	Q1T_STORE(Z2, Y2, X2, Z3, Y3, X3, X9)
	ADDQ R9, DI
	Q1T_STORE(Z4, Y4, X4, Z5, Y5, X5, X10)
	ADDQ R9, DI
	Q1T_STORE(Z6, Y6, X6, Z7, Y7, X7, X11)
	VZEROUPPER
	RET

// func ggmlQ4_1Tile4x3VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-2 of Q4_1 blocks.
TEXT ·ggmlQ4_1Tile4x3VNNI(SB), NOSPLIT, $0-80
	Q8T_SETUP
	LEAQ (SI)(BX*4), R11
	MOVL $0x0f0f0f0f, DX
	VPBROADCASTD DX, Z30
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VXORPS X8, X8, X8
	VXORPS X9, X9, X9
	VXORPS X10, X10, X10
q41t3_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	Q1T_CODES4((SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q1T_CODES4((SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q1T_MINS
	Q1T_TOKEN((DI), (R12), (R14), Z0, Z1, X8)
	Q1T_TOKEN((DI)(R9*1), (R12)(R15*1), (R14)(R15*1), Z2, Z3, X9)
	Q1T_TOKEN((DI)(R9*2), (R12)(R15*2), (R14)(R15*2), Z4, Z5, X10)
	ADDQ $20, SI
	ADDQ $20, R11
	ADDQ $32, DI
	ADDQ $4, R12
	ADDQ $4, R14
	DECQ CX
	JNZ q41t3_blk
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	Q1T_STORE(Z0, Y0, X0, Z1, Y1, X1, X8)
	ADDQ R9, DI
	Q1T_STORE(Z2, Y2, X2, Z3, Y3, X3, X9)
	ADDQ R9, DI
	Q1T_STORE(Z4, Y4, X4, Z5, Y5, X5, X10)
	VZEROUPPER
	RET

// func ggmlQ4_1Tile4x2VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-1 of Q4_1 blocks.
TEXT ·ggmlQ4_1Tile4x2VNNI(SB), NOSPLIT, $0-80
	Q8T_SETUP
	LEAQ (SI)(BX*4), R11
	MOVL $0x0f0f0f0f, DX
	VPBROADCASTD DX, Z30
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VXORPS X8, X8, X8
	VXORPS X9, X9, X9
q41t2_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	Q1T_CODES4((SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q1T_CODES4((SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q1T_MINS
	Q1T_TOKEN((DI), (R12), (R14), Z0, Z1, X8)
	Q1T_TOKEN((DI)(R9*1), (R12)(R15*1), (R14)(R15*1), Z2, Z3, X9)
	ADDQ $20, SI
	ADDQ $20, R11
	ADDQ $32, DI
	ADDQ $4, R12
	ADDQ $4, R14
	DECQ CX
	JNZ q41t2_blk
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	Q1T_STORE(Z0, Y0, X0, Z1, Y1, X1, X8)
	ADDQ R9, DI
	Q1T_STORE(Z2, Y2, X2, Z3, Y3, X3, X9)
	VZEROUPPER
	RET

// func ggmlQ5_1Tile4x4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-3 of Q5_1 blocks.
TEXT ·ggmlQ5_1Tile4x4VNNI(SB), NOSPLIT, $0-80
	Q8T_SETUP
	LEAQ (SI)(BX*4), R11
	MOVL $0x0f0f0f0f, DX
	VPBROADCASTD DX, Z30
	MOVL $0x10101010, DX
	VPBROADCASTD DX, Z28
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VXORPS X8, X8, X8
	VXORPS X9, X9, X9
	VXORPS X10, X10, X10
	VXORPS X11, X11, X11
q51t4_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	Q1T_CODES5((SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q1T_CODES5((SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q1T_MINS
	Q1T_TOKEN((DI), (R12), (R14), Z0, Z1, X8)
	Q1T_TOKEN((DI)(R9*1), (R12)(R15*1), (R14)(R15*1), Z2, Z3, X9)
	Q1T_TOKEN((DI)(R9*2), (R12)(R15*2), (R14)(R15*2), Z4, Z5, X10)
	Q1T_TOKEN((DI)(R10*1), (R12)(AX*1), (R14)(AX*1), Z6, Z7, X11)
	ADDQ $24, SI
	ADDQ $24, R11
	ADDQ $32, DI
	ADDQ $4, R12
	ADDQ $4, R14
	DECQ CX
	JNZ q51t4_blk
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	Q1T_STORE(Z0, Y0, X0, Z1, Y1, X1, X8)
	ADDQ R9, DI
	Q1T_STORE(Z2, Y2, X2, Z3, Y3, X3, X9)
	ADDQ R9, DI
	Q1T_STORE(Z4, Y4, X4, Z5, Y5, X5, X10)
	ADDQ R9, DI
	Q1T_STORE(Z6, Y6, X6, Z7, Y7, X7, X11)
	VZEROUPPER
	RET

// func ggmlQ5_1Tile4x3VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-2 of Q5_1 blocks.
TEXT ·ggmlQ5_1Tile4x3VNNI(SB), NOSPLIT, $0-80
	Q8T_SETUP
	LEAQ (SI)(BX*4), R11
	MOVL $0x0f0f0f0f, DX
	VPBROADCASTD DX, Z30
	MOVL $0x10101010, DX
	VPBROADCASTD DX, Z28
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VXORPS X8, X8, X8
	VXORPS X9, X9, X9
	VXORPS X10, X10, X10
q51t3_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	Q1T_CODES5((SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q1T_CODES5((SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q1T_MINS
	Q1T_TOKEN((DI), (R12), (R14), Z0, Z1, X8)
	Q1T_TOKEN((DI)(R9*1), (R12)(R15*1), (R14)(R15*1), Z2, Z3, X9)
	Q1T_TOKEN((DI)(R9*2), (R12)(R15*2), (R14)(R15*2), Z4, Z5, X10)
	ADDQ $24, SI
	ADDQ $24, R11
	ADDQ $32, DI
	ADDQ $4, R12
	ADDQ $4, R14
	DECQ CX
	JNZ q51t3_blk
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	Q1T_STORE(Z0, Y0, X0, Z1, Y1, X1, X8)
	ADDQ R9, DI
	Q1T_STORE(Z2, Y2, X2, Z3, Y3, X3, X9)
	ADDQ R9, DI
	Q1T_STORE(Z4, Y4, X4, Z5, Y5, X5, X10)
	VZEROUPPER
	RET

// func ggmlQ5_1Tile4x2VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-1 of Q5_1 blocks.
TEXT ·ggmlQ5_1Tile4x2VNNI(SB), NOSPLIT, $0-80
	Q8T_SETUP
	LEAQ (SI)(BX*4), R11
	MOVL $0x0f0f0f0f, DX
	VPBROADCASTD DX, Z30
	MOVL $0x10101010, DX
	VPBROADCASTD DX, Z28
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VXORPS X8, X8, X8
	VXORPS X9, X9, X9
q51t2_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	Q1T_CODES5((SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q1T_CODES5((SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q1T_MINS
	Q1T_TOKEN((DI), (R12), (R14), Z0, Z1, X8)
	Q1T_TOKEN((DI)(R9*1), (R12)(R15*1), (R14)(R15*1), Z2, Z3, X9)
	ADDQ $24, SI
	ADDQ $24, R11
	ADDQ $32, DI
	ADDQ $4, R12
	ADDQ $4, R14
	DECQ CX
	JNZ q51t2_blk
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	Q1T_STORE(Z0, Y0, X0, Z1, Y1, X1, X8)
	ADDQ R9, DI
	Q1T_STORE(Z2, Y2, X2, Z3, Y3, X3, X9)
	VZEROUPPER
	RET
