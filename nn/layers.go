package nn

import (
	"math"
	"math/rand/v2"
)

// A layer is one step of a model's forward pass. Dense layers (and the
// loss) hold a batch as n rows of features, [n, d]; convolution, pooling
// and their ReLUs hold it as planes, [C, n, H, W], so a convolution over
// the whole batch is one matrix product. toPlanes and flatten convert.
type layer interface {
	// outSize is the number of output values per sample.
	outSize() int
	// tensors returns the layer's parameter tensors with offsets from the
	// layer's first parameter.
	tensors() []Tensor
	// inPlace reports whether the output overwrites the input.
	inPlace() bool
	// scratch returns the floats and int32s of scratch space the layer
	// needs for a batch of n samples.
	scratch(n int) (floats, ints int)
	// init sets the layer's parameters p.
	init(p []float32, rng *rand.Rand)
	// forward computes y from x, given the layer's parameters p.
	forward(p, x, y []float32, n int, s *scratch)
	// backward adds scale times the gradient of the layer's parameters
	// (given dy, the loss's gradient with respect to y) to g, and sets
	// dx, unless nil, to the loss's gradient with respect to x. dy may be
	// overwritten.
	backward(p, x, y, dy, dx, g []float32, scale float32, n int, s *scratch)
}

// scratch is one layer's share of a Workspace, with the workspace's
// threads.
type scratch struct {
	f    []float32
	i    []int32
	pool *pool
	job  pass
}

// run runs the n parts of one of l's passes, whose arguments are in
// s.job and whose work is about flops operations, on the pool's threads.
func (s *scratch) run(n, flops int) { s.pool.run(n, flops, &s.job) }

// dense is a fully connected layer: y = x·Wᵀ + b with W of shape [out, in],
// and y = max(x·Wᵀ + b, 0) with relu (the ReLU fused into the product's
// last pass over y).
//
// The gradient of a relu layer's output is masked by y > 0 before its
// own gradients are taken. When the next layer is a dense layer (reluIn),
// that layer masks the input gradient it writes, block by block while the
// block is in the cache, and this one (dyMasked) does not mask again.
type dense struct {
	name     string
	in, out  int
	relu     bool // a ReLU on the output: He initialisation, else Glorot
	reluIn   bool // the input is a relu dense layer's output: dx is masked by x > 0
	dyMasked bool // relu, and the next layer masks dy (its reluIn)
}

func (l *dense) outSize() int           { return l.out }
func (l *dense) inPlace() bool          { return false }
func (l *dense) scratch(int) (int, int) { return 0, 0 }
func (l *dense) split(p []float32) (w, b []float32) {
	return p[:l.out*l.in], p[l.out*l.in : l.out*l.in+l.out]
}

func (l *dense) tensors() []Tensor {
	return []Tensor{
		{Name: l.name + ".weight", Shape: []int{l.out, l.in}, Offset: 0},
		{Name: l.name + ".bias", Shape: []int{l.out}, Offset: l.out * l.in},
	}
}

func (l *dense) init(p []float32, rng *rand.Rand) {
	w, b := l.split(p)
	initWeights(w, l.in, l.out, l.relu, rng)
	clear(b)
}

// initWeights draws w: He-normal, N(0, 2/fanIn), for a layer followed by
// a ReLU, else Glorot-uniform, U(±√(6/(fanIn+fanOut))).
func initWeights(w []float32, fanIn, fanOut int, relu bool, rng *rand.Rand) {
	if relu {
		std := math.Sqrt(2 / float64(fanIn))
		for i := range w {
			w[i] = float32(std * rng.NormFloat64())
		}
		return
	}
	lim := math.Sqrt(6 / float64(fanIn+fanOut))
	for i := range w {
		w[i] = float32(lim * (2*rng.Float64() - 1))
	}
}

// The passes of a dense layer run in parts, each a whole number of
// micro-tiles: the forward pass over blocks of output columns (blocks of
// samples when the layer is narrow), the weight gradient over blocks of
// input columns and the input gradient over blocks of its columns (of
// samples when narrow), so that each part reads a share of the weights
// and writes a share of the outputs. The bias gradient is the last
// weight-gradient part's.

// cutDense cuts a product with rows rows and cols output columns into
// parts for threads threads: by columns (multiples of nr) when each part
// gets at least two micro-tiles' width, else by rows (multiples of mr).
// It returns whether the cut is by columns, the size of a part and the
// number of parts.
func cutDense(rows, cols, threads int) (byCols bool, size, parts int) {
	if threads <= 1 {
		return true, cols, 1
	}
	if cols >= 2*nr*threads {
		size = split(cols, threads, nr)
		return true, size, ceilDiv(cols, size)
	}
	size = split(rows, threads, mr)
	return false, size, ceilDiv(rows, size)
}

func (l *dense) forward(p, x, y []float32, n int, s *scratch) {
	s.job = pass{l: l, fwd: true, p: p, x: x, y: y, n: n, s: s}
	_, _, parts := cutDense(n, l.out, s.pool.threads)
	s.run(parts, 2*n*l.in*l.out)
}

func (l *dense) forwardPart(j *pass, i, t int) {
	w, b := l.split(j.p)
	r0, r1, c0, c1 := 0, j.n, 0, l.out
	if byCols, size, _ := cutDense(j.n, l.out, j.s.pool.threads); byCols {
		c0, c1 = i*size, min(l.out, (i+1)*size)
	} else {
		r0, r1 = i*size, min(j.n, (i+1)*size)
	}
	y := j.y[r0*l.out:]
	for r := range r1 - r0 {
		copy(y[r*l.out+c0:r*l.out+c1], b[c0:c1])
	}
	gemm(false, true, r1-r0, c1-c0, l.in, 1, j.x[r0*l.in:], l.in, w[c0*l.in:], l.in, 1, y[c0:], l.out, j.s.pool.gemm[t])
	if l.relu {
		for r := range r1 - r0 {
			reluRow(y[r*l.out+c0 : r*l.out+c1])
		}
	}
}

// reluRow sets row to max(row, 0), with SIMD where the processor has it
// (the same values, bit for bit).
func reluRow(row []float32) {
	if n := len(row) &^ 7; simdElem && n > 0 {
		reluAVX(&row[0], n)
		row = row[n:]
	}
	for i, v := range row {
		row[i] = max(v, 0)
	}
}

// maskRow sets d[i] to 0 where y[i] is not positive: the gradient through
// a ReLU whose outputs (or inputs) are y.
func maskRow(d, y []float32) {
	y = y[:len(d)]
	if n := len(d) &^ 7; simdElem && n > 0 {
		maskAVX(&d[0], &y[0], n)
		d, y = d[n:], y[n:]
	}
	for i, v := range y {
		if !(v > 0) {
			d[i] = 0
		}
	}
}

// axpy adds a·src to dst (len(dst) values), each product rounded before
// its sum.
func axpy(dst, src []float32, a float32) {
	src = src[:len(dst)]
	if n := len(dst) &^ 7; simdElem && n > 0 {
		axpyAVX(&dst[0], &src[0], n, a)
		dst, src = dst[n:], src[n:]
	}
	for i, v := range src {
		dst[i] += a * v
	}
}

func (l *dense) backward(p, x, y, dy, dx, g []float32, scale float32, n int, s *scratch) {
	if l.relu && !l.dyMasked {
		maskRow(dy[:n*l.out], y)
	}
	s.job = pass{l: l, p: p, x: x, dy: dy, dx: dx, g: g, scale: scale, n: n, s: s}
	s.job.parts = ceilDiv(l.in, split(l.in, s.pool.threads, nr))
	parts, flops := s.job.parts, 2*n*l.in*l.out
	if dx != nil {
		_, _, dparts := cutDense(n, l.in, s.pool.threads)
		parts += dparts
		flops *= 2
	}
	s.run(parts, flops)
}

func (l *dense) backwardPart(j *pass, i, t int) {
	w, _ := l.split(j.p)
	gw, gb := l.split(j.g)
	g := j.s.pool.gemm[t]
	if i < j.parts { // input columns [c0, c1) of the weight gradient
		cb := split(l.in, j.s.pool.threads, nr)
		c0, c1 := i*cb, min(l.in, (i+1)*cb)
		gemm(true, false, l.out, c1-c0, j.n, j.scale, j.dy, l.out, j.x[c0:], l.in, 1, gw[c0:], l.in, g)
		if i == j.parts-1 {
			for r := range j.n {
				axpy(gb, j.dy[r*l.out:(r+1)*l.out], j.scale)
			}
		}
		return
	}
	i -= j.parts
	r0, r1, c0, c1 := 0, j.n, 0, l.in
	if byCols, size, _ := cutDense(j.n, l.in, j.s.pool.threads); byCols {
		c0, c1 = i*size, min(l.in, (i+1)*size)
	} else {
		r0, r1 = i*size, min(j.n, (i+1)*size)
	}
	dx := j.dx[r0*l.in:]
	gemm(false, false, r1-r0, c1-c0, l.out, 1, j.dy[r0*l.out:], l.out, w[c0:], l.in, 0, dx[c0:], l.in, g)
	if l.reluIn {
		x := j.x[r0*l.in:]
		for r := range r1 - r0 {
			maskRow(dx[r*l.in+c0:r*l.in+c1], x[r*l.in+c0:r*l.in+c1])
		}
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// relu is max(x, 0), in place, in any layout.
type relu struct{ size int }

func (l *relu) outSize() int               { return l.size }
func (l *relu) inPlace() bool              { return true }
func (l *relu) scratch(int) (int, int)     { return 0, 0 }
func (l *relu) tensors() []Tensor          { return nil }
func (l *relu) init([]float32, *rand.Rand) {}
func (l *relu) forward(_, x, y []float32, n int, _ *scratch) {
	x = x[:n*l.size]
	y = y[:len(x)]
	for i, v := range x {
		y[i] = max(v, 0)
	}
}

func (l *relu) backward(_, _, y, dy, dx, _ []float32, _ float32, n int, _ *scratch) {
	if dx == nil {
		return
	}
	y = y[:n*l.size]
	dy, dx = dy[:len(y)], dx[:len(y)]
	for i, v := range y {
		if v > 0 {
			dx[i] = dy[i]
		} else {
			dx[i] = 0
		}
	}
}

// conv is a 2-D convolution with stride 1 on planes: input [C, n, H, W],
// output [OC, n, OH, OW] with OH = H + 2·pad − k + 1 (OW likewise), zero
// padding; W has shape [OC, C, k, k]. It runs as im2col and a matrix
// product, y = W·col + b, col of shape [C·k·k, m·OH·OW], over chunks of m
// samples small enough that col stays in the cache while it is used. The
// chunks' cols are kept for the backward pass.
type conv struct {
	name       string
	c, h, w    int // input
	oc, k, pad int
	oh, ow     int // output
	relu       bool
	chunk      int      // samples per chunk; 0: as many as fit colBytes
	pool       *maxPool // the next layer, run by forwardPool chunk by chunk
	below      *maxPool // the layer before, run backward by backwardUnpool chunk by chunk
}

// colBytes bounds the im2col matrix of a chunk: about half an L2 cache.
const colBytes = 256 << 10

func newConv(name string, c, h, w, oc, k, pad int, relu bool) *conv {
	return &conv{name: name, c: c, h: h, w: w, oc: oc, k: k, pad: pad,
		oh: h + 2*pad - k + 1, ow: w + 2*pad - k + 1, relu: relu}
}

func (l *conv) outSize() int  { return l.oc * l.oh * l.ow }
func (l *conv) inPlace() bool { return false }
func (l *conv) ck() int       { return l.c * l.k * l.k }

// chunkOf returns the samples per chunk of a batch of n.
func (l *conv) chunkOf(n int) int {
	m := l.chunk
	if m == 0 {
		m = colBytes / (4 * l.ck() * l.oh * l.ow)
	}
	return max(1, min(m, n))
}

// scratch holds the cols of the batch and the weight gradient's partial
// sums of each group of chunks (gwGroups); a chunk's col gradient is the
// thread's (pool.floats).
func (l *conv) scratch(n int) (int, int) {
	return l.ck()*n*l.oh*l.ow + gwGroups*l.oc*l.ck(), 0
}

func (l *conv) split(p []float32) (w, b []float32) {
	nw := l.oc * l.ck()
	return p[:nw], p[nw : nw+l.oc]
}

func (l *conv) tensors() []Tensor {
	return []Tensor{
		{Name: l.name + ".weight", Shape: []int{l.oc, l.c, l.k, l.k}, Offset: 0},
		{Name: l.name + ".bias", Shape: []int{l.oc}, Offset: l.oc * l.ck()},
	}
}

func (l *conv) init(p []float32, rng *rand.Rand) {
	w, b := l.split(p)
	initWeights(w, l.ck(), l.oc*l.k*l.k, l.relu, rng)
	clear(b)
}

// The forward pass and the input gradient run in parts of one chunk
// each. The weight gradient is summed over the batch's chunks in
// gwGroups groups (the first half of the chunks and the second), each
// group's sum in its own buffer, added to the gradient at the end of the
// pass, scale·(first + second): so that two threads share even a layer
// whose weight gradient has few columns (the first convolution's 25,
// which the kernels' 4-column tiles would cut 16 and 9) and each reads
// half of the cols. Within a group the parts are blocks of columns
// (gwCut) when there are more threads than groups. The bias gradient is
// shared among the parts by rows. The groups do not depend on the number
// of threads, so neither do the sums.
const gwGroups = 2

func (l *conv) forward(p, x, y []float32, n int, s *scratch) {
	s.job = pass{l: l, fwd: true, p: p, x: x, y: y, n: n, s: s}
	s.run(ceilDiv(n, l.chunkOf(n)), 2*n*l.oh*l.ow*l.oc*l.ck())
}

// forwardPool is forward followed by the forward pass of the pooling
// layer l.pool (output py, scratch ps), in the same parts: each chunk's
// planes are pooled right after its product, while they are in the
// cache, and the two layers take one pass of the threads, not two.
func (l *conv) forwardPool(p, x, y, py []float32, n int, s, ps *scratch) {
	s.job = pass{l: l, fwd: true, p: p, x: x, y: y, n: n, s: s, py: py, ps: ps}
	s.run(ceilDiv(n, l.chunkOf(n)), 2*n*l.oh*l.ow*l.oc*l.ck()+poolFlops*n*l.outSize())
}

func (l *conv) forwardPart(j *pass, i, t int) {
	w, b := l.split(j.p)
	pp := l.oh * l.ow
	np := j.n * pp
	m := l.chunkOf(j.n)
	s0 := i * m
	cm := min(m, j.n-s0)
	for o := range l.oc {
		row := j.y[o*np+s0*pp:][:cm*pp]
		for i := range row {
			row[i] = b[o]
		}
	}
	col := j.s.f[l.ck()*s0*pp:][:l.ck()*cm*pp]
	l.im2col(j.x, col, j.n, s0, cm)
	gemm(false, false, l.oc, cm*pp, l.ck(), 1, w, l.ck(), col, cm*pp, 1, j.y[s0*pp:], np, j.s.pool.gemm[t])
	if j.ps != nil {
		arg := j.ps.i[:j.n*l.pool.outSize()]
		for o := range l.oc {
			l.pool.poolPlanes(j.y, j.py, arg, o*j.n+s0, o*j.n+s0+cm)
		}
	}
}

func (l *conv) backward(p, x, y, dy, dx, g []float32, scale float32, n int, s *scratch) {
	l.backwardUnpool(p, dy, dx, g, scale, n, s, nil, nil)
}

// backwardUnpool is backward followed, when pdx is not nil, by the
// backward pass of the pooling layer l.below (input gradient pdx,
// scratch ps) in the same parts: each chunk's input gradient is passed
// back through the pooling right after it is summed, while it is in the
// cache, and the two layers take one pass of the threads, not two.
func (l *conv) backwardUnpool(p, dy, dx, g []float32, scale float32, n int, s *scratch, pdx []float32, ps *scratch) {
	s.job = pass{l: l, p: p, dy: dy, dx: dx, g: g, scale: scale, n: n, s: s, py: pdx, ps: ps}
	groups, _ := l.gwGroups(n)
	s.job.parts = groups * ceilDiv(l.ck(), l.gwCut(n, s.pool.threads))
	parts, flops := s.job.parts, 2*n*l.oh*l.ow*l.oc*l.ck()
	if dx != nil {
		parts += ceilDiv(n, l.chunkOf(n))
		flops *= 2
	}
	if pdx != nil {
		flops += poolFlops * n * l.below.c * l.below.h * l.below.w
	}
	s.run(parts, flops)
	// The groups' sums into the gradient, in the order of the groups.
	gw, _ := l.split(g)
	part := l.gwPartial(s.f, n)
	if groups == 1 {
		axpy(gw, part[0], scale)
		return
	}
	for i, v := range part[0] {
		gw[i] += scale * (v + part[1][i])
	}
}

// gwGroups returns the number of groups of chunks of a batch of n (at
// most gwGroups, one per chunk) and the chunks in each but the last.
func (l *conv) gwGroups(n int) (groups, per int) {
	chunks := ceilDiv(n, l.chunkOf(n))
	groups = min(gwGroups, chunks)
	per = ceilDiv(chunks, groups)
	return ceilDiv(chunks, per), per
}

// gwPartial returns the groups' buffers of the weight gradient's sums,
// after the cols in the scratch f.
func (l *conv) gwPartial(f []float32, n int) [gwGroups][]float32 {
	nw := l.oc * l.ck()
	base := f[l.ck()*n*l.oh*l.ow:]
	return [gwGroups][]float32{base[:nw], base[nw : 2*nw]}
}

// gwCut returns the columns of the weight gradient (of C·k·k) in each of
// a group's parts: a whole number of the dot-product kernel's 4 columns
// when every chunk's product goes to it (that kernel's sums do not
// depend on where a column falls), else of the packed kernel's nr. A part
// reads only its rows of its chunks' cols. The groups take the threads
// first: a group is cut only when there are more threads than groups.
func (l *conv) gwCut(n, threads int) int {
	q := nr
	m := l.chunkOf(n)
	last := n - (ceilDiv(n, m)-1)*m
	if simdDot != nil && last*l.oh*l.ow >= 8 {
		q = 4
	}
	groups, _ := l.gwGroups(n)
	return split(l.ck(), max(1, threads/groups), q)
}

func (l *conv) backwardPart(j *pass, i, t int) {
	w, _ := l.split(j.p)
	_, gb := l.split(j.g)
	pp := l.oh * l.ow
	np := j.n * pp
	m := l.chunkOf(j.n)
	g := j.s.pool.gemm[t]
	if i < j.parts { // columns [c0, c1) of a group's sum, and a share of the bias gradient
		cb := l.gwCut(j.n, j.s.pool.threads)
		blocks := ceilDiv(l.ck(), cb)
		_, per := l.gwGroups(j.n)
		grp, blk := i/blocks, i%blocks
		c0, c1 := blk*cb, min(l.ck(), (blk+1)*cb)
		dst := l.gwPartial(j.s.f, j.n)[grp]
		beta := float32(0)
		for s0 := grp * per * m; s0 < min(j.n, (grp+1)*per*m); s0 += m {
			cm := min(m, j.n-s0)
			col := j.s.f[l.ck()*s0*pp:][:l.ck()*cm*pp] // from forward
			gemm(false, true, l.oc, c1-c0, cm*pp, 1, j.dy[s0*pp:], np, col[c0*cm*pp:], cm*pp, beta, dst[c0:], l.ck(), g)
			beta = 1
		}
		ob := ceilDiv(l.oc, j.parts)
		for o := i * ob; o < min(l.oc, (i+1)*ob); o++ {
			gb[o] += j.scale * sum(j.dy[o*np:(o+1)*np])
		}
		return
	}
	s0 := (i - j.parts) * m
	cm := min(m, j.n-s0)
	hw := l.h * l.w
	for c := range l.c {
		clear(j.dx[(c*j.n+s0)*hw:][:cm*hw])
	}
	dcol := j.s.pool.floats(t, l.ck()*cm*pp)
	gemm(true, false, l.ck(), cm*pp, l.oc, 1, w, l.ck(), j.dy[s0*pp:], np, 0, dcol, cm*pp, g)
	l.col2im(dcol, j.dx, j.n, s0, cm)
	if j.py != nil {
		for c := range l.c {
			l.below.unpoolPlanes(j.dx, j.py, j.ps.i, c*j.n+s0, c*j.n+s0+cm)
		}
	}
}

// span returns the output columns ox in [lo, hi) whose input column
// ox + kj − pad lies inside the image.
func (l *conv) span(kj int) (lo, hi int) {
	lo = max(0, l.pad-kj)
	hi = min(l.ow, l.w+l.pad-kj)
	return lo, max(lo, hi)
}

// im2col writes col[(c·k+ki)·k+kj, s·OH·OW + oy·OW + ox] = x[c, s0+s,
// oy+ki−pad, ox+kj−pad] for the m samples from s0 of a batch of n, zero
// outside the image. The rows are short (OW values), so they are copied
// by loops rather than by copy's call.
func (l *conv) im2col(x, col []float32, n, s0, m int) {
	hw, p := l.h*l.w, l.oh*l.ow
	np := m * p
	for c := range l.c {
		for ki := range l.k {
			for kj := range l.k {
				row := col[((c*l.k+ki)*l.k+kj)*np:][:np]
				lo, hi := l.span(kj)
				for s := range m {
					src := x[(c*n+s0+s)*hw:][:hw]
					dst := row[s*p:][:p]
					if l.oh == l.h && l.ow == l.w {
						l.shifted(dst, src, ki, kj, lo, hi)
						continue
					}
					if l.pad == 0 { // every row whole and inside the image
						copyRows(dst, src[ki*l.w+kj:], l.oh, l.ow, l.ow, l.w)
						continue
					}
					for oy := range l.oh {
						d := dst[oy*l.ow:][:l.ow]
						iy := oy + ki - l.pad
						if iy < 0 || iy >= l.h {
							for i := range d {
								d[i] = 0
							}
							continue
						}
						for i := range d[:lo] {
							d[i] = 0
						}
						copyShort(d[lo:hi], src[iy*l.w+lo+kj-l.pad:])
						for i := hi; i < len(d); i++ {
							d[i] = 0
						}
					}
				}
			}
		}
	}
}

// copyShort copies src into dst (len(dst) values) like copy, faster for
// the short rows of a small image: 4 to 16 values move as blocks of four
// that may overlap, each one 16-byte move, where copy would call
// memmove.
func copyShort(dst, src []float32) {
	n := len(dst)
	switch {
	case n >= 16:
		copy(dst, src[:n])
	case n >= 8:
		src = src[:n]
		*(*[4]float32)(dst) = *(*[4]float32)(src)
		*(*[4]float32)(dst[4:]) = *(*[4]float32)(src[4:])
		*(*[4]float32)(dst[n-8:]) = *(*[4]float32)(src[n-8:])
		*(*[4]float32)(dst[n-4:]) = *(*[4]float32)(src[n-4:])
	case n >= 4:
		*(*[4]float32)(dst) = *(*[4]float32)(src)
		*(*[4]float32)(dst[n-4:]) = *(*[4]float32)(src[n-4:])
	default:
		for i := range dst {
			dst[i] = src[i]
		}
	}
}

// copyRows copies rows blocks of cols values of src, ls values apart,
// into dst, ld values apart: dst[r·ld+i] = src[r·ls+i]; with AVX where
// the processor has it and the rows are 8 values or longer, else by
// copyShort.
func copyRows(dst, src []float32, rows, cols, ld, ls int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	_, _ = dst[(rows-1)*ld+cols-1], src[(rows-1)*ls+cols-1]
	if simdElem && cols >= 8 {
		copyRowsAVX(&dst[0], &src[0], rows, cols, ld, ls)
		return
	}
	for r := range rows {
		copyShort(dst[r*ld:][:cols], src[r*ls:])
	}
}

// sum returns the sum of s, with several running sums so that the adds
// do not wait on each other: 32 in AVX registers where the processor has
// them, for the first multiple of 32 values, else four. The order of the
// adds depends on len(s) alone.
func sum(s []float32) float32 {
	var a, b, c, d float32
	if n := len(s) &^ 31; simdElem && n > 0 {
		a = sumAVX(&s[0], n)
		s = s[n:]
	}
	i := 0
	for ; i+4 <= len(s); i += 4 {
		q := s[i : i+4 : i+4]
		a += q[0]
		b += q[1]
		c += q[2]
		d += q[3]
	}
	for _, v := range s[i:] {
		a += v
	}
	return (a + b) + (c + d)
}

// shifted is im2col's (ki, kj) row of one sample when the output has the
// input's size: dst[j] = src[j + (ki−pad)·W + kj−pad] for the valid
// positions, one copy for all rows, after which the columns that wrapped
// around an edge (ox outside [lo, hi)) are zeroed.
func (l *conv) shifted(dst, src []float32, ki, kj, lo, hi int) {
	w := l.w
	shift := (ki-l.pad)*w + kj - l.pad
	oyLo, oyHi := max(0, l.pad-ki), min(l.oh, l.h+l.pad-ki)
	if oyHi <= oyLo {
		clear(dst)
		return
	}
	clear(dst[:oyLo*w])
	clear(dst[oyHi*w:])
	j0, j1 := max(oyLo*w, -shift), min(oyHi*w, len(src)-shift)
	copy(dst[j0:j1], src[j0+shift:j1+shift])
	for oy := oyLo; oy < oyHi; oy++ {
		d := dst[oy*w:][:w]
		clear(d[:lo])
		clear(d[hi:])
	}
}

// col2im adds col back into dx, the transpose of im2col: for each
// channel, sample and kernel offset (ki, kj), a block of rows of col
// added into rows of the sample's plane (addRows).
func (l *conv) col2im(col, dx []float32, n, s0, m int) {
	hw, p := l.h*l.w, l.oh*l.ow
	np := m * p
	for c := range l.c {
		for s := range m {
			dst := dx[(c*n+s0+s)*hw:][:hw]
			for ki := range l.k {
				// Output rows oy whose input row oy + ki − pad is inside.
				oyLo, oyHi := max(0, l.pad-ki), min(l.oh, l.h+l.pad-ki)
				if oyHi <= oyLo {
					continue
				}
				for kj := range l.k {
					src := col[((c*l.k+ki)*l.k+kj)*np+s*p:][:p]
					lo, hi := l.span(kj)
					addRows(dst[(oyLo+ki-l.pad)*l.w+lo+kj-l.pad:], src[oyLo*l.ow+lo:], oyHi-oyLo, hi-lo, l.w, l.ow)
				}
			}
		}
	}
}

// addRows adds rows blocks of cols values of src, ls values apart, into
// dst, ld values apart: dst[r·ld+i] += src[r·ls+i], with SIMD where the
// processor has it (the same sums, value by value).
func addRows(dst, src []float32, rows, cols, ld, ls int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	_, _ = dst[(rows-1)*ld+cols-1], src[(rows-1)*ls+cols-1]
	if simdAddRows != nil {
		simdAddRows(&dst[0], &src[0], rows, cols, ld, ls)
		return
	}
	for r := range rows {
		d := dst[r*ld:][:cols]
		for i, v := range src[r*ls:][:cols] {
			d[i] += v
		}
	}
}

// maxPool takes the maximum of each size×size window, stride size, of
// each plane [C, n, H, W] → [C, n, H/size, W/size] (rounded down, as
// PyTorch does); the first maximum of a window wins. With relu it then
// takes max(·, 0), which is the same as pooling after a ReLU (both are
// monotone) on a quarter of the values.
type maxPool struct {
	c, h, w, size, oh, ow int
	relu                  bool
}

func newMaxPool(c, h, w, size int, relu bool) *maxPool {
	return &maxPool{c: c, h: h, w: w, size: size, oh: h / size, ow: w / size, relu: relu}
}

func (l *maxPool) outSize() int               { return l.c * l.oh * l.ow }
func (l *maxPool) inPlace() bool              { return false }
func (l *maxPool) tensors() []Tensor          { return nil }
func (l *maxPool) init([]float32, *rand.Rand) {}
func (l *maxPool) scratch(n int) (int, int)   { return 0, n * l.outSize() }

// forward records in the scratch, for each output, the index of the
// input it took, or −1 where the ReLU gave 0.
// Both passes run in parts of whole planes.
func (l *maxPool) forward(_, x, y []float32, n int, s *scratch) {
	s.job = pass{l: l, fwd: true, x: x, y: y, n: n, s: s}
	s.run(ceilDiv(l.c*n, split(l.c*n, s.pool.threads, 1)), poolFlops*n*l.c*l.h*l.w)
}

func (l *maxPool) forwardPart(j *pass, i, _ int) {
	x, y, n := j.x, j.y, j.n
	arg := j.s.i[:n*l.outSize()]
	pb := split(l.c*n, j.s.pool.threads, 1)
	l.poolPlanes(x, y, arg, i*pb, min(l.c*n, (i+1)*pb))
}

// poolPlanes pools planes [p0, p1) of x (planes [C, n, H, W], plane
// c·n+s) into y, recording the indices in arg.
func (l *maxPool) poolPlanes(x, y []float32, arg []int32, p0, p1 int) {
	hw, ohw := l.h*l.w, l.oh*l.ow
	floor := float32(math.Inf(-1))
	if l.relu {
		floor = 0
	}
	for pl := p0; pl < p1; pl++ {
		src := x[pl*hw:][:hw]
		dst, at := y[pl*ohw:][:ohw], arg[pl*ohw:][:ohw]
		for oy := range l.oh {
			d, at := dst[oy*l.ow:][:l.ow], at[oy*l.ow:][:l.ow]
			base := oy * l.size * l.w
			if l.size == 2 {
				r0, r1 := src[base:][:2*l.ow], src[base+l.w:][:2*l.ow]
				if simdElem && l.ow >= 8 {
					// Eight windows at a time, the last eight overlapping
					// the others when the row is not a multiple of 8.
					for ox := 0; ; ox += 8 {
						ox = min(ox, l.ow-8)
						pool2AVX(&r0[2*ox], &r1[2*ox], l.w, pl*hw+base+2*ox, floor, &d[ox], &at[ox])
						if ox == l.ow-8 {
							break
						}
					}
					continue
				}
				if simdElem && l.ow >= 4 { // four at a time likewise
					for ox := 0; ; ox += 4 {
						ox = min(ox, l.ow-4)
						pool2x4AVX(&r0[2*ox], &r1[2*ox], l.w, pl*hw+base+2*ox, floor, &d[ox], &at[ox])
						if ox == l.ow-4 {
							break
						}
					}
					continue
				}
				// Branch-free: on real data which value wins is unpredictable.
				for ox := range d {
					a, b, c, e := r0[2*ox], r0[2*ox+1], r1[2*ox], r1[2*ox+1]
					top, bottom := max(a, b), max(c, e)
					i := pl*hw + base + 2*ox
					iTop, iBottom := i+b2i(b > a), i+l.w+b2i(e > c)
					best, bi := top, iTop
					if bottom > top {
						bi = iBottom
					}
					best = max(best, bottom)
					d[ox], at[ox] = max(best, floor), int32(b2i(best > floor)*(bi+1)-1)
				}
				continue
			}
			for ox := range d {
				b0 := base + ox*l.size
				best, bi := src[b0], b0
				for dy := range l.size {
					row := src[b0+dy*l.w:][:l.size]
					for dx, v := range row {
						if v > best {
							best, bi = v, b0+dy*l.w+dx
						}
					}
				}
				if !(best > floor) {
					best, bi = max(best, floor), -1-pl*hw
				}
				d[ox], at[ox] = best, int32(pl*hw+bi)
			}
		}
	}
}

// poolFlops is what pooling one input value costs, in the floating-point
// operations of a matrix product of the same time (pool.run's measure).
const poolFlops = 16

// b2i is 1 for true and 0 for false, without a branch.
func b2i(b bool) int {
	i := 0
	if b {
		i = 1
	}
	return i
}

func (l *maxPool) backward(_, _, _, dy, dx, _ []float32, _ float32, n int, s *scratch) {
	if dx == nil {
		return
	}
	s.job = pass{l: l, dy: dy, dx: dx, n: n, s: s}
	s.run(ceilDiv(l.c*n, split(l.c*n, s.pool.threads, 1)), poolFlops*n*l.c*l.h*l.w)
}

// backwardPart scatters the gradients of planes of part i: the indices
// of a plane's outputs lie in the same plane of the input.
func (l *maxPool) backwardPart(j *pass, i, _ int) {
	pb := split(l.c*j.n, j.s.pool.threads, 1)
	l.unpoolPlanes(j.dy, j.dx, j.s.i, i*pb, min(l.c*j.n, (i+1)*pb))
}

// unpoolPlanes sets the input gradient dx of planes [p0, p1) from their
// outputs' gradients dy and the indices arg that forward recorded.
func (l *maxPool) unpoolPlanes(dy, dx []float32, arg []int32, p0, p1 int) {
	hw, ohw := l.h*l.w, l.oh*l.ow
	if l.size == 2 && simdElem && l.ow >= 8 && l.h%2 == 0 && l.w%2 == 0 {
		// The windows cover the planes: each value is set, eight windows
		// at a time (the last eight overlapping the others), with no
		// clearing pass and no unpredictable branch.
		for pl := p0; pl < p1; pl++ {
			for oy := range l.oh {
				o, base := pl*ohw+oy*l.ow, pl*hw+2*oy*l.w
				_, _ = dy[o+l.ow-1], arg[o+l.ow-1]
				_ = dx[base+l.w+2*l.ow-1]
				for ox := 0; ; ox += 8 {
					ox = min(ox, l.ow-8)
					unpool2AVX(&dy[o+ox], &arg[o+ox], base+2*ox, l.w, &dx[base+2*ox], &dx[base+l.w+2*ox])
					if ox == l.ow-8 {
						break
					}
				}
			}
		}
		return
	}
	clear(dx[p0*hw : p1*hw])
	arg = arg[p0*ohw : p1*ohw]
	dy = dy[p0*ohw:][:len(arg)]
	for i, a := range arg {
		if a >= 0 {
			dx[a] += dy[i]
		}
	}
}

// flatten turns planes [C, n, H·W] into rows [n, C·H·W], each sample's
// values in (channel, row, column) order as PyTorch's Flatten.
type flatten struct{ c, hw int }

func (l *flatten) outSize() int               { return l.c * l.hw }
func (l *flatten) inPlace() bool              { return false }
func (l *flatten) tensors() []Tensor          { return nil }
func (l *flatten) init([]float32, *rand.Rand) {}
func (l *flatten) scratch(int) (int, int)     { return 0, 0 }

func (l *flatten) forward(_, x, y []float32, n int, _ *scratch) {
	for c := range l.c {
		for s := range n {
			copy(y[(s*l.c+c)*l.hw:][:l.hw], x[(c*n+s)*l.hw:][:l.hw])
		}
	}
}

func (l *flatten) backward(_, _, _, dy, dx, _ []float32, _ float32, n int, _ *scratch) {
	if dx == nil {
		return
	}
	for c := range l.c {
		for s := range n {
			copy(dx[(c*n+s)*l.hw:][:l.hw], dy[(s*l.c+c)*l.hw:][:l.hw])
		}
	}
}

// toPlanes turns rows [n, C·H·W] into planes [C, n, H·W]: the inverse of
// flatten.
type toPlanes struct{ c, hw int }

func (l *toPlanes) outSize() int               { return l.c * l.hw }
func (l *toPlanes) inPlace() bool              { return false }
func (l *toPlanes) tensors() []Tensor          { return nil }
func (l *toPlanes) init([]float32, *rand.Rand) {}
func (l *toPlanes) scratch(int) (int, int)     { return 0, 0 }

func (l *toPlanes) forward(_, x, y []float32, n int, s *scratch) {
	(*flatten)(l).backward(nil, nil, nil, x, y, nil, 0, n, s)
}

func (l *toPlanes) backward(_, _, _, dy, dx, _ []float32, _ float32, n int, s *scratch) {
	if dx != nil {
		(*flatten)(l).forward(nil, dy, dx, n, s)
	}
}

// softmaxCE returns the summed softmax cross-entropy of the logits z
// ([n, k]) against labels and the number of samples whose largest logit
// is their label, and sets dz, unless nil, to the gradient of the summed
// loss: softmax(z) − onehot(label).
func softmaxCE(z []float32, labels []int32, n, k int, dz []float32) (loss float64, correct int) {
	for i := range n {
		row := z[i*k : (i+1)*k]
		y := int(labels[i])
		if y < 0 || y >= k {
			panic("nn: label out of range")
		}
		best, arg := row[0], 0
		for j, v := range row {
			if v > best {
				best, arg = v, j
			}
		}
		if arg == y {
			correct++
		}
		// Each exponential is taken once when the row is short enough
		// to keep them on the stack (every classifier here), else twice.
		var ex [32]float64
		keep := dz != nil && k <= len(ex)
		sum := 0.0
		for j, v := range row {
			e := math.Exp(float64(v - best))
			if keep {
				ex[j] = e
			}
			sum += e
		}
		loss += math.Log(sum) - float64(row[y]-best)
		if dz != nil {
			d := dz[i*k : (i+1)*k]
			inv := 1 / sum
			for j, v := range row {
				e := ex[min(j, len(ex)-1)]
				if !keep {
					e = math.Exp(float64(v - best))
				}
				d[j] = float32(e * inv)
			}
			d[y]--
		}
	}
	return loss, correct
}
