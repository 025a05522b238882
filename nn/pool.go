package nn

import "sync"

// pool runs the parts of one layer's pass on up to threads goroutines
// (intra-op parallelism), each with its own matrix-product buffers. A
// part writes outputs no other part writes, and every output is summed
// in the same order whichever goroutine computes it, so results do not
// depend on the number of threads or on scheduling: they are bit for bit
// those of one thread.
type pool struct {
	threads int
	gemm    []*gemmBuf  // one per thread
	tmp     [][]float32 // one per thread: a conv's col gradient
	wg      sync.WaitGroup
}

// job is a pass cut into parts; part runs part i on thread t.
type job interface{ part(i, t int) }

func newPool(threads int) *pool {
	p := &pool{}
	p.setThreads(threads)
	return p
}

func (p *pool) setThreads(threads int) {
	p.threads = max(1, threads)
	for len(p.gemm) < p.threads {
		p.gemm = append(p.gemm, newGemmBuf())
		p.tmp = append(p.tmp, nil)
	}
}

// floats returns thread t's scratch floats, at least size of them.
func (p *pool) floats(t, size int) []float32 {
	if len(p.tmp[t]) < size {
		p.tmp[t] = make([]float32, size)
	}
	return p.tmp[t][:size]
}

// run runs parts 0..parts−1 of j: part i on thread i mod T, T =
// min(threads, parts), thread 0 being the caller's goroutine.
func (p *pool) run(parts int, j job) {
	t := min(p.threads, parts)
	if t <= 1 {
		for i := range parts {
			j.part(i, 0)
		}
		return
	}
	p.wg.Add(t - 1)
	for w := 1; w < t; w++ {
		go p.work(j, w, t, parts)
	}
	for i := 0; i < parts; i += t {
		j.part(i, 0)
	}
	p.wg.Wait()
}

func (p *pool) work(j job, w, t, parts int) {
	defer p.wg.Done()
	for i := w; i < parts; i += t {
		j.part(i, w)
	}
}

// split cuts [0, n) into at most threads ranges whose starts are
// multiples of q and returns the length of each range but the last.
func split(n, threads, q int) int {
	return max(q, roundUp((n+threads-1)/max(1, threads), q))
}

// pass holds the arguments of one layer's forward or backward pass while
// its parts run.
type pass struct {
	l                  parted
	fwd                bool
	p, x, y, dy, dx, g []float32
	scale              float32
	n                  int
	s                  *scratch
	parts              int // of the first kind, in a backward pass of two kinds
}

// parted is a layer whose passes run in parts.
type parted interface {
	forwardPart(j *pass, i, t int)
	backwardPart(j *pass, i, t int)
}

func (j *pass) part(i, t int) {
	if j.fwd {
		j.l.forwardPart(j, i, t)
	} else {
		j.l.backwardPart(j, i, t)
	}
}
