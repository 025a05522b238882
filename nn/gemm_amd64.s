//go:build !purego

#include "textflag.h"

// func kernelAVX2(k int, a, b, c *float32, ldb, ldc int, alpha float32)
// Y0..Y11 hold the 6×16 tile (two YMM per row), Y12 and Y13 a row of B,
// Y14 and Y15 broadcast values of A. Rows of B are ldb values apart.
TEXT ·kernelAVX2(SB), NOSPLIT, $0-52
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldb+32(FP), R9
	SHLQ $2, R9
	MOVQ ldc+40(FP), R8
	SHLQ $2, R8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
loop4:
	CMPQ CX, $4
	JL tail
	VMOVUPS (DI), Y12
	VMOVUPS 32(DI), Y13
	ADDQ R9, DI
	VBROADCASTSS 0(SI), Y14
	VFMADD231PS Y12, Y14, Y0
	VFMADD231PS Y13, Y14, Y1
	VBROADCASTSS 4(SI), Y15
	VFMADD231PS Y12, Y15, Y2
	VFMADD231PS Y13, Y15, Y3
	VBROADCASTSS 8(SI), Y14
	VFMADD231PS Y12, Y14, Y4
	VFMADD231PS Y13, Y14, Y5
	VBROADCASTSS 12(SI), Y15
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VBROADCASTSS 16(SI), Y14
	VFMADD231PS Y12, Y14, Y8
	VFMADD231PS Y13, Y14, Y9
	VBROADCASTSS 20(SI), Y15
	VFMADD231PS Y12, Y15, Y10
	VFMADD231PS Y13, Y15, Y11
	VMOVUPS (DI), Y12
	VMOVUPS 32(DI), Y13
	ADDQ R9, DI
	VBROADCASTSS 24(SI), Y14
	VFMADD231PS Y12, Y14, Y0
	VFMADD231PS Y13, Y14, Y1
	VBROADCASTSS 28(SI), Y15
	VFMADD231PS Y12, Y15, Y2
	VFMADD231PS Y13, Y15, Y3
	VBROADCASTSS 32(SI), Y14
	VFMADD231PS Y12, Y14, Y4
	VFMADD231PS Y13, Y14, Y5
	VBROADCASTSS 36(SI), Y15
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VBROADCASTSS 40(SI), Y14
	VFMADD231PS Y12, Y14, Y8
	VFMADD231PS Y13, Y14, Y9
	VBROADCASTSS 44(SI), Y15
	VFMADD231PS Y12, Y15, Y10
	VFMADD231PS Y13, Y15, Y11
	VMOVUPS (DI), Y12
	VMOVUPS 32(DI), Y13
	ADDQ R9, DI
	VBROADCASTSS 48(SI), Y14
	VFMADD231PS Y12, Y14, Y0
	VFMADD231PS Y13, Y14, Y1
	VBROADCASTSS 52(SI), Y15
	VFMADD231PS Y12, Y15, Y2
	VFMADD231PS Y13, Y15, Y3
	VBROADCASTSS 56(SI), Y14
	VFMADD231PS Y12, Y14, Y4
	VFMADD231PS Y13, Y14, Y5
	VBROADCASTSS 60(SI), Y15
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VBROADCASTSS 64(SI), Y14
	VFMADD231PS Y12, Y14, Y8
	VFMADD231PS Y13, Y14, Y9
	VBROADCASTSS 68(SI), Y15
	VFMADD231PS Y12, Y15, Y10
	VFMADD231PS Y13, Y15, Y11
	VMOVUPS (DI), Y12
	VMOVUPS 32(DI), Y13
	ADDQ R9, DI
	VBROADCASTSS 72(SI), Y14
	VFMADD231PS Y12, Y14, Y0
	VFMADD231PS Y13, Y14, Y1
	VBROADCASTSS 76(SI), Y15
	VFMADD231PS Y12, Y15, Y2
	VFMADD231PS Y13, Y15, Y3
	VBROADCASTSS 80(SI), Y14
	VFMADD231PS Y12, Y14, Y4
	VFMADD231PS Y13, Y14, Y5
	VBROADCASTSS 84(SI), Y15
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VBROADCASTSS 88(SI), Y14
	VFMADD231PS Y12, Y14, Y8
	VFMADD231PS Y13, Y14, Y9
	VBROADCASTSS 92(SI), Y15
	VFMADD231PS Y12, Y15, Y10
	VFMADD231PS Y13, Y15, Y11
	ADDQ $96, SI
	SUBQ $4, CX
	JMP loop4
tail:
	TESTQ CX, CX
	JE done
	VMOVUPS (DI), Y12
	VMOVUPS 32(DI), Y13
	ADDQ R9, DI
	VBROADCASTSS 0(SI), Y14
	VFMADD231PS Y12, Y14, Y0
	VFMADD231PS Y13, Y14, Y1
	VBROADCASTSS 4(SI), Y15
	VFMADD231PS Y12, Y15, Y2
	VFMADD231PS Y13, Y15, Y3
	VBROADCASTSS 8(SI), Y14
	VFMADD231PS Y12, Y14, Y4
	VFMADD231PS Y13, Y14, Y5
	VBROADCASTSS 12(SI), Y15
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VBROADCASTSS 16(SI), Y14
	VFMADD231PS Y12, Y14, Y8
	VFMADD231PS Y13, Y14, Y9
	VBROADCASTSS 20(SI), Y15
	VFMADD231PS Y12, Y15, Y10
	VFMADD231PS Y13, Y15, Y11
	ADDQ $24, SI
	DECQ CX
	JMP tail
done:
	VBROADCASTSS alpha+48(FP), Y14
	VMOVUPS (DX), Y12
	VFMADD231PS Y0, Y14, Y12
	VMOVUPS Y12, (DX)
	VMOVUPS 32(DX), Y13
	VFMADD231PS Y1, Y14, Y13
	VMOVUPS Y13, 32(DX)
	ADDQ R8, DX
	VMOVUPS (DX), Y12
	VFMADD231PS Y2, Y14, Y12
	VMOVUPS Y12, (DX)
	VMOVUPS 32(DX), Y13
	VFMADD231PS Y3, Y14, Y13
	VMOVUPS Y13, 32(DX)
	ADDQ R8, DX
	VMOVUPS (DX), Y12
	VFMADD231PS Y4, Y14, Y12
	VMOVUPS Y12, (DX)
	VMOVUPS 32(DX), Y13
	VFMADD231PS Y5, Y14, Y13
	VMOVUPS Y13, 32(DX)
	ADDQ R8, DX
	VMOVUPS (DX), Y12
	VFMADD231PS Y6, Y14, Y12
	VMOVUPS Y12, (DX)
	VMOVUPS 32(DX), Y13
	VFMADD231PS Y7, Y14, Y13
	VMOVUPS Y13, 32(DX)
	ADDQ R8, DX
	VMOVUPS (DX), Y12
	VFMADD231PS Y8, Y14, Y12
	VMOVUPS Y12, (DX)
	VMOVUPS 32(DX), Y13
	VFMADD231PS Y9, Y14, Y13
	VMOVUPS Y13, 32(DX)
	ADDQ R8, DX
	VMOVUPS (DX), Y12
	VFMADD231PS Y10, Y14, Y12
	VMOVUPS Y12, (DX)
	VMOVUPS 32(DX), Y13
	VFMADD231PS Y11, Y14, Y13
	VMOVUPS Y13, 32(DX)
	VZEROUPPER
	RET

// func dotAVX2(k int, a0, a1, a2, b0, b1, b2, b3 *float32, out *[12]float32)
// Accumulates the 3×4 dot products of rows a0..a2 with rows b0..b3 over
// k values (a positive multiple of 8) in Y(4i+j), eight partial sums
// each, and stores their totals to out[4i+j].
TEXT ·dotAVX2(SB), NOSPLIT, $0-72
	MOVQ k+0(FP), CX
	SHLQ $2, CX
	MOVQ a0+8(FP), SI
	MOVQ a1+16(FP), DI
	MOVQ a2+24(FP), R8
	MOVQ b0+32(FP), R9
	MOVQ b1+40(FP), R10
	MOVQ b2+48(FP), R11
	MOVQ b3+56(FP), R12
	XORQ AX, AX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
dotloop:
	VMOVUPS (SI)(AX*1), Y12
	VMOVUPS (DI)(AX*1), Y13
	VMOVUPS (R8)(AX*1), Y14
	VMOVUPS (R9)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y8
	VMOVUPS (R10)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y1
	VFMADD231PS Y15, Y13, Y5
	VFMADD231PS Y15, Y14, Y9
	VMOVUPS (R11)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y2
	VFMADD231PS Y15, Y13, Y6
	VFMADD231PS Y15, Y14, Y10
	VMOVUPS (R12)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y7
	VFMADD231PS Y15, Y14, Y11
	ADDQ $32, AX
	CMPQ AX, CX
	JL dotloop
	MOVQ out+64(FP), DX
	// Row i's four sums: two rounds of horizontal adds, then the halves.
	VHADDPS Y1, Y0, Y12
	VHADDPS Y3, Y2, Y13
	VHADDPS Y13, Y12, Y12
	VEXTRACTF128 $1, Y12, X13
	VADDPS X13, X12, X12
	VMOVUPS X12, 0(DX)
	VHADDPS Y5, Y4, Y12
	VHADDPS Y7, Y6, Y13
	VHADDPS Y13, Y12, Y12
	VEXTRACTF128 $1, Y12, X13
	VADDPS X13, X12, X12
	VMOVUPS X12, 16(DX)
	VHADDPS Y9, Y8, Y12
	VHADDPS Y11, Y10, Y13
	VHADDPS Y13, Y12, Y12
	VEXTRACTF128 $1, Y12, X13
	VADDPS X13, X12, X12
	VMOVUPS X12, 32(DX)
	VZEROUPPER
	RET

// func addRowsAVX(dst, src *float32, rows, cols, ld, ls int)
// Adds rows of cols values of src (rows ls values apart) into dst (rows
// ld values apart): dst[r·ld+i] += src[r·ls+i], eight values at a time,
// then four, then one; each sum is dst's value plus src's, as Go's
// scalar d += s.
TEXT ·addRowsAVX(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ rows+16(FP), BX
	MOVQ ld+32(FP), R8
	SHLQ $2, R8
	MOVQ ls+40(FP), R9
	SHLQ $2, R9
row:
	TESTQ BX, BX
	JLE done
	MOVQ cols+24(FP), CX
	MOVQ DI, DX
	MOVQ SI, AX
oct:
	CMPQ CX, $8
	JL quad
	VMOVUPS (DX), Y0
	VADDPS (AX), Y0, Y0
	VMOVUPS Y0, (DX)
	ADDQ $32, DX
	ADDQ $32, AX
	SUBQ $8, CX
	JMP oct
quad:
	CMPQ CX, $4
	JL one
	VMOVUPS (DX), X0
	VADDPS (AX), X0, X0
	VMOVUPS X0, (DX)
	ADDQ $16, DX
	ADDQ $16, AX
	SUBQ $4, CX
one:
	TESTQ CX, CX
	JLE next
	VMOVSS (DX), X0
	VADDSS (AX), X0, X0
	VMOVSS X0, (DX)
	ADDQ $4, DX
	ADDQ $4, AX
	DECQ CX
	JMP one
next:
	ADDQ R8, DI
	ADDQ R9, SI
	DECQ BX
	JMP row
done:
	VZEROUPPER
	RET

// func pauseAMD64()
// Four PAUSE instructions: a spinning goroutine's wait between looks at
// a flag, which leaves the core's resources to others meanwhile.
TEXT ·pauseAMD64(SB), NOSPLIT, $0-0
	PAUSE
	PAUSE
	PAUSE
	PAUSE
	RET

// func reluAVX(p *float32, n int)
// Sets p[i] to max(p[i], 0) as Go's max does (a NaN stays, −0 becomes
// +0), eight values at a time: n is a multiple of 8. The mask is
// "not p[i] ≤ 0" (true for a positive value and a NaN).
TEXT ·reluAVX(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), DI
	MOVQ n+8(FP), CX
	VXORPS Y15, Y15, Y15
reluloop:
	CMPQ CX, $8
	JL reludone
	VMOVUPS (DI), Y0
	VCMPPS $0x16, Y15, Y0, Y1
	VANDPS Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	SUBQ $8, CX
	JMP reluloop
reludone:
	VZEROUPPER
	RET

// func maskAVX(d, y *float32, n int)
// Sets d[i] to +0 where y[i] > 0 does not hold (a NaN included), eight
// values at a time: n is a multiple of 8.
TEXT ·maskAVX(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ y+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS Y15, Y15, Y15
maskloop:
	CMPQ CX, $8
	JL maskdone
	VMOVUPS (SI), Y0
	VCMPPS $0x1e, Y15, Y0, Y1
	VANDPS (DI), Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JMP maskloop
maskdone:
	VZEROUPPER
	RET

// func axpyAVX(dst, src *float32, n int, a float32)
// dst[i] += a·src[i], the product rounded before the sum as Go's scalar
// code does, eight values at a time: n is a multiple of 8.
TEXT ·axpyAVX(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS a+24(FP), Y15
axpyloop:
	CMPQ CX, $8
	JL axpydone
	VMULPS (SI), Y15, Y0
	VADDPS (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JMP axpyloop
axpydone:
	VZEROUPPER
	RET

// The offsets of the inputs of pool2AVX's eight outputs, in the order
// its shuffles leave them (outputs 0, 1, 4, 5, 2, 3, 6, 7).
DATA pool2Off<>+0(SB)/4, $0
DATA pool2Off<>+4(SB)/4, $2
DATA pool2Off<>+8(SB)/4, $8
DATA pool2Off<>+12(SB)/4, $10
DATA pool2Off<>+16(SB)/4, $4
DATA pool2Off<>+20(SB)/4, $6
DATA pool2Off<>+24(SB)/4, $12
DATA pool2Off<>+28(SB)/4, $14
GLOBL pool2Off<>(SB), RODATA|NOPTR, $32

// GOMAX sets dst to Go's max(x, y) for values that are not NaN (the
// larger; +0 for −0 and +0), and to a NaN where either is one.
#define GOMAX(x, y, dst, t1, t2) \
	VMAXPS y, x, dst \
	VCMPPS $0, y, x, t1 \
	VANDPS y, x, t2 \
	VBLENDVPS t1, t2, dst, dst \
	VCMPPS $3, y, x, t1 \
	VORPS t1, dst, dst

// func pool2AVX(r0, r1 *float32, w, idx int, floor float32, d *float32, at *int32)
// Eight outputs of 2×2 max pooling with stride 2 (maxPool.forwardPart):
// the windows of r0[0:16] over r1[0:16] (the next row, w values on),
// r0[0] being value idx of the planes. d[i] = max(best, floor) and at[i]
// the index of the first maximum of window i, or −1 where best > floor
// does not hold; a window's top pair wins ties, and in a pair the left.
TEXT ·pool2AVX(SB), NOSPLIT, $0-56
	MOVQ r0+0(FP), SI
	MOVQ r1+8(FP), DI
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS (DI), Y2
	VMOVUPS 32(DI), Y3
	VSHUFPS $0x88, Y1, Y0, Y4 // a: even values of the top row
	VSHUFPS $0xdd, Y1, Y0, Y5 // b: odd
	VSHUFPS $0x88, Y3, Y2, Y6 // c: even values of the bottom row
	VSHUFPS $0xdd, Y3, Y2, Y7 // e: odd
	VCMPPS $0x1e, Y4, Y5, Y8 // b > a
	VCMPPS $0x1e, Y6, Y7, Y9 // e > c
	GOMAX(Y4, Y5, Y10, Y0, Y1) // top
	GOMAX(Y6, Y7, Y11, Y0, Y1) // bottom
	VPBROADCASTD idx+24(FP), Y12
	VPADDD pool2Off<>(SB), Y12, Y12
	VPSUBD Y8, Y12, Y4 // top's index: idx + (b > a)
	VPBROADCASTD w+16(FP), Y5
	VPADDD Y5, Y12, Y5
	VPSUBD Y9, Y5, Y5 // bottom's: idx + w + (e > c)
	VCMPPS $0x1e, Y10, Y11, Y6 // bottom > top
	VBLENDVPS Y6, Y5, Y4, Y7 // the window's index
	GOMAX(Y10, Y11, Y13, Y0, Y1) // best
	VBROADCASTSS floor+32(FP), Y14
	GOMAX(Y13, Y14, Y15, Y0, Y1) // max(best, floor)
	VCMPPS $0x1e, Y14, Y13, Y2 // best > floor
	VPCMPEQD Y3, Y3, Y3
	VBLENDVPS Y2, Y7, Y3, Y3
	VPERMQ $0xd8, Y15, Y15
	VPERMQ $0xd8, Y3, Y3
	MOVQ d+40(FP), SI
	MOVQ at+48(FP), DI
	VMOVUPS Y15, (SI)
	VMOVDQU Y3, (DI)
	VZEROUPPER
	RET

// The offsets of the inputs of pool2x4AVX's four outputs.
DATA pool2Off4<>+0(SB)/4, $0
DATA pool2Off4<>+4(SB)/4, $2
DATA pool2Off4<>+8(SB)/4, $4
DATA pool2Off4<>+12(SB)/4, $6
GLOBL pool2Off4<>(SB), RODATA|NOPTR, $16

// func pool2x4AVX(r0, r1 *float32, w, idx int, floor float32, d *float32, at *int32)
// pool2AVX on four windows, r0[0:8] over r1[0:8], in XMM registers: for
// rows of four to seven windows (the second convolution's 5).
TEXT ·pool2x4AVX(SB), NOSPLIT, $0-56
	MOVQ r0+0(FP), SI
	MOVQ r1+8(FP), DI
	VMOVUPS (SI), X0
	VMOVUPS 16(SI), X1
	VMOVUPS (DI), X2
	VMOVUPS 16(DI), X3
	VSHUFPS $0x88, X1, X0, X4 // a: even values of the top row
	VSHUFPS $0xdd, X1, X0, X5 // b: odd
	VSHUFPS $0x88, X3, X2, X6 // c: even values of the bottom row
	VSHUFPS $0xdd, X3, X2, X7 // e: odd
	VCMPPS $0x1e, X4, X5, X8 // b > a
	VCMPPS $0x1e, X6, X7, X9 // e > c
	GOMAX(X4, X5, X10, X0, X1) // top
	GOMAX(X6, X7, X11, X0, X1) // bottom
	VPBROADCASTD idx+24(FP), X12
	VPADDD pool2Off4<>(SB), X12, X12
	VPSUBD X8, X12, X4 // top's index: idx + (b > a)
	VPBROADCASTD w+16(FP), X5
	VPADDD X5, X12, X5
	VPSUBD X9, X5, X5 // bottom's: idx + w + (e > c)
	VCMPPS $0x1e, X10, X11, X6 // bottom > top
	VBLENDVPS X6, X5, X4, X7 // the window's index
	GOMAX(X10, X11, X13, X0, X1) // best
	VBROADCASTSS floor+32(FP), X14
	GOMAX(X13, X14, X15, X0, X1) // max(best, floor)
	VCMPPS $0x1e, X14, X13, X2 // best > floor
	VPCMPEQD X3, X3, X3
	VBLENDVPS X2, X7, X3, X3
	MOVQ d+40(FP), SI
	MOVQ at+48(FP), DI
	VMOVUPS X15, (SI)
	VMOVDQU X3, (DI)
	RET

// func sumAVX(p *float32, n int) float32
// The sum of n values (a positive multiple of 32) in 32 running sums,
// four YMM registers, reduced in a fixed order: the registers pairwise,
// then the eight lanes as (0+4, 1+5, 2+6, 3+7), then pairwise again.
TEXT ·sumAVX(SB), NOSPLIT, $0-20
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
sumloop:
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	ADDQ $128, SI
	SUBQ $32, CX
	JG sumloop
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// Each of eight windows' index and gradient twice, for the two columns
// of its rows (unpool2AVX).
DATA unpoolDup<>+0(SB)/4, $0
DATA unpoolDup<>+4(SB)/4, $0
DATA unpoolDup<>+8(SB)/4, $1
DATA unpoolDup<>+12(SB)/4, $1
DATA unpoolDup<>+16(SB)/4, $2
DATA unpoolDup<>+20(SB)/4, $2
DATA unpoolDup<>+24(SB)/4, $3
DATA unpoolDup<>+28(SB)/4, $3
DATA unpoolDup<>+32(SB)/4, $4
DATA unpoolDup<>+36(SB)/4, $4
DATA unpoolDup<>+40(SB)/4, $5
DATA unpoolDup<>+44(SB)/4, $5
DATA unpoolDup<>+48(SB)/4, $6
DATA unpoolDup<>+52(SB)/4, $6
DATA unpoolDup<>+56(SB)/4, $7
DATA unpoolDup<>+60(SB)/4, $7
GLOBL unpoolDup<>(SB), RODATA|NOPTR, $64

DATA unpoolSeq<>+0(SB)/4, $0
DATA unpoolSeq<>+4(SB)/4, $1
DATA unpoolSeq<>+8(SB)/4, $2
DATA unpoolSeq<>+12(SB)/4, $3
DATA unpoolSeq<>+16(SB)/4, $4
DATA unpoolSeq<>+20(SB)/4, $5
DATA unpoolSeq<>+24(SB)/4, $6
DATA unpoolSeq<>+28(SB)/4, $7
GLOBL unpoolSeq<>(SB), RODATA|NOPTR, $32

// func unpool2AVX(dy *float32, at *int32, idx, w int, dx0, dx1 *float32)
// The input gradient of eight 2×2 windows (maxPool.backwardPart): the
// windows' top-left values are idx, idx+2, …, idx+14 of the planes, at
// their recorded maxima, and the rows dx0[0:16] and dx1[0:16] (w values
// on) are set to dy+0 where a value is its window's maximum, else +0.
TEXT ·unpool2AVX(SB), NOSPLIT, $0-48
	MOVQ dy+0(FP), SI
	MOVQ at+8(FP), DI
	VXORPS Y15, Y15, Y15
	VADDPS (SI), Y15, Y0 // dy + 0, as +0 + dy
	VMOVDQU (DI), Y1
	VMOVDQU unpoolDup<>+0(SB), Y2
	VMOVDQU unpoolDup<>+32(SB), Y3
	VPERMPS Y0, Y2, Y4 // dy of windows 0-3, each twice
	VPERMPS Y0, Y3, Y5 // 4-7
	VPERMD Y1, Y2, Y6 // their indices
	VPERMD Y1, Y3, Y7
	VPBROADCASTD idx+16(FP), Y8
	VPADDD unpoolSeq<>(SB), Y8, Y8 // top row: idx+0..7
	VPCMPEQD Y9, Y9, Y9
	VPSRLD $31, Y9, Y9
	VPSLLD $3, Y9, Y9 // 8s
	VPADDD Y9, Y8, Y9 // idx+8..15
	VPCMPEQD Y8, Y6, Y10
	VANDPS Y4, Y10, Y10
	VPCMPEQD Y9, Y7, Y11
	VANDPS Y5, Y11, Y11
	MOVQ dx0+32(FP), DX
	VMOVUPS Y10, (DX)
	VMOVUPS Y11, 32(DX)
	VPBROADCASTD w+24(FP), Y12
	VPADDD Y12, Y8, Y8 // bottom row
	VPADDD Y12, Y9, Y9
	VPCMPEQD Y8, Y6, Y10
	VANDPS Y4, Y10, Y10
	VPCMPEQD Y9, Y7, Y11
	VANDPS Y5, Y11, Y11
	MOVQ dx1+40(FP), DX
	VMOVUPS Y10, (DX)
	VMOVUPS Y11, 32(DX)
	VZEROUPPER
	RET

// func copyRowsAVX(dst, src *float32, rows, cols, ld, ls int)
// Copies rows of cols values (8 ≤ cols) of src (rows ls values apart)
// into dst (rows ld values apart): eight values at a time, the row's last
// eight overlapping the others when cols is not a multiple of 8.
TEXT ·copyRowsAVX(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ rows+16(FP), BX
	MOVQ cols+24(FP), R10
	SHLQ $2, R10
	SUBQ $32, R10 // the last eight's offset, in bytes
	MOVQ ld+32(FP), R8
	SHLQ $2, R8
	MOVQ ls+40(FP), R9
	SHLQ $2, R9
crow:
	TESTQ BX, BX
	JLE cdone
	XORQ AX, AX
coct:
	CMPQ AX, R10
	JGE clast
	VMOVUPS (SI)(AX*1), Y0
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ $32, AX
	JMP coct
clast:
	VMOVUPS (SI)(R10*1), Y0
	VMOVUPS Y0, (DI)(R10*1)
	ADDQ R8, DI
	ADDQ R9, SI
	DECQ BX
	JMP crow
cdone:
	VZEROUPPER
	RET
