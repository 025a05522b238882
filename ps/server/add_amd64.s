//go:build amd64 && !purego

#include "textflag.h"

// func addSSE(w, grad *float32, n int)
//
// w[i] += grad[i] for i < n, n a multiple of 16: four XMM registers of
// four lanes per iteration, unaligned loads and stores.
TEXT ·addSSE(SB), NOSPLIT, $0-24
	MOVQ w+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JZ   done

loop:
	MOVUPS 0(DI), X0
	MOVUPS 16(DI), X1
	MOVUPS 32(DI), X2
	MOVUPS 48(DI), X3
	MOVUPS 0(SI), X4
	MOVUPS 16(SI), X5
	MOVUPS 32(SI), X6
	MOVUPS 48(SI), X7
	ADDPS  X4, X0
	ADDPS  X5, X1
	ADDPS  X6, X2
	ADDPS  X7, X3
	MOVUPS X0, 0(DI)
	MOVUPS X1, 16(DI)
	MOVUPS X2, 32(DI)
	MOVUPS X3, 48(DI)
	ADDQ   $64, DI
	ADDQ   $64, SI
	DECQ   CX
	JNZ    loop

done:
	RET

// func prefetch2(a, b *float32)
TEXT ·prefetch2(SB), NOSPLIT, $0-16
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	PREFETCHT0 (AX)
	PREFETCHT0 (BX)
	RET
