//go:build amd64

#include "textflag.h"
#include "ggml_amd64.h"

// The Q4_K VNNI tiles on 512-bit registers: 4 rows × 4, 3 or 2 tokens,
// one row at a time against the tokens, each super-block's scales and
// nibbles unpacked once for the tokens. The int32 lanes are those of the
// row kernel (ggmlQ4KRowsAVX2), whose lane i of a super-block is
// Σ_j sc_2j·(q4·q8 over the low nibbles' bytes 4i..4i+3 of step j) +
// sc_2j+1·(the same over the high nibbles'). Here one Z register holds
// step j's low nibbles in its lower half and its high nibbles in its
// upper half, so one VPMADDUBSW against the token's 64 contiguous q8 of
// step j forms both halves' int16 pairs (the row kernel's two
// VPMADDUBSW, the same byte pairs, so the same saturation: none), and one
// VPDPWSSD against (sc_2j ×16 | sc_2j+1 ×16) adds their scaled sums to
// the token's 16 int32 lanes. The super-block's two halves are added at
// its close (exact integers), and from there every float operation is
// the row kernel's: acc += d·y.d × float(lanes), acc_m += dmin·(−y.d) ×
// float(madd(mins, bs32)), the row hsum(acc) + hsum4(acc_m). Each tile
// prefetches 4 KiB ahead, as the row kernel does: its rows are one
// stream, and the next tile's rows follow them.
//
// Registers (4 × 4, 4 × 3, 4 × 2; the 4 × 8 tile below differs): Z0, Z1
// the accumulators of tokens (0, 1) and (2, 3), each token in one half
// (a lone third token in Y1), Z8, Z9 their acc_m the same way (X9); Z4-Z7
// token t's lanes; Z12 a step's nibbles, Z13 its scales; Z14 the 8 mins
// in every 128-bit lane; Z15 0x0f bytes; Y16 mins_and_scales; Z16-Z19
// temporaries; Z22-Z25 the products; Z26-Z29 the VPERMW indexes of steps
// 0-3; Z30 the block's d ×16, Z31 its dmin ×16; K1 the upper 8 lanes.

// ggmlK4ZIdx: step j's index for VPERMW, the 16-bit lanes of
// mins_and_scales to Z13: scale 2j in words 0-15, 2j+1 in words 16-31.
DATA ggmlK4ZIdx<>+0(SB)/8, $0x0000000000000000
DATA ggmlK4ZIdx<>+8(SB)/8, $0x0000000000000000
DATA ggmlK4ZIdx<>+16(SB)/8, $0x0000000000000000
DATA ggmlK4ZIdx<>+24(SB)/8, $0x0000000000000000
DATA ggmlK4ZIdx<>+32(SB)/8, $0x0001000100010001
DATA ggmlK4ZIdx<>+40(SB)/8, $0x0001000100010001
DATA ggmlK4ZIdx<>+48(SB)/8, $0x0001000100010001
DATA ggmlK4ZIdx<>+56(SB)/8, $0x0001000100010001
DATA ggmlK4ZIdx<>+64(SB)/8, $0x0002000200020002
DATA ggmlK4ZIdx<>+72(SB)/8, $0x0002000200020002
DATA ggmlK4ZIdx<>+80(SB)/8, $0x0002000200020002
DATA ggmlK4ZIdx<>+88(SB)/8, $0x0002000200020002
DATA ggmlK4ZIdx<>+96(SB)/8, $0x0003000300030003
DATA ggmlK4ZIdx<>+104(SB)/8, $0x0003000300030003
DATA ggmlK4ZIdx<>+112(SB)/8, $0x0003000300030003
DATA ggmlK4ZIdx<>+120(SB)/8, $0x0003000300030003
DATA ggmlK4ZIdx<>+128(SB)/8, $0x0004000400040004
DATA ggmlK4ZIdx<>+136(SB)/8, $0x0004000400040004
DATA ggmlK4ZIdx<>+144(SB)/8, $0x0004000400040004
DATA ggmlK4ZIdx<>+152(SB)/8, $0x0004000400040004
DATA ggmlK4ZIdx<>+160(SB)/8, $0x0005000500050005
DATA ggmlK4ZIdx<>+168(SB)/8, $0x0005000500050005
DATA ggmlK4ZIdx<>+176(SB)/8, $0x0005000500050005
DATA ggmlK4ZIdx<>+184(SB)/8, $0x0005000500050005
DATA ggmlK4ZIdx<>+192(SB)/8, $0x0006000600060006
DATA ggmlK4ZIdx<>+200(SB)/8, $0x0006000600060006
DATA ggmlK4ZIdx<>+208(SB)/8, $0x0006000600060006
DATA ggmlK4ZIdx<>+216(SB)/8, $0x0006000600060006
DATA ggmlK4ZIdx<>+224(SB)/8, $0x0007000700070007
DATA ggmlK4ZIdx<>+232(SB)/8, $0x0007000700070007
DATA ggmlK4ZIdx<>+240(SB)/8, $0x0007000700070007
DATA ggmlK4ZIdx<>+248(SB)/8, $0x0007000700070007
GLOBL ggmlK4ZIdx<>(SB), RODATA|NOPTR, $256

// Q4KZ_W(wo, IDX) sets Z12 to step j's nibbles (at wo(R10), low | high)
// and Z13 to its scales.
#define Q4KZ_W(wo, IDX) \
	VMOVDQU wo(R10), Y12; \
	VPSRLW $4, Y12, Y13; \
	VINSERTI64X4 $1, Y13, Z12, Z12; \
	VPANDD Z15, Z12, Z12; \
	VPERMW Z16, IDX, Z13

// Q4KZ_T4, Q4KZ_T3, Q4KZ_T2(xo): step j's products of every token, its
// q8 at xo from the token's quants pointer.
#define Q4KZ_T4(xo, OP) \
	VPMADDUBSW xo(R11), Z12, Z22; \
	VPMADDUBSW xo(R11)(R9*1), Z12, Z23; \
	VPMADDUBSW xo(R8), Z12, Z24; \
	VPMADDUBSW xo(R8)(R9*1), Z12, Z25; \
	OP Z13, Z22, Z4; \
	OP Z13, Z23, Z5; \
	OP Z13, Z24, Z6; \
	OP Z13, Z25, Z7

#define Q4KZ_T3(xo, OP) \
	VPMADDUBSW xo(R11), Z12, Z22; \
	VPMADDUBSW xo(R11)(R9*1), Z12, Z23; \
	VPMADDUBSW xo(R8), Z12, Z24; \
	OP Z13, Z22, Z4; \
	OP Z13, Z23, Z5; \
	OP Z13, Z24, Z6

#define Q4KZ_T2(xo, OP) \
	VPMADDUBSW xo(R11), Z12, Z22; \
	VPMADDUBSW xo(R11)(R9*1), Z12, Z23; \
	OP Z13, Z22, Z4; \
	OP Z13, Z23, Z5

// Q4KZ_BLK(T) is one super-block of the row for the tokens of T: the
// prefetch, the scales and mins as in ggmlQ4KRowsAVX2 (K4SCALES), and
// the four steps.
#define Q4KZ_BLK(T) \
	PREFETCHT1 4096(R10); \
	PREFETCHT1 4160(R10); \
	PREFETCHT1 4224(R10); \
	VMOVDQU32 4(R10), X16; \
	VPSHUFB ggmlK4P<>(SB), X16, X17; \
	VPSHUFB ggmlK4Q<>(SB), X16, X18; \
	VPSRLW $4, X17, X19; \
	VPANDD ggmlK4M1<>(SB), X17, X17; \
	VPANDD ggmlK4M2<>(SB), X19, X19; \
	VPSRLW $2, X18, X18; \
	VPANDD ggmlK4M3<>(SB), X18, X18; \
	VPORD X19, X17, X17; \
	VPORD X18, X17, X17; \
	VPMOVZXBW X17, Y16; \
	VEXTRACTI32X4 $1, Y16, X14; \
	VSHUFI32X4 $0, Z14, Z14, Z14; \
	VMOVD 0(R10), X31; \
	VCVTPH2PS X31, X31; \
	VBROADCASTSS X31, Z30; \
	VPERMILPS $0x55, X31, X31; \
	VBROADCASTSS X31, Z31; \
	Q4KZ_W(16, Z26); \
	T(0, VPMADDWD); \
	Q4KZ_W(48, Z27); \
	T(64, VPDPWSSD); \
	Q4KZ_W(80, Z28); \
	T(128, VPDPWSSD); \
	Q4KZ_W(112, Z29); \
	T(192, VPDPWSSD)

// Q4KZ_TOKEN closes one token's super-block: the lanes' halves added
// (LZ, its lower half LY), then the floats of ggmlQ4KTile4x2AVX2's
// Q4KA_TOKEN: acc_m M += dmin·(−y.d) × float(madd(mins, bs32 at bs)),
// here as M − (dmin·y.d) × float(…) by VFNMADD231PS (the same rounding:
// the product's sign is exact), y.d at yd by embedded broadcast against
// Z31's dmin; acc A += d·y.d × float(lanes) against Z30's d. The next
// super-block's first step overwrites the lanes.
#define Q4KZ_TOKEN(yd, bs, LZ, LY, M, A) \
	VEXTRACTI64X4 $1, LZ, Y17; \
	VPADDD Y17, LY, LY; \
	VMULPS.BCST yd, X31, X18; \
	VPMADDWD bs, X14, X17; \
	VCVTDQ2PS X17, X17; \
	VFNMADD231PS X17, X18, M; \
	VMULPS.BCST yd, Y30, Y16; \
	VCVTDQ2PS LY, LY; \
	VFMADD231PS LY, Y16, A

// Q4KZ_PAIR closes the super-block of tokens t and u at once, t in the
// lower halves (8 lanes of acc, 4 of acc_m) and u in the upper (acc lanes
// 8-15, acc_m lanes 8-11) of A and M: lane by lane the operations of
// Q4KZ_TOKEN (the lanes' halves of LT and LU added, y.d of t and u at
// ydt and ydu broadcast under mask K1, bs32 at bst and bsu), so each
// token's floats are still the row kernel's. Lanes 4-7 and 12-15 of M
// add zeros and are never read.
#define Q4KZ_PAIR(ydt, ydu, bst, bsu, LT, LU, M, A) \
	VSHUFI64X2 $0x44, LU, LT, Z17; \
	VSHUFI64X2 $0xEE, LU, LT, Z18; \
	VPADDD Z18, Z17, Z17; \
	VBROADCASTSS ydt, Z16; \
	VBROADCASTSS ydu, K1, Z16; \
	VMOVDQU32 bst, X18; \
	VINSERTI32X4 $2, bsu, Z18, Z18; \
	VPMADDWD Z18, Z14, Z18; \
	VCVTDQ2PS Z18, Z18; \
	VMULPS Z31, Z16, Z19; \
	VFNMADD231PS Z18, Z19, M; \
	VMULPS Z30, Z16, Z16; \
	VCVTDQ2PS Z17, Z17; \
	VFMADD231PS Z17, Z16, A

// Q4KZ_STORE2 stores a pair's rows, t's to ot and u's to ou: Q4KZ_STORE
// on both halves at once, lane by lane the same adds. A's 128-bit
// quarters swapped within each half (VSHUFF32X4 $0xb1) and added give
// hsum_float_8's first fold; VPERMILPS $0x4e is VMOVHLPS on the lanes
// read; then VMOVSHDUP; M's folds the same; t's row in lane 0, u's in
// lane 8.
#define Q4KZ_STORE2(MZ, AZ, ot, ou) \
	VSHUFF32X4 $0xb1, AZ, AZ, Z17; \
	VADDPS AZ, Z17, Z17; \
	VPERMILPS $0x4e, Z17, Z18; \
	VADDPS Z18, Z17, Z17; \
	VMOVSHDUP Z17, Z18; \
	VADDPS Z18, Z17, Z17; \
	VPERMILPS $0x4e, MZ, Z16; \
	VADDPS Z16, MZ, MZ; \
	VMOVSHDUP MZ, Z16; \
	VADDPS Z16, MZ, MZ; \
	VADDPS MZ, Z17, Z17; \
	VMOVSS X17, ot; \
	VEXTRACTF32X4 $2, Z17, X17; \
	VMOVSS X17, ou

// Q4KZ_STORE folds token t's acc_m M and acc A as the row kernel does,
// hsum(A) + hsum4(M), into o.
#define Q4KZ_STORE(MX, AY, AX, o) \
	VMOVHLPS MX, MX, X16; \
	VADDPS X16, MX, MX; \
	VMOVSHDUP MX, X16; \
	VADDSS X16, MX, MX; \
	VEXTRACTF32X4 $1, AY, X17; \
	VADDPS AX, X17, X17; \
	VMOVHLPS X17, X17, X18; \
	VADDPS X18, X17, X17; \
	VMOVSHDUP X17, X18; \
	VADDSS X18, X17, X17; \
	VADDSS MX, X17, X17; \
	VMOVSS X17, o

// Q4KZ_ENTRY loads the arguments and constants: quants R11 and R8 = R11
// + 2·xs (xs in R9), scales R12 and BX (ds in R13), pairwise sums R14 and
// DI (bss in AX); SI the row, DX the rows left, 0(SP) token 0's output
// of the row.
#define Q4KZ_ENTRY \
	MOVQ w+0(FP), SI; \
	MOVQ xs+24(FP), R9; \
	MOVQ ds+40(FP), R13; \
	MOVQ bss+56(FP), AX; \
	MOVQ out+72(FP), DX; \
	MOVQ DX, 0(SP); \
	MOVQ $4, DX; \
	MOVL $0x0f0f0f0f, CX; \
	VPBROADCASTD CX, Z15; \
	MOVL $0xff00, CX; \
	KMOVW CX, K1; \
	VMOVDQU64 ggmlK4ZIdx<>+0(SB), Z26; \
	VMOVDQU64 ggmlK4ZIdx<>+64(SB), Z27; \
	VMOVDQU64 ggmlK4ZIdx<>+128(SB), Z28; \
	VMOVDQU64 ggmlK4ZIdx<>+192(SB), Z29

// Q4KZ_ROW starts a row: the token pointers and cleared accumulators.
#define Q4KZ_ROW \
	MOVQ SI, R10; \
	MOVQ xq+16(FP), R11; \
	LEAQ (R11)(R9*2), R8; \
	MOVQ xd+32(FP), R12; \
	LEAQ (R12)(R13*2), BX; \
	MOVQ bs32+48(FP), R14; \
	LEAQ (R14)(AX*2), DI; \
	MOVQ nb+64(FP), CX; \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9

// Q4KZ_NEXT steps every pointer to the next super-block.
#define Q4KZ_NEXT \
	ADDQ $144, R10; \
	ADDQ $256, R11; \
	ADDQ $256, R8; \
	ADDQ $4, R12; \
	ADDQ $4, BX; \
	ADDQ $16, R14; \
	ADDQ $16, DI

// func ggmlQ4KTile4x4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xs uintptr, xd *float32, ds uintptr, bs32 *int16, bss uintptr, nb int, out *float32, os uintptr)
TEXT ·ggmlQ4KTile4x4VNNI(SB), NOSPLIT, $8-88
	Q4KZ_ENTRY
q4kz4_row:
	Q4KZ_ROW
q4kz4_blk:
	Q4KZ_BLK(Q4KZ_T4)
	Q4KZ_PAIR((R12), (R12)(R13*1), (R14), (R14)(AX*1), Z4, Z5, Z8, Z0)
	Q4KZ_PAIR((BX), (BX)(R13*1), (DI), (DI)(AX*1), Z6, Z7, Z9, Z1)
	Q4KZ_NEXT
	DECQ CX
	JNZ q4kz4_blk
	MOVQ 0(SP), R10
	MOVQ os+80(FP), R11
	Q4KZ_STORE2(Z8, Z0, (R10), (R10)(R11*1))
	LEAQ (R10)(R11*2), R10
	Q4KZ_STORE2(Z9, Z1, (R10), (R10)(R11*1))
	ADDQ $4, 0(SP)
	ADDQ ws+8(FP), SI
	DECQ DX
	JNZ q4kz4_row
	VZEROUPPER
	RET

// func ggmlQ4KTile4x3VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xs uintptr, xd *float32, ds uintptr, bs32 *int16, bss uintptr, nb int, out *float32, os uintptr)
TEXT ·ggmlQ4KTile4x3VNNI(SB), NOSPLIT, $8-88
	Q4KZ_ENTRY
q4kz3_row:
	Q4KZ_ROW
q4kz3_blk:
	Q4KZ_BLK(Q4KZ_T3)
	Q4KZ_PAIR((R12), (R12)(R13*1), (R14), (R14)(AX*1), Z4, Z5, Z8, Z0)
	Q4KZ_TOKEN((BX), (DI), Z6, Y6, X9, Y1)
	Q4KZ_NEXT
	DECQ CX
	JNZ q4kz3_blk
	MOVQ 0(SP), R10
	MOVQ os+80(FP), R11
	Q4KZ_STORE2(Z8, Z0, (R10), (R10)(R11*1))
	Q4KZ_STORE(X9, Y1, X1, (R10)(R11*2))
	ADDQ $4, 0(SP)
	ADDQ ws+8(FP), SI
	DECQ DX
	JNZ q4kz3_row
	VZEROUPPER
	RET

// func ggmlQ4KTile4x2VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xs uintptr, xd *float32, ds uintptr, bs32 *int16, bss uintptr, nb int, out *float32, os uintptr)
TEXT ·ggmlQ4KTile4x2VNNI(SB), NOSPLIT, $8-88
	Q4KZ_ENTRY
q4kz2_row:
	Q4KZ_ROW
q4kz2_blk:
	Q4KZ_BLK(Q4KZ_T2)
	Q4KZ_PAIR((R12), (R12)(R13*1), (R14), (R14)(AX*1), Z4, Z5, Z8, Z0)
	Q4KZ_NEXT
	DECQ CX
	JNZ q4kz2_blk
	MOVQ 0(SP), R10
	MOVQ os+80(FP), R11
	Q4KZ_STORE2(Z8, Z0, (R10), (R10)(R11*1))
	ADDQ $4, 0(SP)
	ADDQ ws+8(FP), SI
	DECQ DX
	JNZ q4kz2_row
	VZEROUPPER
	RET

// The Q6_K VNNI tiles on 512-bit registers: 4 rows × 4, 3 or 2 tokens,
// one row at a time, each quad's 6-bit codes and scales formed once for
// the tokens. The row kernel (ggmlQ6KRowsAVX2) forms a half's four quads
// of 32 codes one at a time, the lanes madd(scales, maddubs(q, q8) −
// maddubs(32, q8)) added over the eight quads. Here one Z register holds
// quads 0 and 1 of a half (or 2 and 3), whose q8 (and q8s) are 64
// contiguous bytes: ql's 64 bytes in one load, qh broadcast to both
// halves and shifted by 0 | 2 (or 4 | 6) with VPSRLVW, each quad's two
// sub-block scales placed by one VPERMW of the 16 scales. The same
// products in the same int16 lanes, added by VPDPWSSD; the halves of the
// 16 int32 lanes are added at the super-block's close (exact integers),
// and from there the floats are the row kernel's: acc += d·y.d ×
// float(lanes), the row hsum_float_8(acc). Each tile prefetches 4 KiB
// ahead, as the row kernel does.
//
// Registers (4 × 4, 4 × 3, 4 × 2): Z0, Z1 the accumulators of tokens
// (0, 1) and (2, 3), one token per half (a lone third token in Y1);
// Z4-Z7 token t's lanes; Z8 a quad pair's scales, Z9 its codes; Z10 the
// block's 16 scales; Z14 0x03 bytes, Z15 0x0f bytes; Z16 ql, Z17 qh, Z18
// a temporary; Z21 the block's d ×16; Z22-Z25 the products; Z26-Z29 the VPERMW indexes of the
// four quad pairs, Z30 and Z31 the qh shifts of pairs (0, 1) and (2, 3).

// ggmlK6ZIdx: quad pair k's (half k/2, quads 2(k%2), 2(k%2)+1) scale
// index for VPERMW: words 8i..8i+7 take scale 4k+i. ggmlK6ZShift: the
// per-word qh shifts, 0 | 2 and 4 | 6.
DATA ggmlK6ZIdx<>+0(SB)/8, $0x0000000000000000
DATA ggmlK6ZIdx<>+8(SB)/8, $0x0000000000000000
DATA ggmlK6ZIdx<>+16(SB)/8, $0x0001000100010001
DATA ggmlK6ZIdx<>+24(SB)/8, $0x0001000100010001
DATA ggmlK6ZIdx<>+32(SB)/8, $0x0002000200020002
DATA ggmlK6ZIdx<>+40(SB)/8, $0x0002000200020002
DATA ggmlK6ZIdx<>+48(SB)/8, $0x0003000300030003
DATA ggmlK6ZIdx<>+56(SB)/8, $0x0003000300030003
DATA ggmlK6ZIdx<>+64(SB)/8, $0x0004000400040004
DATA ggmlK6ZIdx<>+72(SB)/8, $0x0004000400040004
DATA ggmlK6ZIdx<>+80(SB)/8, $0x0005000500050005
DATA ggmlK6ZIdx<>+88(SB)/8, $0x0005000500050005
DATA ggmlK6ZIdx<>+96(SB)/8, $0x0006000600060006
DATA ggmlK6ZIdx<>+104(SB)/8, $0x0006000600060006
DATA ggmlK6ZIdx<>+112(SB)/8, $0x0007000700070007
DATA ggmlK6ZIdx<>+120(SB)/8, $0x0007000700070007
DATA ggmlK6ZIdx<>+128(SB)/8, $0x0008000800080008
DATA ggmlK6ZIdx<>+136(SB)/8, $0x0008000800080008
DATA ggmlK6ZIdx<>+144(SB)/8, $0x0009000900090009
DATA ggmlK6ZIdx<>+152(SB)/8, $0x0009000900090009
DATA ggmlK6ZIdx<>+160(SB)/8, $0x000a000a000a000a
DATA ggmlK6ZIdx<>+168(SB)/8, $0x000a000a000a000a
DATA ggmlK6ZIdx<>+176(SB)/8, $0x000b000b000b000b
DATA ggmlK6ZIdx<>+184(SB)/8, $0x000b000b000b000b
DATA ggmlK6ZIdx<>+192(SB)/8, $0x000c000c000c000c
DATA ggmlK6ZIdx<>+200(SB)/8, $0x000c000c000c000c
DATA ggmlK6ZIdx<>+208(SB)/8, $0x000d000d000d000d
DATA ggmlK6ZIdx<>+216(SB)/8, $0x000d000d000d000d
DATA ggmlK6ZIdx<>+224(SB)/8, $0x000e000e000e000e
DATA ggmlK6ZIdx<>+232(SB)/8, $0x000e000e000e000e
DATA ggmlK6ZIdx<>+240(SB)/8, $0x000f000f000f000f
DATA ggmlK6ZIdx<>+248(SB)/8, $0x000f000f000f000f
GLOBL ggmlK6ZIdx<>(SB), RODATA|NOPTR, $256
DATA ggmlK6ZShift<>+0(SB)/8, $0x0000000000000000
DATA ggmlK6ZShift<>+8(SB)/8, $0x0000000000000000
DATA ggmlK6ZShift<>+16(SB)/8, $0x0000000000000000
DATA ggmlK6ZShift<>+24(SB)/8, $0x0000000000000000
DATA ggmlK6ZShift<>+32(SB)/8, $0x0002000200020002
DATA ggmlK6ZShift<>+40(SB)/8, $0x0002000200020002
DATA ggmlK6ZShift<>+48(SB)/8, $0x0002000200020002
DATA ggmlK6ZShift<>+56(SB)/8, $0x0002000200020002
DATA ggmlK6ZShift<>+64(SB)/8, $0x0004000400040004
DATA ggmlK6ZShift<>+72(SB)/8, $0x0004000400040004
DATA ggmlK6ZShift<>+80(SB)/8, $0x0004000400040004
DATA ggmlK6ZShift<>+88(SB)/8, $0x0004000400040004
DATA ggmlK6ZShift<>+96(SB)/8, $0x0006000600060006
DATA ggmlK6ZShift<>+104(SB)/8, $0x0006000600060006
DATA ggmlK6ZShift<>+112(SB)/8, $0x0006000600060006
DATA ggmlK6ZShift<>+120(SB)/8, $0x0006000600060006
GLOBL ggmlK6ZShift<>(SB), RODATA|NOPTR, $128

// Q6KZ_T4, Q6KZ_T3, Q6KZ_T2(xo): a quad pair's codes Z9 and scales Z8
// against every token's q8 and q8s at xo.
#define Q6KZ_T4(xo, OP) \
	VPMADDUBSW xo(R11), Z9, Z22; \
	VPMADDUBSW xo(R11)(R9*1), Z9, Z23; \
	VPMADDUBSW xo(R8), Z9, Z24; \
	VPMADDUBSW xo(R8)(R9*1), Z9, Z25; \
	VPSUBW xo(R14), Z22, Z22; \
	VPSUBW xo(R14)(R9*1), Z23, Z23; \
	VPSUBW xo(DI), Z24, Z24; \
	VPSUBW xo(DI)(R9*1), Z25, Z25; \
	OP Z8, Z22, Z4; \
	OP Z8, Z23, Z5; \
	OP Z8, Z24, Z6; \
	OP Z8, Z25, Z7

#define Q6KZ_T3(xo, OP) \
	VPMADDUBSW xo(R11), Z9, Z22; \
	VPMADDUBSW xo(R11)(R9*1), Z9, Z23; \
	VPMADDUBSW xo(R8), Z9, Z24; \
	VPSUBW xo(R14), Z22, Z22; \
	VPSUBW xo(R14)(R9*1), Z23, Z23; \
	VPSUBW xo(DI), Z24, Z24; \
	OP Z8, Z22, Z4; \
	OP Z8, Z23, Z5; \
	OP Z8, Z24, Z6

#define Q6KZ_T2(xo, OP) \
	VPMADDUBSW xo(R11), Z9, Z22; \
	VPMADDUBSW xo(R11)(R9*1), Z9, Z23; \
	VPSUBW xo(R14), Z22, Z22; \
	VPSUBW xo(R14)(R9*1), Z23, Z23; \
	OP Z8, Z22, Z4; \
	OP Z8, Z23, Z5

// Q6KZ_HALF(T, qlo, qho, xo, I0, I1) is a half of a super-block: ql at
// qlo(R10), qh at qho(R10), q8 from xo, the pairs' scale indexes I0, I1.
// Pair (0, 1): ((qh >> 0|2) & 3) << 4 | ql & 15; pair (2, 3): ((qh >>
// 4|6) & 3) << 4 | (ql >> 4) & 15, as the row kernel's quads.
#define Q6KZ_HALF(T, OP, qlo, qho, xo, I0, I1) \
	VMOVDQU64 qlo(R10), Z16; \
	VBROADCASTI64X4 qho(R10), Z17; \
	VPSRLVW Z30, Z17, Z9; \
	VPANDD Z14, Z9, Z9; \
	VPSLLW $4, Z9, Z9; \
	VPANDD Z15, Z16, Z18; \
	VPORD Z18, Z9, Z9; \
	VPERMW Z10, I0, Z8; \
	T(xo, OP); \
	VPSRLVW Z31, Z17, Z9; \
	VPANDD Z14, Z9, Z9; \
	VPSLLW $4, Z9, Z9; \
	VPSRLW $4, Z16, Z18; \
	VPANDD Z15, Z18, Z18; \
	VPORD Z18, Z9, Z9; \
	VPERMW Z10, I1, Z8; \
	T(64+xo, VPDPWSSD)

// Q6KZ_BLK(T) is one super-block of the row for the tokens of T.
#define Q6KZ_BLK(T) \
	PREFETCHT1 4096(R10); \
	PREFETCHT1 4160(R10); \
	PREFETCHT1 4224(R10); \
	PREFETCHT1 4288(R10); \
	VPMOVSXBW 192(R10), Y10; \
	Q6KZ_HALF(T, VPMADDWD, 0, 128, 0, Z26, Z27); \
	Q6KZ_HALF(T, VPDPWSSD, 64, 160, 128, Z28, Z29); \
	VPBROADCASTW 208(R10), Y21; \
	VCVTPH2PS Y21, Z21

// Q6KZ_TOKEN closes one token's super-block: the lanes' halves added (LZ,
// its lower half LY), acc A += d·y.d (y.d at yd) × float(lanes). The
// next super-block's first pair overwrites the lanes.
#define Q6KZ_TOKEN(yd, LZ, LY, A) \
	VEXTRACTI64X4 $1, LZ, Y17; \
	VPADDD Y17, LY, LY; \
	VMULPS.BCST yd, Y21, Y16; \
	VCVTDQ2PS LY, LY; \
	VFMADD231PS LY, Y16, A

// Q6KZ_PAIR closes the super-block of tokens t and u at once, t in the
// lower half of A and u in the upper: lane by lane Q6KZ_TOKEN's
// operations (y.d of t and u at ydt and ydu, broadcast under mask K1).
#define Q6KZ_PAIR(ydt, ydu, LT, LU, A) \
	VSHUFI64X2 $0x44, LU, LT, Z17; \
	VSHUFI64X2 $0xEE, LU, LT, Z18; \
	VPADDD Z18, Z17, Z17; \
	VBROADCASTSS ydt, Z16; \
	VBROADCASTSS ydu, K1, Z16; \
	VMULPS Z21, Z16, Z16; \
	VCVTDQ2PS Z17, Z17; \
	VFMADD231PS Z17, Z16, A

// Q6KZ_STORE2 stores a pair's rows, t's to ot and u's to ou: Q6KZ_STORE
// on both halves at once, as Q4KZ_STORE2 without acc_m.
#define Q6KZ_STORE2(AZ, ot, ou) \
	VSHUFF32X4 $0xb1, AZ, AZ, Z17; \
	VADDPS AZ, Z17, Z17; \
	VPERMILPS $0x4e, Z17, Z18; \
	VADDPS Z18, Z17, Z17; \
	VMOVSHDUP Z17, Z18; \
	VADDPS Z18, Z17, Z17; \
	VMOVSS X17, ot; \
	VEXTRACTF32X4 $2, Z17, X17; \
	VMOVSS X17, ou

// Q6KZ_STORE folds acc A into o as hsum_float_8.
#define Q6KZ_STORE(AY, AX, o) \
	VEXTRACTF32X4 $1, AY, X17; \
	VADDPS AX, X17, X17; \
	VMOVHLPS X17, X17, X18; \
	VADDPS X18, X17, X17; \
	VMOVSHDUP X17, X18; \
	VADDSS X18, X17, X17; \
	VMOVSS X17, o

// Q6KZ_ENTRY loads the arguments and constants: quants R11 and R8 = R11
// + 2·xs and their q8s R14 and DI (xs in R9), scales R12 and BX (ds in
// AX); SI the row, DX the rows left, 0(SP) token 0's output of the row.
#define Q6KZ_ENTRY \
	MOVQ w+0(FP), SI; \
	MOVQ xs+32(FP), R9; \
	MOVQ ds+48(FP), AX; \
	MOVQ out+64(FP), DX; \
	MOVQ DX, 0(SP); \
	MOVQ $4, DX; \
	MOVL $0x0f0f0f0f, CX; \
	VPBROADCASTD CX, Z15; \
	MOVL $0x03030303, CX; \
	VPBROADCASTD CX, Z14; \
	MOVL $0xff00, CX; \
	KMOVW CX, K1; \
	VMOVDQU64 ggmlK6ZIdx<>+0(SB), Z26; \
	VMOVDQU64 ggmlK6ZIdx<>+64(SB), Z27; \
	VMOVDQU64 ggmlK6ZIdx<>+128(SB), Z28; \
	VMOVDQU64 ggmlK6ZIdx<>+192(SB), Z29; \
	VMOVDQU64 ggmlK6ZShift<>+0(SB), Z30; \
	VMOVDQU64 ggmlK6ZShift<>+64(SB), Z31

// Q6KZ_ROW starts a row: the token pointers and cleared accumulators.
#define Q6KZ_ROW \
	MOVQ SI, R10; \
	MOVQ xq+16(FP), R11; \
	LEAQ (R11)(R9*2), R8; \
	MOVQ q8s+24(FP), R14; \
	LEAQ (R14)(R9*2), DI; \
	MOVQ xd+40(FP), R12; \
	LEAQ (R12)(AX*2), BX; \
	MOVQ nb+56(FP), CX; \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1

// Q6KZ_NEXT steps every pointer to the next super-block.
#define Q6KZ_NEXT \
	ADDQ $210, R10; \
	ADDQ $256, R11; \
	ADDQ $256, R8; \
	ADDQ $256, R14; \
	ADDQ $256, DI; \
	ADDQ $4, R12; \
	ADDQ $4, BX

// func ggmlQ6KTile4x4VNNI(w unsafe.Pointer, ws uintptr, xq *int8, q8s *int16, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
TEXT ·ggmlQ6KTile4x4VNNI(SB), NOSPLIT, $8-80
	Q6KZ_ENTRY
q6kz4_row:
	Q6KZ_ROW
q6kz4_blk:
	Q6KZ_BLK(Q6KZ_T4)
	Q6KZ_PAIR((R12), (R12)(AX*1), Z4, Z5, Z0)
	Q6KZ_PAIR((BX), (BX)(AX*1), Z6, Z7, Z1)
	Q6KZ_NEXT
	DECQ CX
	JNZ q6kz4_blk
	MOVQ 0(SP), R10
	MOVQ os+72(FP), R11
	Q6KZ_STORE2(Z0, (R10), (R10)(R11*1))
	LEAQ (R10)(R11*2), R10
	Q6KZ_STORE2(Z1, (R10), (R10)(R11*1))
	ADDQ $4, 0(SP)
	ADDQ ws+8(FP), SI
	DECQ DX
	JNZ q6kz4_row
	VZEROUPPER
	RET

// func ggmlQ6KTile4x3VNNI(w unsafe.Pointer, ws uintptr, xq *int8, q8s *int16, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
TEXT ·ggmlQ6KTile4x3VNNI(SB), NOSPLIT, $8-80
	Q6KZ_ENTRY
q6kz3_row:
	Q6KZ_ROW
q6kz3_blk:
	Q6KZ_BLK(Q6KZ_T3)
	Q6KZ_PAIR((R12), (R12)(AX*1), Z4, Z5, Z0)
	Q6KZ_TOKEN((BX), Z6, Y6, Y1)
	Q6KZ_NEXT
	DECQ CX
	JNZ q6kz3_blk
	MOVQ 0(SP), R10
	MOVQ os+72(FP), R11
	Q6KZ_STORE2(Z0, (R10), (R10)(R11*1))
	Q6KZ_STORE(Y1, X1, (R10)(R11*2))
	ADDQ $4, 0(SP)
	ADDQ ws+8(FP), SI
	DECQ DX
	JNZ q6kz3_row
	VZEROUPPER
	RET

// func ggmlQ6KTile4x2VNNI(w unsafe.Pointer, ws uintptr, xq *int8, q8s *int16, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
TEXT ·ggmlQ6KTile4x2VNNI(SB), NOSPLIT, $8-80
	Q6KZ_ENTRY
q6kz2_row:
	Q6KZ_ROW
q6kz2_blk:
	Q6KZ_BLK(Q6KZ_T2)
	Q6KZ_PAIR((R12), (R12)(AX*1), Z4, Z5, Z0)
	Q6KZ_NEXT
	DECQ CX
	JNZ q6kz2_blk
	MOVQ 0(SP), R10
	MOVQ os+72(FP), R11
	Q6KZ_STORE2(Z0, (R10), (R10)(R11*1))
	ADDQ $4, 0(SP)
	ADDQ ws+8(FP), SI
	DECQ DX
	JNZ q6kz2_row
	VZEROUPPER
	RET

// The Q4_K 4 × 8 tile: the 4 × 4 tile's code for eight tokens, so a
// super-block's unpack serves eight. Every zmm is taken: Z0-Z3 the pairs'
// accumulators, Z4-Z11 the tokens' lanes, Z20-Z23 the pairs' acc_m,
// Z24, Z25 the products, the rest as in the 4 × 4 tile. Token k's
// pointers: quants R11 + k·xs for k = 0, 1, 2, 4 (xs in R9), R8 = R11 +
// 3·xs for 3 and 5, SI = R11 + 6·xs for 6 and 7; scales R12, BX, DX the
// same with ds (R13); pair sums R14, DI, CX with bss (AX). The frame
// holds token 0's output of the row (0), the row (8), the rows left (16)
// and the row's end (24).

// Q4KZ_T8(xo, OP): step j's products of the eight tokens.
#define Q4KZ_T8(xo, OP) \
	VPMADDUBSW xo(R11), Z12, Z24; \
	VPMADDUBSW xo(R11)(R9*1), Z12, Z25; \
	OP Z13, Z24, Z4; \
	OP Z13, Z25, Z5; \
	VPMADDUBSW xo(R11)(R9*2), Z12, Z24; \
	VPMADDUBSW xo(R8), Z12, Z25; \
	OP Z13, Z24, Z6; \
	OP Z13, Z25, Z7; \
	VPMADDUBSW xo(R11)(R9*4), Z12, Z24; \
	VPMADDUBSW xo(R8)(R9*2), Z12, Z25; \
	OP Z13, Z24, Z8; \
	OP Z13, Z25, Z9; \
	VPMADDUBSW xo(SI), Z12, Z24; \
	VPMADDUBSW xo(SI)(R9*1), Z12, Z25; \
	OP Z13, Z24, Z10; \
	OP Z13, Z25, Z11

// func ggmlQ4KTile4x8VNNI(w unsafe.Pointer, ws uintptr, xq *int8, xs uintptr, xd *float32, ds uintptr, bs32 *int16, bss uintptr, nb int, out *float32, os uintptr)
TEXT ·ggmlQ4KTile4x8VNNI(SB), NOSPLIT, $32-88
	MOVQ w+0(FP), R10
	MOVQ R10, 8(SP)
	MOVQ out+72(FP), R10
	MOVQ R10, 0(SP)
	MOVQ $4, 16(SP)
	MOVQ xs+24(FP), R9
	MOVQ ds+40(FP), R13
	MOVQ bss+56(FP), AX
	MOVL $0x0f0f0f0f, CX
	VPBROADCASTD CX, Z15
	MOVL $0xff00, CX
	KMOVW CX, K1
	VMOVDQU64 ggmlK4ZIdx<>+0(SB), Z26
	VMOVDQU64 ggmlK4ZIdx<>+64(SB), Z27
	VMOVDQU64 ggmlK4ZIdx<>+128(SB), Z28
	VMOVDQU64 ggmlK4ZIdx<>+192(SB), Z29
q4kz8_row:
	MOVQ 8(SP), R10
	MOVQ nb+64(FP), R11
	IMUL3Q $144, R11, R11
	ADDQ R10, R11
	MOVQ R11, 24(SP)
	MOVQ xq+16(FP), R11
	LEAQ (R11)(R9*2), R8
	ADDQ R9, R8
	LEAQ (R8)(R9*2), SI
	ADDQ R9, SI
	MOVQ xd+32(FP), R12
	LEAQ (R12)(R13*2), BX
	ADDQ R13, BX
	LEAQ (BX)(R13*2), DX
	ADDQ R13, DX
	MOVQ bs32+48(FP), R14
	LEAQ (R14)(AX*2), DI
	ADDQ AX, DI
	LEAQ (DI)(AX*2), CX
	ADDQ AX, CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
q4kz8_blk:
	Q4KZ_BLK(Q4KZ_T8)
	Q4KZ_PAIR((R12), (R12)(R13*1), (R14), (R14)(AX*1), Z4, Z5, Z20, Z0)
	Q4KZ_PAIR((R12)(R13*2), (BX), (R14)(AX*2), (DI), Z6, Z7, Z21, Z1)
	Q4KZ_PAIR((R12)(R13*4), (BX)(R13*2), (R14)(AX*4), (DI)(AX*2), Z8, Z9, Z22, Z2)
	Q4KZ_PAIR((DX), (DX)(R13*1), (CX), (CX)(AX*1), Z10, Z11, Z23, Z3)
	ADDQ $144, R10
	ADDQ $256, R11
	ADDQ $256, R8
	ADDQ $256, SI
	ADDQ $4, R12
	ADDQ $4, BX
	ADDQ $4, DX
	ADDQ $16, R14
	ADDQ $16, DI
	ADDQ $16, CX
	CMPQ R10, 24(SP)
	JNE q4kz8_blk
	MOVQ 0(SP), R10
	MOVQ os+80(FP), R11
	Q4KZ_STORE2(Z20, Z0, (R10), (R10)(R11*1))
	LEAQ (R10)(R11*2), R10
	Q4KZ_STORE2(Z21, Z1, (R10), (R10)(R11*1))
	LEAQ (R10)(R11*2), R10
	Q4KZ_STORE2(Z22, Z2, (R10), (R10)(R11*1))
	LEAQ (R10)(R11*2), R10
	Q4KZ_STORE2(Z23, Z3, (R10), (R10)(R11*1))
	ADDQ $4, 0(SP)
	MOVQ ws+8(FP), R11
	ADDQ R11, 8(SP)
	DECQ 16(SP)
	JNZ q4kz8_row
	VZEROUPPER
	RET

// The Q6_K 4 × 8 tile: the 4 × 4 tile's code for eight tokens, with a
// quad pair's scales in Z12, its codes in Z13, the 16 scales in Z19,
// Z0-Z3 the pairs' accumulators, Z4-Z11 the tokens' lanes, Z24, Z25 the
// products. Token k's pointers: quants R11 + k·xs for k = 0, 1, 2, 4
// (xs in R9), R8 = R11 + 3·xs for 3 and 5, SI = R11 + 6·xs for 6 and 7;
// their q8s R14, DI, CX the same; scales R12, BX, DX with ds (AX). The
// frame holds token 0's output of the row (0), the row (8), the rows
// left (16) and the row's end (24).

// Q6KZ_T8(xo, OP): a quad pair against the eight tokens' q8 and q8s.
#define Q6KZ_T8(xo, OP) \
	VPMADDUBSW xo(R11), Z13, Z24; \
	VPMADDUBSW xo(R11)(R9*1), Z13, Z25; \
	VPSUBW xo(R14), Z24, Z24; \
	VPSUBW xo(R14)(R9*1), Z25, Z25; \
	OP Z12, Z24, Z4; \
	OP Z12, Z25, Z5; \
	VPMADDUBSW xo(R11)(R9*2), Z13, Z24; \
	VPMADDUBSW xo(R8), Z13, Z25; \
	VPSUBW xo(R14)(R9*2), Z24, Z24; \
	VPSUBW xo(DI), Z25, Z25; \
	OP Z12, Z24, Z6; \
	OP Z12, Z25, Z7; \
	VPMADDUBSW xo(R11)(R9*4), Z13, Z24; \
	VPMADDUBSW xo(R8)(R9*2), Z13, Z25; \
	VPSUBW xo(R14)(R9*4), Z24, Z24; \
	VPSUBW xo(DI)(R9*2), Z25, Z25; \
	OP Z12, Z24, Z8; \
	OP Z12, Z25, Z9; \
	VPMADDUBSW xo(SI), Z13, Z24; \
	VPMADDUBSW xo(SI)(R9*1), Z13, Z25; \
	VPSUBW xo(CX), Z24, Z24; \
	VPSUBW xo(CX)(R9*1), Z25, Z25; \
	OP Z12, Z24, Z10; \
	OP Z12, Z25, Z11

// Q6KZ_HALF8 is Q6KZ_HALF for the eight tokens, in its registers.
#define Q6KZ_HALF8(OP, qlo, qho, xo, I0, I1) \
	VMOVDQU64 qlo(R10), Z16; \
	VBROADCASTI64X4 qho(R10), Z17; \
	VPSRLVW Z30, Z17, Z13; \
	VPANDD Z14, Z13, Z13; \
	VPSLLW $4, Z13, Z13; \
	VPANDD Z15, Z16, Z18; \
	VPORD Z18, Z13, Z13; \
	VPERMW Z19, I0, Z12; \
	Q6KZ_T8(xo, OP); \
	VPSRLVW Z31, Z17, Z13; \
	VPANDD Z14, Z13, Z13; \
	VPSLLW $4, Z13, Z13; \
	VPSRLW $4, Z16, Z18; \
	VPANDD Z15, Z18, Z18; \
	VPORD Z18, Z13, Z13; \
	VPERMW Z19, I1, Z12; \
	Q6KZ_T8(64+xo, VPDPWSSD)

// func ggmlQ6KTile4x8VNNI(w unsafe.Pointer, ws uintptr, xq *int8, q8s *int16, xs uintptr, xd *float32, ds uintptr, nb int, out *float32, os uintptr)
TEXT ·ggmlQ6KTile4x8VNNI(SB), NOSPLIT, $32-80
	MOVQ w+0(FP), R10
	MOVQ R10, 8(SP)
	MOVQ out+64(FP), R10
	MOVQ R10, 0(SP)
	MOVQ $4, 16(SP)
	MOVQ xs+32(FP), R9
	MOVQ ds+48(FP), AX
	MOVL $0x0f0f0f0f, CX
	VPBROADCASTD CX, Z15
	MOVL $0x03030303, CX
	VPBROADCASTD CX, Z14
	MOVL $0xff00, CX
	KMOVW CX, K1
	VMOVDQU64 ggmlK6ZIdx<>+0(SB), Z26
	VMOVDQU64 ggmlK6ZIdx<>+64(SB), Z27
	VMOVDQU64 ggmlK6ZIdx<>+128(SB), Z28
	VMOVDQU64 ggmlK6ZIdx<>+192(SB), Z29
	VMOVDQU64 ggmlK6ZShift<>+0(SB), Z30
	VMOVDQU64 ggmlK6ZShift<>+64(SB), Z31
q6kz8_row:
	MOVQ 8(SP), R10
	MOVQ nb+56(FP), R11
	IMUL3Q $210, R11, R11
	ADDQ R10, R11
	MOVQ R11, 24(SP)
	MOVQ xq+16(FP), R11
	LEAQ (R11)(R9*2), R8
	ADDQ R9, R8
	LEAQ (R8)(R9*2), SI
	ADDQ R9, SI
	MOVQ q8s+24(FP), R14
	LEAQ (R14)(R9*2), DI
	ADDQ R9, DI
	LEAQ (DI)(R9*2), CX
	ADDQ R9, CX
	MOVQ xd+40(FP), R12
	LEAQ (R12)(AX*2), BX
	ADDQ AX, BX
	LEAQ (BX)(AX*2), DX
	ADDQ AX, DX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
q6kz8_blk:
	PREFETCHT1 4096(R10)
	PREFETCHT1 4160(R10)
	PREFETCHT1 4224(R10)
	PREFETCHT1 4288(R10)
	VPMOVSXBW 192(R10), Y19
	Q6KZ_HALF8(VPMADDWD, 0, 128, 0, Z26, Z27)
	Q6KZ_HALF8(VPDPWSSD, 64, 160, 128, Z28, Z29)
	VPBROADCASTW 208(R10), Y21
	VCVTPH2PS Y21, Z21
	Q6KZ_PAIR((R12), (R12)(AX*1), Z4, Z5, Z0)
	Q6KZ_PAIR((R12)(AX*2), (BX), Z6, Z7, Z1)
	Q6KZ_PAIR((R12)(AX*4), (BX)(AX*2), Z8, Z9, Z2)
	Q6KZ_PAIR((DX), (DX)(AX*1), Z10, Z11, Z3)
	ADDQ $210, R10
	ADDQ $256, R11
	ADDQ $256, R8
	ADDQ $256, SI
	ADDQ $256, R14
	ADDQ $256, DI
	ADDQ $256, CX
	ADDQ $4, R12
	ADDQ $4, BX
	ADDQ $4, DX
	CMPQ R10, 24(SP)
	JNE q6kz8_blk
	MOVQ 0(SP), R10
	MOVQ os+72(FP), R11
	Q6KZ_STORE2(Z0, (R10), (R10)(R11*1))
	LEAQ (R10)(R11*2), R10
	Q6KZ_STORE2(Z1, (R10), (R10)(R11*1))
	LEAQ (R10)(R11*2), R10
	Q6KZ_STORE2(Z2, (R10), (R10)(R11*1))
	LEAQ (R10)(R11*2), R10
	Q6KZ_STORE2(Z3, (R10), (R10)(R11*1))
	ADDQ $4, 0(SP)
	MOVQ ws+8(FP), R11
	ADDQ R11, 8(SP)
	DECQ 16(SP)
	JNZ q6kz8_row
	VZEROUPPER
	RET
