//go:build amd64 && !purego

#include "textflag.h"

// func scoresAVX2(d int, vals *float32, idx *int32, m int, u, v, s *float32)
// For each of the m rows e = vals[idx[k]·d:], s[2k] = u·e and s[2k+1] =
// e·v, each summed in 8 lanes and then across them; d a positive
// multiple of 8, m > 0.
TEXT ·scoresAVX2(SB), NOSPLIT, $0-56
	MOVQ d+0(FP), CX
	SHLQ $2, CX
	MOVQ vals+8(FP), SI
	MOVQ idx+16(FP), BX
	MOVQ m+24(FP), DI
	MOVQ u+32(FP), R8
	MOVQ v+40(FP), R9
	MOVQ s+48(FP), R10
scrow:
	MOVLQSX (BX), DX
	IMULQ CX, DX
	ADDQ SI, DX
	XORQ R11, R11
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
scloop:
	VMOVUPS (DX)(R11*1), Y2
	VFMADD231PS (R8)(R11*1), Y2, Y0
	VFMADD231PS (R9)(R11*1), Y2, Y1
	ADDQ $32, R11
	CMPQ R11, CX
	JNE scloop
	VEXTRACTF128 $1, Y0, X2
	VADDPS X2, X0, X0
	VEXTRACTF128 $1, Y1, X3
	VADDPS X3, X1, X1
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X1, X1, X1
	VHADDPS X1, X1, X1
	VMOVSS X0, (R10)
	VMOVSS X1, 4(R10)
	ADDQ $8, R10
	ADDQ $4, BX
	DECQ DI
	JNZ scrow
	VZEROUPPER
	RET

// func updatesAVX2(d int, vals, grad *float32, idx *int32, m int, c, u, v, gu, gv *float32)
// For each of the m rows e = vals[idx[k]·d:] and ge = grad[idx[k]·d:], in
// order, with c1 = c[2k] and c2 = c[2k+1]: gu += c1·e, gv += c2·e,
// ge += c1·u + c2·v, 8 values a step; d a positive multiple of 8, m > 0.
TEXT ·updatesAVX2(SB), NOSPLIT, $0-80
	MOVQ d+0(FP), CX
	SHLQ $2, CX
	MOVQ vals+8(FP), SI
	MOVQ grad+16(FP), DI
	MOVQ idx+24(FP), BX
	MOVQ c+40(FP), R10
	MOVQ u+48(FP), R8
	MOVQ v+56(FP), R9
	MOVQ gu+64(FP), R12
	MOVQ gv+72(FP), R13
uprow:
	MOVLQSX (BX), AX
	IMULQ CX, AX
	LEAQ (DI)(AX*1), DX
	ADDQ SI, AX
	VBROADCASTSS (R10), Y8
	VBROADCASTSS 4(R10), Y9
	XORQ R11, R11
uploop2:
	VMOVUPS (AX)(R11*1), Y0
	VMOVUPS (R12)(R11*1), Y1
	VFMADD231PS Y0, Y8, Y1
	VMOVUPS Y1, (R12)(R11*1)
	VMOVUPS (R13)(R11*1), Y2
	VFMADD231PS Y0, Y9, Y2
	VMOVUPS Y2, (R13)(R11*1)
	VMOVUPS (DX)(R11*1), Y3
	VFMADD231PS (R8)(R11*1), Y8, Y3
	VFMADD231PS (R9)(R11*1), Y9, Y3
	VMOVUPS Y3, (DX)(R11*1)
	ADDQ $32, R11
	CMPQ R11, CX
	JNE uploop2
	ADDQ $8, R10
	ADDQ $4, BX
	DECQ m+32(FP)
	JNZ uprow
	VZEROUPPER
	RET
