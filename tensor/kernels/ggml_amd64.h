// Macros shared by the ggml row kernels of ggml_amd64.s and
// ggml_q5_amd64.s (see ggml_amd64.s's header for the summation order
// they follow).

// HSUM8 folds the 8 lanes of Y0 into X1[0] as hsum_float_8. Uses X2.
#define HSUM8 \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS X0, X1, X1; \
	VMOVHLPS X1, X1, X2; \
	VADDPS X2, X1, X1; \
	VMOVSHDUP X1, X2; \
	VADDSS X2, X1, X1

// Q8SCALE sets Y7 to 8 copies of fp16 d at (R10) times the activation
// scale at (R12): GGML_FP16_TO_FP32(x.d)·GGML_FP16_TO_FP32(y.d). Uses Y8.
#define Q8SCALE \
	VPBROADCASTW (R10), X7; \
	VCVTPH2PS X7, Y7; \
	VBROADCASTSS (R12), Y8; \
	VMULPS Y8, Y7, Y7

// MULSUM_AVX2 is mul_sum_i8_pairs_float(Y2, Y3) into Y6 (float32 x8):
// |w| times x·sign(w), VPMADDUBSW to int16 pairs, VPMADDWD by ones (Y15).
#define MULSUM_AVX2 \
	VPSIGNB Y2, Y2, Y4; \
	VPSIGNB Y2, Y3, Y5; \
	VPMADDUBSW Y5, Y4, Y6; \
	VPMADDWD Y15, Y6, Y6; \
	VCVTDQ2PS Y6, Y6

// MULSUM_VNNI is the same with one VPDPBUSD (AVX512-VNNI on ymm), which
// gives the same int32 lanes.
#define MULSUM_VNNI \
	VPSIGNB Y2, Y2, Y4; \
	VPSIGNB Y2, Y3, Y5; \
	VPXOR Y6, Y6, Y6; \
	VPDPBUSD Y5, Y4, Y6; \
	VCVTDQ2PS Y6, Y6

// Q8ARGS loads the arguments shared by the Q8_0 and Q4_0 kernels and
// sets Y15 to int16 ones.
#define Q8ARGS \
	MOVQ w+0(FP), SI; \
	MOVQ ws+8(FP), BX; \
	MOVQ xq+16(FP), DI; \
	MOVQ xd+24(FP), R8; \
	MOVQ nb+32(FP), CX; \
	MOVQ out+40(FP), DX; \
	MOVQ nrows+48(FP), R9; \
	MOVL $0x00010001, AX; \
	VMOVD AX, X15; \
	VPBROADCASTD X15, Y15

// Q8T_SETUP loads the VNNI tile kernels' arguments (see ggmlQ8_0Tile4x8VNNI) and constants: SI the row-0 blocks,
// BX = ws and R8 = 3·ws the row strides; DI the token-0 quants, R12 their
// corrections, R9 = xs and R10 = 3·xs the token stride of both (cols
// bytes); R14 the token-0 scales, R15 = ds and AX = 3·ds their stride; CX
// the block count.
#define Q8T_SETUP \
	MOVQ w+0(FP), SI; \
	MOVQ ws+8(FP), BX; \
	LEAQ (BX)(BX*2), R8; \
	MOVQ xq+16(FP), DI; \
	MOVQ xc+24(FP), R12; \
	MOVQ xs+32(FP), R9; \
	LEAQ (R9)(R9*2), R10; \
	MOVQ xd+40(FP), R14; \
	MOVQ ds+48(FP), R15; \
	LEAQ (R15)(R15*2), AX; \
	MOVQ nb+56(FP), CX; \
	MOVL $0x80808080, DX; \
	VPBROADCASTD DX, Z31; \
	MOVL $0xff00, DX; \
	KMOVW DX, K1

// Q8ROW starts a row: block, activation and scale pointers, count, acc.
#define Q8ROW \
	MOVQ SI, R10; \
	MOVQ DI, R11; \
	MOVQ R8, R12; \
	MOVQ CX, R13; \
	VXORPS Y0, Y0, Y0

// Q8ENDROW stores the row's sum and moves to the next row.
#define Q8ENDROW \
	HSUM8; \
	VMOVSS X1, (DX); \
	ADDQ $4, DX; \
	ADDQ BX, SI; \
	DECQ R9


// The tiles' token and store macros, shared by the Q8_0, Q4_0 and Q5_0
// tiles (see ggml_amd64.s's tile section for their registers).

// Q8T_TOKEN is one token against both row pairs: x its 32 quants and c
// their lane corrections xc (each broadcast to both halves), d its scale;
// A0 and A1 the accumulators of row pairs 0 and 1. Per pair: lanes =
// xc + Σ(w+128)·x, acc = fma(d_w·d_x, float(lanes), acc).
#define Q8T_TOKEN(x, c, d, A0, A1) \
	VBROADCASTI64X4 x, Z20; \
	VBROADCASTI64X4 c, Z22; \
	VBROADCASTI64X4 c, Z24; \
	VPDPBUSD Z20, Z16, Z22; \
	VPDPBUSD Z20, Z17, Z24; \
	VCVTDQ2PS Z22, Z22; \
	VCVTDQ2PS Z24, Z24; \
	VMULPS.BCST d, Z18, Z23; \
	VMULPS.BCST d, Z19, Z25; \
	VFMADD231PS Z22, Z23, A0; \
	VFMADD231PS Z24, Z25, A1

// Q8T_STORE folds the accumulator A (rows 2p, 2p+1 of one token: AY its
// low half) into o0 and o1 as hsum_float_8 does. Uses Z26, Z27, Z28.
#define Q8T_STORE(AZ, AY, AX, o0, o1) \
	VEXTRACTF32X4 $1, AY, X26; \
	VADDPS AX, X26, X26; \
	VMOVHLPS X26, X26, X27; \
	VADDPS X27, X26, X26; \
	VMOVSHDUP X26, X27; \
	VADDSS X27, X26, X26; \
	VMOVSS X26, o0; \
	VEXTRACTF64X4 $1, AZ, Y28; \
	VEXTRACTF32X4 $1, Y28, X26; \
	VADDPS X28, X26, X26; \
	VMOVHLPS X26, X26, X27; \
	VADDPS X27, X26, X26; \
	VMOVSHDUP X26, X27; \
	VADDSS X27, X26, X26; \
	VMOVSS X26, o1

// Q8A_PAIR adds block w · token x (in X, scale at d) to accumulator A:
// lanes = madd(maddubs(|w|, sign(x, w)), 1), A = fma(d_w·d_x, float(lanes),
// A). W is the row's signed weights (memory or Y14).
#define Q8A_PAIR(W, X, d, A) \
	VPSIGNB W, X, Y12; \
	VPMADDUBSW Y12, Y8, Y12; \
	VPMADDWD Y15, Y12, Y12; \
	VCVTDQ2PS Y12, Y12; \
	VBROADCASTSS d, Y13; \
	VMULPS Y13, Y9, Y13; \
	VFMADD231PS Y12, Y13, A

// Q8A_SCALE sets Y9 to 8 copies of the row's fp16 scale at d.
#define Q8A_SCALE(d) \
	VPBROADCASTW d, X9; \
	VCVTPH2PS X9, Y9

// Q8A_STORE folds accumulator A into o as hsum_float_8. Uses X12, X13.
#define Q8A_STORE(AY, AX, o) \
	VEXTRACTF128 $1, AY, X12; \
	VADDPS AX, X12, X12; \
	VMOVHLPS X12, X12, X13; \
	VADDPS X13, X12, X12; \
	VMOVSHDUP X12, X13; \
	VADDSS X13, X12, X12; \
	VMOVSS X12, o

// K4SCALES unpacks the 12 scale bytes b0..b11 of a Q4_K or Q5_K
// super-block, loaded to the low bytes of S (the load's last 4 bytes are
// quants, unused), into A as ggml's utmp, bytes [sc0..sc7, mn0..mn7]:
//   sc0-3 = b0-3 & 63            sc4-7 = b8-11 & 15 | (b0-3 >> 6) << 4
//   mn0-3 = b4-7 & 63            mn4-7 = b8-11 >> 4 | (b4-7 >> 6) << 4
// from P = [b0-3, b8-11, b4-7, b8-11] and Q = [0, b0-3, 0, b4-7], with
// byte shuffles rather than ggml's 32-bit shifts (the same bytes). B and
// C are scratch. The constants are static, so each file that includes
// this header has its own copy.
#define K4SCALES(S, A, B, C) \
	VPSHUFB ggmlK4P<>(SB), S, A; \
	VPSHUFB ggmlK4Q<>(SB), S, B; \
	VPSRLW $4, A, C; \
	VPAND ggmlK4M1<>(SB), A, A; \
	VPAND ggmlK4M2<>(SB), C, C; \
	VPSRLW $2, B, B; \
	VPAND ggmlK4M3<>(SB), B, B; \
	VPOR C, A, A; \
	VPOR B, A, A

DATA ggmlK4P<>+0(SB)/8, $0x0b0a090803020100
DATA ggmlK4P<>+8(SB)/8, $0x0b0a090807060504
GLOBL ggmlK4P<>(SB), RODATA|NOPTR, $16
DATA ggmlK4Q<>+0(SB)/8, $0x0302010080808080
DATA ggmlK4Q<>+8(SB)/8, $0x0706050480808080
GLOBL ggmlK4Q<>(SB), RODATA|NOPTR, $16
DATA ggmlK4M1<>+0(SB)/8, $0x0f0f0f0f3f3f3f3f
DATA ggmlK4M1<>+8(SB)/8, $0x000000003f3f3f3f
GLOBL ggmlK4M1<>(SB), RODATA|NOPTR, $16
DATA ggmlK4M2<>+0(SB)/8, $0x0000000000000000
DATA ggmlK4M2<>+8(SB)/8, $0x0f0f0f0f00000000
GLOBL ggmlK4M2<>(SB), RODATA|NOPTR, $16
DATA ggmlK4M3<>+0(SB)/8, $0x3030303030303030
DATA ggmlK4M3<>+8(SB)/8, $0x3030303030303030
GLOBL ggmlK4M3<>(SB), RODATA|NOPTR, $16
