//go:build amd64 && !purego

#include "textflag.h"

// func scores8AVX(n, stride int, w *float32, pos *int32, val *float32, z *float32)
// Y0 accumulates the 8 classes: per entry, the row's 8 weights times the
// entry's value, added in entry order.
TEXT ·scores8AVX(SB), NOSPLIT, $0-48
	MOVQ n+0(FP), CX
	MOVQ stride+8(FP), R11
	MOVQ w+16(FP), SI
	MOVQ pos+24(FP), DI
	MOVQ val+32(FP), DX
	MOVQ z+40(FP), R8
	VXORPS Y0, Y0, Y0
s8loop:
	MOVLQSX (DI), AX
	IMULQ R11, AX
	VBROADCASTSS (DX), Y1
	VMULPS (SI)(AX*1), Y1, Y2
	VADDPS Y2, Y0, Y0
	ADDQ $4, DI
	ADDQ $4, DX
	DECQ CX
	JNZ s8loop
	VMOVUPS Y0, (R8)
	VZEROUPPER
	RET

// func scores4AVX(n, stride int, w *float32, pos *int32, val *float32, z *float32)
TEXT ·scores4AVX(SB), NOSPLIT, $0-48
	MOVQ n+0(FP), CX
	MOVQ stride+8(FP), R11
	MOVQ w+16(FP), SI
	MOVQ pos+24(FP), DI
	MOVQ val+32(FP), DX
	MOVQ z+40(FP), R8
	VXORPS X0, X0, X0
s4loop:
	MOVLQSX (DI), AX
	IMULQ R11, AX
	VBROADCASTSS (DX), X1
	VMULPS (SI)(AX*1), X1, X2
	VADDPS X2, X0, X0
	ADDQ $4, DI
	ADDQ $4, DX
	DECQ CX
	JNZ s4loop
	VMOVUPS X0, (R8)
	VZEROUPPER
	RET

// func scatter8AVX(n, stride int, grad *float32, pos *int32, val *float32, d *float32)
// Per entry in turn: the row's 8 gradients plus d times the entry's
// value.
TEXT ·scatter8AVX(SB), NOSPLIT, $0-48
	MOVQ n+0(FP), CX
	MOVQ stride+8(FP), R11
	MOVQ grad+16(FP), SI
	MOVQ pos+24(FP), DI
	MOVQ val+32(FP), DX
	MOVQ d+40(FP), R8
	VMOVUPS (R8), Y3
g8loop:
	MOVLQSX (DI), AX
	IMULQ R11, AX
	VBROADCASTSS (DX), Y1
	VMULPS Y3, Y1, Y2
	VADDPS (SI)(AX*1), Y2, Y2
	VMOVUPS Y2, (SI)(AX*1)
	ADDQ $4, DI
	ADDQ $4, DX
	DECQ CX
	JNZ g8loop
	VZEROUPPER
	RET

// func scatter4AVX(n, stride int, grad *float32, pos *int32, val *float32, d *float32)
TEXT ·scatter4AVX(SB), NOSPLIT, $0-48
	MOVQ n+0(FP), CX
	MOVQ stride+8(FP), R11
	MOVQ grad+16(FP), SI
	MOVQ pos+24(FP), DI
	MOVQ val+32(FP), DX
	MOVQ d+40(FP), R8
	VMOVUPS (R8), X3
g4loop:
	MOVLQSX (DI), AX
	IMULQ R11, AX
	VBROADCASTSS (DX), X1
	VMULPS X3, X1, X2
	VADDPS (SI)(AX*1), X2, X2
	VMOVUPS X2, (SI)(AX*1)
	ADDQ $4, DI
	ADDQ $4, DX
	DECQ CX
	JNZ g4loop
	VZEROUPPER
	RET

// func scores16AVX(n, stride int, w *float32, pos *int32, val *float32, z *float32)
// scores8AVX for 16 classes in one pass: two independent sums, Y0 and Y3.
TEXT ·scores16AVX(SB), NOSPLIT, $0-48
	MOVQ n+0(FP), CX
	MOVQ stride+8(FP), R11
	MOVQ w+16(FP), SI
	MOVQ pos+24(FP), DI
	MOVQ val+32(FP), DX
	MOVQ z+40(FP), R8
	VXORPS Y0, Y0, Y0
	VXORPS Y3, Y3, Y3
s16loop:
	MOVLQSX (DI), AX
	IMULQ R11, AX
	VBROADCASTSS (DX), Y1
	VMULPS (SI)(AX*1), Y1, Y2
	VMULPS 32(SI)(AX*1), Y1, Y4
	VADDPS Y2, Y0, Y0
	VADDPS Y4, Y3, Y3
	ADDQ $4, DI
	ADDQ $4, DX
	DECQ CX
	JNZ s16loop
	VMOVUPS Y0, (R8)
	VMOVUPS Y3, 32(R8)
	VZEROUPPER
	RET

// func scatter16AVX(n, stride int, grad *float32, pos *int32, val *float32, d *float32)
// scatter8AVX for 16 classes in one pass.
TEXT ·scatter16AVX(SB), NOSPLIT, $0-48
	MOVQ n+0(FP), CX
	MOVQ stride+8(FP), R11
	MOVQ grad+16(FP), SI
	MOVQ pos+24(FP), DI
	MOVQ val+32(FP), DX
	MOVQ d+40(FP), R8
	VMOVUPS (R8), Y3
	VMOVUPS 32(R8), Y5
g16loop:
	MOVLQSX (DI), AX
	IMULQ R11, AX
	VBROADCASTSS (DX), Y1
	VMULPS Y3, Y1, Y2
	VMULPS Y5, Y1, Y4
	VADDPS (SI)(AX*1), Y2, Y2
	VADDPS 32(SI)(AX*1), Y4, Y4
	VMOVUPS Y2, (SI)(AX*1)
	VMOVUPS Y4, 32(SI)(AX*1)
	ADDQ $4, DI
	ADDQ $4, DX
	DECQ CX
	JNZ g16loop
	VZEROUPPER
	RET
