//go:build amd64 && !purego

#include "textflag.h"

// func dot2x4AVX(a0, a1, b0, b1, b2, b3 *float32, n int, res *[8]float32)
//
// Y0..Y3 accumulate a0·b0..b3 and Y4..Y7 a1·b0..b3, eight lanes each; each
// pass loads 8 floats of every row and runs 8 fused multiply-adds.
TEXT ·dot2x4AVX(SB), NOSPLIT, $0-64
	MOVQ a0+0(FP), SI
	MOVQ a1+8(FP), DI
	MOVQ b0+16(FP), R8
	MOVQ b1+24(FP), R9
	MOVQ b2+32(FP), R10
	MOVQ b3+40(FP), R11
	MOVQ n+48(FP), CX
	MOVQ res+56(FP), DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ AX, AX
	SHRQ $3, CX
	JZ   reduce

loop:
	VMOVUPS (SI)(AX*1), Y8
	VMOVUPS (DI)(AX*1), Y9
	VMOVUPS (R8)(AX*1), Y10
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y10, Y9, Y4
	VMOVUPS (R9)(AX*1), Y11
	VFMADD231PS Y11, Y8, Y1
	VFMADD231PS Y11, Y9, Y5
	VMOVUPS (R10)(AX*1), Y12
	VFMADD231PS Y12, Y8, Y2
	VFMADD231PS Y12, Y9, Y6
	VMOVUPS (R11)(AX*1), Y13
	VFMADD231PS Y13, Y8, Y3
	VFMADD231PS Y13, Y9, Y7
	ADDQ $32, AX
	DECQ CX
	JNZ  loop

reduce:
	// Sum the eight lanes of each accumulator: (l0+l4) + (l2+l6) and
	// (l1+l5) + (l3+l7), then the two halves.
#define REDUCE(Y, X, off) \
	VEXTRACTF128 $1, Y, X14 \
	VADDPS X14, X, X \
	VMOVHLPS X, X, X15 \
	VADDPS X15, X, X \
	VMOVSHDUP X, X15 \
	VADDSS X15, X, X \
	VMOVSS X, off(DX)

	REDUCE(Y0, X0, 0)
	REDUCE(Y1, X1, 4)
	REDUCE(Y2, X2, 8)
	REDUCE(Y3, X3, 12)
	REDUCE(Y4, X4, 16)
	REDUCE(Y5, X5, 20)
	REDUCE(Y6, X6, 24)
	REDUCE(Y7, X7, 28)
	VZEROUPPER
	RET

// func sumPosDiffAVX(a, b *float32, n int) float32
//
// Four 8-lane accumulators of max(a-b, 0), 32 elements per pass; n is a
// positive multiple of 32.
TEXT ·sumPosDiffAVX(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y15, Y15, Y15
	XORQ AX, AX
	SHRQ $5, CX

pdloop:
	VMOVUPS (SI)(AX*1), Y4
	VMOVUPS 32(SI)(AX*1), Y5
	VMOVUPS 64(SI)(AX*1), Y6
	VMOVUPS 96(SI)(AX*1), Y7
	VSUBPS (DI)(AX*1), Y4, Y4
	VSUBPS 32(DI)(AX*1), Y5, Y5
	VSUBPS 64(DI)(AX*1), Y6, Y6
	VSUBPS 96(DI)(AX*1), Y7, Y7
	VMAXPS Y15, Y4, Y4
	VMAXPS Y15, Y5, Y5
	VMAXPS Y15, Y6, Y6
	VMAXPS Y15, Y7, Y7
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2
	VADDPS Y7, Y3, Y3
	ADDQ $128, AX
	DECQ CX
	JNZ  pdloop

	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X14
	VADDPS X14, X0, X0
	VMOVHLPS X0, X0, X15
	VADDPS X15, X0, X0
	VMOVSHDUP X0, X15
	VADDSS X15, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET
