//go:build amd64 && !purego

#include "textflag.h"

// func ascendAVX2(k *uint64, n int) bool
//
// Unsigned k[i] < k[i+1] as signed compares of the keys with their top
// bit flipped: eight pairs per iteration in two YMM registers, the
// results ANDed into Y6 and tested once at the end.
TEXT ·ascendAVX2(SB), NOSPLIT, $0-17
	MOVQ k+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ $0x8000000000000000, AX
	MOVQ AX, X7
	VPBROADCASTQ X7, Y7
	VPCMPEQQ Y6, Y6, Y6
	SHRQ $3, CX

loop:
	VMOVDQU 0(SI), Y0
	VMOVDQU 8(SI), Y1
	VMOVDQU 32(SI), Y2
	VMOVDQU 40(SI), Y3
	VPXOR   Y7, Y0, Y0
	VPXOR   Y7, Y1, Y1
	VPXOR   Y7, Y2, Y2
	VPXOR   Y7, Y3, Y3
	VPCMPGTQ Y0, Y1, Y1
	VPCMPGTQ Y2, Y3, Y3
	VPAND   Y1, Y6, Y6
	VPAND   Y3, Y6, Y6
	ADDQ    $64, SI
	DECQ    CX
	JNZ     loop

	VPCMPEQQ Y5, Y5, Y5
	VPXOR   Y5, Y6, Y6
	VPTEST  Y6, Y6
	SETEQ   ret+16(FP)
	VZEROUPPER
	RET
