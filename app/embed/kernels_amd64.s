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

// Constants of logisticAVX2, 8 copies each: |x| mask, log2(e), ln 2 in
// two parts (Cephes' C1 and C2), −87, the polynomial of Cephes' expf,
// 1, the exponent bias 127 and (4 float64s) 1.
DATA expc<>+0(SB)/4, $0x7fffffff
DATA expc<>+4(SB)/4, $0x7fffffff
DATA expc<>+8(SB)/4, $0x7fffffff
DATA expc<>+12(SB)/4, $0x7fffffff
DATA expc<>+16(SB)/4, $0x7fffffff
DATA expc<>+20(SB)/4, $0x7fffffff
DATA expc<>+24(SB)/4, $0x7fffffff
DATA expc<>+28(SB)/4, $0x7fffffff
DATA expc<>+32(SB)/4, $0x3fb8aa3b
DATA expc<>+36(SB)/4, $0x3fb8aa3b
DATA expc<>+40(SB)/4, $0x3fb8aa3b
DATA expc<>+44(SB)/4, $0x3fb8aa3b
DATA expc<>+48(SB)/4, $0x3fb8aa3b
DATA expc<>+52(SB)/4, $0x3fb8aa3b
DATA expc<>+56(SB)/4, $0x3fb8aa3b
DATA expc<>+60(SB)/4, $0x3fb8aa3b
DATA expc<>+64(SB)/4, $0x3f318000
DATA expc<>+68(SB)/4, $0x3f318000
DATA expc<>+72(SB)/4, $0x3f318000
DATA expc<>+76(SB)/4, $0x3f318000
DATA expc<>+80(SB)/4, $0x3f318000
DATA expc<>+84(SB)/4, $0x3f318000
DATA expc<>+88(SB)/4, $0x3f318000
DATA expc<>+92(SB)/4, $0x3f318000
DATA expc<>+96(SB)/4, $0xb95e8083
DATA expc<>+100(SB)/4, $0xb95e8083
DATA expc<>+104(SB)/4, $0xb95e8083
DATA expc<>+108(SB)/4, $0xb95e8083
DATA expc<>+112(SB)/4, $0xb95e8083
DATA expc<>+116(SB)/4, $0xb95e8083
DATA expc<>+120(SB)/4, $0xb95e8083
DATA expc<>+124(SB)/4, $0xb95e8083
DATA expc<>+128(SB)/4, $0xc2ae0000
DATA expc<>+132(SB)/4, $0xc2ae0000
DATA expc<>+136(SB)/4, $0xc2ae0000
DATA expc<>+140(SB)/4, $0xc2ae0000
DATA expc<>+144(SB)/4, $0xc2ae0000
DATA expc<>+148(SB)/4, $0xc2ae0000
DATA expc<>+152(SB)/4, $0xc2ae0000
DATA expc<>+156(SB)/4, $0xc2ae0000
DATA expc<>+160(SB)/4, $0x39506967
DATA expc<>+164(SB)/4, $0x39506967
DATA expc<>+168(SB)/4, $0x39506967
DATA expc<>+172(SB)/4, $0x39506967
DATA expc<>+176(SB)/4, $0x39506967
DATA expc<>+180(SB)/4, $0x39506967
DATA expc<>+184(SB)/4, $0x39506967
DATA expc<>+188(SB)/4, $0x39506967
DATA expc<>+192(SB)/4, $0x3ab743ce
DATA expc<>+196(SB)/4, $0x3ab743ce
DATA expc<>+200(SB)/4, $0x3ab743ce
DATA expc<>+204(SB)/4, $0x3ab743ce
DATA expc<>+208(SB)/4, $0x3ab743ce
DATA expc<>+212(SB)/4, $0x3ab743ce
DATA expc<>+216(SB)/4, $0x3ab743ce
DATA expc<>+220(SB)/4, $0x3ab743ce
DATA expc<>+224(SB)/4, $0x3c088908
DATA expc<>+228(SB)/4, $0x3c088908
DATA expc<>+232(SB)/4, $0x3c088908
DATA expc<>+236(SB)/4, $0x3c088908
DATA expc<>+240(SB)/4, $0x3c088908
DATA expc<>+244(SB)/4, $0x3c088908
DATA expc<>+248(SB)/4, $0x3c088908
DATA expc<>+252(SB)/4, $0x3c088908
DATA expc<>+256(SB)/4, $0x3d2aa9c1
DATA expc<>+260(SB)/4, $0x3d2aa9c1
DATA expc<>+264(SB)/4, $0x3d2aa9c1
DATA expc<>+268(SB)/4, $0x3d2aa9c1
DATA expc<>+272(SB)/4, $0x3d2aa9c1
DATA expc<>+276(SB)/4, $0x3d2aa9c1
DATA expc<>+280(SB)/4, $0x3d2aa9c1
DATA expc<>+284(SB)/4, $0x3d2aa9c1
DATA expc<>+288(SB)/4, $0x3e2aaaaa
DATA expc<>+292(SB)/4, $0x3e2aaaaa
DATA expc<>+296(SB)/4, $0x3e2aaaaa
DATA expc<>+300(SB)/4, $0x3e2aaaaa
DATA expc<>+304(SB)/4, $0x3e2aaaaa
DATA expc<>+308(SB)/4, $0x3e2aaaaa
DATA expc<>+312(SB)/4, $0x3e2aaaaa
DATA expc<>+316(SB)/4, $0x3e2aaaaa
DATA expc<>+320(SB)/4, $0x3f000000
DATA expc<>+324(SB)/4, $0x3f000000
DATA expc<>+328(SB)/4, $0x3f000000
DATA expc<>+332(SB)/4, $0x3f000000
DATA expc<>+336(SB)/4, $0x3f000000
DATA expc<>+340(SB)/4, $0x3f000000
DATA expc<>+344(SB)/4, $0x3f000000
DATA expc<>+348(SB)/4, $0x3f000000
DATA expc<>+352(SB)/4, $0x3f800000
DATA expc<>+356(SB)/4, $0x3f800000
DATA expc<>+360(SB)/4, $0x3f800000
DATA expc<>+364(SB)/4, $0x3f800000
DATA expc<>+368(SB)/4, $0x3f800000
DATA expc<>+372(SB)/4, $0x3f800000
DATA expc<>+376(SB)/4, $0x3f800000
DATA expc<>+380(SB)/4, $0x3f800000
DATA expc<>+384(SB)/4, $0x0000007f
DATA expc<>+388(SB)/4, $0x0000007f
DATA expc<>+392(SB)/4, $0x0000007f
DATA expc<>+396(SB)/4, $0x0000007f
DATA expc<>+400(SB)/4, $0x0000007f
DATA expc<>+404(SB)/4, $0x0000007f
DATA expc<>+408(SB)/4, $0x0000007f
DATA expc<>+412(SB)/4, $0x0000007f
DATA expc<>+416(SB)/8, $0x3ff0000000000000
DATA expc<>+424(SB)/8, $0x3ff0000000000000
DATA expc<>+432(SB)/8, $0x3ff0000000000000
DATA expc<>+440(SB)/8, $0x3ff0000000000000
GLOBL expc<>(SB), RODATA|NOPTR, $448

// func logisticAVX2(s, c *float32, n int, k float32) (lin, prod float64)
// For the n scores x of s (n a positive multiple of 8, at most 512): e =
// e^−|x| as Cephes' expf computes it (0 where |x| > 87), c = k·σ(x) with
// σ(x) = 1/(1 + e) for x ≥ 0 and e/(1 + e) below, lin = Σ max(x, 0) and
// prod = Π (1 + e), both in float64.
TEXT ·logisticAVX2(SB), NOSPLIT, $0-48
	MOVQ s+0(FP), SI
	MOVQ c+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSS k+24(FP), Y14
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
	VMOVUPD expc<>+416(SB), Y12
	VMOVUPD Y12, Y13
lgloop:
	VMOVUPS (SI), Y0
	// lin += max(x, 0); a NaN x is kept.
	VXORPS Y2, Y2, Y2
	VMAXPS Y0, Y2, Y2
	VCVTPS2PD X2, Y5
	VADDPD Y5, Y10, Y10
	VEXTRACTF128 $1, Y2, X2
	VCVTPS2PD X2, Y5
	VADDPD Y5, Y11, Y11
	// t = −|x|, at least −87 (mask Y7 where it was less).
	VANDPS expc<>+0(SB), Y0, Y1
	VXORPS Y2, Y2, Y2
	VSUBPS Y1, Y2, Y1
	VCMPPS $0x11, expc<>+128(SB), Y1, Y7
	VMAXPS expc<>+128(SB), Y1, Y1
	// t = n·ln 2 + r, n = round(t·log2 e).
	VMULPS expc<>+32(SB), Y1, Y3
	VROUNDPS $0, Y3, Y3
	VFNMADD231PS expc<>+64(SB), Y3, Y1
	VFNMADD231PS expc<>+96(SB), Y3, Y1
	// e^r = 1 + r + r²·p(r).
	VMULPS Y1, Y1, Y5
	VMOVUPS expc<>+160(SB), Y6
	VFMADD213PS expc<>+192(SB), Y1, Y6
	VFMADD213PS expc<>+224(SB), Y1, Y6
	VFMADD213PS expc<>+256(SB), Y1, Y6
	VFMADD213PS expc<>+288(SB), Y1, Y6
	VFMADD213PS expc<>+320(SB), Y1, Y6
	VFMADD213PS Y1, Y5, Y6
	VADDPS expc<>+352(SB), Y6, Y6
	// e = e^r·2^n, 0 where t was below −87.
	VCVTPS2DQ Y3, Y3
	VPADDD expc<>+384(SB), Y3, Y3
	VPSLLD $23, Y3, Y3
	VMULPS Y3, Y6, Y8
	VANDNPS Y8, Y7, Y8
	VADDPS expc<>+352(SB), Y8, Y9
	// prod *= 1 + e, added and multiplied in float64 (1 + e in float32
	// would lose e's low bits), in two accumulators of 4 lanes.
	VCVTPS2PD X8, Y5
	VADDPD expc<>+416(SB), Y5, Y5
	VMULPD Y5, Y12, Y12
	VEXTRACTF128 $1, Y8, X2
	VCVTPS2PD X2, Y5
	VADDPD expc<>+416(SB), Y5, Y5
	VMULPD Y5, Y13, Y13
	// c = k·(x < 0 ? e : 1)/(1 + e).
	VMOVUPS expc<>+352(SB), Y2
	VBLENDVPS Y0, Y8, Y2, Y2
	VDIVPS Y9, Y2, Y2
	VMULPS Y14, Y2, Y2
	VMOVUPS Y2, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ lgloop
	VADDPD Y11, Y10, Y10
	VEXTRACTF128 $1, Y10, X11
	VADDPD X11, X10, X10
	VHADDPD X10, X10, X10
	VMOVSD X10, lin+32(FP)
	VMULPD Y13, Y12, Y12
	VEXTRACTF128 $1, Y12, X13
	VMULPD X13, X12, X12
	VPERMILPD $1, X12, X13
	VMULSD X13, X12, X12
	VMOVSD X12, prod+40(FP)
	VZEROUPPER
	RET
