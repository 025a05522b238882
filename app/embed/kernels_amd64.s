//go:build amd64 && !purego

#include "textflag.h"

// func dot2AVX2(n int, u, v, e *float32, s *[2]float32)
// Y0 accumulates u·e and Y1 e·v, 8 lanes each, then each is summed.
TEXT ·dot2AVX2(SB), NOSPLIT, $0-40
	MOVQ n+0(FP), CX
	MOVQ u+8(FP), SI
	MOVQ v+16(FP), DI
	MOVQ e+24(FP), DX
	MOVQ s+32(FP), R8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
dotloop:
	VMOVUPS (DX), Y2
	VFMADD231PS (SI), Y2, Y0
	VFMADD231PS (DI), Y2, Y1
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $8, CX
	JNZ dotloop
	VEXTRACTF128 $1, Y0, X2
	VADDPS X2, X0, X0
	VEXTRACTF128 $1, Y1, X3
	VADDPS X3, X1, X1
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X1, X1, X1
	VHADDPS X1, X1, X1
	VMOVSS X0, (R8)
	VMOVSS X1, 4(R8)
	VZEROUPPER
	RET

// func update3AVX2(n int, c1, c2 float32, u, v, e, gu, gv, ge *float32)
// gu += c1·e, gv += c2·e, ge += c1·u + c2·v, 8 values a step.
TEXT ·update3AVX2(SB), NOSPLIT, $0-64
	MOVQ n+0(FP), CX
	VBROADCASTSS c1+8(FP), Y8
	VBROADCASTSS c2+12(FP), Y9
	MOVQ u+16(FP), SI
	MOVQ v+24(FP), DI
	MOVQ e+32(FP), DX
	MOVQ gu+40(FP), R8
	MOVQ gv+48(FP), R9
	MOVQ ge+56(FP), R10
uploop:
	VMOVUPS (DX), Y0
	VMOVUPS (R8), Y1
	VFMADD231PS Y0, Y8, Y1
	VMOVUPS Y1, (R8)
	VMOVUPS (R9), Y2
	VFMADD231PS Y0, Y9, Y2
	VMOVUPS Y2, (R9)
	VMOVUPS (R10), Y3
	VFMADD231PS (SI), Y8, Y3
	VFMADD231PS (DI), Y9, Y3
	VMOVUPS Y3, (R10)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	SUBQ $8, CX
	JNZ uploop
	VZEROUPPER
	RET
