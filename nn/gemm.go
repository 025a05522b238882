package nn

// The matrix product behind every layer: C = α·op(A)·op(B) + β·C in
// float32, row-major, in the style of BLIS (Van Zee and van de Geijn,
// "BLIS: A Framework for Rapidly Instantiating BLAS Functionality", ACM
// TOMS 2015). The K dimension is cut into blocks of kc, M into blocks of
// mc and N into blocks of nc; each block of op(A) is copied into panels
// mr rows tall, laid out in the order the micro-kernel reads them. B is
// read in place where it is not transposed (the kernel takes its row
// stride), else copied into panels nr columns wide. The micro-kernel
// keeps an mr×nr tile of C in registers: with AVX2 and FMA
// (gemm_amd64.s) a 6×16 tile in twelve YMM registers, else a portable Go
// kernel of the same shape. Packing costs O(mk + kn) per call against the
// product's O(mnk).
//
// A·Bᵀ with both read along k (a weight gradient of a convolution, whose
// k is the batch's pixels, and a dense layer's forward product) instead
// goes to a dot-product kernel where there is one: 3×4 dot products at a
// time in twelve YMM registers, over blocks of k that stay in the cache,
// with no copies at all.

const (
	mr = 6    // rows of a micro-tile
	nr = 16   // columns of a micro-tile
	kc = 256  // depth of a packed block
	mc = 120  // rows of a packed block of A (a multiple of mr)
	nc = 3072 // columns of a block of B
)

// kernelFunc adds α·A·B to the mr×nr tile c (row stride ldc), A an mr×k
// panel as packed and B k rows of nr values, ldb apart, k ≥ 1.
type kernelFunc func(k int, a, b []float32, ldb int, c []float32, ldc int, alpha float32)

// dotFunc sets out[4i+j] to the dot product of a[i] and b[j], all of
// length k, a positive multiple of 8.
type dotFunc func(k int, a [3][]float32, b [4][]float32, out *[12]float32)

// gemmBuf holds the packed panels of one goroutine's products and the
// micro-kernel they use.
type gemmBuf struct {
	a, b   []float32
	tile   [mr * nr]float32
	dotOut [12]float32
	kern   kernelFunc
	dot    dotFunc // nil: products with Bᵀ are packed too
}

// newGemmBuf returns buffers that use the fastest kernel of this
// processor.
func newGemmBuf() *gemmBuf {
	if simdKernel != nil {
		return &gemmBuf{kern: simdKernel, dot: simdDot}
	}
	return &gemmBuf{kern: kernelGo}
}

func (g *gemmBuf) grow(m, n, k int) {
	ka, kb := min(k, kc), min(k, kc)
	if s := roundUp(min(m, mc), mr) * ka; len(g.a) < s {
		g.a = make([]float32, s)
	}
	if s := roundUp(min(n, nc), nr) * kb; len(g.b) < s {
		g.b = make([]float32, s)
	}
}

func roundUp(x, q int) int { return (x + q - 1) / q * q }

// gemm sets C = α·op(A)·op(B) + β·C, where C is m×n with row stride ldc,
// op(A) is m×k (A itself k×m with row stride lda when transA), op(B) is
// k×n (B n×k when transB). β is 0 (C is overwritten, its old values never
// read), 1 or anything else.
//
// When B is not transposed the kernel reads its full panels where they
// are, without packing; a product A·Bᵀ, both read along k, goes to the
// dot-product kernel when there is one.
func gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, g *gemmBuf) {
	if m == 0 || n == 0 {
		return
	}
	if beta != 1 {
		for i := range m {
			row := c[i*ldc : i*ldc+n]
			if beta == 0 {
				clear(row)
			} else {
				for j := range row {
					row[j] *= beta
				}
			}
		}
	}
	if k == 0 || alpha == 0 {
		return
	}
	if !transA && transB && g.dot != nil && k >= 8 {
		gemmNT(m, n, k, alpha, a, lda, b, ldb, c, ldc, g)
		return
	}
	g.grow(m, n, k)
	for jc := 0; jc < n; jc += nc {
		nb := min(nc, n-jc)
		for pc := 0; pc < k; pc += kc {
			kb := min(kc, k-pc)
			var direct []float32 // B's block at (pc, jc), read in place
			if transB {
				packB(g.b, true, b, ldb, pc, jc, kb, nb)
			} else {
				direct = b[pc*ldb+jc:]
				if full := nb / nr * nr; full < nb { // pack only the partial panel
					packB(g.b[full*kb:], false, b, ldb, pc, jc+full, kb, nb-full)
				}
			}
			for ic := 0; ic < m; ic += mc {
				mb := min(mc, m-ic)
				packA(g.a, transA, a, lda, ic, pc, mb, kb)
				macro(mb, nb, kb, alpha, g.a, g.b, direct, ldb, c[ic*ldc+jc:], ldc, g)
			}
		}
	}
}

// dotBlock is the depth of the blocks of gemmNT: the three rows of A of
// this length stay in the level-1 cache while their products with every
// row of B are taken. Each block's 3×4 sums are reduced and added to C
// once, so a deeper block does less of that work: at 1024 rather than
// 512 the mlp's first layer (k = 784, one block) runs its forward pass
// about 15% faster.
const dotBlock = 1024

// gemmNT adds α·A·Bᵀ to C with g.dot, A m×k and B n×k both read along
// rows, k ≥ 8: 3×4 dot products at a time, the rows past m or n clamped
// to the last row and their results dropped.
func gemmNT(m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, g *gemmBuf) {
	k8 := k &^ 7
	var ra [3][]float32
	var rb [4][]float32
	for p0 := 0; p0 < k8; p0 += dotBlock {
		kb := min(dotBlock, k8-p0)
		for i0 := 0; i0 < m; i0 += 3 {
			for r := range ra {
				ra[r] = a[min(i0+r, m-1)*lda+p0:][:kb]
			}
			for j0 := 0; j0 < n; j0 += 4 {
				for r := range rb {
					rb[r] = b[min(j0+r, n-1)*ldb+p0:][:kb]
				}
				g.dot(kb, ra, rb, &g.dotOut)
				for i := range min(3, m-i0) {
					crow := c[(i0+i)*ldc+j0:]
					for j := range min(4, n-j0) {
						crow[j] += alpha * g.dotOut[4*i+j]
					}
				}
			}
		}
	}
	if k8 == k {
		return
	}
	for i := range m {
		ar := a[i*lda+k8 : i*lda+k]
		for j := range n {
			br := b[j*ldb+k8:][:len(ar)]
			s := float32(0)
			for p, v := range ar {
				s += v * br[p]
			}
			c[i*ldc+j] += alpha * s
		}
	}
}

// packA copies the mb×kb block of op(A) at (i0, p0) into panels of mr
// rows: panel r holds, for each p, the mr values of column p, rows past
// mb zero.
func packA(dst []float32, trans bool, a []float32, lda, i0, p0, mb, kb int) {
	for ip := 0; ip < mb; ip += mr {
		rows := min(mr, mb-ip)
		d := dst[ip*kb : ip*kb+mr*kb]
		if !trans {
			for r := range rows {
				src := a[(i0+ip+r)*lda+p0:]
				src = src[:kb]
				for p, v := range src {
					d[p*mr+r] = v
				}
			}
		} else {
			for p := range kb {
				src := a[(p0+p)*lda+i0+ip:]
				src = src[:rows]
				copy(d[p*mr:p*mr+rows], src)
			}
		}
		if rows < mr {
			for p := range kb {
				clear(d[p*mr+rows : p*mr+mr])
			}
		}
	}
}

// packB copies the kb×nb block of op(B) at (p0, j0) into panels of nr
// columns: panel c holds, for each p, the nr values of row p, columns
// past nb zero.
func packB(dst []float32, trans bool, b []float32, ldb, p0, j0, kb, nb int) {
	for jp := 0; jp < nb; jp += nr {
		cols := min(nr, nb-jp)
		d := dst[jp*kb : jp*kb+nr*kb]
		if !trans {
			for p := range kb {
				src := b[(p0+p)*ldb+j0+jp:]
				copy(d[p*nr:p*nr+cols], src[:cols])
			}
		} else {
			for j := range cols {
				src := b[(j0+jp+j)*ldb+p0:]
				src = src[:kb]
				for p, v := range src {
					d[p*nr+j] = v
				}
			}
		}
		if cols < nr {
			for p := range kb {
				clear(d[p*nr+cols : p*nr+nr])
			}
		}
	}
}

// macro multiplies the packed mb×kb block of A by the kb×nb block of B
// and adds α times the product to C. B's full panels are read from direct
// (row stride ldb) unless it is nil, the others from the packed pb.
func macro(mb, nb, kb int, alpha float32, pa, pb, direct []float32, ldb int, c []float32, ldc int, g *gemmBuf) {
	for jr := 0; jr < nb; jr += nr {
		cols := min(nr, nb-jr)
		bp, bs := pb[jr*kb:jr*kb+nr*kb], nr
		if direct != nil && cols == nr {
			bp, bs = direct[jr:], ldb
		}
		for ir := 0; ir < mb; ir += mr {
			rows := min(mr, mb-ir)
			ap := pa[ir*kb : ir*kb+mr*kb]
			if rows == mr && cols == nr {
				g.kern(kb, ap, bp, bs, c[ir*ldc+jr:], ldc, alpha)
				continue
			}
			t := g.tile[:]
			clear(t)
			g.kern(kb, ap, bp, bs, t, nr, 1)
			for r := range rows {
				axpy(c[(ir+r)*ldc+jr:][:cols], t[r*nr:r*nr+cols], alpha)
			}
		}
	}
}

// kernelGo is the portable kernelFunc. A 2×4 block of the tile at a time
// keeps its eight sums and the six values they need in registers.
func kernelGo(k int, a, b []float32, ldb int, c []float32, ldc int, alpha float32) {
	a, b = a[:k*mr], b[:(k-1)*ldb+nr]
	for i0 := 0; i0 < mr; i0 += 2 {
		for j0 := 0; j0 < nr; j0 += 4 {
			var c00, c01, c02, c03, c10, c11, c12, c13 float32
			pa, pb := i0, j0
			for range k {
				aa := a[pa : pa+2 : pa+2]
				bb := b[pb : pb+4 : pb+4]
				a0, a1 := aa[0], aa[1]
				b0, b1, b2, b3 := bb[0], bb[1], bb[2], bb[3]
				c00 += a0 * b0
				c01 += a0 * b1
				c02 += a0 * b2
				c03 += a0 * b3
				c10 += a1 * b0
				c11 += a1 * b1
				c12 += a1 * b2
				c13 += a1 * b3
				pa += mr
				pb += ldb
			}
			r0 := c[i0*ldc+j0 : i0*ldc+j0+4 : i0*ldc+j0+4]
			r1 := c[(i0+1)*ldc+j0 : (i0+1)*ldc+j0+4 : (i0+1)*ldc+j0+4]
			r0[0] += alpha * c00
			r0[1] += alpha * c01
			r0[2] += alpha * c02
			r0[3] += alpha * c03
			r1[0] += alpha * c10
			r1[1] += alpha * c11
			r1[2] += alpha * c12
			r1[3] += alpha * c13
		}
	}
}
