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

// Q1T_LANES is Q1T_TOKEN without the summs (the 8-token tiles add
// theirs four tokens at a time, Q1T_SUMMS4).
#define Q1T_LANES(x, d, A0, A1) \
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
	VFMADD231PS Z24, Z25, A1

// Q1T_MINS4 sets Z26 to the four rows' m in each of its four 128-bit
// lanes, without a general register.
#define Q1T_MINS4 \
	VPINSRW $0, 2(SI), X26, X26; \
	VPINSRW $1, 2(SI)(BX*1), X26, X26; \
	VPINSRW $2, 2(SI)(BX*2), X26, X26; \
	VPINSRW $3, 2(SI)(R8*1), X26, X26; \
	VCVTPH2PS X26, X26; \
	VSHUFF32X4 $0, Z26, Z26, Z26

// Q1T_SUMMS4 adds m·s of four tokens (s at b, b+R15, b+2·R15, b+AX) to
// S, token t's four rows in lanes 4t … 4t+3. Uses Z31, X21.
#define Q1T_SUMMS4(b, S) \
	VBROADCASTSS b, X31; \
	VBROADCASTSS b(R15*1), X21; \
	VINSERTF32X4 $1, X21, Z31, Z31; \
	VBROADCASTSS b(R15*2), X21; \
	VINSERTF32X4 $2, X21, Z31, Z31; \
	VBROADCASTSS b(AX*1), X21; \
	VINSERTF32X4 $3, X21, Z31, Z31; \
	VFMADD231PS Z31, Z26, S

// Q1T_HSUM stores hsum_float_8 of the 8 lanes at LO (the low half of
// accumulator half H) plus summs lane S into o, as Q81R4STORE does. Uses
// X24, X25.
#define Q1T_HSUM(H, LO, S, o) \
	VEXTRACTF32X4 $1, H, X24; \
	VADDPS LO, X24, X24; \
	VMOVHLPS X24, X24, X25; \
	VADDPS X25, X24, X24; \
	VMOVSHDUP X24, X25; \
	VADDSS X25, X24, X24; \
	VADDSS S, X24, X24; \
	VMOVSS X24, o

// Q1T_STORE stores token t's four outputs (accumulators A0 = Z(2t), A1 =
// Z(2t+1), summs S) at DI: rows 0-3 at 0, 4, 8, 12. Uses X21-X25,
// Y28.
#define Q1T_STORE(A0Z, A0Y, A0X, A1Z, A1Y, A1X, S) \
	VMOVSHDUP S, X21; \
	VMOVHLPS S, S, X22; \
	VPERMILPS $3, S, X23; \
	Q1T_HSUM(A0Y, A0X, S, 0(DI)); \
	VEXTRACTF64X4 $1, A0Z, Y28; \
	Q1T_HSUM(Y28, X28, X21, 4(DI)); \
	Q1T_HSUM(A1Y, A1X, X22, 8(DI)); \
	VEXTRACTF64X4 $1, A1Z, Y28; \
	Q1T_HSUM(Y28, X28, X23, 12(DI))

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

// func ggmlQ4_1Tile4x8VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-7 of Q4_1 blocks: accumulators Z0-Z15 (token t,
// row pair p: Z(2t+p)); tokens 4-7 address from R11 (quants), R13 (sums)
// and DX (scales); the summs of tokens 0-3 in Z27 and of 4-7 in Z29,
// token t's four rows in lanes 4(t mod 4) on. As the Q8_0 4×8 tile, it
// prefetches two of the next four rows.
TEXT ·ggmlQ4_1Tile4x8VNNI(SB), NOSPLIT, $8-80
	Q8T_SETUP
	// CX, the block count, becomes the pointer of the next tile's row 5
	// (as in ggmlQ8_0Tile4x8VNNI): all four rows are prefetched.
	IMULQ $20, CX
	ADDQ SI, CX
	MOVQ CX, end-8(SP)
	LEAQ (SI)(BX*4), CX
	ADDQ BX, CX
	MOVL $0x0f0f0f0f, DX
	VPBROADCASTD DX, Z30
	LEAQ (DI)(R9*4), R11
	LEAQ (R12)(R15*4), R13
	LEAQ (R14)(R15*4), DX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z27, Z27, Z27
	VPXORD Z29, Z29, Z29
q41t8_blk:
	PREFETCHT0 (SI)(BX*4)
	PREFETCHT0 (CX)
	PREFETCHT0 (SI)(R8*2)
	PREFETCHT0 (CX)(BX*2)
	Q1T_CODES4((SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q1T_CODES4((SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q1T_MINS4
	Q1T_LANES((DI), (R14), Z0, Z1)
	Q1T_LANES((DI)(R9*1), (R14)(R15*1), Z2, Z3)
	Q1T_LANES((DI)(R9*2), (R14)(R15*2), Z4, Z5)
	Q1T_LANES((DI)(R10*1), (R14)(AX*1), Z6, Z7)
	Q1T_LANES((R11), (DX), Z8, Z9)
	Q1T_LANES((R11)(R9*1), (DX)(R15*1), Z10, Z11)
	Q1T_LANES((R11)(R9*2), (DX)(R15*2), Z12, Z13)
	Q1T_LANES((R11)(R10*1), (DX)(AX*1), Z14, Z15)
	Q1T_SUMMS4((R12), Z27)
	Q1T_SUMMS4((R13), Z29)
	ADDQ $20, SI
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $4, R12
	ADDQ $4, R13
	ADDQ $4, R14
	ADDQ $4, DX
	ADDQ $20, CX
	CMPQ SI, end-8(SP)
	JNE q41t8_blk
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	VEXTRACTF32X4 $0, Z27, X20
	Q1T_STORE(Z0, Y0, X0, Z1, Y1, X1, X20)
	ADDQ R9, DI
	VEXTRACTF32X4 $1, Z27, X20
	Q1T_STORE(Z2, Y2, X2, Z3, Y3, X3, X20)
	ADDQ R9, DI
	VEXTRACTF32X4 $2, Z27, X20
	Q1T_STORE(Z4, Y4, X4, Z5, Y5, X5, X20)
	ADDQ R9, DI
	VEXTRACTF32X4 $3, Z27, X20
	Q1T_STORE(Z6, Y6, X6, Z7, Y7, X7, X20)
	ADDQ R9, DI
	VEXTRACTF32X4 $0, Z29, X20
	Q1T_STORE(Z8, Y8, X8, Z9, Y9, X9, X20)
	ADDQ R9, DI
	VEXTRACTF32X4 $1, Z29, X20
	Q1T_STORE(Z10, Y10, X10, Z11, Y11, X11, X20)
	ADDQ R9, DI
	VEXTRACTF32X4 $2, Z29, X20
	Q1T_STORE(Z12, Y12, X12, Z13, Y13, X13, X20)
	ADDQ R9, DI
	VEXTRACTF32X4 $3, Z29, X20
	Q1T_STORE(Z14, Y14, X14, Z15, Y15, X15, X20)
	VZEROUPPER
	RET

// func ggmlQ5_1Tile4x8VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-7 of Q5_1 blocks: accumulators Z0-Z15 (token t,
// row pair p: Z(2t+p)); tokens 4-7 address from R11 (quants), R13 (sums)
// and DX (scales); the summs of tokens 0-3 in Z27 and of 4-7 in Z29,
// token t's four rows in lanes 4(t mod 4) on. As the Q8_0 4×8 tile, it
// prefetches two of the next four rows.
TEXT ·ggmlQ5_1Tile4x8VNNI(SB), NOSPLIT, $8-80
	Q8T_SETUP
	// CX, the block count, becomes the pointer of the next tile's row 5
	// (as in ggmlQ8_0Tile4x8VNNI): all four rows are prefetched.
	IMULQ $24, CX
	ADDQ SI, CX
	MOVQ CX, end-8(SP)
	LEAQ (SI)(BX*4), CX
	ADDQ BX, CX
	MOVL $0x0f0f0f0f, DX
	VPBROADCASTD DX, Z30
	MOVL $0x10101010, DX
	VPBROADCASTD DX, Z28
	LEAQ (DI)(R9*4), R11
	LEAQ (R12)(R15*4), R13
	LEAQ (R14)(R15*4), DX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z27, Z27, Z27
	VPXORD Z29, Z29, Z29
q51t8_blk:
	PREFETCHT0 (SI)(BX*4)
	PREFETCHT0 (CX)
	PREFETCHT0 (SI)(R8*2)
	PREFETCHT0 (CX)(BX*2)
	Q1T_CODES5((SI), (SI)(BX*1), Y16, Z16, Y18, Z18)
	Q1T_CODES5((SI)(BX*2), (SI)(R8*1), Y17, Z17, Y19, Z19)
	Q1T_MINS4
	Q1T_LANES((DI), (R14), Z0, Z1)
	Q1T_LANES((DI)(R9*1), (R14)(R15*1), Z2, Z3)
	Q1T_LANES((DI)(R9*2), (R14)(R15*2), Z4, Z5)
	Q1T_LANES((DI)(R10*1), (R14)(AX*1), Z6, Z7)
	Q1T_LANES((R11), (DX), Z8, Z9)
	Q1T_LANES((R11)(R9*1), (DX)(R15*1), Z10, Z11)
	Q1T_LANES((R11)(R9*2), (DX)(R15*2), Z12, Z13)
	Q1T_LANES((R11)(R10*1), (DX)(AX*1), Z14, Z15)
	Q1T_SUMMS4((R12), Z27)
	Q1T_SUMMS4((R13), Z29)
	ADDQ $24, SI
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $4, R12
	ADDQ $4, R13
	ADDQ $4, R14
	ADDQ $4, DX
	ADDQ $24, CX
	CMPQ SI, end-8(SP)
	JNE q51t8_blk
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	VEXTRACTF32X4 $0, Z27, X20
	Q1T_STORE(Z0, Y0, X0, Z1, Y1, X1, X20)
	ADDQ R9, DI
	VEXTRACTF32X4 $1, Z27, X20
	Q1T_STORE(Z2, Y2, X2, Z3, Y3, X3, X20)
	ADDQ R9, DI
	VEXTRACTF32X4 $2, Z27, X20
	Q1T_STORE(Z4, Y4, X4, Z5, Y5, X5, X20)
	ADDQ R9, DI
	VEXTRACTF32X4 $3, Z27, X20
	Q1T_STORE(Z6, Y6, X6, Z7, Y7, X7, X20)
	ADDQ R9, DI
	VEXTRACTF32X4 $0, Z29, X20
	Q1T_STORE(Z8, Y8, X8, Z9, Y9, X9, X20)
	ADDQ R9, DI
	VEXTRACTF32X4 $1, Z29, X20
	Q1T_STORE(Z10, Y10, X10, Z11, Y11, X11, X20)
	ADDQ R9, DI
	VEXTRACTF32X4 $2, Z29, X20
	Q1T_STORE(Z12, Y12, X12, Z13, Y13, X13, X20)
	ADDQ R9, DI
	VEXTRACTF32X4 $3, Z29, X20
	Q1T_STORE(Z14, Y14, X14, Z15, Y15, X15, X20)
	VZEROUPPER
	RET

// The AVX2 tiles: 4 rows × 2 tokens, ggmlQ4_0Tile4x2AVX2's structure with
// the "_1" AVX2 row kernels' arithmetic (DOT_AVX2 of the unsigned codes
// and the quants, the scale fma, summs = fma(m, s, summs) per block).
// Registers: Y0-Y7 the accumulators (row r, token t: Y(2r+t)); Y8 the
// summs, token 0's four rows in the low half and token 1's in the high;
// Y9 the row's d_w; Y10, Y11 the tokens' quants; Y12, Y13 temporaries;
// Y14 the row's codes; Y15 = int16 ones. The constants come from memory.

DATA ggmlQ1Nib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ggmlQ1Nib<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ggmlQ1Nib<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ggmlQ1Nib<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL ggmlQ1Nib<>(SB), RODATA|NOPTR, $32
DATA ggmlQ1Shuf<>+0(SB)/8, $0x0000000000000000
DATA ggmlQ1Shuf<>+8(SB)/8, $0x0101010101010101
DATA ggmlQ1Shuf<>+16(SB)/8, $0x0202020202020202
DATA ggmlQ1Shuf<>+24(SB)/8, $0x0303030303030303
GLOBL ggmlQ1Shuf<>(SB), RODATA|NOPTR, $32
DATA ggmlQ1Bit<>+0(SB)/8, $0x7fbfdfeff7fbfdfe
DATA ggmlQ1Bit<>+8(SB)/8, $0x7fbfdfeff7fbfdfe
DATA ggmlQ1Bit<>+16(SB)/8, $0x7fbfdfeff7fbfdfe
DATA ggmlQ1Bit<>+24(SB)/8, $0x7fbfdfeff7fbfdfe
GLOBL ggmlQ1Bit<>(SB), RODATA|NOPTR, $32
DATA ggmlQ1Ones<>+0(SB)/8, $-1
DATA ggmlQ1Ones<>+8(SB)/8, $-1
DATA ggmlQ1Ones<>+16(SB)/8, $-1
DATA ggmlQ1Ones<>+24(SB)/8, $-1
GLOBL ggmlQ1Ones<>(SB), RODATA|NOPTR, $32
DATA ggmlQ1Hi<>+0(SB)/8, $0x1010101010101010
DATA ggmlQ1Hi<>+8(SB)/8, $0x1010101010101010
DATA ggmlQ1Hi<>+16(SB)/8, $0x1010101010101010
DATA ggmlQ1Hi<>+24(SB)/8, $0x1010101010101010
GLOBL ggmlQ1Hi<>(SB), RODATA|NOPTR, $32

// Q1A_CODES4 sets Y14 to a Q4_1 block's nibbles (the row kernel's
// NIBBLES), the block at b. Uses X12.
#define Q1A_CODES4(b) \
	VMOVDQU 4 b, X14; \
	VPSRLW $4, X14, X12; \
	VINSERTI128 $1, X12, Y14, Y14; \
	VPAND ggmlQ1Nib<>(SB), Y14, Y14

// Q1A_CODES5 sets Y14 to a Q5_1 block's 5-bit codes (the row kernel's
// Q5_1R4Q), the block at b. Uses Y12.
#define Q1A_CODES5(b) \
	VMOVDQU 8 b, X14; \
	VPSRLW $4, X14, X12; \
	VINSERTI128 $1, X12, Y14, Y14; \
	VPAND ggmlQ1Nib<>(SB), Y14, Y14; \
	VPBROADCASTD 4 b, Y12; \
	VPSHUFB ggmlQ1Shuf<>(SB), Y12, Y12; \
	VPOR ggmlQ1Bit<>(SB), Y12, Y12; \
	VPCMPEQB ggmlQ1Ones<>(SB), Y12, Y12; \
	VPAND ggmlQ1Hi<>(SB), Y12, Y12; \
	VPOR Y12, Y14, Y14

// Q1A_PAIR adds the row's codes (Y14) · token x (in X, scale at d) to
// accumulator A: lanes = madd(maddubs(codes, x), 1), A = fma(d_w·d_x,
// float(lanes), A).
#define Q1A_PAIR(X, d, A) \
	VPMADDUBSW X, Y14, Y12; \
	VPMADDWD Y15, Y12, Y12; \
	VCVTDQ2PS Y12, Y12; \
	VBROADCASTSS d, Y13; \
	VMULPS Y13, Y9, Y13; \
	VFMADD231PS Y12, Y13, A

// Q1A_ROW is one row, the block at b, against both tokens.
#define Q1A_ROW(CODES, b, A0, A1) \
	CODES(b); \
	VPBROADCASTW b, X9; \
	VCVTPH2PS X9, Y9; \
	Q1A_PAIR(Y10, (R12), A0); \
	Q1A_PAIR(Y11, (R12)(R13*1), A1)

// Q1A_SUMMS adds the block's m·s to the eight summs in Y8: the four rows'
// m (fp16 at 2 of each block) in both halves, times token 0's s in the
// low half and token 1's in the high. Uses AX, Y12-Y14.
#define Q1A_SUMMS \
	MOVWLZX 2(SI), AX; \
	VMOVD AX, X13; \
	VPINSRW $1, 2(SI)(BX*1), X13, X13; \
	VPINSRW $2, 2(SI)(BX*2), X13, X13; \
	VPINSRW $3, 2(SI)(R8*1), X13, X13; \
	VCVTPH2PS X13, X13; \
	VINSERTF128 $1, X13, Y13, Y13; \
	VBROADCASTSS (R14), X12; \
	VBROADCASTSS (R14)(R13*1), X14; \
	VINSERTF128 $1, X14, Y12, Y12; \
	VFMADD231PS Y12, Y13, Y8

// Q1A_STORE stores hsum_float_8 of accumulator A plus summs lane S (its
// low element) into o. Uses X12, X13.
#define Q1A_STORE(AY, AX, S, o) \
	VEXTRACTF128 $1, AY, X12; \
	VADDPS AX, X12, X12; \
	VMOVHLPS X12, X12, X13; \
	VADDPS X13, X12, X12; \
	VMOVSHDUP X12, X13; \
	VADDSS X13, X12, X12; \
	VADDSS S, X12, X12; \
	VMOVSS X12, o

// Q1A_STORES stores the eight outputs at DI (token 0) and DI + R9
// (token 1), row r at 4r. Uses X9-X11, X14.
#define Q1A_STORES \
	VMOVSHDUP X8, X9; \
	VMOVHLPS X8, X8, X10; \
	VPERMILPS $3, X8, X11; \
	Q1A_STORE(Y0, X0, X8, 0(DI)); \
	Q1A_STORE(Y2, X2, X9, 4(DI)); \
	Q1A_STORE(Y4, X4, X10, 8(DI)); \
	Q1A_STORE(Y6, X6, X11, 12(DI)); \
	VEXTRACTF128 $1, Y8, X14; \
	VMOVSHDUP X14, X9; \
	VMOVHLPS X14, X14, X10; \
	VPERMILPS $3, X14, X11; \
	Q1A_STORE(Y1, X1, X14, 0(DI)(R9*1)); \
	Q1A_STORE(Y3, X3, X9, 4(DI)(R9*1)); \
	Q1A_STORE(Y5, X5, X10, 8(DI)(R9*1)); \
	Q1A_STORE(Y7, X7, X11, 12(DI)(R9*1))

// Q1A_SETUP loads the arguments (rows SI, BX = ws, R8 = 3·ws, R11 the
// next four rows; quants DI, xs apart in R9; scales R12 and sums R14, ds
// apart in R13; CX blocks) and clears the accumulators and summs.
#define Q1A_SETUP \
	MOVQ w+0(FP), SI; \
	MOVQ ws+8(FP), BX; \
	LEAQ (BX)(BX*2), R8; \
	LEAQ (SI)(BX*4), R11; \
	MOVQ xq+16(FP), DI; \
	MOVQ xsum+24(FP), R14; \
	MOVQ xs+32(FP), R9; \
	MOVQ xd+40(FP), R12; \
	MOVQ ds+48(FP), R13; \
	MOVQ nb+56(FP), CX; \
	MOVL $0x00010001, AX; \
	VMOVD AX, X15; \
	VPBROADCASTD X15, Y15; \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7; \
	VXORPS Y8, Y8, Y8

// func ggmlQ4_1Tile4x2AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-1 of Q4_1 blocks.
TEXT ·ggmlQ4_1Tile4x2AVX2(SB), NOSPLIT, $0-80
	Q1A_SETUP
q41a2_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	Q1A_SUMMS
	VMOVDQU (DI), Y10
	VMOVDQU (DI)(R9*1), Y11
	Q1A_ROW(Q1A_CODES4, (SI), Y0, Y1)
	Q1A_ROW(Q1A_CODES4, (SI)(BX*1), Y2, Y3)
	Q1A_ROW(Q1A_CODES4, (SI)(BX*2), Y4, Y5)
	Q1A_ROW(Q1A_CODES4, (SI)(R8*1), Y6, Y7)
	ADDQ $20, SI
	ADDQ $20, R11
	ADDQ $32, DI
	ADDQ $4, R12
	ADDQ $4, R14
	DECQ CX
	JNZ q41a2_blk
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	Q1A_STORES
	VZEROUPPER
	RET

// func ggmlQ5_1Tile4x2AVX2(w unsafe.Pointer, ws uintptr, xq *int8, xsum *float32, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
//
// Rows 0-3 × tokens 0-1 of Q5_1 blocks.
TEXT ·ggmlQ5_1Tile4x2AVX2(SB), NOSPLIT, $0-80
	Q1A_SETUP
q51a2_blk:
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(BX*1)
	PREFETCHT0 (R11)(BX*2)
	PREFETCHT0 (R11)(R8*1)
	Q1A_SUMMS
	VMOVDQU (DI), Y10
	VMOVDQU (DI)(R9*1), Y11
	Q1A_ROW(Q1A_CODES5, (SI), Y0, Y1)
	Q1A_ROW(Q1A_CODES5, (SI)(BX*1), Y2, Y3)
	Q1A_ROW(Q1A_CODES5, (SI)(BX*2), Y4, Y5)
	Q1A_ROW(Q1A_CODES5, (SI)(R8*1), Y6, Y7)
	ADDQ $24, SI
	ADDQ $24, R11
	ADDQ $32, DI
	ADDQ $4, R12
	ADDQ $4, R14
	DECQ CX
	JNZ q51a2_blk
	MOVQ out+64(FP), DI
	MOVQ os+72(FP), R9
	Q1A_STORES
	VZEROUPPER
	RET
