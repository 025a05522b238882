//go:build amd64 && !purego

#include "textflag.h"

// func momentumSSE(w, grad, vel *float32, k int, lr, mu float32)
//
// For i < k, k a multiple of 8, eight lanes per iteration (g is grad, v
// vel):
//	v[i] = mu*v[i] + g[i]
//	w[i] = w[i] - lr*v[i]
TEXT ·momentumSSE(SB), NOSPLIT, $0-40
	MOVQ  w+0(FP), DI
	MOVQ  grad+8(FP), SI
	MOVQ  vel+16(FP), DX
	MOVQ  k+24(FP), CX
	MOVSS lr+32(FP), X8
	SHUFPS $0, X8, X8
	MOVSS mu+36(FP), X9
	SHUFPS $0, X9, X9
	SHRQ  $3, CX
	JZ    done

loop:
	MOVUPS (DX), X0    // v
	MOVUPS 16(DX), X1
	MULPS  X9, X0      // mu*v
	MULPS  X9, X1
	MOVUPS (SI), X2    // g
	MOVUPS 16(SI), X3
	ADDPS  X2, X0      // mu*v + g
	ADDPS  X3, X1
	MOVUPS X0, (DX)
	MOVUPS X1, 16(DX)
	MULPS  X8, X0      // lr*v
	MULPS  X8, X1
	MOVUPS (DI), X4    // w
	MOVUPS 16(DI), X5
	SUBPS  X0, X4      // w − lr*v
	SUBPS  X1, X5
	MOVUPS X4, (DI)
	MOVUPS X5, 16(DI)
	ADDQ   $32, DI
	ADDQ   $32, SI
	ADDQ   $32, DX
	DECQ   CX
	JNZ    loop

done:
	RET
