//go:build amd64 && !purego

#include "textflag.h"

// func adagradSSE(w, grad, sum *float32, k int, lr, eps, l2 float32)
//
// For i < k, k a multiple of 4, four lanes per iteration (g is grad, n
// sum):
//	gi = g[i] + l2*w[i]
//	n[i] += gi*gi
//	w[i] -= lr / (sqrt(n[i]) + eps) * gi
TEXT ·adagradSSE(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ sum+16(FP), DX
	MOVQ k+24(FP), CX
	MOVSS lr+32(FP), X9
	SHUFPS $0, X9, X9
	MOVSS eps+36(FP), X10
	SHUFPS $0, X10, X10
	MOVSS l2+40(FP), X8
	SHUFPS $0, X8, X8
	SHRQ $2, CX
	JZ   done

loop:
	MOVUPS (DI), X0 // w
	MOVUPS (SI), X1 // g
	MOVUPS (DX), X2 // n
	MOVAPS X0, X3
	MULPS  X8, X3   // l2*w
	ADDPS  X3, X1   // gi
	MOVAPS X1, X4
	MULPS  X1, X4   // gi*gi
	ADDPS  X4, X2   // n + gi*gi
	MOVUPS X2, (DX)
	SQRTPS X2, X5
	ADDPS  X10, X5  // sqrt(n) + eps
	MOVAPS X9, X6
	DIVPS  X5, X6   // lr / (sqrt(n) + eps)
	MULPS  X1, X6   // · gi
	SUBPS  X6, X0   // w − …
	MOVUPS X0, (DI)
	ADDQ   $16, DI
	ADDQ   $16, SI
	ADDQ   $16, DX
	DECQ   CX
	JNZ    loop

done:
	RET
